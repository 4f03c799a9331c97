"""A thread's stream (``threads.join_stream``) and the stream modes read out of ``debug``
(``tasks``, ``checkpoints``), through ``langgraph-sdk``."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from _serving import ThreadFollower
from langgraph_sdk.client import LangGraphClient

HI = {"messages": [{"role": "user", "content": "weather in Oslo"}]}
ROME = {"messages": [{"role": "user", "content": "weather in Rome"}]}


def _done(data: Any) -> bool:
    return isinstance(data, dict) and data.get("status") == "run_done"


async def _follow(
    client: LangGraphClient, tid: str, runs: int, **options: Any
) -> list[tuple[str, Any, str | None]]:
    """The thread stream's events until ``runs`` runs ended."""
    seen: list[tuple[str, Any, str | None]] = []
    async for part in await client.threads.join_stream(tid, **options):
        seen.append((part.event, part.data, getattr(part, "id", None)))
        if part.event == "metadata" and _done(part.data):
            runs -= 1
            if not runs:
                break
    return seen


async def test_thread_stream_follows_each_run_then_says_it_is_done(
    client: LangGraphClient,
) -> None:
    """threads.join_stream yields each run's start, its values, then run_done, run after
    run, for runs started after the client joined."""
    tid = (await client.threads.create())["thread_id"]
    follower = ThreadFollower(client, tid)
    try:
        await follower.joined(client, tid, "assistant", HI)
        first = await client.runs.create(tid, "assistant", input=HI)
        second = await client.runs.create(tid, "assistant", input=ROME)
        seen = await follower.until_done(second["run_id"])
    finally:
        await follower.close()
    ends = [d["run_id"] for e, d, _ in seen if e == "metadata" and _done(d)]
    assert ends == [first["run_id"], second["run_id"]]
    starts = [d["run_id"] for e, d, _ in seen if e == "metadata" and "attempt" in d]
    assert starts == ends
    cut = next(i for i, (e, d, _) in enumerate(seen) if e == "metadata" and _done(d))
    last_values = [d for e, d, _ in seen[:cut] if e == "values"][-1]
    assert last_values["messages"][-1]["content"] == "It is sunny in Oslo."
    later = [d for e, d, _ in seen[cut:] if e == "values"][-1]
    assert later["messages"][-1]["content"] == "It is sunny in Rome."


@pytest.mark.ours
async def test_thread_stream_lifecycle_shows_only_starts_and_ends(
    client: LangGraphClient,
) -> None:
    """stream_mode="lifecycle" keeps each run's start and run_done only."""
    tid = (await client.threads.create())["thread_id"]
    follower = ThreadFollower(client, tid, stream_mode="lifecycle")
    try:
        await follower.joined(client, tid, "assistant", HI)
        run = await client.runs.create(tid, "assistant", input=HI)
        seen = await follower.until_done(run["run_id"])
    finally:
        await follower.close()
    assert [(e, d.get("run_id")) for e, d, _ in seen] == [
        ("metadata", run["run_id"]),
        ("metadata", run["run_id"]),
    ]
    assert _done(seen[-1][1])


@pytest.mark.ours
async def test_thread_stream_resumes_after_a_last_event_id(client: LangGraphClient) -> None:
    """A client that reconnects with the id of the first run's end reads the second run
    only; "-1" replays both runs."""
    tid = (await client.threads.create())["thread_id"]
    first = await client.runs.create(tid, "assistant", input=HI, stream_resumable=True)
    await client.runs.join(tid, first["run_id"])
    second = await client.runs.create(tid, "assistant", input=ROME, stream_resumable=True)
    await client.runs.join(tid, second["run_id"])
    replay = await asyncio.wait_for(_follow(client, tid, 2, last_event_id="-1"), 20)
    first_end = next(i for e, d, i in replay if e == "metadata" and _done(d))
    assert first_end is not None
    resumed = await asyncio.wait_for(_follow(client, tid, 1, last_event_id=first_end), 20)
    runs = {d.get("run_id") for e, d, _ in resumed if e == "metadata"}
    assert runs == {second["run_id"]}
    values = [d for e, d, _ in resumed if e == "values"]
    assert values[-1]["messages"][-1]["content"] == "It is sunny in Rome."


@pytest.mark.ours
async def test_thread_stream_of_another_thread_or_mode_is_refused(
    client: LangGraphClient, server_url: str
) -> None:
    """An unknown thread is a 404; a thread stream mode not served is a 422 naming it."""
    async with httpx.AsyncClient(base_url=server_url) as http:
        gone = await http.get("/threads/00000000-0000-0000-0000-000000000000/stream")
        assert gone.status_code == 404
        tid = (await client.threads.create())["thread_id"]
        bad = await http.get(f"/threads/{tid}/stream", params={"stream_mode": "state_update"})
        assert bad.status_code == 422
        assert "state_update" in bad.json()["detail"]


async def test_stream_modes_tasks_and_checkpoints(client: LangGraphClient) -> None:
    """stream_mode tasks yields each task's start (name, input) and result; checkpoints
    yields each checkpoint (config, values, next, metadata), the last one finished."""
    tid = (await client.threads.create())["thread_id"]
    parts = [
        p
        async for p in client.runs.stream(
            tid, "assistant", input=HI, stream_mode=["tasks", "checkpoints"]
        )
    ]
    assert not [p for p in parts if p.event == "debug"]
    tasks = [p.data for p in parts if p.event == "tasks"]
    started = [t["name"] for t in tasks if "input" in t]
    finished = [t["name"] for t in tasks if "result" in t]
    assert started == finished == ["model", "tools", "model"]
    assert all(t["error"] is None for t in tasks if "result" in t)
    checkpoints = [p.data for p in parts if p.event == "checkpoints"]
    last = checkpoints[-1]
    assert last["next"] == []
    assert last["values"]["messages"][-1]["content"] == "It is sunny in Oslo."
    assert last["config"]["configurable"]["thread_id"] == tid
    assert last["parent_config"]["configurable"]["checkpoint_id"]
    state = await client.threads.get_state(tid)
    assert last["config"]["configurable"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]


@pytest.mark.ours
@pytest.mark.parametrize("mode", ["events", "messages", "tools", "lifecycle"])
async def test_stream_modes_not_served_are_refused_by_name(server_url: str, mode: str) -> None:
    """A stream mode no graph here produces is a 422 naming it and what to use."""
    async with httpx.AsyncClient(base_url=server_url) as http:
        reply = await http.post(
            "/runs/stream", json={"assistant_id": "assistant", "input": HI, "stream_mode": mode}
        )
    assert reply.status_code == 422
    assert repr(mode) in reply.json()["detail"] and "use" in reply.json()["detail"]
