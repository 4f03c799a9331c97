"""Watching runs: a run's events, told to the observers of the process (logging,
tracing, progress) and to the run's lifecycle listeners (the compiled graph's and the
run config's), which are made current while the run works.

With nobody listening a run's events pass through untouched (one flag check).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from typing import Any

from graphagent._internal import observe
from graphagent.config import RunnableConfig
from graphagent.graph._drive import DONE, RESULT, Event
from graphagent.graph._listen import ListenerObserver, listener_observers
from graphagent.graph._plan import Plan

__all__ = ["awatched", "watched"]


def _listeners(plan: Plan, config: RunnableConfig, nested: bool) -> tuple[ListenerObserver, ...]:
    """The run's lifecycle listeners: the graph's, and the config's unless the run is
    nested (a nested run's config listeners are its parent run's, already current)."""
    found: tuple[ListenerObserver, ...] = plan.listeners
    if config.listeners and not nested:
        found = found + listener_observers(config.listeners, "config['listeners']")
    return found


def watched(
    events: Generator[Event, None, None],
    plan: Plan,
    config: RunnableConfig,
    nested: bool,
    input: Any = None,
) -> Generator[Event, None, None]:
    """``events``, watched as one run of ``plan`` when someone observes runs."""
    listeners = _listeners(plan, config, nested)
    if not observe.ACTIVE and not listeners:
        return events
    return _observed_run(events, plan, config, nested, input, listeners)


def awatched(
    events: AsyncGenerator[Event, None],
    plan: Plan,
    config: RunnableConfig,
    nested: bool,
    input: Any = None,
) -> AsyncGenerator[Event, None]:
    """Async :func:`watched`."""
    listeners = _listeners(plan, config, nested)
    if not observe.ACTIVE and not listeners:
        return events
    return _aobserved_run(events, plan, config, nested, input, listeners)


def _run_watch(
    plan: Plan, config: RunnableConfig, nested: bool, input: Any, listening: observe.Listening
) -> observe.Watch:
    with listening.active():
        return observe.run(
            plan.name,
            config.thread_id,
            nested=nested,
            agent=plan.agent,
            input=input,
            config=config,
        )


def _observed_run(
    events: Generator[Event, None, None],
    plan: Plan,
    config: RunnableConfig,
    nested: bool,
    input: Any,
    listeners: tuple[ListenerObserver, ...],
) -> Generator[Event, None, None]:
    """``events``, with the run's watch entered (and its listeners current) while the
    run works, not while the caller handles an event, so node spans nest under the run
    in this and the engine's threads."""
    listening = observe.Listening(listeners)
    try:
        watch = _run_watch(plan, config, nested, input, listening)
        with watch:
            while True:
                with listening.active(), watch.entered():
                    item = next(events, DONE)
                if item is DONE:
                    return
                if item[0] == RESULT:  # type: ignore[index]
                    watch.record(item[1])  # type: ignore[index]
                yield item  # type: ignore[misc]
    finally:
        events.close()
        listening.close()


async def _aobserved_run(
    events: AsyncGenerator[Event, None],
    plan: Plan,
    config: RunnableConfig,
    nested: bool,
    input: Any,
    listeners: tuple[ListenerObserver, ...],
) -> AsyncGenerator[Event, None]:
    """Async :func:`_observed_run`: entered around each step of ``events`` in this task."""
    listening = observe.Listening(listeners)
    try:
        watch = _run_watch(plan, config, nested, input, listening)
        with watch:
            while True:
                with listening.active(), watch.entered():
                    try:
                        item = await events.__anext__()
                    except StopAsyncIteration:
                        return
                if item[0] == RESULT:
                    watch.record(item[1])
                yield item
    finally:
        await events.aclose()
        listening.close()
