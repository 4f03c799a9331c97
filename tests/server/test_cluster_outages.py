"""A cluster's readers and loops ride out a short outage of their Redis or PostgreSQL.

A run's event stream read from Redis ended with the client's ``TimeoutError`` (Redis busy
past ``socket_timeout``) or ``ConnectionError`` (Redis restarting), though the run went on
and its events were still in the stream; the PostgreSQL reader ended on the first failed
query. Now each reader tries again with growing waits, from the last event it delivered
(every event reaches the client once), and gives up with a
:class:`~checkpoint.CheckpointStorageError` only after ``outage_ms``; the queue's loops
never give up. The faults are played two ways: a client that fails its next calls, and a
private redis-server crashed and started again (with its append-only file, as in
production).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import psycopg
import pytest
import redis.asyncio as aredis
from _pgconns import named_url, terminate
from _serving import drop_prefix, drop_schema
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from checkpoint import CheckpointStorageError
from graphagent.graph import END, START, StateGraph
from graphagent.server import Service, create_app, postgres_service, redis_service
from graphagent.server._events import END as END_EVENT
from graphagent.server._outage import Backoff, transient
from graphagent.server._postgres import PostgresCluster, PostgresEvents
from graphagent.server._redis import RedisEvents
from graphagent.server._thread_stream import follow_thread

pytestmark = pytest.mark.ours


class Faults:
    """Makes the next ``count`` calls of a method fail with ``error`` (then passes them)."""

    def __init__(self, owner: Any, name: str, when: Callable[..., bool] = lambda *a: True):
        self.owner, self.name, self.when = owner, name, when
        self.real = getattr(owner, name)
        self.left = 0
        self.error: Exception = RedisTimeoutError("Timeout reading from socket")
        self.calls = 0
        setattr(owner, name, self._call)

    def fail(self, count: int, error: Exception) -> None:
        self.left, self.error = count, error

    async def _call(self, *args: Any, **kwargs: Any) -> Any:
        if self.left and self.when(*args):
            self.left -= 1
            self.calls += 1
            raise self.error
        return await self.real(*args, **kwargs)


@pytest.fixture(params=["redis", "postgres"])
async def events(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Any, Faults]]:
    """A cluster's events (own prefix or schema, short outage limit) and the faults of
    the one call its reader makes to wait for events."""
    prefix = f"outage_{uuid.uuid4().hex[:8]}"
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        reader: Any = RedisEvents(aredis.Redis.from_url(url), prefix, outage_ms=3000)
        yield reader, Faults(reader.client, "xread")
        await reader.close()
        drop_prefix(url, prefix)
    else:
        schema = request.getfixturevalue("pg_schema")
        db = PostgresCluster(request.getfixturevalue("postgres_url"), schema)
        reader = PostgresEvents(db, outage_ms=3000)

        def reads(query: str, *args: Any) -> bool:
            return query.lstrip().startswith("SELECT seq, event")

        yield reader, Faults(db, "sql", reads)
        await db.close()


async def _read_all(reader: Any, run_id: str, after: str | None = "-1") -> list[Any]:
    return [(event, data) async for _, event, data in reader.read(run_id, after)]


async def _shut(service: Service) -> None:
    """Close a service, its saver and its store."""
    await service.close()
    await service.saver.aclose()  # type: ignore[attr-defined]
    if service.store is not None:
        service.store.close()


_ERRORS = {
    "timeout": lambda: RedisTimeoutError("Timeout reading from socket"),
    "connection": lambda: RedisConnectionError("Connection closed by server."),
    "busy": lambda: ResponseError("BUSY Redis is busy running a script."),
    "pg": lambda: psycopg.OperationalError("server closed the connection unexpectedly"),
}


@pytest.mark.parametrize("kind", sorted(_ERRORS))
async def test_a_reader_rides_out_failures_and_delivers_each_event_once(
    events: tuple[Any, Faults], kind: str
) -> None:
    """Reads failing in the middle of a run's stream: the reader tries again from the
    last event it delivered, and the client gets every event, once, in order."""
    reader, faults = events
    run_id = f"r-{uuid.uuid4().hex[:6]}"
    got: list[Any] = []

    async def read() -> None:
        async for _, event, data in reader.read(run_id, "-1"):
            got.append((event, data))
            if data == {"n": 2}:
                faults.fail(4, _ERRORS[kind]())  # the next reads fail

    reading = asyncio.ensure_future(read())
    for n in range(5):
        await reader.publish(run_id, "values", {"n": n})
        await asyncio.sleep(0.05)
    await reader.end(run_id, {"n": 4})
    await asyncio.wait_for(reading, 20)
    assert faults.calls == 4
    expected = [("values", {"n": n}) for n in range(5)]
    assert got == [*expected, ("__result__", {"n": 4}), (END_EVENT, None)]


async def test_a_reader_gives_up_after_the_outage_limit(events: tuple[Any, Faults]) -> None:
    """An outage longer than ``outage_ms`` ends the stream with an error naming it."""
    reader, faults = events
    run_id = f"r-{uuid.uuid4().hex[:6]}"
    await reader.publish(run_id, "values", {"n": 0})
    faults.fail(10_000, RedisConnectionError("Error 111 connecting. Connection refused."))
    began = time.monotonic()
    with pytest.raises(CheckpointStorageError, match=r"failed for 3\.\d s .*limit is 3 s"):
        await _read_all(reader, run_id, "-1")
    assert 2.9 < time.monotonic() - began < 6


async def test_a_reader_raises_other_errors_at_once(events: tuple[Any, Faults]) -> None:
    """What says the call is wrong (not the store down) is not tried again."""
    reader, faults = events
    faults.fail(1, ResponseError("WRONGTYPE Operation against a key"))
    with pytest.raises(ResponseError):
        await _read_all(reader, "r-x", "-1")
    assert faults.calls == 1


async def test_a_reader_waiting_out_an_outage_stops_at_a_cancel(
    events: tuple[Any, Faults],
) -> None:
    """A cancel (the client went away) ends a reader at once, waiting or not."""
    reader, faults = events
    faults.fail(10_000, RedisTimeoutError("Timeout reading from socket"))
    reading = asyncio.ensure_future(_read_all(reader, "r-y", "-1"))
    await asyncio.sleep(0.5)
    assert not reading.done()
    began = time.monotonic()
    reading.cancel()
    await asyncio.wait({reading}, timeout=1)
    assert reading.cancelled()
    assert time.monotonic() - began < 0.2


def test_transient_errors_are_the_stores_being_down_or_busy() -> None:
    """Connection errors and timeouts (Redis's, PostgreSQL's, the OS's) and BUSY."""
    assert all(transient(make()) for make in _ERRORS.values())
    assert transient(ConnectionRefusedError()) and transient(TimeoutError())
    assert not transient(ResponseError("WRONGTYPE Operation against a key"))
    assert not transient(psycopg.errors.UndefinedTable("no such table"))
    assert not transient(ValueError("bad"))


async def test_a_loops_backoff_never_gives_up_and_logs_the_outage_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Past its limit a loop logs one error, goes on trying, and says when it works."""
    backoff = Backoff("taking runs", 100, give_up=False)
    for _ in range(6):
        await backoff.failed(RedisConnectionError("refused"))
    backoff.succeeded()
    messages = [(r.levelname, r.getMessage().split(" (")[0]) for r in caplog.records]
    assert messages[0] == ("WARNING", "taking runs failed")
    errors = [m for m in messages if m[0] == "ERROR"]
    assert len(errors) == 1 and errors[0][1].startswith("taking runs has failed for 0.")
    assert messages[-1][1].startswith("taking runs works again after")


# -- a real outage: a private redis-server crashed and started again -----------------------


async def test_a_run_stream_rides_out_a_redis_restart(private_redis: Any) -> None:
    """Redis crashes (SIGKILL) mid-stream and comes back a second later with its data:
    the reader gets every event once."""
    prefix = f"outage_{uuid.uuid4().hex[:8]}"
    reader = RedisEvents(aredis.Redis.from_url(private_redis.url), prefix, outage_ms=20_000)
    writer = aredis.Redis.from_url(private_redis.url)
    publisher = RedisEvents(writer, prefix)
    run_id = "r-restart"
    got: list[Any] = []

    async def read() -> None:
        async for _, event, data in reader.read(run_id, "-1"):
            got.append((event, data))

    reading = asyncio.ensure_future(read())
    for n in range(3):
        await publisher.publish(run_id, "values", {"n": n})
    await asyncio.sleep(0.3)
    private_redis.crash()
    await asyncio.sleep(1.0)
    await asyncio.to_thread(private_redis.start)
    with contextlib.suppress(RedisConnectionError):  # the writer's connection died: a new one
        await writer.ping()
    for n in range(3, 6):
        await publisher.publish(run_id, "values", {"n": n})
    await publisher.end(run_id, None)
    await asyncio.wait_for(reading, 20)
    values = [("values", {"n": n}) for n in range(6)]
    assert got == [*values, ("__result__", None), (END_EVENT, None)]
    await reader.close()
    await publisher.close()


async def test_a_worker_takes_runs_again_after_a_redis_restart(private_redis: Any) -> None:
    """The queue's consumer, after Redis crashed and came back, takes the next run."""
    graph = StateGraph().add_node("n", lambda s: {}).add_edge(START, "n").add_edge("n", END)
    service = redis_service([graph.compile(name="g")], private_redis.url, prefix="outage")
    await service.start()
    try:
        await asyncio.sleep(0.3)
        private_redis.crash()
        await asyncio.sleep(1.0)
        await asyncio.to_thread(private_redis.start)
        thread = await service.threads.create("", {})
        run = await service.runs.create("", thread["thread_id"], {"assistant_id": "g", "input": {}})
        await service.runs.submit(run)
        await asyncio.wait_for(service.runs.outcome(run), 20)
        doc = await service.docs.get("run", run["run_id"])
        assert doc is not None and doc["status"] == "success"
    finally:
        await _shut(service)


# -- the lease renewal ----------------------------------------------------------------------


class Gate:
    """A graph whose one node waits for ``go`` (counting its starts and its cancels)."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.go = asyncio.Event()
        self.starts = 0
        self.cancels = 0

        async def wait(state: Any) -> dict[str, Any]:
            self.starts += 1
            self.entered.set()
            try:
                await self.go.wait()
            except asyncio.CancelledError:
                self.cancels += 1
                raise
            return {}

        graph = StateGraph().add_node("wait", wait).add_edge(START, "wait").add_edge("wait", END)
        self.graph = graph.compile(name="gate")


@pytest.fixture(params=["redis", "postgres"])
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Service, Gate]]:
    """A one-process cluster (own prefix or schema) with a 900 ms lease, running a gate."""
    prefix = f"outage_{uuid.uuid4().hex[:8]}"
    gate = Gate()
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        service = redis_service([gate.graph], url, prefix=prefix, lease_ms=900)
    else:
        url = request.getfixturevalue("postgres_url")
        service = postgres_service([gate.graph], url, schema=prefix, lease_ms=900)
    await service.start()
    yield service, gate
    gate.go.set()
    await _shut(service)
    if request.param == "redis":
        drop_prefix(url, prefix)
    else:
        drop_schema(url, prefix)


def _failing_renewals(service: Service) -> Faults:
    queue: Any = service.queue
    return Faults(queue, "_renew")


async def _gated_run(service: Service, gate: Gate) -> dict[str, Any]:
    thread = await service.threads.create("", {})
    run = await service.runs.create("", thread["thread_id"], {"assistant_id": "gate", "input": {}})
    await service.runs.submit(run)
    await asyncio.wait_for(gate.entered.wait(), 30)
    return run


async def test_a_renewal_failing_a_few_times_keeps_the_lease(
    cluster: tuple[Service, Gate], caplog: pytest.LogCaptureFixture
) -> None:
    """Renewals failing for a moment are tried again soon, within the lease: the run
    goes on where it is (it was stopped and taken over: a third of a lease apart, three
    failures let the lease run out)."""
    service, gate = cluster
    run = await _gated_run(service, gate)
    faults = _failing_renewals(service)
    faults.fail(3, RedisConnectionError("Connection reset by peer"))
    await asyncio.sleep(1.5)  # past the lease
    gate.go.set()
    await asyncio.wait_for(service.runs.outcome(run), 20)
    assert faults.calls == 3
    assert (gate.starts, gate.cancels) == (1, 0)
    assert not [r for r in caplog.records if "lost its thread's lease" in r.getMessage()]


async def test_a_run_whose_lease_went_unrenewed_for_a_whole_lease_stops(
    cluster: tuple[Service, Gate],
) -> None:
    """Once a whole lease went by unrenewed another executor may hold it: the run stops
    here at once (it ran on, beside the one that took it over)."""
    service, gate = cluster
    await _gated_run(service, gate)
    faults = _failing_renewals(service)
    faults.fail(10_000, RedisConnectionError("Connection reset by peer"))
    for _ in range(40):
        if gate.cancels:
            break
        await asyncio.sleep(0.05)
    assert gate.cancels == 1


async def test_a_stream_past_the_outage_limit_ends_with_an_error_event(redis_url: str) -> None:
    """The SSE client is told why its stream ends (an ``error`` event naming the outage),
    not cut off mid-response."""
    prefix = f"outage_{uuid.uuid4().hex[:8]}"
    gate = Gate()
    service = redis_service([gate.graph], redis_url, prefix=prefix, outage_ms=300)
    await service.start()
    events: Any = service.events
    faults = Faults(events.client, "xread")
    faults.fail(10_000, RedisTimeoutError("Timeout reading from socket"))
    http = httpx.AsyncClient(transport=httpx.ASGITransport(create_app(None, service=service)))
    try:
        body = {"assistant_id": "gate", "input": {}}
        answer = await asyncio.wait_for(http.post("http://t/runs/stream", json=body), 20)
        lines = answer.text.splitlines()
        assert "event: error" in lines
        data = json.loads(lines[lines.index("event: error") + 1].removeprefix("data: "))
        assert data["error"] == "CheckpointStorageError"
        assert "the cluster's store failed for 0.3 s" in data["message"]
    finally:
        gate.go.set()
        await http.aclose()
        await _shut(service)
        drop_prefix(redis_url, prefix)


async def test_a_thread_stream_rides_out_failing_looks_for_new_runs(
    cluster: tuple[Service, Gate],
) -> None:
    """A thread's stream looks for the thread's new runs through failures, and streams
    the run that came meanwhile."""
    service, gate = cluster
    created = await service.threads.create("", {})
    thread = await service.threads.load("", created["thread_id"])
    got: list[Any] = []

    async def follow() -> None:
        async for _, event, data in follow_thread(service.runs, thread, None, ["lifecycle"]):
            got.append((event, data))
            if data.get("status") == "run_done":
                return

    docs: Any = service.docs
    faults = Faults(docs, "children")
    following = asyncio.ensure_future(follow())
    await asyncio.sleep(0.2)  # looking for runs now
    faults.fail(4, RedisConnectionError("Connection reset by peer"))
    await asyncio.sleep(0.5)
    assert not following.done()
    gate.go.set()
    run = await service.runs.create("", created["thread_id"], {"assistant_id": "gate", "input": {}})
    await service.runs.submit(run)
    await asyncio.wait_for(following, 20)
    assert faults.calls == 4
    assert got[-1] == ("metadata", {"status": "run_done", "run_id": run["run_id"]})


async def test_a_run_stream_rides_out_its_postgres_connections_killed(
    postgres_url: str, pg_schema: str
) -> None:
    """Every connection of the reader's process is terminated mid-stream (as a restart or
    a failover does; only this test's, found by their application_name): the reader
    reconnects and gets every event once."""
    name = f"gatest_{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in postgres_url else "?"
    db = PostgresCluster(f"{postgres_url}{sep}application_name={name}", pg_schema)
    writer_db = PostgresCluster(postgres_url, pg_schema)
    reader, writer = PostgresEvents(db, outage_ms=20_000), PostgresEvents(writer_db)
    run_id = "r-killed"
    got: list[Any] = []

    async def read() -> None:
        async for _, event, data in reader.read(run_id, "-1"):
            got.append((event, data))

    try:
        reading = asyncio.ensure_future(read())
        for n in range(3):
            await writer.publish(run_id, "values", {"n": n})
        await asyncio.sleep(0.5)
        killed = await writer_db.sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            name,
        )
        assert len(killed) >= 2  # the pool's and the LISTEN connection
        for n in range(3, 6):
            await writer.publish(run_id, "values", {"n": n})
        await writer.end(run_id, None)
        await asyncio.wait_for(reading, 20)
        values = [("values", {"n": n}) for n in range(6)]
        assert got == [*values, ("__result__", None), (END_EVENT, None)]
    finally:
        await db.close()
        await writer_db.close()


async def test_a_run_stream_rides_out_redis_answering_nothing_past_socket_timeout(
    private_redis: Any,
) -> None:
    """Redis answers nothing for three times the reader's ``socket_timeout`` (``CLIENT
    PAUSE``, on a redis-server of this test's own): its reads are cut as timeouts, and
    it reads on once Redis answers."""
    prefix = f"outage_{uuid.uuid4().hex[:8]}"
    url = f"{private_redis.url}?socket_timeout=0.5"
    reader = RedisEvents(aredis.Redis.from_url(url), prefix, outage_ms=20_000)
    publisher = RedisEvents(aredis.Redis.from_url(private_redis.url), prefix)
    run_id = "r-paused"
    got: list[Any] = []

    async def read() -> None:
        async for _, event, data in reader.read(run_id, "-1"):
            got.append((event, data))

    reading = asyncio.ensure_future(read())
    await publisher.publish(run_id, "values", {"n": 0})
    await asyncio.sleep(0.3)
    await publisher.client.execute_command("CLIENT", "PAUSE", 1500, "ALL")
    await asyncio.sleep(1.6)
    await publisher.publish(run_id, "values", {"n": 1})
    await publisher.end(run_id, None)
    await asyncio.wait_for(reading, 20)
    assert got == [
        ("values", {"n": 0}),
        ("values", {"n": 1}),
        ("__result__", None),
        (END_EVENT, None),
    ]
    await reader.close()
    await publisher.close()


async def test_a_worker_takes_runs_again_after_its_postgres_connections_died(
    postgres_url: str, pg_schema: str
) -> None:
    """Every connection of a PostgreSQL worker is terminated (only this test's, by their
    application_name): the worker takes and runs the next run an API server queues."""
    name = f"gatest_{uuid.uuid4().hex[:8]}"
    sep = "&" if "?" in postgres_url else "?"
    graph = StateGraph().add_node("n", lambda s: {}).add_edge(START, "n").add_edge("n", END)
    targets = [graph.compile(name="g")]
    worker = postgres_service(
        targets, f"{postgres_url}{sep}application_name={name}", schema=pg_schema
    )
    api = postgres_service(targets, postgres_url, schema=pg_schema, run=False)
    await worker.start()
    await api.start()
    try:
        await asyncio.sleep(0.3)
        assert terminate(postgres_url, name) >= 2
        thread = await api.threads.create("", {})
        run = await api.runs.create("", thread["thread_id"], {"assistant_id": "g", "input": {}})
        await api.runs.submit(run)
        await asyncio.wait_for(api.runs.outcome(run), 20)
        doc = await api.docs.get("run", run["run_id"])
        assert doc is not None and doc["status"] == "success"
    finally:
        for service in (worker, api):
            await _shut(service)


async def test_an_api_servers_first_requests_after_its_postgres_connections_died(
    postgres_url: str, pg_schema: str
) -> None:
    """Every connection of a PostgreSQL API server (its records' pool and the saver's) is
    terminated while idle, as a database restart does: the next request of each kind
    succeeds on its first try (no 500 for each dead pooled connection)."""
    url, name = named_url(postgres_url)
    graph = StateGraph().add_node("n", lambda s: {}).add_edge(START, "n").add_edge("n", END)
    api = postgres_service([graph.compile(name="g")], url, schema=pg_schema, run=False)
    await api.start()
    try:
        thread = await api.threads.create("", {})
        tid = thread["thread_id"]
        await api.saver.ahead(tid)  # type: ignore[attr-defined]
        # several connections in the records' pool, all idle and then all dead
        await asyncio.gather(*(api.docs.get("thread", tid) for _ in range(5)))
        assert terminate(postgres_url, name) >= 2
        await asyncio.sleep(0.2)
        for _ in range(5):
            doc = await api.docs.get("thread", tid)
            assert doc is not None and doc["thread_id"] == tid
        assert await api.saver.ahead(tid) is None  # type: ignore[attr-defined]
        assert (await api.threads.create("", {}))["thread_id"] != tid
    finally:
        await _shut(api)


async def test_an_api_servers_first_requests_after_a_redis_restart(private_redis: Any) -> None:
    """Redis crashes and comes back (every pooled connection of the server dead, the
    server not told): the next request of each kind succeeds on its first try. redis-py
    8.1's async pool skips its check of a connection it hands out when maintenance
    notifications are on, which they are by default (redis-py #4252)."""
    graph = StateGraph().add_node("n", lambda s: {}).add_edge(START, "n").add_edge("n", END)
    api = redis_service([graph.compile(name="g")], private_redis.url, prefix="restart", run=False)
    await api.start()
    try:
        thread = await api.threads.create("", {})
        tid = thread["thread_id"]
        await api.saver.ahead(tid)  # type: ignore[attr-defined]
        assert api.store is not None
        await asyncio.to_thread(api.store.put, ("users", "u1"), "fact", {"likes": "tea"})
        await asyncio.gather(*(api.docs.get("thread", tid) for _ in range(5)))
        private_redis.crash()
        await asyncio.to_thread(private_redis.start)
        doc = await api.docs.get("thread", tid)
        assert doc is not None and doc["thread_id"] == tid
        assert await api.saver.ahead(tid) is None  # type: ignore[attr-defined]
        item = await asyncio.to_thread(api.store.get, ("users", "u1"), "fact")
        assert item is not None and item.value == {"likes": "tea"}
        assert (await api.threads.create("", {}))["thread_id"] != tid
    finally:
        await _shut(api)
