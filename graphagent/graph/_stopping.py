"""How a run stops mid-way, without I/O: a step that paused or failed (its finished work
and questions kept as pending writes), a pause before an ``interrupt_before`` node or
after an ``interrupt_after`` one, and a nested run's position left for its root to store.
A mixin of :class:`~graphagent.graph._run.Run` (whose slots hold the state).
"""

from __future__ import annotations

from typing import Any

from checkpoint.base import Change, PendingWrite
from graphagent.errors import GraphInterrupt, UserError
from graphagent.graph._constants import INTERRUPT
from graphagent.graph._effects import Emit, Program, PutWrites
from graphagent.graph._pause import paused, pending_writes
from graphagent.graph._plan import Plan
from graphagent.graph._saving import Saving
from graphagent.graph._step import BREAKPOINT, Step, attach_node

__all__ = ["Stopping"]


class Stopping(Saving):
    """The stopping half of a run: pauses, failures, breakpoints."""

    __slots__ = ()
    plan: Plan
    modes: frozenset[str]
    nested: bool
    saves: bool
    base: tuple[str, ...]
    breakpoint: list[str]
    start_input: dict[str, Any]
    failed_before: bool  # the checkpoint the run stands on holds a failed task's error
    net: dict[str, Change] | None
    key: str

    def _net_dump(self) -> dict[str, list[Any]]:
        """What a nested run changed (beyond its input), in its stored form."""
        return {k: [kind, payload] for k, (kind, payload) in (self.net or {}).items()}

    def suspend(self, step: Step) -> Program[dict[str, Any]]:
        """Stop at an unfinished step: keep its finished work and questions, or fail."""
        pos = self.pos
        if self.nested:
            if step.failure is not None:
                node, exc = step.failure
                raise attach_node(exc, node)
            self._leave_position(step, skip=False)
            raise GraphInterrupt(step.interrupts)
        if step.failure is None and not self.saves:
            node = next(iter(step.paused))
            raise UserError(
                f"node {node!r} called interrupt(), which needs a saver and "
                "a thread_id: compile(saver=MemorySaver()) and pass "
                "config={'thread_id': ...}"
            )
        if self.saves and pos.checkpoint_id is not None:
            if step.failure is None:
                yield from self._anchor()
            else:
                yield from self.flush()  # the input stays, for invoke(None) to retry from
            yield from self._store_step(step)
        if step.failure is not None:
            node, exc = step.failure
            raise attach_node(exc, node)
        return (
            yield from paused(
                self.plan, pos.values, step, self.modes, (self.ctx.anchor, self.base, pos.step + 1)
            )
        )

    def _store_step(self, step: Step) -> Program[None]:
        """The unfinished step as pending writes, grouped by top-level task."""
        pos, thread = self.pos, self.thread
        assert thread is not None and pos.checkpoint_id is not None
        writes = pending_writes(step, self.ctx, self.failed_before)
        if writes:
            yield PutWrites(thread, pos.checkpoint_id, writes)

    def stop_before(self) -> Program[None]:
        """Pause before the ``interrupt_before`` nodes :meth:`next_tasks` reached."""
        if self.nested:
            self._leave_position(None, skip=True)
            raise GraphInterrupt(())
        thread = self.thread
        assert thread is not None
        yield from self._anchor()
        assert self.pos.checkpoint_id is not None
        yield PutWrites(
            thread,
            self.pos.checkpoint_id,
            (PendingWrite(BREAKPOINT, "breakpoint", self.breakpoint),),
        )
        if "updates" in self.modes:
            yield Emit("updates", {INTERRUPT: ()})

    def stop_after(self) -> Program[dict[str, Any]]:
        """Pause after an ``interrupt_after`` node: the checkpoint already says what is next."""
        if self.nested:
            self._leave_position(None, skip=False)
            raise GraphInterrupt(())
        if "updates" in self.modes:
            yield Emit("updates", {INTERRUPT: ()})
        return self.plan.schema.output(self.pos.values)

    def _leave_position(self, step: Step | None, *, skip: bool) -> None:
        """A nested run's position, left in the shared context for the root to store."""
        done = step.dump_results() if step is not None else {}
        position = self.pos.dump(done, skip)
        position["net"], position["input"] = self._net_dump(), self.start_input
        self.ctx.suspend(self.key, position)
