"""``StateSnapshot``: a thread's state at one checkpoint, as users see it."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from checkpoint.base import Checkpoint
from graphagent.config import RunnableConfig
from graphagent.graph._command import Interrupt

__all__ = ["StateHistory", "StateSnapshot", "conversation", "written_by"]


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
        from graphagent.graph._views import snapshot_html

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
            return StateSnapshot({}, (), None, None, {}, None, (), config, -1, False, graph)
        interrupts = tuple(
            Interrupt.load(w.value) for w in cp.pending_writes if w.kind == "interrupt"
        )
        # nodes whose work in the paused step is already kept are not "next" any more
        finished = {w.task for w in cp.pending_writes if w.kind == "update"}
        return StateSnapshot(
            values=cp.values,
            next=tuple(n for n in cp.next if n not in finished) if finished else cp.next,
            checkpoint_id=cp.id,
            parent_id=cp.parent_id,
            metadata=cp.metadata,
            created_at=_dt.datetime.fromtimestamp(cp.created_at, tz=_dt.timezone.utc),
            interrupts=interrupts,
            config=config.model_copy(update={"checkpoint_id": cp.id}),
            step=cp.step,
            at_breakpoint=any(w.kind == "breakpoint" for w in cp.pending_writes),
            _graph=graph,
        )


def conversation(snap: StateSnapshot) -> list[tuple[str, str, list[str]]]:
    """The snapshot's messages as (role, text, tool calls as ``name(arguments)``) rows.

    A tool result's text starts with the tool's name.
    """
    rows: list[tuple[str, str, list[str]]] = []
    for message in snap.values.get("messages", []) or []:
        role = str(getattr(message, "role", type(message).__name__))
        text = str(getattr(message, "content", message))
        calls = [f"{c.name}({c.arguments})" for c in getattr(message, "tool_calls", ()) or ()]
        if role == "tool":
            text = f"{getattr(message, 'name', '')}: {text}"
        rows.append((role, text, calls))
    return rows


def written_by(snap: StateSnapshot) -> str:
    """What wrote the checkpoint: its nodes (``"a, b"``), else its source (``"input"``)."""
    return ", ".join(map(str, snap.metadata.get("nodes", ()))) or str(
        snap.metadata.get("source", "")
    )


class StateHistory(list[StateSnapshot]):
    """A thread's checkpoints, newest first: a plain list that Jupyter shows as a timeline.

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
        from graphagent.graph._views import history_html

        return history_html(self)
