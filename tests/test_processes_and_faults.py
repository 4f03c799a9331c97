"""Threads across real processes, read cost, and store failures seen through a run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest

from checkpoint import (
    CheckpointWrite,
    MemorySaver,
    RedisSaver,
    SerializationError,
    new_checkpoint_id,
)
from checkpoint import _layout as layout
from graphagent.errors import CheckpointStorageError, GraphAgentError
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import UserMessage

SCRIPT = textwrap.dedent(
    """
    import sys
    from checkpoint import RedisSaver
    from graphagent.graph import StateGraph, START, END, AppendStrategy
    from graphagent.messages import AssistantMessage, UserMessage

    url, prefix, text = sys.argv[1:4]
    def reply(state):
        return {"messages": [AssistantMessage(f"seen {len(state['messages'])}")]}
    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    app = g.add_edge(START, "reply").add_edge("reply", END).compile(
        saver=RedisSaver.from_url(url, prefix=prefix))
    out = app.invoke({"messages": [UserMessage(text)]}, {"thread_id": "shared"})
    print("|".join(m.text for m in out["messages"]))
    """
)


def test_thread_continues_in_another_process(redis_url: str, redis_prefix: str) -> None:
    """Two separate Python processes take turns on one Redis thread."""
    outputs = []
    for text in ("first", "second"):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, redis_url, redis_prefix, text],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        outputs.append(done.stdout.strip())
    assert outputs[1] == "first|seen 1|second|seen 3"


def test_reading_the_head_costs_the_state_not_the_history() -> None:
    """After 500 steps the head reads exactly its items and values, one field each."""
    saver = MemorySaver()
    parent = None
    for i in range(500):
        w = CheckpointWrite(
            id=new_checkpoint_id(),
            parent_id=parent,
            step=i,
            changes={"log": ("append", [i]), "counter": ("set", i)},
            next=(),
            metadata={},
            created_at=time.time(),
        )
        saver.put("t", w, expected_head=parent)
        parent = w.id
    assert parent is not None
    thread = saver._threads["t"]
    record = saver._record("t", thread, parent)
    assert len(layout.read_fields(record)) == 500 + 1
    stored = saver.serde.dumps(record.to_plain())
    assert len(layout.decode_record(stored, saver.serde.loads).logs["log"]) == 1


def test_store_failure_during_a_run_is_a_graphagent_error() -> None:
    """A Redis that cannot be reached fails the run with a CheckpointStorageError."""
    saver = RedisSaver.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.3)
    g = StateGraph({"messages": AppendStrategy()}).add_node("n", lambda s: None)
    app = g.add_edge(START, "n").add_edge("n", END).compile(saver=saver)
    try:
        with pytest.raises(CheckpointStorageError) as info:
            app.invoke({"messages": [UserMessage("x")]}, {"thread_id": "t"})
        assert isinstance(info.value, GraphAgentError)
        assert "Redis" in str(info.value)
    finally:
        saver.close()


def test_unknown_storage_layout_is_named() -> None:
    """A record written by another storage layout is refused with what to do."""
    saver = MemorySaver()
    saver.put(
        "t",
        CheckpointWrite(new_checkpoint_id(), None, 0, {}, (), {}, time.time()),
        expected_head=None,
    )
    thread = saver._threads["t"]
    cid = thread.head
    assert cid is not None
    plain = saver._record("t", thread, cid).to_plain()
    plain[0] = 1
    thread.records[cid] = saver.serde.dumps(plain)
    with pytest.raises(SerializationError, match="storage layout 1"):
        saver.get("t")
