"""What a tool is: its definition (sent to models), metadata, and the callback protocol."""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import core_schema

from graphagent._internal.results import ToolOutput
from graphagent.errors import UserError

if TYPE_CHECKING:
    from graphagent.tools._context import ToolContext

__all__ = [
    "ToolCallback",
    "ToolDefinition",
    "ToolMetadata",
    "ToolParam",
    "acall_tool",
    "call_tool",
]


@dataclass(frozen=True)
class ToolDefinition:
    """What a model is told about a tool.

    Attributes:
        name: the name the model calls it by.
        description: what it does and when to use it.
        input_schema: JSON schema (an object) of its arguments.
    """

    name: str
    description: str
    input_schema: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


@dataclass(frozen=True)
class ToolMetadata:
    """How a tool's result is used.

    Attributes:
        return_direct: the tool's result is the final answer; the model is not called again
            (only when every tool called in that turn has it).
    """

    return_direct: bool = False


@dataclass(frozen=True)
class ToolParam:
    """Extra schema information for a parameter or field: ``Annotated[str, ToolParam(...)]``.

    It works on a tool function's parameters and on the fields of any pydantic model
    or dataclass a tool takes (nested ones and ``input_type`` models too), like
    Spring AI's ``@ToolParam``.

    Attributes:
        description: shown to the model.
        required: ``False`` makes the parameter optional even without a default
            (it is then ``None`` when the model leaves it out).
    """

    description: str | None = None
    required: bool = True

    # pydantic calls these for Annotated metadata wherever the type appears, so a
    # ToolParam inside a model is honoured without the tool code walking the model
    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> Any:
        schema = handler(source)
        if not self.required:
            schema = core_schema.with_default_schema(
                core_schema.nullable_schema(schema), default=None
            )
        return schema

    def __get_pydantic_json_schema__(self, schema: Any, handler: GetJsonSchemaHandler) -> Any:
        json_schema = dict(handler(schema))
        if self.description:
            json_schema["description"] = self.description
        return json_schema


@runtime_checkable
class ToolCallback(Protocol):
    """Anything a model can call: a definition, metadata, and ``call``/``acall``.

    Subclass it to write a tool by hand: give it a ``definition`` and a ``call`` (or
    an ``acall``); the rest has defaults. ``metadata`` is ``ToolMetadata()``, ``acall``
    runs ``call`` in a worker thread, ``call`` runs ``acall`` when only that is given,
    and a ``call(tool_input)`` without a context parameter is called without one.
    ``call`` returns text, or (a tool that makes images or files) an ``ImagePart``,
    a ``FilePart`` or a list of text and parts: the model receives the parts beside
    the text, in its provider's format.
    Objects that are not subclasses work too, as long as they have ``definition``
    and ``call`` or ``acall``. Most tools are made with ``@tool`` or
    :class:`FunctionToolCallback`.

    Example:
        >>> class Shout(ToolCallback):
        ...     definition = ToolDefinition("shout", "Say it louder.", {
        ...         "type": "object", "properties": {"text": {"type": "string"}},
        ...     })
        ...     def call(self, tool_input):
        ...         return tool_input.upper()
        >>> Shout().metadata.return_direct
        False
        >>> from graphagent.messages import AssistantMessage, ToolCall
        >>> from graphagent.tools import ToolCallingManager
        >>> asked = AssistantMessage(tool_calls=[ToolCall(id="1", name="shout", arguments='"hi"')])
        >>> result = ToolCallingManager().execute_tool_calls([], asked, tools=[Shout()])
        >>> result.tool_responses[0].content
        '"HI"'
    """

    if TYPE_CHECKING:

        @property
        def definition(self) -> ToolDefinition:
            """The definition sent to models."""
            ...

        @property
        def metadata(self) -> ToolMetadata:
            """How the result is used (default: ``ToolMetadata()``)."""
            ...

    else:
        # plain attributes at runtime, so a subclass may set them in __init__, as a
        # class attribute or as a property
        definition: ToolDefinition
        metadata: ToolMetadata = ToolMetadata()

    def call(self, tool_input: str, context: ToolContext | None = None) -> ToolOutput:
        """Run with the model's JSON arguments; return the result as text (or parts).

        The default runs :meth:`acall` (for tools that only define that).
        """
        if type(self).acall is ToolCallback.acall:
            raise NotImplementedError(_missing(self))
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return cast(ToolOutput, asyncio.run(acall_tool(self, tool_input, context)))
        raise UserError(
            f"tool {_name(self)!r} only has acall() and an event loop is running; "
            "use acall() or aexecute_tool_calls()"
        )

    async def acall(self, tool_input: str, context: ToolContext | None = None) -> ToolOutput:
        """Async :meth:`call`; the default runs ``call`` in a worker thread."""
        if type(self).call is ToolCallback.call:
            raise NotImplementedError(_missing(self))
        return await asyncio.to_thread(call_tool, self, tool_input, context)


