"""Finding tools: providers hand out tools, resolvers find a tool by name."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from graphagent.errors import ToolDefinitionError
from graphagent.tools._definition import ToolCallback, ToolDefinition
from graphagent.tools._function import FunctionToolCallback, method_tools

__all__ = [
    "DelegatingToolCallbackResolver",
    "ResolverLike",
    "StaticToolCallbackProvider",
    "StaticToolCallbackResolver",
    "ToolCallbackProvider",
    "ToolCallbackResolver",
    "ToolsLike",
    "as_tool",
    "collect_tools",
    "resolve_with",
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


ResolverLike = ToolCallbackResolver | Callable[[str], "ToolCallback | None"]
"""A resolver, or a plain function ``name -> tool | None``."""


def resolve_with(resolver: ResolverLike, name: str) -> ToolCallback | None:
    """Ask ``resolver`` (an object with ``resolve`` or a function) for ``name``."""
    if isinstance(resolver, ToolCallbackResolver):
        return resolver.resolve(name)
    return resolver(name)


class StaticToolCallbackResolver:
    """Resolves names among a fixed set of tools; also a provider of all of them.

    Raises:
        ToolDefinitionError: two tools share a name.
    """

    def __init__(self, tools: Iterable[ToolCallback | Callable[..., Any]]) -> None:
        self._tools = collect_tools(tools=tools)

    def resolve(self, name: str) -> ToolCallback | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    def tool_callbacks(self) -> Sequence[ToolCallback]:
        """Every tool it knows (so an agent given only this resolver offers them all)."""
        return list(self._tools.values())


class DelegatingToolCallbackResolver:
    """Asks each resolver in turn; the first that knows the name wins.

    It provides the tools of those resolvers that can list theirs.
    """

    def __init__(self, resolvers: Sequence[ResolverLike]) -> None:
        self.resolvers = list(resolvers)

    def resolve(self, name: str) -> ToolCallback | None:
        """The first resolver's answer for ``name``."""
        for resolver in self.resolvers:
            found = resolve_with(resolver, name)
            if found is not None:
                return found
        return None

    def tool_callbacks(self) -> Sequence[ToolCallback]:
        """The tools of the resolvers that can list theirs; the first of a name wins."""
        found: dict[str, ToolCallback] = {}
        for resolver in self.resolvers:
            if isinstance(resolver, ToolCallbackProvider):
                for t in resolver.tool_callbacks():
                    found.setdefault(t.definition.name, t)
        return list(found.values())


def is_tool(value: Any) -> bool:
    """Whether ``value`` is a tool: a definition and ``call`` or ``acall``."""
    if isinstance(value, ToolCallback):
        return True
    # a hand-written tool needs no metadata or acall (they have defaults)
    return isinstance(getattr(value, "definition", None), ToolDefinition) and (
        hasattr(value, "call") or hasattr(value, "acall")
    )


def as_tool(value: ToolCallback | Callable[..., Any]) -> ToolCallback:
    """A tool as is; a plain function made into a tool named after it."""
    if is_tool(value):
        return value  # type: ignore[return-value]
    if isinstance(value, staticmethod):  # taken from a class's __dict__
        return as_tool(value.__func__)
    if isinstance(value, classmethod):
        raise ToolDefinitionError(
            f"{value!r} is a bare classmethod, with no class to bind to; use "
            "method_tools(obj) for the @tool methods of a class"
        )
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
    resolver: ResolverLike | None = None,
) -> dict[str, ToolCallback]:
    """Gather tools from every source into one name -> tool mapping.

    The same tool given through two sources is kept once; a name already given as a
    tool is not resolved again. A resolver alone (no other tools, no names) provides
    all its tools when it can list them (it has ``tool_callbacks()``, as
    :class:`StaticToolCallbackResolver` does).

    Raises:
        ToolDefinitionError: two different tools share a name (both named), or names
            are given without a resolver, or the resolver does not know a name.
    """
    found: dict[str, tuple[ToolCallback, str]] = {}

    def add(tool: ToolCallback, where: str) -> None:
        name = tool.definition.name
        if name in found and _same(found[name][0], tool):
            return
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
        if name in found:
            continue  # given as a tool too: that is the tool the name means
        t = resolve_with(resolver, name)
        if t is None:
            raise ToolDefinitionError(f"the resolver does not know a tool named {name!r}")
        add(t, f"resolver {type(resolver).__name__}")
    if not names and not found and isinstance(resolver, ToolCallbackProvider):
        for t in resolver.tool_callbacks():
            add(t, f"resolver {type(resolver).__name__}")
    return {name: t for name, (t, _) in found.items()}


def _same(a: ToolCallback, b: ToolCallback) -> bool:
    """One tool reached twice: the same object, or the same function made a tool twice."""
    if a is b:
        return True
    if isinstance(a, FunctionToolCallback) and isinstance(b, FunctionToolCallback):
        # method_tools(obj) binds anew on each call; equal bound methods are one tool
        return bool(a.fn == b.fn and a.definition == b.definition and a.metadata == b.metadata)
    return False
