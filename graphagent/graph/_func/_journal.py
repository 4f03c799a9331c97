"""What a run keeps of its tasks: each finished call's result, found again on a replay.

A task call is numbered in the order its caller (the entrypoint, or a task) makes its
calls; its result is kept under the caller's task path and that number, in the run's
shared context (``RunContext.suspended``), so that a step that pauses stores it with the
step and a resume finds it. When the step's checkpoint is stored, each result is also
stored at once as a pending write of its own, so a crash loses none that finished.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from checkpoint.base import PendingWrite
from graphagent._internal.mirror import saver_errors
from graphagent.config import RunnableConfig
from graphagent.errors import TaskReplayError
from graphagent.graph._command import TaskScope, path_key

__all__ = ["RUN", "Call", "Journal", "TaskUpdate", "Writes", "next_call", "writes_of"]

_RESULT = "task"


@dataclass(frozen=True, slots=True)
class TaskUpdate:
    """A task's result on its way to an ``"updates"`` stream (through the run's writer)."""

    name: str
    value: Any


@dataclass(slots=True)
class Journal:
    """One entrypoint run's bookkeeping of its tasks.

    Attributes:
        config: the run's config (its writer carries task updates to a stream).
        loop: the event loop of an async run: a task in a worker thread stores its result
            through the saver's async methods on it.
        counts: per task name, how many calls ran and how many were replayed.
        tasks: the tasks called, by name.
        started: futures of calls started, waited for when the entrypoint returns.
        paused: interrupts of tasks that paused, surfaced together with the step's.
        cache: where tasks with a ``CachePolicy`` keep results (``entrypoint(cache=)``).
    """

    config: RunnableConfig | None
    loop: asyncio.AbstractEventLoop | None = None
    cache: Any = None
    counts: dict[str, list[int]] = field(default_factory=dict)
    tasks: dict[str, Any] = field(default_factory=dict)
    started: list[Any] = field(default_factory=list)
    paused: list[Any] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    writes: Writes | None = None

    def count(self, task: Any, replayed: bool) -> None:
        """One more call of ``task`` that ran (or was replayed)."""
        with self.lock:
            tally = self.counts.setdefault(task.name, [0, 0])
            tally[1 if replayed else 0] += 1
            self.tasks.setdefault(task.name, task)

    def report(self, name: str, value: Any) -> None:
        """Hand a finished task's result to an ``"updates"`` stream, if one is read."""
        if self.config is not None:
            self.config.writer(TaskUpdate(name, value))


RUN: ContextVar[Journal | None] = ContextVar("graphagent_func_run", default=None)
"""The journal of the entrypoint run this code is part of (``None``: no entrypoint)."""


@dataclass(slots=True)
class Call:
    """One task call: where it runs and where its result is kept.

    Attributes:
        name: the task's name.
        scope: the call's own engine scope (its ``interrupt()`` answers live under it).
        key: where its result is kept in the run's shared context.
        found: the result a earlier run of the step recorded, if any.
        replayed: whether ``found`` holds it (the call does not run again).
    """

    name: str
    scope: TaskScope
    key: str
    found: Any = None
    replayed: bool = False

    def fresh(self) -> None:
        """Start the call's counters again (a retry runs it afresh)."""
        scope = self.scope
        scope.calls = scope.runs = scope.subtasks = 0

    def keep(self, value: Any) -> PendingWrite | None:
        """Keep ``value`` as this call's result in the run; returns the pending write to
        store at once (``None`` when the step's checkpoint is not stored yet)."""
        ctx = self.scope.ctx
        if ctx is None:
            return None
        record = {_RESULT: self.name, "result": value}
        ctx.suspend(self.key, record)
        if ctx.kept_on is None or ctx.saver is None or ctx.thread is None:
            return None
        return PendingWrite(self.key, "nested", [self.key, record])


