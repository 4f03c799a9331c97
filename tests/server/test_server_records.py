"""The server's records and event streams on each home (SQLite, Redis): what the endpoints
rely on, and the round trips a cluster pays per record on Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from redis import asyncio as aredis

from graphagent.server._docs import Docs, SqliteDocs
from graphagent.server._events import END, RESULT
from graphagent.server._redis import RedisDocs, RedisEvents

pytestmark = pytest.mark.ours


class _Counting:
    """A ``redis.asyncio.Redis`` stand-in that counts what reaches the server: commands
    sent one by one, pipelines (one write and one read however many commands) and
    scripts."""

    def __init__(self, client: aredis.Redis) -> None:
        self._client = client
        self.trips = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name == "pipeline":

            def pipeline(*args: Any, **kwargs: Any) -> Any:
                self.trips += 1
                return attr(*args, **kwargs)

            return pipeline
        if name == "register_script":

            def register(text: str) -> Any:
                script = attr(text)

                async def run(keys: Any = (), args: Any = ()) -> Any:
                    self.trips += 1
                    return await script(keys=keys, args=args)

                return run

            return register
        if callable(attr) and name not in ("aclose",):

            async def call(*args: Any, **kwargs: Any) -> Any:
                self.trips += 1
                return await attr(*args, **kwargs)

            return call
        return attr


@pytest.fixture(params=["sqlite", "redis"])
async def docs(request: pytest.FixtureRequest) -> AsyncIterator[Docs]:
    """Records in memory-backed SQLite, or under a fresh Redis prefix."""
    if request.param == "sqlite":
        home: Docs = SqliteDocs(":memory:")
        yield home
        await home.close()
        return
    url = request.getfixturevalue("redis_url")
    prefix = f"srvrec_{uuid.uuid4().hex[:8]}"
    client = aredis.Redis.from_url(url)
    home = RedisDocs(client, prefix)
    try:
        yield home
    finally:
        keys = [k async for k in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


def _thread(ident: str, owner: str = "u1", **extra: Any) -> dict[str, Any]:
    return {"thread_id": ident, "_owner": owner, "_key": ident, **extra}


def _run(ident: str, thread: str, owner: str = "u1") -> dict[str, Any]:
    return {"run_id": ident, "_owner": owner, "_parent": thread, "status": "pending"}


async def test_records_keep_creation_order_through_updates(docs: Docs) -> None:
    """children/owned list records oldest first; an update replaces the record in place."""
    await docs.put("thread", "t1", _thread("t1"))
    for ident in ("r1", "r2", "r3"):
        await docs.put("run", ident, _run(ident, "t1"))
    await docs.put("run", "r1", {**_run("r1", "t1"), "status": "success"})
    runs = await docs.children("run", "t1")
    assert [r["run_id"] for r in runs] == ["r1", "r2", "r3"]
    assert runs[0]["status"] == "success"
    assert [r["run_id"] for r in await docs.owned("run", "u1")] == ["r1", "r2", "r3"]
    assert await docs.owned("run", "u2") == []
    assert (await docs.get("run", "r2")) == _run("r2", "t1")
    assert [d["run_id"] for d in await docs.get_many("run", ["r3", "nope", "r1"])] == [
        "r3",
        "r1",
    ]


async def test_deleted_records_leave_every_listing(docs: Docs) -> None:
    """A deleted record is gone from get, children and owned; the others stay."""
    await docs.put("run", "r1", _run("r1", "t1"))
    await docs.put("run", "r2", _run("r2", "t1"))
    await docs.delete("run", "r1")
    await docs.delete("run", "never-there")
    assert await docs.get("run", "r1") is None
    assert [r["run_id"] for r in await docs.children("run", "t1")] == ["r2"]
    assert [r["run_id"] for r in await docs.owned("run", "u1")] == ["r2"]


async def test_redis_records_cost_one_round_trip_each(redis_url: str) -> None:
    """On Redis a record's put, a thread's runs and a delete are one round trip each (a
    run writes about ten records: each trip saved is a syscall pair on every server)."""
    client = aredis.Redis.from_url(redis_url)
    counting = _Counting(client)
    prefix = f"srvrec_{uuid.uuid4().hex[:8]}"
    docs = RedisDocs(counting, prefix)  # type: ignore[arg-type]
    try:
        await docs.put("run", "r1", _run("r1", "t1"))
        await docs.put("run", "r2", _run("r2", "t1"))
        counting.trips = 0
        await docs.put("run", "r1", {**_run("r1", "t1"), "status": "running"})
        assert counting.trips == 1
        counting.trips = 0
        assert [r["run_id"] for r in await docs.children("run", "t1")] == ["r1", "r2"]
        assert counting.trips == 1
        counting.trips = 0
        await docs.delete("run", "r1")
        assert counting.trips == 1
        assert [r["run_id"] for r in await docs.owned("run", "u1")] == ["r2"]
    finally:
        keys = [k async for k in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_redis_events_end_in_one_round_trip_and_replay(redis_url: str) -> None:
    """Ending a run (its result, its end, the stream's expiry) is one round trip and is
    done once; a reader replays the whole run from "-1" and one asking only for what is
    to come after the end reads nothing."""
    client = aredis.Redis.from_url(redis_url)
    counting = _Counting(client)
    prefix = f"srvrec_{uuid.uuid4().hex[:8]}"
    events = RedisEvents(counting, prefix)  # type: ignore[arg-type]
    try:
        await events.publish("run1", "metadata", {"run_id": "run1"})
        counting.trips = 0
        assert await events.end("run1", {"ok": 1})
        assert counting.trips == 1
        assert not await events.end("run1", {"ok": 2})
        assert 0 < await client.ttl(f"{prefix}:srv:ev:run1") <= 24 * 3600
        seen = [(e, d) async for _, e, d in events.read("run1", "-1")]
        assert seen == [("metadata", {"run_id": "run1"}), (RESULT, {"ok": 1}), (END, None)]
        assert [e async for e in events.read("run1", None)] == []
        assert await events.ended("run1")
    finally:
        keys = [k async for k in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


async def test_postgres_event_is_one_statement_and_wakes_readers(postgres_url: str) -> None:
    """On PostgreSQL an event and its NOTIFY go in one statement, and a reader waiting for
    what is to come wakes on it (no poll: well before the 1 s fallback)."""
    import asyncio
    import time

    from graphagent.server._postgres import PostgresCluster, PostgresEvents

    schema = f"srvrec_{uuid.uuid4().hex[:8]}"
    db = PostgresCluster(postgres_url, schema)
    events = PostgresEvents(db)
    statements: list[str] = []
    plain = db.sql

    async def counted(query: str, *args: Any) -> list[tuple[Any, ...]]:
        statements.append(query)
        return await plain(query, *args)

    db.sql = counted  # type: ignore[method-assign]
    try:
        await events.publish("run1", "metadata", {"run_id": "run1"})
        reader = events.read("run1", None)
        first = asyncio.ensure_future(reader.__anext__())
        await asyncio.sleep(0.3)  # the reader is listening
        statements.clear()
        began = time.monotonic()
        await events.publish("run1", "values", {"n": 1})
        # the woken reader's own SELECT may already be counted: only the writes matter
        writes = [q for q in statements if "INSERT" in q or "pg_notify" in q]
        assert len(writes) == 1 and "pg_notify" in writes[0], writes
        _, event, data = await asyncio.wait_for(first, 5)
        assert (event, data) == ("values", {"n": 1})
        assert time.monotonic() - began < 0.9
        await reader.aclose()
    finally:
        await plain(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        await db.close()
