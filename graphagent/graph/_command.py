"""Commands nodes return or callers send, and ``interrupt()``."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic

from typing_extensions import TypeVar

from graphagent.errors import GraphInterrupt

__all__ = ["Command", "Interrupt", "TaskScope", "current_task", "interrupt"]


N = TypeVar("N", default=str)
"""The node names a ``Command`` may go to: ``Command[Literal["a", "b"]]``."""


@dataclass(frozen=True)
class Command(Generic[N]):
    """Update the state and route, from a node; or resume a paused thread, as input.

    Attributes:
        update: a partial state update, merged like a node's returned dict.
        goto: node name(s) to run next *instead of* the node's own edges
            (``END`` to stop this branch).
        resume: as run input: the answer for the pending ``interrupt()``; a dict of
            ``{interrupt_id: answer}`` when several interrupts are pending.

    Example:
        >>> Command(update={"route": "left"}, goto="left")
        Command(update={'route': 'left'}, goto='left', resume=None)
    """

    update: Mapping[str, Any] | None = None
    goto: str | Sequence[str] | None = None
    resume: Any = None


@dataclass(frozen=True)
class Interrupt:
    """A pause requested by ``interrupt(value)`` in node ``node``.

    Attributes:
        value: what the node asked (shown to the human).
        id: stable id, used to resume one of several pending interrupts.
        node: the node that asked.
    """

    value: Any
    id: str
    node: str

    @staticmethod
    def make(value: Any, node: str, index: int) -> Interrupt:
        """Build an interrupt whose id depends on the node and its call index only."""
        digest = hashlib.blake2s(f"{node}\x00{index}".encode(), digest_size=8).hexdigest()
        return Interrupt(value=value, id=digest, node=node)


class TaskScope:
    """Per-node-execution context: resume answers received so far and the call counter."""

    __slots__ = ("calls", "node", "resume")

    def __init__(self, node: str, resume: list[Any] | tuple[Any, ...] = ()) -> None:
        self.node = node
        self.resume = resume
        self.calls = 0


_TASK: ContextVar[TaskScope | None] = ContextVar("graphagent_task", default=None)


def current_task() -> ContextVar[TaskScope | None]:
    """The context variable holding the running node's scope (engine use)."""
    return _TASK


def interrupt(value: Any) -> Any:
    """Pause the run and ask the caller for an answer.

    The first time a node calls it the run stops (after checkpointing) and
    ``get_state(config).interrupts`` holds ``value``. Invoking the same thread with
    ``Command(resume=answer)`` re-runs the node from its start, and this call returns
    ``answer``. A node may ask several times; each call gets its own answer.

    Needs a saver and a ``thread_id``: the answer may come from another process.

    Example::

        def approve(state):
            ok = interrupt({"question": "send it?", "draft": state["draft"]})
            return {"approved": ok}
    """
    scope = _TASK.get()
    if scope is None:
        raise GraphInterrupt((value,))
    index = scope.calls
    scope.calls += 1
    if index < len(scope.resume):
        return scope.resume[index]
    raise GraphInterrupt((Interrupt.make(value, scope.node, index),))
