"""Runs through ``langgraph-sdk``: wait, background + join, stream modes, interrupts,
cancel, stateless runs and the multitask strategies."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk.client import LangGraphClient
from langgraph_sdk.errors import ConflictError, NotFoundError

HI = {"messages": [{"role": "user", "content": "weather in Oslo"}]}


async def _status(client: LangGraphClient, tid: str, rid: str, want: str) -> dict[str, Any]:
    for _ in range(200):
        run = await client.runs.get(tid, rid)
        if run["status"] == want:
            return run
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {rid} never became {want}: {run['status']}")


async def test_wait_runs_model_tool_model_in_langchain_form(client: LangGraphClient) -> None:
    """runs.wait returns the final state; messages read as LangChain's (type, tool_calls
    {name, args, id}, tool_call_id)."""
    thread = await client.threads.create()
    out = await client.runs.wait(thread["thread_id"], "assistant", input=HI)
    human, call, answer, final = out["messages"]
    assert human["type"] == "human" and human["content"] == "weather in Oslo"
    assert call["type"] == "ai"
    assert call["tool_calls"][0]["name"] == "get_weather"
    assert call["tool_calls"][0]["args"] == {"city": "Oslo"}
    assert answer["type"] == "tool"
    assert answer["tool_call_id"] == call["tool_calls"][0]["id"]
    assert final == {**final, "type": "ai", "content": "It is sunny in Oslo."}


async def test_input_messages_in_type_form_and_a_second_turn(client: LangGraphClient) -> None:
    """Input messages may use LangChain's `type`; a second run continues the thread."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "assistant", input=HI)
    second = {"messages": [{"type": "human", "content": "and Rome"}]}
    out = await client.runs.wait(tid, "assistant", input=second)
    assert len(out["messages"]) == 8
    assert out["messages"][-1]["content"] == "It is sunny in Rome."


async def test_background_run_join_get_list(client: LangGraphClient) -> None:
    """runs.create queues a run; join waits for its values; get and list show success."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "assistant", input=HI)
    assert run["status"] in ("pending", "running")
    joined = await client.runs.join(tid, run["run_id"])
    assert joined["messages"][-1]["content"] == "It is sunny in Oslo."
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "success"
    listed = await client.runs.list(tid)
    assert [r["run_id"] for r in listed] == [run["run_id"]]
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, "00000000-0000-0000-0000-000000000000")


async def test_stream_values_and_updates(client: LangGraphClient) -> None:
    """stream_mode values and updates: metadata first, then per-step events."""
    thread = await client.threads.create()
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"], "assistant", input=HI, stream_mode=["values", "updates"]
        )
    ]
    assert parts[0].event == "metadata" and "run_id" in parts[0].data
    values = [p.data for p in parts if p.event == "values"]
    updates = [p.data for p in parts if p.event == "updates"]
    assert values[-1]["messages"][-1]["content"] == "It is sunny in Oslo."
    assert [next(iter(u)) for u in updates] == ["model", "tools", "model"]


async def test_stream_messages_tuple_chunks(client: LangGraphClient) -> None:
    """messages-tuple: AIMessageChunk pieces with langgraph_node in their metadata that add
    up to the answer."""
    thread = await client.threads.create()
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"], "assistant", input=HI, stream_mode="messages-tuple"
        )
    ]
    chunks = [p.data for p in parts if p.event == "messages"]
    ai = [(m, meta) for m, meta in chunks if m["type"] == "AIMessageChunk"]
    assert all(meta["langgraph_node"] == "model" for _, meta in ai)
    last_id = ai[-1][0]["id"]
    text = "".join(m["content"] for m, _ in ai if m["id"] == last_id)
    assert text == "It is sunny in Oslo."


async def test_stream_custom_and_debug(client: LangGraphClient) -> None:
    """custom carries what a node writes; debug events arrive too."""
    thread = await client.threads.create()
    parts = [
        p
        async for p in client.runs.stream(
            thread["thread_id"], "slow", input={"tag": "x"}, stream_mode=["custom", "debug"]
        )
    ]
    assert {"progress": "started"} in [p.data for p in parts if p.event == "custom"]
    assert any(p.event == "debug" for p in parts)


async def test_interrupt_then_resume_with_command(client: LangGraphClient) -> None:
    """A run that pauses at interrupt() succeeds and leaves the thread interrupted with the
    question; command={"resume": ...} answers it and the thread is idle again."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    out = await client.runs.wait(tid, "asker", input={"log": []})
    assert out["__interrupt__"][0]["value"]["question"] == "approve?"
    runs = await client.runs.list(tid)
    assert runs[0]["status"] == "success"
    state = await client.threads.get_state(tid)
    assert state["next"] == ["ask"]
    assert state["interrupts"][0]["value"]["question"] == "approve?"
    assert (await client.threads.get(tid))["status"] == "interrupted"
    done = await client.runs.wait(tid, "asker", command={"resume": "yes"})
    assert done["log"] == ["drafted", "answer:yes"]
    assert (await client.threads.get(tid))["status"] == "idle"


