"""A cancel that lands just as an awaited thing completes reaches the task, at every place
that waits with a timeout (``asyncio.wait_for`` on Python 3.11 returns the result and
swallows the cancel then: the thread stream, the PostgreSQL event reader and the tools
manager's per-call timeout did, after ``server/_queue.py`` had stopped doing it)."""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from graphagent._internal.waiting import pause, within
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.server._postgres import PostgresEvents
from graphagent.server._thread_stream import follow_thread
from graphagent.tools import ToolCallingManager, tool

ROOT = Path(__file__).parent.parent


def test_no_module_awaits_with_wait_for() -> None:
    """No module of the packages calls ``asyncio.wait_for`` (use ``_internal.waiting``)."""
    found = []
    for package in ("graphagent", "checkpoint"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                named = (isinstance(node, ast.Attribute) and node.attr == "wait_for") or (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "asyncio"
                    and any(a.name == "wait_for" for a in node.names)
                )
                if named:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []


async def _cancel_as_it_wakes(
    start: Callable[[asyncio.Event], Awaitable[Any]], waiting: asyncio.Event
) -> asyncio.Task[Any]:
    """Run ``start(wake)`` until it waits (``waiting`` set), then set ``wake`` and cancel
    it in the same turn of the loop: the wait completes and the cancel lands together."""
    wake = asyncio.Event()
    task = asyncio.ensure_future(start(wake))
    await waiting.wait()
    for _ in range(3):  # let it reach the wait itself
        await asyncio.sleep(0)
    wake.set()
    task.cancel()
    await asyncio.wait({task}, timeout=2)
    return task


async def test_pause_delivers_a_cancel_landing_as_the_event_is_set() -> None:
    """``pause`` raises the cancel even when its event was set in the same turn."""
    waiting = asyncio.Event()

    async def start(wake: asyncio.Event) -> None:
        waiting.set()
        await pause(wake, 5)

    task = await _cancel_as_it_wakes(start, waiting)
    assert task.cancelled()


async def test_within_delivers_a_cancel_landing_as_the_awaitable_ends() -> None:
    """``within`` raises the cancel even when what it awaited ended in the same turn."""
    waiting = asyncio.Event()

    async def start(wake: asyncio.Event) -> None:
        waiting.set()
        await within(wake.wait(), 5)

    task = await _cancel_as_it_wakes(start, waiting)
    assert task.cancelled()


async def test_within_times_out_and_cancels_what_it_awaited() -> None:
    """Past its timeout ``within`` cancels the awaitable, waits for it, raises TimeoutError;
    without a timeout it just awaits; the awaitable's own error comes through."""
    ended: list[str] = []

    async def slow() -> None:
        try:
            await asyncio.sleep(10)
        finally:
            ended.append("slow")

    with pytest.raises(TimeoutError):
        await within(slow(), 0.01)
    assert ended == ["slow"]
    assert await within(asyncio.sleep(0, "x"), None) == "x"

    async def fails() -> None:
        raise KeyError("k")

    with pytest.raises(KeyError):
        await within(fails(), 1)


class _Docs:
    async def children(self, kind: str, key: str) -> list[Any]:
        return []

    async def get(self, kind: str, key: str) -> dict[str, Any]:
        return {"_key": key}


class _Runs:
    def __init__(self, waiting: asyncio.Event, wake: asyncio.Event) -> None:
        self.docs = _Docs()
        self.waiting, self.wake = waiting, wake

    def watch(self, key: str) -> asyncio.Event:
        self.waiting.set()
        return self.wake

    def unwatch(self, key: str, wake: asyncio.Event) -> None:
        pass


async def test_thread_stream_ends_on_a_cancel_landing_as_it_wakes() -> None:
    """Following a thread stops on a cancel that lands as a new run wakes it."""
    waiting = asyncio.Event()

    async def start(wake: asyncio.Event) -> None:
        runs: Any = _Runs(waiting, wake)
        async for _ in follow_thread(runs, {"_key": "t"}, None, ["values"]):
            pass

    task = await _cancel_as_it_wakes(start, waiting)
    assert task.cancelled()


class _Db:
    def __init__(self, waiting: asyncio.Event, wake: asyncio.Event) -> None:
        self.waiting, self.wake = waiting, wake

    def waiter(self, channel: str) -> asyncio.Event:
        self.waiting.set()
        return self.wake

    def forget(self, channel: str, wake: asyncio.Event) -> None:
        pass

    async def sql(self, query: str, *args: Any) -> list[Any]:
        return []


async def test_postgres_events_reader_ends_on_a_cancel_landing_as_it_wakes() -> None:
    """Reading a run's events from PostgreSQL stops on a cancel that lands with a NOTIFY."""
    waiting = asyncio.Event()

    async def start(wake: asyncio.Event) -> None:
        events = PostgresEvents(_Db(waiting, wake))  # type: ignore[arg-type]
        async for _ in events.read("r1", "0"):
            pass

    task = await _cancel_as_it_wakes(start, waiting)
    assert task.cancelled()


@pytest.mark.parametrize("parallel", [False, True])
async def test_tool_call_with_a_timeout_delivers_a_cancel_landing_as_it_ends(
    parallel: bool,
) -> None:
    """A run cancelled as its tool call finishes is cancelled, not handed the answer (one
    at a time, and in parallel)."""
    waiting = asyncio.Event()
    gate: list[asyncio.Event] = []

    @tool
    async def wait_for_it() -> str:
        """Waits for the gate."""
        waiting.set()
        await gate[0].wait()
        return "done"

    async def start(wake: asyncio.Event) -> None:
        gate.append(wake)
        call = AssistantMessage(tool_calls=[ToolCall(id="1", name="wait_for_it", arguments="{}")])
        manager = ToolCallingManager(timeout=5, parallel=parallel)
        await manager.aexecute_tool_calls([], call, tools=[wait_for_it])

    task = await _cancel_as_it_wakes(start, waiting)
    assert task.cancelled()
