"""What a tool is: its definition (sent to models), metadata, and the callback protocol."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from graphagent.tools._context import ToolContext

__all__ = ["ToolCallback", "ToolDefinition", "ToolMetadata", "ToolParam"]


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
    """Extra schema information for a parameter: ``Annotated[str, ToolParam(...)]``.

    Attributes:
        description: shown to the model.
        required: ``False`` makes the parameter optional even without a default
            (it is then ``None`` when the model leaves it out).
    """

    description: str | None = None
    required: bool = True


@runtime_checkable
class ToolCallback(Protocol):
    """Anything a model can call: a definition, metadata, and ``call``/``acall``.

    Implement it by hand for tools whose schema you write yourself; most tools are
    made with ``@tool`` or :class:`FunctionToolCallback`.
    """

    @property
    def definition(self) -> ToolDefinition:
        """The definition sent to models."""
        ...

    @property
    def metadata(self) -> ToolMetadata:
        """How the result is used."""
        ...

    def call(self, tool_input: str, context: ToolContext | None = None) -> str:
        """Run with the model's JSON arguments; return the result as text."""
        ...

    async def acall(self, tool_input: str, context: ToolContext | None = None) -> str:
        """Async :meth:`call`."""
        ...
