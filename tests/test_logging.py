"""Logs under ``graphagent.*``: silent by default; at DEBUG, model requests and answers,
tool calls and checkpoint writes, with counts, never keys, ToolContext or message text."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver
from graphagent.agent import ReactAgent
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel, OpenAIChatModel
from graphagent.observability import capture_content
from graphagent.tools import ToolContext, tool

FIXTURES = Path(__file__).parent / "fixtures" / "llamacpp"
KEY = "sk-live-key-0123456789"
SECRET = "tool-context-secret-42"
PRIVATE = "my passport number is X1234567"
ANSWER = "Paris is sunny today, enjoy it."

FINAL = {
    "id": "chatcmpl-final-1",
    "object": "chat.completion",
    "model": "smollm2",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": ANSWER},
            "finish_reason": "stop",
        }
    ],
    "usage": {"prompt_tokens": 240, "completion_tokens": 9, "total_tokens": 249},
}


@tool
def get_weather(city: str, ctx: ToolContext) -> str:
    """Get the weather for a city.

    Args:
        city: City name.
    """
    assert ctx.context["token"] == SECRET
    return f"sunny in {city} (forecast id 7781)"


def agent(saver: CheckpointSaver | None = None) -> ReactAgent:
    """A ReactAgent on an OpenAI client replaying a recorded tool call, then an answer."""
    replies = [
        httpx.Response(200, content=(FIXTURES / "01-tool-call.response.json").read_bytes()),
        httpx.Response(200, json=FINAL),
    ]
    model = OpenAIChatModel(
        "smollm2",
        base_url="http://llama.local/v1",
        api_key=KEY,
        transport=httpx.MockTransport(lambda request: replies.pop(0)),
    )
    return ReactAgent(
        name="weather",
        model=model,
        tools=[get_weather],
        tool_context={"token": SECRET},
        saver=saver or MemorySaver(),
    )


@pytest.fixture
def debug(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Every graphagent logger at DEBUG, captured; content capture restored afterwards."""
    caplog.set_level(logging.DEBUG, logger="graphagent")
    yield caplog
    capture_content(False)


def everything(caplog: pytest.LogCaptureFixture) -> str:
    """All captured text, including the structured fields, as one string."""
    parts = []
    for record in caplog.records:
        parts.append(record.getMessage())
        parts.append(json.dumps(getattr(record, "graphagent", {}), default=str))
    return "\n".join(parts)


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    return [
        r.graphagent  # type: ignore[attr-defined]
        for r in caplog.records
        if getattr(r, "graphagent", {}).get("event") == name
    ]


def test_the_library_is_silent_until_logging_is_configured() -> None:
    """A NullHandler sits on the 'graphagent' logger, so Python's last-resort handler
    never prints our records to stderr in an application that configured nothing."""
    handlers = logging.getLogger("graphagent").handlers
    assert any(isinstance(h, logging.NullHandler) for h in handlers)


def test_debug_logs_requests_answers_tool_calls_and_checkpoints(
    debug: pytest.LogCaptureFixture,
) -> None:
    """One agent turn at DEBUG: each request (provider, model, counts), each answer
    (finish reason, tokens, latency), the tool call (name, duration, outcome) and each
    checkpoint write (thread, step, bytes)."""
    reply = agent().call(PRIVATE, thread_id="t-log")
    assert reply.text == ANSWER

    requests = events(debug, "chat.request")
    assert [(r["provider"], r["model"], r["messages"], r["tools"]) for r in requests] == [
        ("openai", "smollm2", 1, 1),
        ("openai", "smollm2", 3, 1),
    ]
    answers = events(debug, "chat.response")
    assert [(a["finish_reason"], a["input_tokens"], a["output_tokens"]) for a in answers] == [
        ("tool_calls", 209, 6),
        ("stop", 240, 9),
    ]
    assert all(a["latency_ms"] >= 0 for a in answers)
    (call,) = events(debug, "tool.call")
    assert call["tool"] == "get_weather" and call["outcome"] == "ok"
    assert call["call_id"].startswith("call__0_get_weather") and call["duration_ms"] >= 0
    writes = events(debug, "checkpoint.write")
    assert writes and {w["thread"] for w in writes} == {"t-log"}
    assert [w["step"] for w in writes] == sorted(w["step"] for w in writes)
    assert all(w["bytes"] > 0 for w in writes)
    text = "\n".join(r.getMessage() for r in debug.records)
    assert "chat request provider=openai model=smollm2 messages=1 tools=1" in text
    assert "finish_reason=stop input_tokens=240 output_tokens=9 latency_ms=" in text
    assert "tool call name=get_weather" in text and "outcome=ok duration_ms=" in text
    assert "checkpoint write thread=t-log step=" in text

    logged = everything(debug)
    for never in (KEY, SECRET, PRIVATE, ANSWER, "Paris", "7781"):
        assert never not in logged, never


