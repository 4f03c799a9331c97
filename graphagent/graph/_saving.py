"""How a root run stores its checkpoints: its input held back until its first step, each
step's checkpoint as it commits (``durability="sync"``, the default; ``"async"``: the
write runs while the next step does), or, with ``durability="exit"``, the steps held
back and stored as one checkpoint when the run ends, pauses or fails. No I/O here:
these return or yield the effects.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from checkpoint.base import Change, CheckpointWrite, PendingWrite
from graphagent.config import RunnableConfig
from graphagent.errors import UserError
from graphagent.graph._command import RunContext
from graphagent.graph._effects import Program, Put, PutMany, PutWrites
from graphagent.graph._step import Position, combine, write

__all__ = ["DURABILITY", "Saving", "durability_of"]

DURABILITY = ("sync", "async", "exit")
"""The durability modes a run takes (docs/graphs.md, "Durability")."""


def durability_of(value: Any) -> str:
    """``value`` checked as a durability mode (``None``: ``"sync"``).

    Raises:
        UserError: not one of :data:`DURABILITY`.
    """
    if value is None:
        return "sync"
    if value not in DURABILITY:
        raise UserError(
            f"durability={value!r} is not a mode; use one of {', '.join(map(repr, DURABILITY))}"
        )
    return str(value)


class Saving:
    """The checkpoint half of :class:`~graphagent.graph._run.Run` (a mixin: the run's
    own slots hold the state)."""

    __slots__ = ("background", "held", "unsaved")
    pos: Position
    ctx: RunContext
    config: RunnableConfig
    # the run's input checkpoint (and work to keep with it), stored with the first step
    unsaved: tuple[CheckpointWrite, tuple[PendingWrite, ...]] | None
    # durability="exit": the steps committed since the last write ([] holds none)
    held: list[Any] | None
    # durability="async": a step's write is performed while the next step runs
    background: bool

    @property
    def thread(self) -> str | None:
        """The thread the run (or the root run it is nested in) works on."""
        return self.ctx.thread

    def _defer(self, checkpoint: CheckpointWrite, keep: tuple[PendingWrite, ...] = ()) -> None:
        """Hold the run's input checkpoint back until its first step commits.

        They are stored together (``put_many``), so a run that loses a race on its thread
        leaves nothing behind, not even its input, and running it again adds it once.
        ``keep``: pending work of the head to carry over, should the input be stored alone.
        """
        self.unsaved = (checkpoint, keep)
        self.pos.checkpoint_id = checkpoint.id

    def hold(self, checkpoint: CheckpointWrite) -> None:
        """``durability="exit"``: keep a committed step's checkpoint back, folded into the
        steps held before it; the run stands on its id (interrupt ids grow from it)."""
        held, values = self.held, self.pos.values
        assert held is not None
        if not held:
            held.extend([checkpoint.parent_id, {}, []])
        changes: dict[str, Change] = held[1]
        for key, change in checkpoint.changes.items():
            changes[key] = combine(changes.get(key), change, values[key])
        for node in checkpoint.metadata.get("nodes", ()):
            if node not in held[2]:
                held[2].append(node)
        held.append(checkpoint)
        self.pos.checkpoint_id = checkpoint.id

    def _folded(self, checkpoint: CheckpointWrite | None) -> CheckpointWrite | None:
        """The held steps (and ``checkpoint`` after them) as one checkpoint; clears them."""
        held = self.held
        if held and checkpoint is not None:
            self.hold(checkpoint)
        if not held:
            return checkpoint
        parent, changes, nodes = held[0], held[1], held[2]
        last: CheckpointWrite = held[-1]
        held.clear()
        meta = {**last.metadata, "nodes": nodes}
        return replace(last, parent_id=parent, changes=changes, metadata=meta)

    def flush(self) -> Program[None]:
        """Store what is held back: the input checkpoint (the run stops before its first
        step commits: it ends, pauses or fails there) and, under ``durability="exit"``,
        the steps committed since."""
        folded = self._folded(None) if self.held else None
        if folded is not None:
            yield self._put(folded)
            return
        if self.unsaved is None:
            return
        (checkpoint, keep), self.unsaved = self.unsaved, None
        pos, thread = self.pos, self.thread
        assert thread is not None
        yield Put(thread, checkpoint, pos.head)
        pos.checkpoint_id = pos.head = checkpoint.id
        if keep:
            yield PutWrites(thread, checkpoint.id, keep)

    def _put(self, checkpoint: CheckpointWrite) -> Put | PutMany:
        """The effect storing ``checkpoint`` (with the held-back input, if any); the run
        moves to it now (a put that fails ends the run)."""
        pos, thread = self.pos, self.ctx.thread  # not the property: every step (~0.04 µs)
        assert thread is not None
        if self.held:
            folded = self._folded(checkpoint)
            assert folded is not None
            checkpoint = folded
        effect: Put | PutMany
        if self.unsaved is not None:
            effect = PutMany(thread, (self.unsaved[0], checkpoint), pos.head)
            self.unsaved = None
        else:
            effect = Put(thread, checkpoint, pos.head)
        pos.checkpoint_id = pos.head = checkpoint.id
        return effect

    def _anchor(self) -> Program[None]:
        """Make the current position the thread's head before pausing there.

        A replay or fork of an older checkpoint that pauses before finishing a step has
        written nothing yet; a ``"fork"`` checkpoint (same values, same next nodes) makes
        it the head, so ``get_state`` shows its question and ``Command(resume=...)`` on
        the thread continues it.
        """
        pos = self.pos
        if self.unsaved is not None or self.held:
            yield from self.flush()
        elif pos.checkpoint_id is not None and pos.checkpoint_id != pos.head:
            yield self._put(write(pos, self.config, {}, "fork"))
