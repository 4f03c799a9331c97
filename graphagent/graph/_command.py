"""Commands nodes return or callers send, and ``interrupt()``."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ClassVar, Generic

from typing_extensions import TypeVar

from graphagent._internal.handoff import set_hand_off
from graphagent._internal.streaming import set_sink_finder
from graphagent.errors import GraphBubbleUp, GraphInterrupt, InvalidUpdateError
from graphagent.graph._namespace import namespace

__all__ = [
    "Command",
    "Interrupt",
    "ParentCommand",
    "RunContext",
    "TaskScope",
    "current_task",
    "for_parent",
    "get_stream_writer",
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
            ``{interrupt_id: answer}`` when several interrupts are pending (answer some
            of them, and the others are asked again).
        graph: ``None`` (this graph) or ``Command.PARENT``: from a node of a graph
            running as a subgraph (or of an agent used as a node), the update and goto
            apply to the parent graph, as if the parent's node had returned them; the
            subgraph stops there. This is how agents hand off to each other.

    Example:
        >>> Command(update={"route": "left"}, goto="left")
        Command(update={'route': 'left'}, goto='left', resume=None, graph=None)
        >>> Command(goto="billing", graph=Command.PARENT).graph
        '__parent__'
    """

    PARENT: ClassVar[str] = "__parent__"
    """``Command(graph=Command.PARENT)``: the command is for the parent graph."""

    update: Mapping[str, Any] | None = None
    goto: str | Sequence[str] | None = None
    resume: Any = None
    graph: str | None = None


class ParentCommand(GraphBubbleUp):
    """A ``Command(graph=Command.PARENT)`` on its way up.

    Raised by a run whose node returned one (:attr:`command` then has ``graph=None``):
    that run stops, and the node of the parent graph that ran it ends with the command as
    its result. Raised by code inside a node (a tool returning such a command, still with
    ``graph=Command.PARENT``): the node ends as if it had returned it, so its graph hands
    the command to *its* parent.
    """

    def __init__(self, command: Command[Any]) -> None:
        super().__init__(f"command for the parent graph: {command!r}")
        self.command = command


def _hand_off(result: Any) -> None:
    """Raise a tool's ``Command(graph=Command.PARENT)`` (found through
    ``graphagent._internal.handoff``): the tool's node hands it to its parent graph."""
    if isinstance(result, Command) and result.graph is not None:
        raise ParentCommand(result)


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
    def make(
        value: Any, path: tuple[str, ...], index: int, anchor: str | None, node: str | None = None
    ) -> Interrupt:
        """Build the interrupt of one ask: its id comes from the checkpoint its step grows
        from (``anchor``), the task path and the call's index in the task, so the same
        ask rebuilt on a rerun has the same id, and no other ask of the thread has it."""
        seed = f"{anchor}\x00{path_key(path)}\x00{index}".encode()
        digest = hashlib.blake2s(seed, digest_size=8).hexdigest()
        return Interrupt(value=value, id=f"i-{digest}", node=node or path[-1], path=path)

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
    ids and task ids are made from it). ``stream`` is set while the root streams with
    ``subgraphs=True``: nested runs send their events there. ``suspended`` also holds
    what a durable sub-task of a node (``graphagent.func``'s ``@task``) finished, under
    a key below the node's path; such a sub-task stores it at once on ``kept_on``
    through ``saver`` (``kept_on`` is ``None`` while the step's checkpoint is held
    back, unstored). ``config`` is the top-level run's config (what ``get_runtime()``
    and ``push_message()`` read).
    """

    __slots__ = (
        "anchor",
        "answers",
        "cache",
        "config",
        "emit",
        "kept_on",
        "lock",
        "persistent",
        "saver",
        "stream",
        "suspended",
        "thread",
        "writer",
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
        self.cache: Any = None  # the root graph's node-result cache (subgraphs use it too)
        self.answers: dict[str, list[Any]] = {}
        self.suspended: dict[str, dict[str, Any]] = {}
        # stream(..., subgraphs=True): the root's sink for nested runs' events, and its modes
        self.stream: tuple[Callable[[tuple[str, ...], str, Any], None], frozenset[str]] | None
        self.stream = None
        # a "messages" stream: where models called in any node send their chunks
        self.emit: Callable[[str, Any], None] | None = None
        # a "custom" stream: what get_stream_writer() hands out
        self.writer: Callable[[Any], None] | None = None
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
        node: str | None = None,
    ) -> None:
        self.path = path
        # a Send's task runs under path segment "node[i]": its node is named apart
        self.node = node or path[-1]
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
    raise GraphInterrupt((Interrupt.make(value, scope.path, index, anchor, scope.node),))


def _message_sink() -> Callable[[Any], None] | None:
    """The running node's ``"messages"`` sink: chunks go out with the node's name and path
    (models find it through ``graphagent._internal.streaming``)."""
    scope = _TASK.get()
    ctx = scope.ctx if scope is not None else None
    emit = ctx.emit if ctx is not None else None
    if emit is None or scope is None:
        return None
    meta = {"node": scope.node, "path": scope.path}
    return lambda chunk: emit("messages", (chunk, meta))


set_sink_finder(_message_sink)


def _discard(_: Any) -> None:
    """The writer outside a run streaming ``"custom"``: what is written goes nowhere."""


def get_stream_writer() -> Callable[[Any], None]:
    """The ``"custom"`` stream's writer of the running graph, from any node or tool.

    The same as ``config.writer``, for code that has no config at hand (a tool, a helper
    a node calls). Outside a run, or when nobody streams ``"custom"``, what it is given
    goes nowhere.

    Example:
        >>> get_stream_writer()({"progress": 1})  # outside a run: dropped
    """
    scope = _TASK.get()
    ctx = scope.ctx if scope is not None else None
    if ctx is None:
        return _discard
    assert scope is not None
    if ctx.stream is not None and len(scope.path) > 1:
        # a subgraph's node, streamed with subgraphs=True: under the subgraph's namespace
        # (as its config.writer does)
        sink, ns = ctx.stream[0], namespace(ctx.anchor, scope.path[:-1])
        return lambda payload: sink(ns, "custom", payload)
    return ctx.writer if ctx.writer is not None else _discard


set_hand_off(_hand_off)


def for_parent(node: str, command: Command[Any]) -> None:
    """A ``Command(graph=Command.PARENT)``: stop this (nested) run with it.

    Raises:
        ParentCommand: the command, for the node of the parent graph that runs this one.
        InvalidUpdateError: ``graph`` is not ``Command.PARENT``.
    """
    if command.graph != Command.PARENT:
        raise InvalidUpdateError(
            f"node {node!r} returned Command(graph={command.graph!r}); graph must be None "
            "(this graph) or Command.PARENT"
        )
    if _TASK.get() is None:  # no node of another graph is running this one
        raise InvalidUpdateError(
            f"node {node!r} returned Command(graph=Command.PARENT), but its graph runs on "
            "its own, not as a node of a parent graph"
        )
    raise ParentCommand(Command(update=command.update, goto=command.goto))
