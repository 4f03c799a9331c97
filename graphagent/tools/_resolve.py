"""Finding tools: providers hand out tools, resolvers find a tool by name."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from graphagent.errors import ToolDefinitionError
from graphagent.tools._definition import ToolCallback
from graphagent.tools._function import FunctionToolCallback, method_tools

__all__ = [
    "DelegatingToolCallbackResolver",
    "StaticToolCallbackProvider",
    "StaticToolCallbackResolver",
    "ToolCallbackProvider",
    "ToolCallbackResolver",
    "ToolsLike",
    "as_tool",
    "collect_tools",
]


@runtime_checkable
class ToolCallbackProvider(Protocol):
    """Anything that hands out a set of tools (a plugin, an MCP client, ...)."""

    def tool_callbacks(self) -> Sequence[ToolCallback]:
        """The tools it provides."""
        ...


@runtime_checkable
class ToolCallbackResolver(Protocol):
    """Finds a tool by name, for tools referred to by name only."""

    def resolve(self, name: str) -> ToolCallback | None:
        """The tool called ``name``, or ``None``."""
        ...


class StaticToolCallbackProvider:
    """Provides a fixed list of tools (functions are made tools with their names)."""

    def __init__(self, *tools: ToolCallback | Callable[..., Any]) -> None:
        self._tools = [as_tool(t) for t in tools]

    def tool_callbacks(self) -> Sequence[ToolCallback]:
        """The tools."""
        return list(self._tools)


class StaticToolCallbackResolver:
    """Resolves names among a fixed set of tools.

    Raises:
        ToolDefinitionError: two tools share a name.
    """

    def __init__(self, tools: Iterable[ToolCallback | Callable[..., Any]]) -> None:
        self._tools = collect_tools(tools=tools)

    def resolve(self, name: str) -> ToolCallback | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)


class DelegatingToolCallbackResolver:
    """Asks each resolver in turn; the first that knows the name wins."""

    def __init__(self, resolvers: Sequence[ToolCallbackResolver]) -> None:
        self.resolvers = list(resolvers)

    def resolve(self, name: str) -> ToolCallback | None:
        """The first resolver's answer for ``name``."""
        for resolver in self.resolvers:
            found = resolver.resolve(name)
            if found is not None:
                return found
        return None


def as_tool(value: ToolCallback | Callable[..., Any]) -> ToolCallback:
    """A tool as is; a plain function made into a tool named after it."""
    if isinstance(value, ToolCallback):
        return value
    if callable(value):
        return FunctionToolCallback(getattr(value, "__name__", "tool"), value)
    raise ToolDefinitionError(f"{value!r} is not a tool; pass a @tool function or a ToolCallback")


def _origin(tool: ToolCallback, where: str) -> str:
    fn = getattr(tool, "fn", None)
    qual = getattr(fn, "__qualname__", type(tool).__name__)
    module = getattr(fn, "__module__", type(tool).__module__)
    return f"{where} ({module}.{qual})"


ToolsLike = Iterable[ToolCallback | Callable[..., Any]] | Mapping[str, ToolCallback]


def collect_tools(
    *,
    tools: ToolsLike = (),
    method_tools_of: Iterable[Any] = (),
    providers: Iterable[ToolCallbackProvider] = (),
    names: Iterable[str] = (),
    resolver: ToolCallbackResolver | None = None,
) -> dict[str, ToolCallback]:
    """Gather tools from every source into one name -> tool mapping.

    Raises:
        ToolDefinitionError: two sources give the same name (both named), or names are
            given without a resolver, or the resolver does not know a name.
    """
    found: dict[str, tuple[ToolCallback, str]] = {}

    def add(tool: ToolCallback, where: str) -> None:
        name = tool.definition.name
        if name in found:
            raise ToolDefinitionError(
                f"two tools are named {name!r}: {found[name][1]} and {_origin(tool, where)}; "
                "rename one (e.g. @tool(name=...))"
            )
        found[name] = (tool, _origin(tool, where))

    items = tools.values() if isinstance(tools, Mapping) else tools
    for i, t in enumerate(items):
        add(as_tool(t), f"tools[{i}]")
    for obj in method_tools_of:
        for t in method_tools(obj):
            add(t, f"method_tools of {type(obj).__name__}")
    for provider in providers:
        for t in provider.tool_callbacks():
            add(t, f"provider {type(provider).__name__}")
    names = list(names)
    if names and resolver is None:
        raise ToolDefinitionError(
            f"tools named by name only ({', '.join(names)}) need a resolver: pass resolver="
            "StaticToolCallbackResolver([...]) or your own ToolCallbackResolver"
        )
    for name in names:
        assert resolver is not None
        t = resolver.resolve(name)
        if t is None:
            raise ToolDefinitionError(f"the resolver does not know a tool named {name!r}")
        add(t, f"resolver {type(resolver).__name__}")
    return {name: t for name, (t, _) in found.items()}
