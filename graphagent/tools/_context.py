"""``ToolContext``: what a tool may know about the run, never shown to the model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from graphagent.config import RunnableConfig, ensure_config
from graphagent.graph import Runtime
from graphagent.tools._cancel import CancellationToken

if TYPE_CHECKING:
    from graphagent.messages import Message

__all__ = ["ToolContext"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


class ToolContext:
    """The run as a tool sees it. Declare a parameter annotated ``ToolContext`` to get it.

    It is injected at call time and never appears in the tool's schema or in
    anything sent to a model.

    Attributes:
        state: the overall state when the tool was called (read-only).
        config: the run's :class:`RunnableConfig` (``config.thread_id``,
            ``config.metadata["user_id"]``, ...).
        tool_call_id: the model's id for this call.
        context: the caller's ``tool_context`` mapping (per run or per agent); the
            run's typed context object is ``runtime.context``.
        history: the conversation up to and including the assistant message that
            asked for this call (Spring AI's tool-call history); in an agent it is
            ``state["messages"]``.
        cancellation: this call's :class:`CancellationToken`: set when the call ran
            past the tool timeout; a long sync tool checks it and stops (Python cannot
            stop its thread from outside).

    Example:
        >>> from graphagent.tools import tool, ToolContext
        >>> @tool
        ... def whoami(ctx: ToolContext) -> str:
        ...     '''Say who the user is.'''
        ...     ctx.update_state({"asked_whoami": True})
        ...     return ctx.metadata.get("user_id", "anonymous")
    """

    __slots__ = (
        "_updates",
        "cancellation",
        "config",
        "context",
        "history",
        "state",
        "tool_call_id",
    )

    def __init__(
        self,
        *,
        state: Mapping[str, Any] | None = None,
        config: RunnableConfig | Mapping[str, Any] | None = None,
        tool_call_id: str = "",
        context: Mapping[str, Any] | None = None,
        history: Sequence[Message] | None = None,
    ) -> None:
        self.state: Mapping[str, Any] = MappingProxyType(dict(state)) if state else _EMPTY
        self.config: RunnableConfig = ensure_config(config)
        self.tool_call_id = tool_call_id
        self.context: Mapping[str, Any] = MappingProxyType(dict(context)) if context else _EMPTY
        if history is None:
            history = self.state.get("messages") or ()
        self.history: tuple[Message, ...] = tuple(history)
        self._updates: list[dict[str, Any]] = []
        self.cancellation = CancellationToken()

    @property
    def store(self) -> Any:
        """``config.store``: the run's long-term memory store (``None`` without one)."""
        return self.config.store

    @property
    def runtime(self) -> Runtime[Any]:
        """The run's :class:`~graphagent.graph.Runtime`: ``runtime.context`` is the
        context object the caller passed (``invoke(..., context=...)``), beside the
        store, the stream writer and the config."""
        return Runtime.of(self.config)

    @property
    def metadata(self) -> Mapping[str, Any]:
        """``config.metadata``: user data such as the user id or tenant."""
        return self.config.metadata

    def update_state(self, update: Mapping[str, Any]) -> None:
        """Ask for a state update; it merges through the key strategies after the tools step."""
        if not isinstance(update, Mapping):
            raise TypeError(f"update_state takes a dict, got {type(update).__name__}")
        self._updates.append(dict(update))

    @property
    def updates(self) -> list[dict[str, Any]]:
        """The updates asked for so far, in order."""
        return list(self._updates)

    def for_call(self, tool_call_id: str) -> ToolContext:
        """A fresh context for one call (same state, config and caller context)."""
        ctx = ToolContext.__new__(ToolContext)
        ctx.state = self.state
        ctx.config = self.config
        ctx.context = self.context
        ctx.history = self.history
        ctx.tool_call_id = tool_call_id
        ctx._updates = []
        ctx.cancellation = CancellationToken()
        return ctx

    def __repr__(self) -> str:
        # deliberately short: contexts must not end up verbose in logs or model-facing text
        return f"<ToolContext call={self.tool_call_id!r}>"
