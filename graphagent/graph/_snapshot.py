"""``StateSnapshot``: a thread's state at one checkpoint, as users see it."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field, fields
from typing import Any

from checkpoint.base import Checkpoint, CheckpointHistory
from graphagent.config import RunnableConfig
from graphagent.graph._command import Interrupt
from graphagent.graph._namespace import task_id
from graphagent.graph.draw._html import history_html, snapshot_html

__all__ = [
    "StateHistory",
    "StateSnapshot",
    "StateTask",
    "changed_keys",
    "holds",
    "listed_snapshots",
    "message_count",
]


@dataclass(frozen=True)
class StateTask:
    """One task of the step a snapshot's checkpoint leads to: a node due to run.

    Attributes:
        id: the task's id (the same the run gives it; part of a subgraph's namespace).
        name: the node.
        path: the task path: the parent graph's node names down to ``name``.
        error: the error the task raised (its ``repr``), when its step failed: the
            thread stays at the checkpoint before that step, the error is raised to the
            caller and kept here; ``invoke(None, config)`` runs the task again (the
            tasks of the step that had finished are not rerun). ``None`` otherwise.
        interrupts: the questions this task (or a subgraph inside it) asked.
        state: for a node running a subgraph: with ``get_state(config, subgraphs=True)``
            the subgraph's own :class:`StateSnapshot` while it is paused; otherwise a
            config naming it (``checkpoint_ns``) to pass to ``get_state`` or
            ``update_state``. ``None`` for other nodes.
        result: the update the node returned, when it finished in a step that paused or
            failed, or in one that is still running or was cut short by a crash (kept as
            the task finished, on a saver that outlives the process).
    """

    id: str
    name: str
    path: tuple[str, ...] = ()
    error: str | None = None
    interrupts: tuple[Interrupt, ...] = ()
    state: Any = None
    result: Any = None


@dataclass(frozen=True)
class StateSnapshot:
    """The state of a thread at one checkpoint.

    Attributes:
        values: the whole state.
        next: nodes due to run next; empty when the run finished. In a paused step,
            nodes that already finished (their work is kept) are not listed.
        checkpoint_id: this checkpoint's id (pass it in a config to time-travel).
        parent_id: the checkpoint before it.
        metadata: ``source`` (``"input"``, ``"loop"``, ``"update"``), ``step``, ``nodes``
            (the nodes whose step wrote it), user metadata.
        created_at: when it was written (UTC).
        interrupts: questions pending from ``interrupt()``; answer with ``Command(resume=...)``.
        config: a config that points at this checkpoint.
        step: the super-step number.
        at_breakpoint: the run paused here at an ``interrupt_before``/``interrupt_after``
            breakpoint; ``invoke(None, config)`` continues it.
        tasks: the tasks of the next step (:class:`StateTask`): each node due, with its
            id, questions, error, finished result and (for a subgraph) its state.
    """

    values: dict[str, Any]
    next: tuple[str, ...]
    checkpoint_id: str | None
    parent_id: str | None
    metadata: dict[str, Any]
    created_at: _dt.datetime | None
    interrupts: tuple[Interrupt, ...] = ()
    config: RunnableConfig = field(default_factory=RunnableConfig)
    step: int = -1
    at_breakpoint: bool = False
    tasks: tuple[StateTask, ...] = ()
    # the graph it came from, so Jupyter can draw the run over it; not part of the value
    _graph: Any = field(default=None, repr=False, compare=False)

    @property
    def exists(self) -> bool:
        """Whether the thread has this checkpoint (``False``: no such thread, or none yet)."""
        return self.checkpoint_id is not None

    def summary(self) -> str:
        """One line: the thread, the step, what runs next (``repr`` keeps every field)."""
        thread = self.config.thread_id
        if not self.exists:
            return f"<StateSnapshot: no such thread {thread!r}>"
        waiting = f", {len(self.interrupts)} question(s) waiting" if self.interrupts else ""
        if self.at_breakpoint:
            waiting = " (paused at a breakpoint)"
        nxt = ", ".join(self.next) or "nothing (finished)"
        return f"<StateSnapshot thread {thread!r} step {self.step}: next {nxt}{waiting}>"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        # Jupyter's text beside the HTML card: a line, not every value and id (and no
        # private keys)
        printer.text(self.summary())

    def _repr_html_(self) -> str:
        """Jupyter shows where the thread stands, a question waiting for an answer (with
        the exact ``Command(resume=...)`` to send), the conversation, the other public keys,
        and the run drawn over its graph."""
        drawing = None
        if self._graph is not None and self.exists:
            drawing = self._graph.draw("svg", config=self.config)
        return snapshot_html(self, drawing)

    @staticmethod
    def from_checkpoint(
        cp: Checkpoint | None, config: RunnableConfig, graph: Any = None
    ) -> StateSnapshot:
        """Build a snapshot (an empty one, ``exists`` false, for an unknown thread).

        ``graph``: the compiled graph it belongs to, which Jupyter uses to draw the run.
        """
        if cp is None:
            return StateSnapshot({}, (), None, None, {}, None, (), config, -1, False, (), graph)
        return StateSnapshot(
            values=cp.values,
            config=config.model_copy(update={"checkpoint_id": cp.id}),
            _graph=graph,
            **_fields_of(cp),
        )


def _fields_of(cp: Checkpoint) -> dict[str, Any]:
    """A snapshot's fields from its checkpoint, all but ``values`` and ``config``."""
    # nodes whose work in the paused step is already kept are not "next" any more
    finished = {w.task for w in cp.pending_writes if w.kind == "update"}
    interrupts = tuple(Interrupt.load(w.value) for w in cp.pending_writes if w.kind == "interrupt")
    return {
        "next": tuple(n for n in cp.next if n not in finished) if finished else cp.next,
        "checkpoint_id": cp.id,
        "parent_id": cp.parent_id,
        "metadata": cp.metadata,
        "created_at": _dt.datetime.fromtimestamp(cp.created_at, tz=_dt.timezone.utc),
        "interrupts": interrupts,
        "step": cp.step,
        "at_breakpoint": any(w.kind == "breakpoint" for w in cp.pending_writes),
        "tasks": _tasks_of(cp, interrupts),
    }


