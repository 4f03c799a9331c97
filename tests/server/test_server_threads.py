"""Assistants and threads through ``langgraph-sdk``: what LangGraph's client reads back."""

from __future__ import annotations

import uuid

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError

HI = {"messages": [{"role": "user", "content": "weather in Oslo"}]}


async def test_assistants_are_the_served_graphs_by_name_and_uuid(client: LangGraphClient) -> None:
    """search lists each served graph with graph_id = name; get takes the name or the UUID."""
    found = await client.assistants.search(graph_id="assistant")
    assert [a["graph_id"] for a in found] == ["assistant"]
    by_uuid = await client.assistants.get(found[0]["assistant_id"])
    assert by_uuid["graph_id"] == "assistant"
    uuid.UUID(by_uuid["assistant_id"])
    graph = await client.assistants.get_graph(found[0]["assistant_id"])
    assert {"model", "tools"} <= {n["id"] for n in graph["nodes"]}
    assert any(e["source"] == "tools" for e in graph["edges"])


@pytest.mark.ours
async def test_assistant_by_name_and_unknown_graph(client: LangGraphClient) -> None:
    """The name works as assistant_id; an unknown graph is a 404 that names it."""
    assert (await client.assistants.get("asker"))["name"] == "asker"
    with pytest.raises(NotFoundError, match="nope"):
        await client.assistants.get("nope")
    thread = await client.threads.create()
    with pytest.raises(httpx.HTTPStatusError) as refused:
        await client.runs.wait(thread["thread_id"], "nope", input={})
    assert refused.value.response.status_code == 404
    assert "'nope' not found" in " ".join(getattr(refused.value, "__notes__", []))


async def test_thread_create_get_update_search_delete(client: LangGraphClient) -> None:
    """A thread keeps its metadata, is found by it, and is gone (404) once deleted."""
    tag = uuid.uuid4().hex
    thread = await client.threads.create(metadata={"tag": tag})
    assert thread["status"] == "idle"
    got = await client.threads.get(thread["thread_id"])
    assert got["metadata"]["tag"] == tag
    await client.threads.update(thread["thread_id"], metadata={"more": 1})
    found = await client.threads.search(metadata={"tag": tag})
    assert [t["thread_id"] for t in found] == [thread["thread_id"]]
    assert found[0]["metadata"]["more"] == 1
    await client.threads.delete(thread["thread_id"])
    with pytest.raises(NotFoundError):
        await client.threads.get(thread["thread_id"])


async def test_thread_with_own_id_and_if_exists(client: LangGraphClient) -> None:
    """An explicit thread_id is kept; creating it again is a 409, or a no-op with do_nothing."""
    tid = str(uuid.uuid4())
    made = await client.threads.create(thread_id=tid)
    assert made["thread_id"] == tid
    with pytest.raises(ConflictError):
        await client.threads.create(thread_id=tid)
    again = await client.threads.create(thread_id=tid, if_exists="do_nothing")
    assert again["thread_id"] == tid


async def test_unknown_thread_is_404_everywhere(client: LangGraphClient) -> None:
    """get, get_state, history, runs and delete on an unknown thread are 404s."""
    tid = str(uuid.uuid4())
    for call in (
        client.threads.get(tid),
        client.threads.get_state(tid),
        client.threads.get_history(tid),
        client.runs.list(tid),
        client.threads.delete(tid),
    ):
        with pytest.raises(NotFoundError):
            await call


async def test_state_history_and_update_state(client: LangGraphClient) -> None:
    """After a run the state holds the conversation; update_state writes a checkpoint that
    get_state and get_history show; an older checkpoint is readable by id."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "assistant", input=HI)
    state = await client.threads.get_state(tid)
    assert [m["type"] for m in state["values"]["messages"]] == ["human", "ai", "tool", "ai"]
    assert state["next"] == []
    history = await client.threads.get_history(tid, limit=100)
    assert history[0]["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    assert len(history) >= 4
    older = history[-1]["checkpoint"]["checkpoint_id"]
    old_state = await client.threads.get_state(tid, checkpoint_id=older)
    assert old_state["checkpoint"]["checkpoint_id"] == older
    note = {"type": "human", "content": "a note", "id": "note-1"}
    written = await client.threads.update_state(tid, {"messages": [note]})
    after = await client.threads.get_state(tid)
    assert after["checkpoint"]["checkpoint_id"] == written["checkpoint"]["checkpoint_id"]
    assert after["values"]["messages"][-1]["content"] == "a note"
    assert after["values"]["messages"][-1]["id"] == "note-1"


async def test_thread_values_and_status_follow_runs(client: LangGraphClient) -> None:
    """threads.get shows the values of the last run and the status: idle after a finished
    run, interrupted at an interrupt, error after a failed run."""
    ok = await client.threads.create()
    await client.runs.wait(ok["thread_id"], "assistant", input=HI)
    got = await client.threads.get(ok["thread_id"])
    assert got["status"] == "idle"
    assert got["values"]["messages"][-1]["content"] == "It is sunny in Oslo."
    paused = await client.threads.create()
    await client.runs.wait(paused["thread_id"], "asker", input={"log": []})
    assert (await client.threads.get(paused["thread_id"]))["status"] == "interrupted"
    failed = await client.threads.create()
    run = await client.runs.create(failed["thread_id"], "slow", input={"fail": True})
    await client.runs.join(failed["thread_id"], run["run_id"])
    assert (await client.threads.get(failed["thread_id"]))["status"] == "error"
    got_run = await client.runs.get(failed["thread_id"], run["run_id"])
    assert got_run["status"] == "error"
