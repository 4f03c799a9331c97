"""``StateSnapshot``: a thread's state at one checkpoint, as users see it."""

from __future__ import annotations

import datetime as _dt
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