def _tasks_of(cp: Checkpoint, interrupts: tuple[Interrupt, ...]) -> tuple[StateTask, ...]:
    """The next step's tasks as far as the checkpoint alone tells (no subgraph states)."""
    # a task's result: kept with a paused or failed step, or as it finished ("done":
    # a step still running, or cut short by a crash)
    results = {w.task: w.value[0] for w in cp.pending_writes if w.kind in ("update", "done")}
    # a failed Send task is keyed "node[i]": its error shows on its node's task
    errors = {
        w.value[0].partition("[")[0]: w.value[1]
        for w in cp.pending_writes
        if w.kind == "error" and w.value
    }
    return tuple(
        StateTask(
            task_id(cp.id, (n,)),
            n,
            (n,),
            errors.get(n),
            tuple(i for i in interrupts if i.path[:1] == (n,)),
            None,
            results.get(n),
        )
        for n in cp.next
    )


class _ListedSnapshot(StateSnapshot):
    """A snapshot from a history listing: its state is built from the listing each time
    ``values`` is read, never kept, so a history of ``n`` snapshots holds ``O(n)``."""

    @property
    def values(self) -> dict[str, Any]:
        """The whole state, built anew on each read (bind it once to reuse it)."""
        fixed = self.__dict__.get("_fixed")
        if fixed is not None:
            return fixed  # type: ignore[no-any-return]
        history: CheckpointHistory = self.__dict__["_history"]
        return history.values(self.__dict__["_index"])

    @values.setter
    def values(self, value: dict[str, Any]) -> None:
        # reached only from the dataclass __init__ (dataclasses.replace): a fixed state
        self.__dict__["_fixed"] = value

    @property
    def config(self) -> RunnableConfig:
        """A config that points at this checkpoint (made on first read: a pydantic copy
        per row would be most of the cost of listing a long thread)."""
        made = self.__dict__.get("_config")
        if made is None:
            base: RunnableConfig = self.__dict__["_base_config"]
            made = base.model_copy(update={"checkpoint_id": self.checkpoint_id})
            self.__dict__["_config"] = made
        return made

    @config.setter
    def config(self, value: RunnableConfig) -> None:
        self.__dict__["_config"] = value

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StateSnapshot):
            return NotImplemented
        return all(
            getattr(self, f.name) == getattr(other, f.name) for f in fields(self) if f.compare
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"StateSnapshot({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        # a copy or a pickle is a plain snapshot: it must drag neither the listing nor
        # the graph along
        kept = (getattr(self, f.name) for f in fields(self) if f.name != "_graph")
        return (StateSnapshot, tuple(kept))

    def message_count(self) -> int:
        """Messages in the state, counted without building it when the saver can."""
        history: CheckpointHistory | None = self.__dict__.get("_history")
        count = None if history is None else history.size(self.__dict__["_index"], "messages")
        return _count(self.values) if count is None else count


def holds(snap: StateSnapshot, key: str) -> bool:
    """Whether the snapshot's state has ``key`` (a listed one: without building it)."""
    if isinstance(snap, _ListedSnapshot) and "_history" in snap.__dict__:
        known = snap.__dict__["_history"].keys(snap.__dict__["_index"])
        if known is not None:
            return key in known
    return key in snap.values


def changed_keys(snap: StateSnapshot, parent: StateSnapshot | None) -> list[str] | None:
    """The keys whose value differs between two snapshots of one listing (every key of
    ``snap`` without a parent), found from what is stored, without building either
    state (``None``: not known that way)."""
    if not isinstance(snap, _ListedSnapshot):
        return None
    history: CheckpointHistory | None = snap.__dict__.get("_history")
    if history is None:
        return None
    index: int = snap.__dict__["_index"]
    if parent is None:
        return history.changed(index, None)
    theirs: object = parent.__dict__.get("_history")
    if not isinstance(parent, _ListedSnapshot) or theirs is not history:
        return None
    return history.changed(index, parent.__dict__["_index"])


def listed_snapshots(
    history: CheckpointHistory, config: RunnableConfig, graph: Any = None
) -> list[StateSnapshot]:
    """Snapshots of every checkpoint of ``history``, their states built only when read.

    ``graph``: the compiled graph they belong to, which Jupyter uses to draw the run.
    """
    out: list[StateSnapshot] = []
    for index in range(len(history)):
        snap = object.__new__(_ListedSnapshot)
        state = snap.__dict__
        state.update(_fields_of(history.bare(index)))
        state["_graph"] = graph
        state["_history"], state["_index"], state["_base_config"] = history, index, config
        out.append(snap)
    return out


def _count(values: dict[str, Any]) -> int:
    return len(values.get("messages", ()) or ())


def message_count(snap: StateSnapshot) -> int:
    """How many messages the snapshot's state holds (a listed one: without building it)."""
    return snap.message_count() if isinstance(snap, _ListedSnapshot) else _count(snap.values)


class StateHistory(list[StateSnapshot]):
    """A thread's checkpoints, newest first: a plain list that Jupyter shows as a timeline.

    From ``get_state_history``, each snapshot builds its ``values`` when they are read
    (from items the listing decoded once) and does not keep them, so the list holds
    ``O(n)`` however long the thread.

    Example:
        >>> history = StateHistory([])
        >>> history == [] and "no checkpoints" in history._repr_html_()
        True
    """

    __slots__ = ()

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        thread = self[0].config.thread_id if self else None
        printer.text(f"<StateHistory: {len(self)} checkpoints of thread {thread!r}, newest first>")

    def _repr_html_(self) -> str:
        """One row per checkpoint: step, what wrote it, the keys it changed, what runs next,
        the number of messages, the time and the id."""
        by_id = {s.checkpoint_id: s for s in self}
        # snapshots of one listing know their changes from what is stored: no state built
        known = [changed_keys(s, by_id.get(s.parent_id)) for s in self]
        counts = (
            [message_count(s) for s in self] if any(holds(s, "messages") for s in self) else None
        )
        return history_html(self, known, counts)
