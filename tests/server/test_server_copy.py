"""``threads.copy`` and the assistant calls that change assistants, through
``langgraph-sdk``."""

from __future__ import annotations

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

HI = {"messages": [{"role": "user", "content": "weather in Oslo"}]}
ROME = {"messages": [{"role": "user", "content": "weather in Rome"}]}


async def test_copy_has_the_history_and_grows_apart(client: LangGraphClient) -> None:
    """A copy has the original's state and history (same checkpoints); a run on the copy
    leaves the original as it was."""
    tid = (await client.threads.create(metadata={"team": "blue"}))["thread_id"]
    await client.runs.wait(tid, "assistant", input=HI)
    copy = await client.threads.copy(tid)
    cid = copy["thread_id"]
    assert cid != tid
    assert copy["metadata"]["team"] == "blue"
    original, copied = await client.threads.get_state(tid), await client.threads.get_state(cid)
    assert copied["values"] == original["values"]
    assert copied["checkpoint"]["checkpoint_id"] == original["checkpoint"]["checkpoint_id"]
    before = await client.threads.get_history(tid, limit=100)
    history = await client.threads.get_history(cid, limit=100)
    assert [h["checkpoint"]["checkpoint_id"] for h in history] == [
        h["checkpoint"]["checkpoint_id"] for h in before
    ]
    assert [h["values"] for h in history] == [h["values"] for h in before]
    out = await client.runs.wait(cid, "assistant", input=ROME)
    assert len(out["messages"]) == 8
    assert out["messages"][-1]["content"] == "It is sunny in Rome."
    assert (await client.threads.get_state(tid))["values"] == original["values"]
    assert len(await client.threads.get_history(tid, limit=100)) == len(before)


async def test_copy_of_a_paused_thread_resumes_on_its_own(client: LangGraphClient) -> None:
    """A thread paused at interrupt() copies paused: resuming the copy finishes it, the
    original still waits."""
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "asker", input={"log": []})
    copy = await client.threads.copy(tid)
    cid = copy["thread_id"]
    assert (await client.threads.get_state(cid))["next"] == ["ask"]
    out = await client.runs.wait(cid, "asker", command={"resume": "yes"})
    assert out["log"] == ["drafted", "answer:yes"]
    assert (await client.threads.get(tid))["status"] == "interrupted"
    assert (await client.threads.get_state(tid))["next"] == ["ask"]


@pytest.mark.ours
async def test_copy_says_its_status_and_an_unknown_thread_is_404(
    client: LangGraphClient,
) -> None:
    """A copy's status is its state's (a paused thread's copy is interrupted, where
    LangGraph's server says idle); copying a thread that does not exist is a 404 (LangGraph's
    server answers 409)."""
    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "asker", input={"log": []})
    assert (await client.threads.copy(tid))["status"] == "interrupted"
    with pytest.raises(NotFoundError):
        await client.threads.copy("00000000-0000-0000-0000-000000000000")


@pytest.mark.ours
async def test_assistants_are_fixed_and_say_why(client: LangGraphClient) -> None:
    """assistants.create/update/delete are refused with a 422 that says assistants are the
    served graphs and to pass config per run; an unknown one is a 404; making sure a
    served graph's assistant exists (if_exists="do_nothing") answers it."""
    with pytest.raises(UnprocessableEntityError) as refused:
        await client.assistants.create("assistant", config={"configurable": {"x": 1}})
    assert "config=" in str(refused.value.response.json()["detail"])
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.update("assistant", name="renamed")
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.delete("assistant")
    with pytest.raises(NotFoundError):
        await client.assistants.update("nobody", name="renamed")
    same = await client.assistants.create(
        "assistant", assistant_id="assistant", if_exists="do_nothing"
    )
    assert same["graph_id"] == "assistant"
    assert same["assistant_id"] == (await client.assistants.get("assistant"))["assistant_id"]


@pytest.mark.ours
async def test_graph_drawing_shows_a_threads_run_on_every_store(
    client: LangGraphClient, server_url: str
) -> None:
    """The studio's drawing of a thread's run (format=svg&thread_id=) marks the node it
    waits at, on SQLite and on a cluster's async savers (Redis, PostgreSQL) alike, and
    names the thread as the client knows it."""
    import httpx

    tid = (await client.threads.create())["thread_id"]
    await client.runs.wait(tid, "asker", input={"log": []})
    async with httpx.AsyncClient(base_url=server_url) as http:
        reply = await http.get(
            "/assistants/asker/graph", params={"format": "svg", "thread_id": tid}
        )
        plain = await http.get("/assistants/asker/graph", params={"format": "svg"})
    assert reply.status_code == 200
    svg = reply.text
    assert "waiting at ask" in svg and tid in svg
    assert "waiting" not in plain.text


@pytest.mark.ours
async def test_calls_not_served_say_why(client: LangGraphClient) -> None:
    """threads.prune and crons answer a 422 naming what to do instead (not a bare 404 or
    405); subgraphs of a namespace answer like subgraphs (none here)."""
    with pytest.raises(UnprocessableEntityError) as pruned:
        await client.threads.prune(["00000000-0000-0000-0000-000000000000"])
    assert "threads.delete" in str(pruned.value.response.json()["detail"])
    tid = (await client.threads.create())["thread_id"]
    with pytest.raises(UnprocessableEntityError) as cron:
        await client.crons.create_for_thread(tid, "assistant", schedule="* * * * *")
    assert "crons are not served" in str(cron.value.response.json()["detail"])
    with pytest.raises(UnprocessableEntityError):
        await client.crons.search()
    with pytest.raises(UnprocessableEntityError):
        await client.crons.delete("00000000-0000-0000-0000-000000000000")
    assert await client.assistants.get_subgraphs("assistant", namespace="tools") == {}
