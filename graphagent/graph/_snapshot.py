"""``StateSnapshot``: a thread's state at one checkpoint, as users see it."""

from __future__ import annotations

import datetime as _dt
import html
from dataclasses import dataclass, field
from typing import Any

from checkpoint.base import Checkpoint
from graphagent.config import RunnableConfig
from graphagent.graph._command import Interrupt

__all__ = ["StateSnapshot"]


@dataclass(frozen=True)
class StateSnapshot:
    """The state of a thread at one checkpoint.

    Attributes:
        values: the whole state.
        next: nodes due to run next; empty when the run finished.
        checkpoint_id: this checkpoint's id (pass it in a config to time-travel).
        parent_id: the checkpoint before it.
        metadata: ``source`` (``"input"``, ``"loop"``, ``"update"``), ``step``, user metadata.
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
        interrupts = tuple(Interrupt(*w.value) for w in cp.pending_writes if w.kind == "interrupt")
        return StateSnapshot(
            values=cp.values,
            next=cp.next,
            checkpoint_id=cp.id,
            parent_id=cp.parent_id,
            metadata=cp.metadata,
            created_at=_dt.datetime.fromtimestamp(cp.created_at, tz=_dt.timezone.utc),
            interrupts=interrupts,
            config=config.model_copy(update={"checkpoint_id": cp.id}),
            step=cp.step,
        )


def _snapshot_html(snap: StateSnapshot) -> str:
    """The snapshot as HTML: the conversation, the other keys, the checkpoint line."""
    esc = html.escape
    rows: list[str] = []
    for message in snap.values.get("messages", []) or []:
        role = getattr(message, "role", type(message).__name__)
        text = esc(getattr(message, "content", str(message)))
        calls = getattr(message, "tool_calls", ()) or ()
        extra = "".join(
            f'<div style="color:#6a1b9a">&rarr; {esc(c.name)}({esc(c.arguments)})</div>'
            for c in calls
        )
        if role == "tool":
            text = f"<b>{esc(getattr(message, 'name', ''))}</b>: {text}"
        rows.append(
            '<tr><td style="text-align:right;color:#555;vertical-align:top">'
            f"<b>{esc(role)}</b></td>"
            f'<td style="text-align:left;white-space:pre-wrap">{text}{extra}</td></tr>'
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
