"""A run's event stream: what its executor publishes, read by any number of clients.

Each event has an id that orders it within the run, so a client that lost its connection
resumes after the last id it saw (``Last-Event-ID``; ``"-1"`` replays the run from its
start). :class:`LocalEvents` keeps them in this process; the Redis home
(``_redis.RedisEvents``) keeps them in a Redis stream per run, so a client on one
machine reads a run that executes on another.

Events whose name starts with ``__`` are the server's own (the run's result for
``runs.wait``) and never reach an SSE client.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any, Protocol

__all__ = ["END", "RESULT", "Event", "Events", "LocalEvents"]

Event = tuple[str, str, Any]
"""``(id, event, data)``: ``data`` is already plain JSON."""

RESULT = "__result__"
"""The run's outcome, as ``runs.wait`` and ``runs.join`` answer (published last)."""

END = "__end__"
"""No more events: the run is over."""


class Events(Protocol):
    """Where runs publish their events and clients read them."""

    async def publish(self, run_id: str, event: str, data: Any) -> str:
        """Append an event to the run's stream; its id."""

    def read(self, run_id: str, after: str | None) -> AsyncIterator[Event]:
        """The run's events after id ``after`` (``None``: only those still to come;
        ``"-1"``: all), ending after :data:`END`."""

    async def end(self, run_id: str, result: Any) -> bool:
        """Publish the run's :data:`RESULT` then its :data:`END` as one step, unless the run
        has ended already (another executor ended it): at most one result per run, and a
        reader never sees a result without its end.

        Returns:
            Whether this call ended the run.
        """

    async def has(self, run_id: str) -> bool:
        """Whether the run's stream is kept (a run that ended long ago may have none)."""

    async def ended(self, run_id: str) -> bool:
        """Whether the run's stream holds its end."""

    async def close(self) -> None:
        """Let go of connections."""


class _Log:
    __slots__ = ("changed", "done", "entries", "touched")

    def __init__(self) -> None:
        self.entries: list[Event] = []
        self.changed = asyncio.Event()
        self.done = False
        self.touched = time.monotonic()


class LocalEvents:
    """Runs' events in this process, kept for the ``keep`` most recent runs.

    Args:
        keep: how many runs' streams to keep for late readers (a run's reader that
            arrives after the run ended and names no event id reads nothing).
    """

    def __init__(self, keep: int = 2000) -> None:
        self.keep = keep
        self._logs: OrderedDict[str, _Log] = OrderedDict()

    def _log(self, run_id: str) -> _Log:
        log = self._logs.get(run_id)
        if log is None:
            log = self._logs[run_id] = _Log()
            while len(self._logs) > self.keep:
                oldest = next(iter(self._logs))
                if not self._logs[oldest].done:
                    break  # a live run's stream is never dropped
                del self._logs[oldest]
        return log

    async def publish(self, run_id: str, event: str, data: Any) -> str:
        return self._append(self._log(run_id), event, data)

    @staticmethod
    def _append(log: _Log, event: str, data: Any) -> str:
        ident = str(len(log.entries))
        log.entries.append((ident, event, data))
        if event == END:
            log.done = True
        log.changed.set()
        log.changed = asyncio.Event()
        return ident

    async def end(self, run_id: str, result: Any) -> bool:
        log = self._log(run_id)
        if log.done:
            return False
        # no await between the check and the end: another caller cannot come between
        self._append(log, RESULT, result)
        self._append(log, END, None)
        return True

    async def read(self, run_id: str, after: str | None) -> AsyncIterator[Event]:
        log = self._log(run_id)
        if after is None:
            start = len(log.entries)
        else:
            start = int(after) + 1 if after.lstrip("-").isdigit() else 0
            start = max(start, 0)
        if after is None and log.done:
            return
        while True:
            while start < len(log.entries):
                entry = log.entries[start]
                start += 1
                yield entry
                if entry[1] == END:
                    return
            if log.done:
                return
            await log.changed.wait()

    async def has(self, run_id: str) -> bool:
        return run_id in self._logs

    async def ended(self, run_id: str) -> bool:
        log = self._logs.get(run_id)
        return log is not None and log.done

    async def close(self) -> None:
        self._logs.clear()
