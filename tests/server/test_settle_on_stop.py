"""A process stopped while it publishes a run's end still publishes all of it.

The fault test (a worker stopped mid-run, ``test_server_faults.py``) once saw a run with two
results: SIGTERM cancelled the run between its result and its end, the run's record said it
had ended, and the executor that took it over published the result again. This pins the
cause down without processes or timing luck.
"""

from __future__ import annotations

import asyncio
from typing import Any

from graphagent.server._events import END, RESULT, LocalEvents
from graphagent.server._execute import Executor


class _SlowEvents(LocalEvents):
    """Events whose end takes a while to publish (a round trip under load)."""

    def __init__(self) -> None:
        super().__init__()
        self.result_out = asyncio.Event()

    async def end(self, run_id: str, result: Any) -> bool:
        self.result_out.set()
        await asyncio.sleep(0.05)
        return await super().end(run_id, result)


async def test_a_run_cancelled_between_its_result_and_its_end_publishes_both() -> None:
    events = _SlowEvents()
    executor = Executor(None, None, events)  # type: ignore[arg-type]
    task = asyncio.ensure_future(executor._publish_end("r1", {"x": 1}))
    await events.result_out.wait()
    task.cancel()  # what a stopping worker's close() does to the runs it holds
    await asyncio.gather(task, return_exceptions=True)
    await executor.abandon([])  # close() waits for ends under way before closing connections
    assert await events.ended("r1")
    seen = [e async for e in events.read("r1", "-1")]
    names = [event for _, event, _ in seen]
    assert names.count(RESULT) == 1 and names[-1] == END, names


async def test_a_loop_that_swallows_a_cancel_still_stops() -> None:
    """Python 3.11's ``asyncio.wait_for`` can swallow a cancel that lands as its inner wait
    ends (the queues' loops wait that way): one such loop once kept a SIGTERMed worker
    alive forever. Stopping cancels until the loop has really ended."""
    swallowed = 0

    async def stubborn_loop() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed += 1  # what the race in wait_for amounts to: the loop goes on

    loop = asyncio.ensure_future(stubborn_loop())
    await asyncio.sleep(0)
    executor = Executor(None, None, LocalEvents())  # type: ignore[arg-type]
    stopping = asyncio.ensure_future(executor.abandon([loop]))
    await asyncio.wait({stopping}, timeout=5)  # (no wait_for: it would cancel the stop)
    assert stopping.done(), "the stop waited forever on a loop that swallowed its cancel"
    assert loop.done() and swallowed == 1
