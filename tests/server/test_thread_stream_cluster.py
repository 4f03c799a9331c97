"""A thread's stream on one server of a cluster follows runs created through another."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from _serving import (
    TARGETS,
    ThreadFollower,
    cluster_flags,
    free_port,
    start_server,
    stop,
    wait_ready,
)
from langgraph_sdk import get_client

pytestmark = pytest.mark.ours

HI = {"messages": [{"role": "user", "content": "weather in Oslo"}]}


@pytest.fixture(params=["redis", "postgres"])
def two_servers(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """Two servers of one cluster: A API-only, B executing runs."""
    shared = cluster_flags(request, request.param, f"srvts_{uuid.uuid4().hex[:8]}")
    ports = free_port(), free_port()
    procs = [start_server(["serve", *TARGETS, "--port", str(ports[0]), "--no-run", *shared])]
    procs.append(start_server(["serve", *TARGETS, "--port", str(ports[1]), *shared]))
    urls = tuple(f"http://127.0.0.1:{p}" for p in ports)
    try:
        for url_, proc in zip(urls, procs, strict=True):
            wait_ready(url_, proc)
        yield urls[0], urls[1]
    finally:
        for proc in procs:
            stop(proc)


async def test_thread_stream_sees_a_run_created_through_another_server(
    two_servers: tuple[str, str],
) -> None:
    """A client following a thread on server A reads a run created on server B: its
    start, its values, its end (A learns of the run by looking, within a second)."""
    a_url, b_url = two_servers
    async with get_client(url=a_url) as a, get_client(url=b_url) as b:
        tid = (await a.threads.create())["thread_id"]
        follower = ThreadFollower(a, tid)
        try:
            await follower.joined(b, tid, "assistant", HI)
            run = await b.runs.create(tid, "assistant", input=HI)
            seen = await follower.until_done(run["run_id"])
        finally:
            await follower.close()
    assert seen[0][:2] == ("metadata", {"run_id": run["run_id"], "attempt": 1})
    values = [d for e, d, _ in seen if e == "values"]
    assert values[-1]["messages"][-1]["content"] == "It is sunny in Oslo."
    assert seen[-1][:2] == ("metadata", {"status": "run_done", "run_id": run["run_id"]})
