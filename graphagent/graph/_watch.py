"""Observing runs: a driver's events watched as one run of a graph, when someone
observes runs (tracing, logs, the progress display)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from typing import Any

from graphagent._internal import observe
from graphagent.graph._plan import Plan

__all__ = ["Event", "awatched", "watched"]

Event = tuple[str, Any]
_DONE = object()


def watched(
    events: Generator[Event, None, None], plan: Plan, thread: str | None, nested: bool
) -> Generator[Event, None, None]:
    """``events``, watched as one run of ``plan`` when someone observes runs."""
    if not observe.ACTIVE:
        return events
    watch = observe.run(plan.name, thread, nested=nested, agent=plan.agent)
    return events if watch is observe.IDLE else _observed_run(events, watch)


def awatched(
    events: AsyncGenerator[Event, None], plan: Plan, thread: str | None, nested: bool
) -> AsyncGenerator[Event, None]:
    """Async :func:`watched`."""
    if not observe.ACTIVE:
        return events
    watch = observe.run(plan.name, thread, nested=nested, agent=plan.agent)
    return events if watch is observe.IDLE else _aobserved_run(events, watch)


def _observed_run(
    events: Generator[Event, None, None], watch: observe.Watch
) -> Generator[Event, None, None]:
    """``events``, with the run's watch entered while the run works (not while the caller
    handles an event), so node spans nest under the run in this and the engine's threads."""
    with watch:
        try:
            while True:
                with watch.entered():
                    item = next(events, _DONE)
                if item is _DONE:
                    return
                yield item  # type: ignore[misc]
        finally:
            events.close()


async def _aobserved_run(
    events: AsyncGenerator[Event, None], watch: observe.Watch
) -> AsyncGenerator[Event, None]:
    """Async :func:`_observed_run`: entered around each step of ``events`` in this task."""
    with watch:
        try:
            while True:
                with watch.entered():
                    try:
                        item = await events.__anext__()
                    except StopAsyncIteration:
                        return
                yield item
        finally:
            await events.aclose()