class Writes:
    """Stores finished calls' results as pending writes, several in one saver call when
    they finish together (group commit): the call that finds no store under way stores
    what has gathered, and goes on until nothing is left; the others return at once.

    So a fan-out of quick tasks costs a few saver round trips instead of one each, and
    worker threads do not queue on the saver's lock. A result is stored before the store
    under way ends; a process killed meanwhile runs that call again on resume.
    """

    __slots__ = ("buffer", "ctx", "lock", "storing")

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.buffer: list[PendingWrite] = []
        self.lock = threading.Lock()
        self.storing = False

    def _take(self, write: PendingWrite | None) -> list[PendingWrite]:
        """Add ``write``; the batch this caller should store (empty: another is storing)."""
        with self.lock:
            if write is not None:
                self.buffer.append(write)
            if (self.storing and write is not None) or not self.buffer:
                if write is None:
                    self.storing = False
                return []
            self.storing = True
            batch, self.buffer = self.buffer, []
            return batch

    def _failed(self) -> None:
        with self.lock:
            self.storing = False

    def store(self, write: PendingWrite, loop: asyncio.AbstractEventLoop | None) -> None:
        """Store ``write`` (with those gathered meanwhile) from a thread; through ``loop``
        when the run is async."""
        ctx = self.ctx
        batch = self._take(write)
        try:
            while batch:
                with saver_errors():
                    if loop is None:
                        ctx.saver.put_writes(ctx.thread, ctx.kept_on, batch)
                    else:
                        coro = ctx.saver.aput_writes(ctx.thread, ctx.kept_on, batch)
                        asyncio.run_coroutine_threadsafe(coro, loop).result()
                batch = self._take(None)
        except BaseException:
            self._failed()
            raise

    async def astore(self, write: PendingWrite) -> None:
        """:meth:`store` under the event loop."""
        ctx = self.ctx
        batch = self._take(write)
        try:
            while batch:
                with saver_errors():
                    await ctx.saver.aput_writes(ctx.thread, ctx.kept_on, batch)
                batch = self._take(None)
        except BaseException:
            self._failed()
            raise


def writes_of(journal: Journal | None, call: Call) -> Writes:
    """Where ``call``'s result is stored: its run's writes (one per run, so results that
    finish together are stored together), or writes of its own outside an entrypoint."""
    ctx = call.scope.ctx
    if journal is None:
        return Writes(ctx)
    with journal.lock:
        if journal.writes is None or journal.writes.ctx is not ctx:
            journal.writes = Writes(ctx)
        return journal.writes


def next_call(caller: TaskScope, name: str) -> Call:
    """Number the next task call of ``caller`` and look for its recorded result.

    Raises:
        TaskReplayError: the result recorded under this call's number is another task's.
    """
    index = caller.subtasks
    caller.subtasks = index + 1
    path = (*caller.path, f"{name}:{index}")
    key = path_key((*caller.path, f"~{index}"))
    ctx = caller.ctx
    if ctx is None:
        return Call(name, TaskScope(path), key)
    # the scope is named by the task: its interrupts and the chunks of models it calls say
    # "summarize", while its path ("summarize:0") tells its calls apart
    scope = TaskScope(path, ctx.answers.get(path_key(path), ()), ctx, node=name)
    record = ctx.suspended.get(key)
    if record is None:
        return Call(name, scope, key)
    if record.get(_RESULT) != name:
        where = " > ".join(caller.path)
        raise TaskReplayError(
            f"call #{index + 1} of tasks in {where!r} is {name!r}, but the run being resumed "
            f"called {record.get(_RESULT)!r} there: an entrypoint must call its tasks in the "
            "same order on every run (move what differs between runs, such as clocks, random "
            "numbers or reads of changing data, into a task)"
        )
    return Call(name, scope, key, record.get("result"), True)


def run_sync(fn: Callable[[], Any]) -> Any:
    """Run an async callable's coroutine to its end from sync code (a worker thread)."""
    return asyncio.run(fn())
