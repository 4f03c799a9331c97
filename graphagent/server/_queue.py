"""Handing runs to executors: in this process, or through Redis to any worker.

:class:`LocalQueue` starts each run as a task of this process as soon as it is created
(no polling: a ``runs.wait`` costs the run itself plus a few record writes), one run per
thread at a time in the order they were created. Cancel reaches the task directly.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

from graphagent.server._execute import Executor

__all__ = ["LocalQueue", "Queue", "stop_and_outlast"]


class Queue(Protocol):
    """Where created runs wait for an executor."""

    async def submit(self, run: dict[str, Any]) -> None:
        """Queue a pending run."""

    async def cancel(self, run: dict[str, Any], action: str) -> None:
        """Stop a pending or running run (``interrupt`` or ``rollback``)."""

    async def start(self) -> None:
        """Begin taking runs (executors that pull start here)."""

    async def close(self) -> None:
        """Stop taking runs; let the running ones stop."""


async def stop_and_outlast(executor: Executor, run_id: str, task: asyncio.Task[Any]) -> None:
    """Stop ``task``, the execution of ``run_id`` that a cluster's queue holds a lease for,
    as ``lost`` (handed over, unsettled) unless a stop was asked, and wait until it ended,
    whatever cancels the caller meanwhile (re-raised once it ended): the lease is released
    after, so that the next executor never runs the thread beside one still writing."""
    if task.done():
        return
    if run_id not in executor.stops:  # else stopping already: a second cancel would cut
        executor.stops[run_id] = "lost"  # what it stores as it stops
        task.cancel()
    cancelled = False
    while not task.done():
        try:
            await asyncio.wait({task})
        except asyncio.CancelledError:
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


class LocalQueue:
    """Runs execute as tasks of this process.

    Args:
        executor: what executes them.
    """

    def __init__(self, executor: Executor) -> None:
        self.executor = executor
        self._locks: dict[str, asyncio.Lock] = {}
        self._waiting: dict[str, int] = {}

    async def submit(self, run: dict[str, Any]) -> None:
        run_id = run["run_id"]
        task = asyncio.ensure_future(self._run(run_id, run["_parent"]))
        self.executor.tasks[run_id] = task

    async def _run(self, run_id: str, thread: str) -> None:
        lock = self._locks.setdefault(thread, asyncio.Lock())
        self._waiting[thread] = self._waiting.get(thread, 0) + 1
        try:
            async with lock:  # FIFO: a thread's runs go in the order they were created
                await self.executor.execute(run_id)
        finally:
            self.executor.tasks.pop(run_id, None)
            self._waiting[thread] -= 1
            if not self._waiting[thread]:
                del self._waiting[thread], self._locks[thread]

    async def cancel(self, run: dict[str, Any], action: str) -> None:
        run_id = run["run_id"]
        task = self.executor.tasks.get(run_id)
        self.executor.stops[run_id] = action
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        tasks = list(self.executor.tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