def _name(tool: Any) -> str:
    definition = getattr(tool, "definition", None)
    return getattr(definition, "name", None) or type(tool).__name__


def _missing(tool: Any) -> str:
    return (
        f"{type(tool).__name__} is a ToolCallback without call() or acall(); "
        "define call(self, tool_input, context=None) -> str"
    )


@functools.lru_cache(maxsize=1024)
def _context_mode(fn: Callable[..., Any], skip: int) -> str:
    """How ``fn`` takes the context: ``"positional"``, ``"keyword"`` or ``"none"``.

    ``skip`` leading parameters (``self``) are not counted.
    """
    try:
        params = list(inspect.signature(fn).parameters.values())[skip:]
    except (TypeError, ValueError):  # builtins and C callables: assume the full form
        return "positional"
    kinds = {p.kind for p in params}
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if inspect.Parameter.VAR_POSITIONAL in kinds or len(positional) >= 2:
        return "positional"
    if inspect.Parameter.VAR_KEYWORD in kinds or any(p.name == "context" for p in params):
        return "keyword"
    return "none"


def _method(tool: Any, name: str) -> tuple[Callable[..., Any] | None, str]:
    bound = getattr(tool, name, None)
    if bound is None:
        return None, "none"
    fn = getattr(bound, "__func__", None)
    if fn is None:  # a callable set on the instance: no self to skip
        try:
            return bound, _context_mode(bound, 0)
        except TypeError:  # unhashable callable
            return bound, "positional"
    return bound, _context_mode(fn, 1)


def _with_context(
    fn: Callable[..., Any], mode: str, tool_input: str, context: ToolContext | None
) -> Any:
    if mode == "positional":
        return fn(tool_input, context)
    if mode == "keyword":
        return fn(tool_input, context=context)
    return fn(tool_input)


def call_tool(tool: Any, tool_input: str, context: ToolContext | None = None) -> Any:
    """Run one tool as the manager does: ``tool.call`` with the context when it takes one.

    Args:
        tool: a :class:`ToolCallback`, or any object with a ``definition`` and ``call``
            (or only ``acall``, which then runs in an event loop of its own).
        tool_input: the call's JSON arguments.
        context: the call's :class:`ToolContext`, given only to a ``call`` that takes one.

    Returns:
        what the tool returned, as it returned it.

    Raises:
        UserError: ``tool`` has neither ``call`` nor ``acall``.
    """
    call, mode = _method(tool, "call")
    if call is None:
        if getattr(tool, "acall", None) is None:
            raise UserError(f"{type(tool).__name__} is not a tool: it has no call() or acall()")
        return ToolCallback.call(tool, tool_input, context)
    return _with_context(call, mode, tool_input, context)


async def acall_tool(tool: Any, tool_input: str, context: ToolContext | None = None) -> Any:
    """Async :func:`call_tool`: ``tool.acall``, or ``tool.call`` in a worker thread.

    Args:
        tool: a :class:`ToolCallback`, or any object with a ``definition`` and ``acall``
            or ``call``.
        tool_input: the call's JSON arguments.
        context: the call's :class:`ToolContext`, given only to a method that takes one.

    Returns:
        what the tool returned, as it returned it.
    """
    acall, mode = _method(tool, "acall")
    if acall is None:
        return await asyncio.to_thread(call_tool, tool, tool_input, context)
    return await _with_context(acall, mode, tool_input, context)