def test_content_is_logged_only_when_opted_in(debug: pytest.LogCaptureFixture) -> None:
    """capture_content(True) adds messages, tool arguments and results; keys and the
    ToolContext still never appear."""
    capture_content(True)
    agent().call(PRIVATE, thread_id="t-content")
    logged = everything(debug)
    assert PRIVATE in logged and ANSWER in logged
    assert '"city": "Paris"' in logged and "sunny in Paris" in logged
    assert KEY not in logged and SECRET not in logged


def test_failures_are_logged_by_kind_without_their_text(debug: pytest.LogCaptureFixture) -> None:
    """A tool that raises, an unknown tool and a model error: the outcome names the
    exception type; the exception's text (which may hold data) is not logged."""

    @tool
    def explode(x: int) -> str:
        """Fail."""
        raise ValueError(f"bad secret {SECRET}")

    calls = [
        ToolCall(id="a", name="explode", arguments='{"x": 1}'),
        ToolCall(id="b", name="nosuch", arguments="{}"),
        ToolCall(id="c", name="explode", arguments='{"x": "not a number"}'),
    ]
    model = FakeChatModel([AssistantMessage(tool_calls=calls), "ok"])
    ReactAgent(name="f", model=model, tools=[explode]).call("go")
    outcomes = {c["call_id"]: c["outcome"] for c in events(debug, "tool.call")}
    assert outcomes == {
        "a": "error:ValueError",
        "b": "error:ToolExecutionError",
        "c": "error:ToolArgumentsError",
    }

    broken = OpenAIChatModel(
        "smollm2",
        base_url="http://llama.local/v1",
        api_key=KEY,
        max_retries=0,
        transport=httpx.MockTransport(
            lambda r: httpx.Response(401, json={"error": {"message": f"bad key {KEY}"}})
        ),
    )
    with pytest.raises(Exception, match="401"):
        ReactAgent(name="g", model=broken).call("hi")
    (failure,) = events(debug, "chat.error")
    assert failure["error"] == "ModelHTTPError" and failure["provider"] == "openai"
    logged = everything(debug)
    assert KEY not in logged and SECRET not in logged


def test_nothing_is_formatted_below_debug(caplog: pytest.LogCaptureFixture) -> None:
    """At INFO no per-request or per-write record is made."""
    caplog.set_level(logging.INFO, logger="graphagent")
    agent().call("hi", thread_id="t-info")
    assert not [r for r in caplog.records if hasattr(r, "graphagent")]


def test_every_saver_logs_its_writes(
    saver: CheckpointSaver, debug: pytest.LogCaptureFixture
) -> None:
    """Memory, SQLite, PostgreSQL, Redis and Redis Cluster: each step's write is logged
    once, with its thread, step and size; values never appear."""
    g = StateGraph({"items": AppendStrategy()})
    g.add_node("a", lambda s: {"items": [PRIVATE]})
    g.add_node("b", lambda s: {"items": ["x" * 5000]})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(saver=saver)
    app.invoke({"items": []}, {"thread_id": "t-saver"})
    writes = events(debug, "checkpoint.write")
    assert [w["step"] for w in writes] == [0, 1, 2]
    assert {w["thread"] for w in writes} == {"t-saver"}
    assert writes[2]["bytes"] > 5000 > writes[1]["bytes"]
    assert PRIVATE not in everything(debug)
