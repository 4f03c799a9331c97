"""A thread's stream (``threads.join_stream``): the events of its runs, one run after
another, as they happen.

Each run's events come from the run's own stream (so the thread stream works wherever the
runs execute), followed by a ``metadata`` event ``{"status": "run_done", "run_id": ...}``.
An event's id is ``<run id>/<the run's event id>`` (``<run id>/done`` for the end): a
client that reconnects with ``Last-Event-ID`` resumes right after it, and ``"-1"``
replays every run whose events are still kept. The stream lasts until the client leaves
or the thread is deleted.

A run created on this server wakes the stream at once; one created through another
server of a cluster is seen within :data:`POLL` seconds. Those looks ride out an outage of
the cluster's store as the runs' own streams do (``_outage``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import Any

from graphagent._internal.waiting import pause
from graphagent.server._events import Event
from graphagent.server._outage import OUTAGE_MS, Backoff
from graphagent.server._records import ACTIVE
from graphagent.server._runs import Runs

__all__ = ["POLL", "follow_thread"]

POLL = 0.25
"""Seconds between looks for a thread's new runs that no local wake-up announced."""

DONE = "done"


def _start(runs: Sequence[dict[str, Any]], after: str | None) -> dict[str, str | None]:
    """Where to read each run already on the thread: ``{run_id: after}`` for those to
    read (``None``: only what is still to come); runs left out are not read."""
    if after is None:  # from now on: the runs under way, and pending ones in full
        return {
            r["run_id"]: (None if r["status"] == "running" else "-1")
            for r in runs
            if r["status"] in ACTIVE
        }
    if after == "-1" or "/" not in after:
        return {r["run_id"]: "-1" for r in runs}
    run_id, event_id = after.split("/", 1)
    ids = [r["run_id"] for r in runs]
    if run_id not in ids:
        return {i: "-1" for i in ids}
    later = ids[ids.index(run_id) + 1 :]
    start: dict[str, str | None] = {i: "-1" for i in later}
    if event_id != DONE:
        start = {run_id: event_id, **start}
    return start


def _limit(runs: Runs) -> int:
    """How long the thread's looks may fail: as long as its runs' streams (a cluster's
    events name it; others fail only as a bug would)."""
    return int(getattr(getattr(runs, "events", None), "outage_ms", OUTAGE_MS))


async def follow_thread(
    runs: Runs, thread: dict[str, Any], after: str | None, modes: Sequence[str]
) -> AsyncIterator[Event]:
    """The thread's events after ``after`` (``None``: from now on), as ``modes`` asks."""
    key = thread["_key"]
    lifecycle_only = "run_modes" not in modes
    wake = runs.watch(key)
    retry = Backoff(
        f"looking for the runs of thread {thread.get('thread_id', key)!r}", _limit(runs)
    )
    try:
        listed = await runs.docs.children("run", key)
        plan = _start(listed, after)
        seen = {r["run_id"] for r in listed}
        todo = [r for r in listed if r["run_id"] in plan]
        while True:
            for run in todo:
                async for ident, event, data in runs.sse(run, plan.get(run["run_id"], "-1")):
                    if lifecycle_only and event != "metadata":
                        continue
                    yield f"{run['run_id']}/{ident}", event, data
                done = {"status": "run_done", "run_id": run["run_id"]}
                yield f"{run['run_id']}/{DONE}", "metadata", done
            wake.clear()
            todo = []
            while not todo:
                await pause(wake, POLL)  # not wait_for: it can swallow a cancel
                wake.clear()
                # (a look failing as the cluster's store is down is made again)
                if await retry.call(partial(runs.docs.get, "thread", key)) is None:
                    return  # the thread was deleted
                fresh = await retry.call(partial(runs.docs.children, "run", key))
                todo = [r for r in fresh if r["run_id"] not in seen]
                seen.update(r["run_id"] for r in todo)
    finally:
        runs.unwatch(key, wake)
