"""The end of an entrypoint's step: its tasks still running are waited for, and the
questions of every task that paused are asked together."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from graphagent._executor import in_thread
from graphagent.errors import GraphInterrupt
from graphagent.graph._func._journal import Journal

__all__ = ["asettle", "asked", "settle"]


def _paused(futures: Iterable[Any]) -> list[GraphInterrupt]:
    """The interrupts of the finished futures among ``futures``."""
    found = []
    for future in futures:
        if not future.done() or (isinstance(future, asyncio.Future) and future.cancelled()):
            continue
        error = future.exception() if isinstance(future, asyncio.Future) else future.error()
        if isinstance(error, GraphInterrupt):
            found.append(error)
    return found


def settle(journal: Journal, stopped: bool) -> None:
    """Wait (in this thread) for every task call the run started and has not finished;
    keep the interrupts of those that paused in ``journal.paused``.

    ``stopped``: the function raised or paused; calls no worker has taken yet are
    cancelled then, not run (after a success they run: the function may not wait for a
    task it started for its effect).
    """
    started = list(journal.started)
    for future in started:
        if not isinstance(future, asyncio.Future) and not (stopped and future.cancel()):
            future.wait()
    journal.paused.extend(_paused(started))


async def asettle(journal: Journal) -> None:
    """:func:`settle` under the event loop."""
    started = list(journal.started)
    loop = asyncio.get_running_loop()
    mine = [f for f in started if isinstance(f, asyncio.Future) and f.get_loop() is loop]
    if mine:
        await asyncio.gather(*mine, return_exceptions=True)
    for future in started:
        if not isinstance(future, asyncio.Future):
            await in_thread(future.wait)
    journal.paused.extend(_paused(started))


def asked(signal: GraphInterrupt, journal: Journal) -> GraphInterrupt:
    """``signal`` with the questions of the run's other paused tasks added (each once)."""
    values = list(signal.values)
    seen = {getattr(v, "id", None) for v in values}
    for other in journal.paused:
        for value in other.values:
            key = getattr(value, "id", None)
            if key is None or key not in seen:
                seen.add(key)
                values.append(value)
    if len(values) == len(signal.values):
        return signal
    return GraphInterrupt(tuple(values))
