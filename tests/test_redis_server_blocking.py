"""The Redis server cluster's blocking reads fit inside the client's ``socket_timeout``.

redis-py cuts a blocking command (``XREAD``/``XREADGROUP`` with ``BLOCK``) that waits
longer than the client's ``socket_timeout`` (5 s by default since redis-py 8, settable in
the URL: ``redis://host/0?socket_timeout=0.5``) as a ``TimeoutError``. The queue and the
event reader blocked a fixed second: under a shorter timeout every idle read failed (the
queue logged an error a second, a run's event stream ended with an error).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aredis

from graphagent.graph import END, START, StateGraph
from graphagent.server._cluster import redis_service
from graphagent.server._redis import RedisEvents, blocking_ms
from graphagent.server._redis_queue import RedisQueue


@pytest.fixture
async def short(redis_url: str) -> AsyncIterator[tuple[Any, str]]:
    """A client whose socket_timeout (0.3 s) is shorter than a one-second block, and a
    key prefix of this test's own (its keys deleted after)."""
    prefix = f"gatest-blk-{uuid.uuid4().hex[:8]}"
    client = aredis.Redis.from_url(f"{redis_url}?socket_timeout=0.3")
    yield client, prefix
    keys = [k async for k in client.scan_iter(match=f"{prefix}:*", count=1000)]
    if keys:
        await client.delete(*keys)
    await client.aclose()


def test_blocking_ms_stays_under_the_socket_timeout() -> None:
    """A block is the wanted time, shortened to half the client's socket_timeout."""
    url = "redis://127.0.0.1:6379/0"
    assert blocking_ms(aredis.Redis.from_url(url, socket_timeout=10)) == 1000
    assert blocking_ms(aredis.Redis.from_url(url, socket_timeout=0.3)) == 150
    assert blocking_ms(aredis.Redis.from_url(f"{url}?socket_timeout=0.5")) == 250
    assert blocking_ms(aredis.Redis.from_url(url, socket_timeout=None)) == 1000
    assert blocking_ms(aredis.Redis.from_url(url, socket_timeout=0.001)) == 1


async def test_event_reader_waits_past_a_short_socket_timeout(short: tuple[Any, str]) -> None:
    """A run's events are read even when none comes for longer than socket_timeout."""
    client, prefix = short
    events = RedisEvents(client, prefix)
    reader = events.read("r1", "0")

    async def later() -> None:
        await asyncio.sleep(0.8)
        await events.publish("r1", "values", {"n": 1})

    publishing = asyncio.ensure_future(later())
    _, event, data = await asyncio.wait_for(reader.__anext__(), 5)
    await publishing
    assert (event, data) == ("values", {"n": 1})
    await reader.aclose()


class _Executor:
    def __init__(self) -> None:
        self.shared = False
        self.tasks: dict[str, Any] = {}


async def test_queue_reads_quietly_past_a_short_socket_timeout(
    short: tuple[Any, str], caplog: pytest.LogCaptureFixture
) -> None:
    """An idle queue under a short socket_timeout waits without an error."""
    client, prefix = short
    queue = RedisQueue(_Executor(), client, prefix)  # type: ignore[arg-type]
    await queue.start()
    with caplog.at_level(logging.ERROR):
        await asyncio.sleep(1.2)
    for task in queue._loops:
        task.cancel()
    await asyncio.gather(*queue._loops, return_exceptions=True)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_cluster_clients_have_explicit_timeouts(redis_url: str) -> None:
    """The clients a cluster makes set socket and connect timeouts whatever redis-py's
    defaults (none before redis-py 8), and a URL's own options win."""
    graph = StateGraph().add_node("n", lambda s: {}).add_edge(START, "n").add_edge("n", END)
    targets = [graph.compile(name="g")]
    service: Any = redis_service(targets, redis_url, prefix="gatest-blk-x", run=False)
    clients = [service.events.client, service.store.client, service.docs.client]
    for client in clients:
        options = client.connection_pool.connection_kwargs
        assert options["socket_timeout"] == 5.0 and options["socket_connect_timeout"] == 5.0
    url = f"{redis_url}?socket_timeout=2"
    service = redis_service(targets, url, prefix="gatest-blk-x", run=False)
    assert service.events.client.connection_pool.connection_kwargs["socket_timeout"] == 2.0
