"""Faults: Redis crashing, resetting connections or coming back empty mid-run; nodes,
models and tools failing. Every failure names its cause and leaves the last good checkpoint;
a retry once Redis is back resumes from there."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest
import redis

from checkpoint import MemorySaver, RedisSaver
from graphagent.agent import ReactAgent
from graphagent.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointStorageError,
    ModelTimeoutError,
    ToolExecutionError,
)
from graphagent.graph import END, START, AppendStrategy, CompiledGraph, StateGraph
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel, OpenAIChatModel
from graphagent.tools import DefaultToolExecutionExceptionProcessor

Fault = Any  # a callable run inside node "b", once


def _pipeline(saver: Any, fault: list[Fault]) -> CompiledGraph:
    """a -> b -> c, appending their names; ``b`` runs the pending fault first, once."""

    def b(state: Any) -> dict[str, Any]:
        if fault:
            fault.pop()()
        return {"log": ["b"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", lambda s: {"log": ["a"]}).add_node("b", b).add_node(
        "c", lambda s: {"log": ["c"]}
    )
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    return g.compile(saver=saver)


def _saver(url: str) -> RedisSaver:
    # no client retries: the crash must surface, not be papered over by reconnects
    return RedisSaver.from_url(
        url, prefix="faults", socket_timeout=2, retry_on_error=[], retry=None
    )


def test_redis_crash_mid_run_then_retry_resumes_from_the_last_good_step(
    private_redis: Any,
) -> None:
    """Redis dies during node b: the run fails naming Redis; after a restart it resumes."""
    fault = [private_redis.crash]
    app = _pipeline(_saver(private_redis.url), fault)
    with pytest.raises(CheckpointStorageError, match=r"Redis .* while writing checkpoint"):
        app.invoke({"log": []}, {"thread_id": "t"})
    private_redis.start()  # same data directory: the AOF brings the thread back
    app = _pipeline(_saver(private_redis.url), fault)
    state = app.get_state({"thread_id": "t"})
    assert state.values["log"] == ["a"] and state.next == ("b",)  # last good step
    out = app.invoke(None, {"thread_id": "t"})
    assert out["log"] == ["a", "b", "c"]  # b ran once in the record, nothing half-written
    steps = [h.step for h in app.get_state_history({"thread_id": "t"})]
    assert steps == sorted(steps, reverse=True) and len(steps) == len(set(steps))


def test_redis_restarted_empty_is_named_and_writes_nothing(private_redis: Any) -> None:
    """Redis loses everything between two steps: the run says the thread is gone."""

    def wipe() -> None:
        private_redis.crash()
        private_redis.start(empty=True)

    app = _pipeline(_saver(private_redis.url), [wipe])
    with pytest.raises(CheckpointConflictError, match="is gone from Redis") as err:
        app.invoke({"log": []}, {"thread_id": "t"})
    assert "restarted without its data" in str(err.value)
    assert redis.Redis.from_url(private_redis.url).keys("*") == []  # nothing half-written
    assert app.invoke({"log": []}, {"thread_id": "t"})["log"] == ["a", "b", "c"]


def test_connection_reset_mid_run_is_retried_by_the_client(private_redis: Any) -> None:
    """Every client connection killed during a node: redis-py reconnects, the run completes."""
    admin = redis.Redis.from_url(private_redis.url)
    app = _pipeline(
        RedisSaver.from_url(private_redis.url, prefix="faults"),
        [lambda: admin.client_kill_filter(_type="normal", skipme=True)],
    )
    assert app.invoke({"log": []}, {"thread_id": "t"})["log"] == ["a", "b", "c"]
    assert len(app.get_state_history({"thread_id": "t"})) == 4


def test_a_retried_write_that_already_landed_is_not_a_conflict(
    redis_url: str, redis_prefix: str
) -> None:
    """If a reply is lost after the step landed, the client's retry of it succeeds."""
    from checkpoint.base import CheckpointWrite, new_checkpoint_id

    saver = RedisSaver.from_url(redis_url, prefix=redis_prefix)
    write = CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=None,
        step=0,
        changes={"n": ("set", 1)},
        next=(),
        metadata={},
        created_at=time.time(),
    )
    saver.put("t", write, expected_head=None)
    saver.put("t", write, expected_head=None)  # the retry
    assert [c.id for c in saver.list("t")] == [write.id]


def test_unreachable_redis_names_the_cause_without_credentials() -> None:
    """A refused connection is a CheckpointStorageError; the password never shows."""
    app = _pipeline(_saver("redis://agent:s3cret-pw@127.0.0.1:1/0"), [])
    with pytest.raises(CheckpointError) as err:
        app.invoke({"log": []}, {"thread_id": "t"})
    text = f"{err.value} {err.value.__cause__}"
    assert "Redis unreachable" in text or "ConnectionError" in text
    assert "s3cret-pw" not in text


def test_a_node_that_raises_leaves_the_state_as_it_was(saver: Any) -> None:
    """The failing step is not written; the error is the node's own, with its name."""

    def boom() -> None:
        raise ValueError("bad input from upstream")

    app = _pipeline(saver, [boom])
    with pytest.raises(ValueError, match="bad input from upstream") as err:
        app.invoke({"log": []}, {"thread_id": "t"})
    assert err.value.graphagent_node == "b"  # type: ignore[attr-defined]
    assert "(raised in graph node 'b')" in err.value.__notes__
    state = app.get_state({"thread_id": "t"})
    assert state.values["log"] == ["a"] and state.next == ("b",)


def test_model_timeout_leaves_the_thread_at_its_last_step() -> None:
    """A model that never answers: ModelTimeoutError; the conversation is as before."""

    def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    model = OpenAIChatModel(
        "gpt-test", api_key="sk-test", transport=httpx.MockTransport(hang), max_retries=0
    )
    saver = MemorySaver()
    agent = ReactAgent(name="a", model=model, saver=saver)
    with pytest.raises(ModelTimeoutError):
        agent.call("hello?", thread_id="t")
    state = agent.get_state(thread_id="t")
    assert [m.role for m in state.values["messages"]] == ["user"] and state.next == ("model",)


def test_a_hanging_tool_times_out_and_the_state_is_unchanged() -> None:
    """tool_timeout stops a tool that hangs; raised errors name the tool and the limit."""

    def slow(q: str) -> str:
        """Never comes back in time."""
        time.sleep(2)
        return "late"

    call = ToolCall(id="c1", name="slow", arguments='{"q": "x"}')
    agent = ReactAgent(
        name="a",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "never"]),
        tools=[slow],
        tool_timeout=0.2,
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True),
        saver=MemorySaver(),
    )
    started = time.monotonic()
    with pytest.raises(ToolExecutionError, match=r"'slow' did not finish within 0\.2 s"):
        agent.call("go", thread_id="t")
    assert time.monotonic() - started < 1.5
    state = agent.get_state(thread_id="t")
    assert state.next == ("tools",) and list(state.values["messages"][-1].tool_calls) == [call]
