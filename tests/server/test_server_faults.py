"""A cluster (on Redis, on PostgreSQL) losing a worker mid-run: every run still finishes,
exactly once."""

from __future__ import annotations

import asyncio
import json
import signal
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
import redis
from _serving import (
    TARGETS,
    drop_prefix,
    drop_schema,
    free_port,
    start_server,
    stop,
    wait_ready,
)
from langgraph_sdk import get_client

pytestmark = pytest.mark.ours

CLUSTER_TARGETS = [*TARGETS, "tests/server/targets.py:slow_agent"]


@pytest.fixture(params=["redis", "postgres"])
def cluster(request: pytest.FixtureRequest, redis_url: str) -> Iterator[dict[str, Any]]:
    """An API-only server and two workers (3 s leases) on one Redis prefix (or one
    PostgreSQL schema)."""
    prefix = f"srvfault_{uuid.uuid4().hex[:8]}"
    port = free_port()
    if request.param == "redis":
        shared = ["--redis", redis_url, "--prefix", prefix]
    else:
        pg_url = request.getfixturevalue("postgres_url")
        shared = ["--postgres", pg_url, "--prefix", prefix]
    server = start_server(["serve", *CLUSTER_TARGETS, "--port", str(port), "--no-run", *shared])
    workers = [
        start_server(["worker", *CLUSTER_TARGETS, *shared, "--lease-ms", "3000"]) for _ in range(2)
    ]
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, server)
        time.sleep(1.5)  # the workers import the targets and join the consumer group
        where = {"url": url, "workers": workers, "prefix": prefix, "kind": request.param}
        where["redis"] = redis_url
        if request.param == "postgres":
            where["postgres"] = request.getfixturevalue("postgres_url")
        yield where
    finally:
        for proc in [server, *workers]:
            stop(proc)
        if request.param == "redis":
            drop_prefix(redis_url, prefix)
        else:
            drop_schema(request.getfixturevalue("postgres_url"), prefix)


def _events(where: dict[str, Any], run_id: str) -> list[str]:
    """The names of a run's events, as stored."""
    prefix = where["prefix"]
    if where["kind"] == "postgres":
        with psycopg.connect(where["postgres"]) as conn:
            rows = conn.execute(
                f'SELECT event FROM "{prefix}".graphagent_server_events WHERE run_id = %s '
                "ORDER BY seq",
                (run_id,),
            ).fetchall()
        return [r[0] for r in rows]
    client = redis.Redis.from_url(where["redis"])
    try:
        entries = client.xrange(f"{prefix}:srv:ev:{run_id}")
    finally:
        client.close()
    return [row[1][b"e"].decode() for row in entries]


def _held_by(where: dict[str, Any], worker_pid: int) -> list[str]:
    """The runs the worker with this pid holds (taken, not yet acknowledged)."""
    prefix = where["prefix"]
    if where["kind"] == "postgres":
        with psycopg.connect(where["postgres"]) as conn:
            rows = conn.execute(
                f'SELECT run_id FROM "{prefix}".graphagent_server_queue WHERE owner LIKE %s',
                (f"%:{worker_pid}:%",),
            ).fetchall()
        return [str(r[0]) for r in rows]
    client = redis.Redis.from_url(where["redis"])
    stream = f"{prefix}:srv:queue"
    try:
        held = []
        for consumer in client.xinfo_consumers(stream, "executors"):
            name = str(consumer["name"], "utf-8")
            if f":{worker_pid}:" not in name:
                continue
            for entry in client.xpending_range(stream, "executors", "-", "+", 100, name):
                ident = entry["message_id"]
                held += [row[1][b"run"].decode() for row in client.xrange(stream, ident, ident)]
        return held
    finally:
        client.close()


def _mid_run_on(where: dict[str, Any], worker_pid: int) -> bool:
    """Whether the worker with this pid holds a run under way: begun (its metadata out)
    and not ended (no result yet), so that stopping the worker now interrupts it."""
    for run_id in _held_by(where, worker_pid):
        events = _events(where, run_id)
        if "metadata" in events and "__result__" not in events:
            return True
    return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM], ids=["kill", "term"])
async def test_a_worker_lost_mid_run(cluster: dict[str, Any], sig: int) -> None:
    """20 background runs on 10 threads; one worker is killed (SIGKILL) or stopped
    (SIGTERM) while it runs some: every run ends success exactly once (one result in its
    stream) and each thread holds each run's four messages once, in order."""
    async with get_client(url=cluster["url"]) as client:
        threads = [(await client.threads.create())["thread_id"] for _ in range(10)]
        runs = []
        for turn in range(2):
            for i, tid in enumerate(threads):
                city = f"city{i}x{turn}"
                message = {"role": "user", "content": f"weather in {city}"}
                run = await client.runs.create(tid, "slow_assistant", input={"messages": [message]})
                runs.append((tid, run["run_id"], city))
        victim = cluster["workers"][0]
        for _ in range(400):  # kill it while a run is under way there (the tool sleeps)
            if _mid_run_on(cluster, victim.pid):
                break
            await asyncio.sleep(0.02)
        victim.send_signal(sig)
        victim.wait(timeout=30)  # a stopped worker that never exits fails here
        for tid, rid, _ in runs:
            await asyncio.wait_for(client.runs.join(tid, rid), 60)
        resumed = 0
        for tid, rid, _ in runs:
            assert (await client.runs.get(tid, rid))["status"] == "success"
            events = _events(cluster, rid)
            assert events.count("__result__") == 1, events
            resumed += events.count("metadata") > 1  # a second attempt: taken over
        assert resumed >= 1, "the killed worker held no run: the test proved nothing"
        for i, tid in enumerate(threads):
            messages = (await client.threads.get_state(tid))["values"]["messages"]
            texts = [(m["type"], m["content"]) for m in messages]
            want = []
            for turn in range(2):
                city = f"city{i}x{turn}"
                want += [
                    ("human", f"weather in {city}"),
                    ("ai", ""),
                    ("tool", f"sunny in {city}"),
                    ("ai", f"It is sunny in {city}."),
                ]
            assert texts == want, json.dumps(texts)
            assert len({m["id"] for m in messages}) == len(messages)
