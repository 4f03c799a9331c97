"""``StateSnapshot``: a thread's state at one checkpoint, as users see it."""

from __future__ import annotations

import datetime as _dt
import html
from dataclasses import dataclass, field, fields
from typing import Any

from checkpoint.base import Checkpoint, CheckpointHistory
from graphagent.config import RunnableConfig
from graphagent.graph._command import Interrupt

__all__ = [
    "StateHistory",
    "StateSnapshot",
    "conversation",
    "listed_snapshots",
    "message_count",
    "written_by",
]


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

    def _repr_html_(self) -> str:
        """Jupyter shows the conversation, the other keys and the checkpoint line."""
        return _snapshot_html(self)

    @staticmethod
    def from_checkpoint(cp: Checkpoint | None, config: RunnableConfig) -> StateSnapshot:
        """Build a snapshot (an empty one for an unknown thread)."""
        if cp is None:
            return StateSnapshot({}, (), None, None, {}, None, (), config, -1)
        return StateSnapshot(
            values=cp.values,
            config=config.model_copy(update={"checkpoint_id": cp.id}),
            **_fields_of(cp),
        )


def _fields_of(cp: Checkpoint) -> dict[str, Any]:
    """A snapshot's fields from its checkpoint, all but ``values`` and ``config``."""
    # nodes whose work in the paused step is already kept are not "next" any more
    finished = {w.task for w in cp.pending_writes if w.kind == "update"}
    return {
        "next": tuple(n for n in cp.next if n not in finished) if finished else cp.next,
        "checkpoint_id": cp.id,
        "parent_id": cp.parent_id,
        "metadata": cp.metadata,
        "created_at": _dt.datetime.fromtimestamp(cp.created_at, tz=_dt.timezone.utc),
        "interrupts": tuple(
            Interrupt.load(w.value) for w in cp.pending_writes if w.kind == "interrupt"
        ),
        "step": cp.step,
    }


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
        return all(getattr(self, f.name) == getattr(other, f.name) for f in fields(self))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self))
        return f"StateSnapshot({shown})"

    def __reduce__(self) -> tuple[Any, ...]:
        # a copy or a pickle is a plain snapshot: it must not drag the listing along
        return (StateSnapshot, tuple(getattr(self, f.name) for f in fields(self)))

    def message_count(self) -> int:
        """Messages in the state, counted without building it when the saver can."""
        history: CheckpointHistory | None = self.__dict__.get("_history")
        count = None if history is None else history.size(self.__dict__["_index"], "messages")
        return _count(self.values) if count is None else count


def listed_snapshots(history: CheckpointHistory, config: RunnableConfig) -> list[StateSnapshot]:
    """Snapshots of every checkpoint of ``history``, their states built only when read."""
    out: list[StateSnapshot] = []
    for index in range(len(history)):
        snap = object.__new__(_ListedSnapshot)
        state = snap.__dict__
        state.update(_fields_of(history.bare(index)))
        state["_history"], state["_index"], state["_base_config"] = history, index, config
        out.append(snap)
    return out


def _count(values: dict[str, Any]) -> int:
    return len(values.get("messages", ()) or ())


def message_count(snap: StateSnapshot) -> int:
    """How many messages the snapshot's state holds (a listed one: without building it)."""
    return snap.message_count() if isinstance(snap, _ListedSnapshot) else _count(snap.values)


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


def _snapshot_html(snap: StateSnapshot) -> str:
    """The snapshot as HTML: the conversation, the other keys, the checkpoint line."""
    esc = html.escape
    rows: list[str] = []
    for role, text, calls in conversation(snap):
        extra = "".join(f'<div style="color:#6a1b9a">&rarr; {esc(c)}</div>' for c in calls)
        rows.append(
            '<tr><td style="text-align:right;color:#555;vertical-align:top">'
            f"<b>{esc(role)}</b></td>"
            f'<td style="text-align:left;white-space:pre-wrap">{esc(text)}{extra}</td></tr>'
        )
    others = "".join(
        f'<tr><td style="text-align:right"><code>{esc(k)}</code></td>'
        f'<td style="text-align:left"><code>{esc(repr(v))[:300]}</code></td></tr>'
        for k, v in snap.values.items()
        if k != "messages"
    )
    pending = "".join(f"<li>{esc(repr(i.value))}</li>" for i in snap.interrupts)
    head = (
        f"<b>step {snap.step}</b> &middot; checkpoint <code>{esc(str(snap.checkpoint_id))}</code>"
        f" &middot; next: <code>{esc(', '.join(snap.next) or 'nothing (finished)')}</code>"
    )
    parts = [f'<div style="font-family:sans-serif;font-size:13px">{head}']
    if rows:
        parts.append(f"<table>{''.join(rows)}</table>")
    if others:
        parts.append(f"<table>{others}</table>")
    if pending:
        parts.append(f"<div><b>waiting for an answer to:</b><ul>{pending}</ul></div>")
    parts.append("</div>")
    return "".join(parts)


class StateHistory(list[StateSnapshot]):
    """A thread's checkpoints, newest first: a plain list that Jupyter shows as a timeline.

    From ``get_state_history``, each snapshot builds its ``values`` when they are read
    (from items the listing decoded once) and does not keep them, so the list holds
    ``O(n)`` however long the thread; drawing the timeline builds no state.

    Example:
        >>> history = StateHistory([])
        >>> history == [] and "no checkpoints" in history._repr_html_()
        True
    """

    __slots__ = ()

    def _repr_html_(self) -> str:
        """One row per checkpoint: step, what wrote it, what runs next, time and id."""
        esc = html.escape
        if not self:
            return '<div style="font-family:sans-serif;font-size:13px">no checkpoints</div>'
        rows: list[str] = []
        for snap in self:
            source = str(snap.metadata.get("source", ""))
            nodes = written_by(snap)
            colour = {"input": "#43a047", "update": "#8e24aa"}.get(source, "#1e88e5")
            when = snap.created_at.strftime("%H:%M:%S.%f")[:-3] if snap.created_at else ""
            count = message_count(snap)
            waiting = " &#9208; waiting for an answer" if snap.interrupts else ""
            rows.append(
                f'<tr><td style="text-align:right"><b>{snap.step}</b></td>'
                f'<td><span style="color:{colour}">&#9679;</span> {esc(nodes)}'
                f'<span style="color:#888"> ({esc(source)})</span></td>'
                f"<td><code>{esc(', '.join(snap.next) or '-')}</code>{waiting}</td>"
                f'<td style="text-align:right">{count}</td>'
                f'<td style="color:#666">{esc(when)}</td>'
                f"<td><code>{esc(str(snap.checkpoint_id))}</code></td></tr>"
            )
        head = "".join(
            f'<th style="text-align:left">{h}</th>'
            for h in ("step", "written by", "next", "messages", "time (UTC)", "checkpoint id")
        )
        return (
            '<div style="font-family:sans-serif;font-size:13px">'
            f"<b>{len(self)} checkpoints</b>, newest first"
            f"<table><tr>{head}</tr>{''.join(rows)}</table></div>"
        )
