"""A step's finished tasks stored as each finishes, so a crash mid-step loses only the
tasks still running (and, streamed with ``subgraphs=True``, reported as each finishes).

A root run on a saver hands a step of two or more tasks (parallel branches, a ``Send``
fan-out) a :class:`~graphagent.graph._effects.Keep`: where to store finished work. The
drivers store each task's result as a pending write of kind ``"done"`` on the step's
checkpoint when the task finishes; a run that continues the thread's head after a crash
takes them up (``_pause.take_pending``) and reruns only the tasks without one. Writes
are grouped: while one write is under way, the tasks finishing meanwhile wait in a queue
and go in the next write (a group commit), so a fan-out of 1,000 quick tasks costs a few
writes, not 1,000, and a task never waits for more than the write in flight.

A step that commits drops its checkpoint's pending writes (every saver does, when a
checkpoint is written on top); the ``"done"`` writes of a checkpoint that is not the
head (a crashed step a replay branched away from) are never taken up: replaying it
reruns its step. A step that stops (pauses, fails) stores its finished work again, as
``"update"`` writes, which replace them task by task.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from checkpoint.base import PendingWrite
from checkpoint.errors import SerializationError
from graphagent.graph._command import Command
from graphagent.graph._effects import Done, Keep, Outcome, Task
from graphagent.graph._step import normalize, shown

__all__ = ["DONE_KIND", "AsyncKeeper", "Keeper", "kept_write", "reporter", "update_event"]

DONE_KIND = "done"
"""The kind of the pending write that keeps a finished task of a step still running."""


def kept_write(key: str, outcome: Outcome) -> PendingWrite | None:
    """The pending write keeping task ``key``'s finished work (``None``: nothing to
    keep: it did not finish, or returned what the step's merge will refuse, or hands a
    command to a parent graph, which only the commit can do)."""
    if type(outcome) is not Done:
        return None
    value = outcome.value
    if isinstance(value, Command) and value.graph is not None:
        return None
    try:
        update, goto = normalize(key, value)
    except Exception:  # the step's merge raises it, naming the node
        return None
    return PendingWrite(key, DONE_KIND, [dict(update) if update is not None else None, goto])


def update_event(task: Task, outcome: Outcome) -> dict[str, Any] | None:
    """The ``"updates"`` event of a task that just finished (``None``: none to hand out
    now: it did not finish, or its result is one the step's merge will refuse)."""
    kept = kept_write(task.key, outcome)
    if kept is None:
        return None
    return {task.spec.name: shown(kept.value[0])}


def reporter(put: Callable[[Any], None]) -> Callable[[Task, Outcome], None]:
    """What hands a finished task's update to the live channel ``put``."""

    def report(task: Task, outcome: Outcome) -> None:
        event = update_event(task, outcome)
        if event is not None:
            put(("updates", event))

    return report


class Keeper:
    """Stores finished tasks' work from the threads running them, one write at a time.

    The thread whose task finishes while no write is under way becomes the writer and
    stores everything queued until the queue is empty; the others only queue. The
    first error a write raised is kept for the driver (:attr:`error`) and ends the
    keeping: the run then fails with it, as a failed checkpoint write fails it.
    """

    __slots__ = ("busy", "error", "guard", "keep", "queue", "write")

    def __init__(self, keep: Keep, write: Callable[[str, str, list[PendingWrite]], Any]) -> None:
        self.keep = keep
        self.write = write  # the saver's put_writes
        self.guard = threading.Lock()
        self.queue: list[PendingWrite] = []
        self.busy = False
        self.error: BaseException | None = None

    def finished(self, key: str, outcome: Outcome) -> None:
        """Task ``key`` finished with ``outcome``: store its work (now, or in the write
        after the one under way)."""
        kept = kept_write(key, outcome)
        if kept is None:
            return
        with self.guard:
            self.queue.append(kept)
            if self.busy or self.error is not None:
                return
            self.busy = True
        while True:
            with self.guard:
                batch, self.queue = self.queue, []
                if not batch or self.error is not None:
                    self.busy = False
                    return
            try:
                _store(self.write, self.keep, batch)
            except Exception as exc:  # a saver error: the driver ends the run with it
                with self.guard:
                    self.error = exc


class AsyncKeeper:
    """:class:`Keeper` under the event loop: the driver hands it what finished since its
    last wait, stored in one write while the other tasks run on."""

    __slots__ = ("keep", "write")

    def __init__(
        self, keep: Keep, write: Callable[[str, str, list[PendingWrite]], Awaitable[Any]]
    ) -> None:
        self.keep = keep
        self.write = write  # the saver's aput_writes

    async def finished(self, outcomes: list[tuple[str, Outcome]]) -> None:
        """Store the work of the tasks that just finished (the first error is raised).

        A cancellation meanwhile (the stream closed, a timeout) waits for the write to
        land before it goes on: cut mid-way, a write can leave the saver's connection
        unusable for the step's own pending writes that the stop stores next.
        """
        batch = [w for key, o in outcomes if (w := kept_write(key, o)) is not None]
        if not batch:
            return
        writing = asyncio.ensure_future(self._store(batch))
        try:
            await asyncio.shield(writing)
        except asyncio.CancelledError:
            await asyncio.wait([writing])
            if not writing.cancelled():
                writing.exception()  # retrieved: the stop is what the run ends with
            raise

    async def _store(self, batch: list[PendingWrite]) -> None:
        keep = self.keep
        try:
            await self.write(keep.thread_id, keep.checkpoint_id, batch)
        except SerializationError:
            for one in batch:  # keep what can be stored; the rest reruns after a crash
                try:
                    await self.write(keep.thread_id, keep.checkpoint_id, [one])
                except SerializationError:
                    continue


def _store(
    write: Callable[[str, str, list[PendingWrite]], Any], keep: Keep, batch: list[PendingWrite]
) -> None:
    """Store ``batch``; a value the serde refuses is left out (only keeping is lost: that
    task reruns after a crash, and its step stores or refuses it when it commits)."""
    try:
        write(keep.thread_id, keep.checkpoint_id, batch)
    except SerializationError:
        for one in batch:
            try:
                write(keep.thread_id, keep.checkpoint_id, [one])
            except SerializationError:
                continue
