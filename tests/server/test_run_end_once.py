"""A run's end (its result, then the end of its stream) is published once, whoever ends it.

Two executors can both reach the end of one run: a worker whose lease lapsed (a stalled
process) and the one that took the run over, or an executor stopped between its result and
its end and the one resuming it. The fault test once saw a PostgreSQL cluster store two
results for one run that way (``test_server_faults.py``). The class of bug is closed where
the events are stored: ending a run is one atomic step that only the first caller takes, on
every home of events (this process, Redis, PostgreSQL). These tests drive that step with
no processes and no timing luck.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from _serving import drop_prefix, drop_schema
from redis import asyncio as aredis

from graphagent.server._events import END, RESULT, Events, LocalEvents
from graphagent.server._postgres import PostgresCluster, PostgresEvents
from graphagent.server._redis import RedisEvents

pytestmark = pytest.mark.ours


@pytest.fixture(params=["local", "redis", "postgres"])
async def events(request: pytest.FixtureRequest) -> AsyncIterator[Events]:
    """Each home of a run's events, in its own prefix or schema."""
    prefix = f"endonce_{uuid.uuid4().hex[:8]}"
    if request.param == "local":
        yield LocalEvents()
        return
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        home: Any = RedisEvents(aredis.Redis.from_url(url), prefix)
        try:
            yield home
        finally:
            await home.close()
            drop_prefix(url, prefix)
        return
    url = request.getfixturevalue("postgres_url")
    db = PostgresCluster(url, prefix)
    try:
        yield PostgresEvents(db)
    finally:
        await db.close()
        drop_schema(url, prefix)


async def _stored(events: Events, run_id: str) -> list[tuple[str, Any]]:
    return [(event, data) async for _, event, data in events.read(run_id, "-1")]


async def test_a_second_end_of_a_run_is_refused(events: Events) -> None:
    await events.publish("r1", "values", {"n": 1})
    assert await events.end("r1", {"n": 1}) is True
    # a superseded executor still running publishes more, then tries to end it again
    await events.publish("r1", "values", {"n": 2})
    assert await events.end("r1", {"n": 2}) is False
    stored = await _stored(events, "r1")
    names = [event for event, _ in stored]
    assert names == ["values", RESULT, END], names
    assert stored[1] == (RESULT, {"n": 1})  # the first result stands
    assert await events.ended("r1")


async def test_racing_ends_of_a_run_store_one_result(events: Events) -> None:
    outcomes = await asyncio.gather(*(events.end("r2", {"who": i}) for i in range(8)))
    assert sorted(outcomes) == [False] * 7 + [True]
    stored = await _stored(events, "r2")
    assert [event for event, _ in stored] == [RESULT, END]
    assert stored[0][1] == {"who": outcomes.index(True)}


async def test_a_reader_waiting_on_a_run_sees_its_result_then_its_end(events: Events) -> None:
    first = await events.publish("r3", "values", {})

    async def follow() -> list[str]:
        return [event async for _, event, _ in events.read("r3", first)]

    reader = asyncio.ensure_future(follow())  # it waits, or reads late: the same events
    await asyncio.sleep(0.05)
    await events.end("r3", {"done": True})
    assert await asyncio.wait_for(reader, 10) == [RESULT, END]
