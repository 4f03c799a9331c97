"""Async runs waiting for a thread's lock never starve the thread pool (issue 30 item 9).

Waiting for the lock used to sleep inside a worker thread of the event loop's default
pool; about six waiters (the pool's size on a 2-core machine) took every thread, and the
run holding the lock could no longer read or write its own checkpoints: a deadlock until
``lock_timeout``. Each saver in turn, sync savers driven from ``ainvoke`` included.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from checkpoint import (
    AsyncPostgresSaver,
    AsyncRedisSaver,
    AsyncSqliteSaver,
    MemorySaver,
    PostgresSaver,
    RedisSaver,
    SqliteSaver,
)
from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, AppendStrategy, StateGraph

WAITERS = 20
POOL = 6  # asyncio's default pool on a 2-core machine: min(32, cpus + 4)


async def _close(saver: CheckpointSaver) -> None:
    for name in ("aclose", "close"):
        closing = getattr(saver, name, None)
        if closing is not None:
            result = closing()
            if asyncio.iscoroutine(result):
                await result
            return


async def _runs_in_turn(saver: CheckpointSaver) -> None:
    async def work(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0.005)
        return {"log": ["ran"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("work", work).add_edge(START, "work").add_edge("work", END)
    app = g.compile(saver=saver)
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(POOL))
    runs = [app.ainvoke({"log": ["in"]}, {"thread_id": "t"}) for _ in range(WAITERS)]
    # every run takes a few ms once it holds the lock: 20 in turn are done well within this
    await asyncio.wait_for(asyncio.gather(*runs), timeout=10)
    state = await saver.aget("t")
    assert state is not None and len(state.values["log"]) == 2 * WAITERS


Maker = Callable[[], CheckpointSaver]


@pytest.fixture(
    params=[
        "memory",
        "sqlite_sync",
        "sqlite_async",
        "postgres_sync",
        "postgres_async",
        "redis_sync",
        "redis_async",
    ]
)
def locking_saver(request: pytest.FixtureRequest, tmp_path: Path) -> Maker:
    """A factory for each saver made with lock_timeout= (longer than the test's own limit)."""
    options: dict[str, Any] = {"lock_timeout": 25}
    kind = request.param
    if kind == "memory":
        return lambda: MemorySaver(**options)
    if kind.startswith("sqlite"):
        cls = SqliteSaver if kind == "sqlite_sync" else AsyncSqliteSaver
        return lambda: cls(tmp_path / "threads.sqlite", **options)
    if kind.startswith("postgres"):
        url, schema = request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema")
        with PostgresSaver.from_url(url, schema=schema) as pg:
            pg.setup()
        if kind == "postgres_sync":
            return lambda: PostgresSaver.from_url(url, schema=schema, **options)
        return lambda: AsyncPostgresSaver.from_url(url, schema=schema, **options)
    url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
    if kind == "redis_sync":
        return lambda: RedisSaver.from_url(url, prefix=prefix, **options)
    return lambda: AsyncRedisSaver.from_url(url, prefix=prefix, **options)


def test_twenty_async_runs_waiting_for_one_threads_lock_all_finish(
    locking_saver: Maker,
) -> None:
    """20 concurrent ainvoke on one thread of a saver made with lock_timeout= all land, in
    turn, within 10 s, on a 6-thread default pool (memory, SQLite, PostgreSQL and Redis,
    sync and async savers)."""

    async def main() -> None:
        saver = locking_saver()
        try:
            await _runs_in_turn(saver)
        finally:
            await _close(saver)

    asyncio.run(main())
