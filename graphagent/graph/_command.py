"""Commands nodes return or callers send, and ``interrupt()``."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Generic

from typing_extensions import TypeVar

from graphagent.errors import GraphInterrupt

__all__ = [
    "Command",
    "Interrupt",
    "RunContext",
    "TaskScope",
    "current_task",
    "interrupt",
    "is_interrupt_id",
    "path_key",
]


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
        id: this ask's id (``"i-"`` and 16 hex digits), unique per ask: a node asking
            again, in a later step or later in the same run of it, asks with a new id.
            ``Command(resume={id: answer})`` answers it; an id no longer pending is refused.
        node: the node that asked.
        path: where that node runs: the parent graph's node names down to ``node``
            (``("review", "ask")`` for node ``ask`` of the subgraph node ``review``).
    """

    value: Any
    id: str
    node: str
    path: tuple[str, ...] = ()

    @staticmethod
    def make(value: Any, path: tuple[str, ...], index: int, anchor: str | None) -> Interrupt:
        """Build the interrupt of one ask: its id comes from the checkpoint its step grows
        from (``anchor``), the task path and the call's index in the task, so the same
        ask rebuilt on a rerun has the same id, and no other ask of the thread has it."""
        seed = f"{anchor}\x00{path_key(path)}\x00{index}".encode()
        digest = hashlib.blake2s(seed, digest_size=8).hexdigest()
        return Interrupt(value=value, id=f"i-{digest}", node=path[-1], path=path)

    @staticmethod
    def load(stored: Sequence[Any]) -> Interrupt:
        """Rebuild an interrupt from its stored ``[value, id, node(, path)]`` form."""
        value, id_, node = stored[0], stored[1], stored[2]
        path = tuple(stored[3]) if len(stored) > 3 else (node,)
        return Interrupt(value=value, id=id_, node=node, path=path)

    def dump(self) -> list[Any]:
        """The stored form read back by :meth:`load`."""
        return [self.value, self.id, self.node, list(self.path)]


def is_interrupt_id(key: object) -> bool:
    """Whether ``key`` has the form of an interrupt id (``"i-"`` and 16 hex digits)."""
    return (
        isinstance(key, str)
        and len(key) == 18
        and key[:2] == "i-"
        and all(c in "0123456789abcdef" for c in key[2:])
    )


def path_key(path: Sequence[str]) -> str:
    """One string for a task path (how answers and suspended runs are keyed)."""
    return "|".join(path)


class RunContext:
    """What every task of one top-level run shares, nested runs included.

    ``answers`` holds the answers given so far per task path; ``suspended`` the saved
    position of each nested run that paused, per path. A nested compiled graph run
    inside a node finds both here, so its interrupts resume where they asked.
    ``anchor`` is the checkpoint the top-level run's current step grows from (interrupt
    ids are made from it). ``suspended`` also holds what a durable sub-task of a node
    (``graphagent.func``'s ``@task``) finished, under a key below the node's path; such a
    sub-task stores it at once on ``kept_on`` through ``saver`` (``kept_on`` is ``None``
    while the step's checkpoint is held back, unstored). ``config`` is the top-level
    run's config (what ``get_runtime()`` and ``push_message()`` read).
    """

    __slots__ = (
        "anchor",
        "answers",
        "config",
        "kept_on",
        "lock",
        "persistent",
        "saver",
        "suspended",
        "thread",
    )

    def __init__(
        self, thread: str | None, persistent: bool, saver: Any = None, config: Any = None
    ) -> None:
        self.thread = thread
        self.config = config
        self.persistent = persistent
        self.saver = saver
        self.anchor: str | None = None
        self.kept_on: str | None = None
        self.answers: dict[str, list[Any]] = {}
        self.suspended: dict[str, dict[str, Any]] = {}
        # nested runs of parallel nodes share these tables from several threads; writers
        # hold the lock so that a reader walking a table never sees it change size
        self.lock = threading.Lock()

    def under(self, table: Mapping[str, Any], top: str) -> list[tuple[str, Any]]:
        """The entries of ``table`` for task path ``top`` and every path below it."""
        prefix = top + "|"
        with self.lock:
            return [(k, v) for k, v in table.items() if k == top or k.startswith(prefix)]

    def forget(self, top: str) -> None:
        """Drop answers and suspended runs of ``top`` and below: its step is committed."""
        prefix = top + "|"
        with self.lock:
            for table in (self.answers, self.suspended):
                for key in [k for k in table if k == top or k.startswith(prefix)]:
                    del table[key]

    def suspend(self, key: str, position: dict[str, Any]) -> None:
        """Keep a nested run's position under its task path."""
        with self.lock:
            self.suspended[key] = position

    def resume_position(self, key: str) -> dict[str, Any] | None:
        """Take (and drop) the position a nested run left under its task path."""
        with self.lock:
            return self.suspended.pop(key, None)

    def set_answers(self, key: str, answers: list[Any]) -> None:
        """The answers given so far to the task at ``key``."""
        with self.lock:
            self.answers[key] = answers

    def add_answer(self, key: str, answer: Any) -> None:
        """One more answer for the task at ``key``."""
        with self.lock:
            self.answers.setdefault(key, []).append(answer)


class TaskScope:
    """Per-node-execution context: its task path, answers so far, call counters
    (``interrupt()`` calls, nested graph runs, durable sub-tasks started), and what
    ``push_message`` wrote (``pushed``: state key -> messages, or ``None``)."""

    __slots__ = ("calls", "ctx", "node", "path", "pushed", "resume", "runs", "subtasks")

    def __init__(
        self,
        path: tuple[str, ...],
        resume: list[Any] | tuple[Any, ...] = (),
        ctx: RunContext | None = None,
    ) -> None:
        self.path = path
        self.node = path[-1]
        self.resume = resume
        self.ctx = ctx
        self.calls = 0
        self.runs = 0
        self.pushed: dict[str, list[Any]] | None = None
        self.subtasks = 0

    def nested_path(self) -> tuple[str, ...]:
        """The base path of the next nested graph run inside this task."""
        index = self.runs
        self.runs += 1
        return self.path if index == 0 else (*self.path, f"#{index}")


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
    anchor = scope.ctx.anchor if scope.ctx is not None else None
    raise GraphInterrupt((Interrupt.make(value, scope.path, index, anchor),))