async def test_cancel_a_running_run(client: LangGraphClient) -> None:
    """cancel stops a running run (its thread busy meanwhile): it ends interrupted and the
    thread is free again."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "slow", input={"delay": 30})
    await _status(client, tid, run["run_id"], "running")
    assert (await client.threads.get(tid))["status"] == "busy"
    await client.runs.cancel(tid, run["run_id"], wait=True)
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "interrupted"
    assert (await client.threads.get(tid))["status"] != "busy"


async def test_stateless_wait_and_stream(client: LangGraphClient) -> None:
    """A run without a thread answers like one with a thread."""
    out = await client.runs.wait(None, "assistant", input=HI)
    assert out["messages"][-1]["content"] == "It is sunny in Oslo."
    parts = [
        p async for p in client.runs.stream(None, "assistant", input=HI, stream_mode="updates")
    ]
    assert [next(iter(p.data)) for p in parts if p.event == "updates"] == [
        "model",
        "tools",
        "model",
    ]


async def test_multitask_reject(client: LangGraphClient) -> None:
    """reject: a second run on a busy thread is refused with 409."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, "slow", input={"delay": 30})
    await _status(client, tid, first["run_id"], "running")
    with pytest.raises(ConflictError):
        await client.runs.create(tid, "slow", input={}, multitask_strategy="reject")
    await client.runs.cancel(tid, first["run_id"], wait=True)


async def test_multitask_enqueue_runs_in_order(client: LangGraphClient) -> None:
    """enqueue (the default): runs on one thread execute one after the other, in order."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    runs = [
        await client.runs.create(tid, "slow", input={"tag": str(i), "delay": 0.05})
        for i in range(3)
    ]
    for run in runs:
        await client.runs.join(tid, run["run_id"])
    state = await client.threads.get_state(tid)
    assert state["values"]["log"] == ["done:0", "done:1", "done:2"]
    statuses = [(await client.runs.get(tid, r["run_id"]))["status"] for r in runs]
    assert statuses == ["success"] * 3


async def test_multitask_interrupt(client: LangGraphClient) -> None:
    """interrupt: the running run stops (interrupted) and the new one runs."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, "slow", input={"tag": "a", "delay": 30})
    await _status(client, tid, first["run_id"], "running")
    second = await client.runs.create(
        tid, "slow", input={"tag": "b", "delay": 0}, multitask_strategy="interrupt"
    )
    await client.runs.join(tid, second["run_id"])
    assert (await client.runs.get(tid, first["run_id"]))["status"] == "interrupted"
    assert (await client.threads.get_state(tid))["values"]["log"] == ["done:b"]


async def test_multitask_rollback(client: LangGraphClient) -> None:
    """rollback: the running run is deleted with what it wrote; the new one runs."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "slow", input={"tag": "kept"})
    first = await client.runs.create(tid, "slow", input={"tag": "a", "delay": 30})
    await _status(client, tid, first["run_id"], "running")
    second = await client.runs.create(
        tid, "slow", input={"tag": "b"}, multitask_strategy="rollback"
    )
    await client.runs.join(tid, second["run_id"])
    with pytest.raises(NotFoundError):
        for _ in range(100):
            await client.runs.get(tid, first["run_id"])
            await asyncio.sleep(0.05)
    assert (await client.threads.get_state(tid))["values"]["log"] == ["done:kept", "done:b"]


async def test_join_stream_replays_a_resumable_run(client: LangGraphClient) -> None:
    """With stream_resumable, join_stream from last_event_id "-1" replays the whole run and
    from an event's id replays what came after it."""
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(
        tid, "assistant", input=HI, stream_mode=["updates"], stream_resumable=True
    )
    await client.runs.join(tid, run["run_id"])
    whole = [
        p
        async for p in client.runs.join_stream(
            tid, run["run_id"], stream_mode=["updates"], last_event_id="-1"
        )
    ]
    updates = [p for p in whole if p.event == "updates"]
    assert [next(iter(p.data)) for p in updates] == ["model", "tools", "model"]
    after_first = [
        p
        async for p in client.runs.join_stream(
            tid, run["run_id"], stream_mode=["updates"], last_event_id=updates[0].id
        )
    ]
    assert [next(iter(p.data)) for p in after_first if p.event == "updates"] == ["tools", "model"]


async def test_failed_run_is_an_error_for_wait(client: LangGraphClient) -> None:
    """A run whose node raises: runs.wait raises with the error's name and message."""
    thread = await client.threads.create()
    with pytest.raises(Exception, match="asked to fail"):
        await client.runs.wait(thread["thread_id"], "slow", input={"fail": True})
