"""The OpenAI-compatible client against recorded and realistic payloads (httpx.MockTransport)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from graphagent.errors import ModelError, ModelHTTPError, ModelResponseError, ModelTimeoutError
from graphagent.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import ChunkAccumulator, OpenAIChatModel
from graphagent.models._sse import iter_events
from graphagent.tools import ToolDefinition

FIXTURES = Path(__file__).parent / "fixtures" / "llamacpp"
WEATHER = ToolDefinition(
    "get_weather",
    "Get the weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SYSTEM = SystemMessage("You are a helpful assistant with tools.")
ASK = UserMessage("What is the weather in Paris?")


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


class Recorder:
    """A MockTransport handler that replays responses and keeps the requests."""

    def __init__(self, *responses: httpx.Response | Callable[[httpx.Request], httpx.Response]):
        self.responses = list(responses)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        nxt = self.responses.pop(0)
        return nxt(request) if callable(nxt) else nxt

    def body(self, i: int = -1) -> Any:
        return json.loads(self.requests[i].content)


def model(recorder: Recorder, **kw: Any) -> OpenAIChatModel:
    kw.setdefault("retry_backoff", 0.001)
    return OpenAIChatModel(
        "smollm2",
        base_url="http://llama.local/v1",
        api_key="sk-very-secret",
        transport=httpx.MockTransport(recorder),
        **kw,
    )


def sse(*events: Any) -> httpx.Response:
    text = "".join(f"data: {e if isinstance(e, str) else json.dumps(e)}\n\n" for e in events)
    return httpx.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"})


def test_request_matches_the_recorded_tool_turn() -> None:
    """A tool-result turn is sent as the server accepted it: assistant content "" not null."""
    rec = Recorder(httpx.Response(200, content=fixture("03-tool-result-turn.response.json")))
    m = model(rec, max_tokens=64, temperature=0)
    history = [
        SYSTEM,
        ASK,
        AssistantMessage(
            tool_calls=[ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')]
        ),
        ToolResponseMessage("Sunny, 21 C", tool_call_id="call_1", name="get_weather"),
    ]
    m.generate(history, tools=[WEATHER], options={"tool_choice": "auto"})
    assert rec.body() == json.loads(fixture("03-tool-result-turn.request.json"))
    assert rec.requests[0].headers["authorization"] == "Bearer sk-very-secret"
    assert rec.requests[0].url == "http://llama.local/v1/chat/completions"


def test_recorded_tool_call_response() -> None:
    """content null + tool_calls + a stray legacy function_call parse to one clean call."""
    rec = Recorder(httpx.Response(200, content=fixture("01-tool-call.response.json")))
    reply = model(rec).generate([SYSTEM, ASK], tools=[WEATHER])
    assert reply.content == ""
    assert [(c.name, c.args) for c in reply.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert reply.tool_calls[0].id.startswith("call__0_get_weather")
    assert reply.metadata["finish_reason"] == "tool_calls"
    assert reply.metadata["usage"] == {
        "prompt_tokens": 209,
        "completion_tokens": 6,
        "total_tokens": 215,
    }


def test_recorded_server_error_is_model_http_error() -> None:
    """The server's 500 (null content rejected) surfaces with status and its message."""
    rec = Recorder(httpx.Response(500, content=fixture("02-null-content.response.json")))
    with pytest.raises(ModelHTTPError) as info:
        model(rec, max_retries=0).generate([ASK])
    assert info.value.status_code == 500
    assert "validation errors" in info.value.body
    assert "sk-very-secret" not in str(info.value)


def test_recorded_text_stream_adds_up() -> None:
    """Streamed text arrives in pieces that add up to the whole answer."""
    raw = fixture("04-stream-text.response.sse")
    rec = Recorder(httpx.Response(200, content=raw, headers={"content-type": "text/event-stream"}))
    chunks = list(model(rec).stream([SYSTEM, UserMessage("Say hello in French.")]))
    assert rec.body()["stream"] is True
    texts = [c.text for c in chunks if c.text]
    assert texts[:3] == ["Bon", "jour", "!"]
    acc = ChunkAccumulator()
    for c in chunks:
        acc.add(c)
    message = acc.message()
    expected = "".join(
        json.loads(e.data)["choices"][0]["delta"].get("content") or ""
        for e in iter_events(raw.decode().splitlines())
        if e.data != "[DONE]"
    )
    assert message.content == expected and message.metadata["finish_reason"] == "stop"


def test_recorded_empty_stream_with_tools_is_never_an_empty_answer() -> None:
    """HTTP 200 with an empty event stream: asked again without streaming; if that is
    empty too, an error, never an empty answer."""
    empty = httpx.Response(200, content=b"", headers={"content-type": "text/event-stream"})
    rec = Recorder(empty, httpx.Response(200, content=b""))
    with pytest.raises(ModelResponseError, match="not JSON"):
        list(model(rec).stream([SYSTEM, ASK], tools=[WEATHER]))
    assert len(rec.requests) == 2


def tool_call_stream() -> list[Any]:
    """Two tool calls, interleaved, names once, arguments split in many pieces."""
    base = {"id": "chatcmpl-1", "model": "m", "object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def tc(index: int, **fn: Any) -> dict[str, Any]:
        return {"tool_calls": [{"index": index, **fn}]}

    return [
        chunk({"role": "assistant", "content": "Let me check."}),
        chunk(
            tc(0, id="call_a", type="function", function={"name": "get_weather", "arguments": ""})
        ),
        chunk(tc(0, function={"arguments": '{"ci'})),
        chunk(tc(1, id="call_b", type="function", function={"name": "get_weather"})),
        chunk(tc(0, function={"arguments": 'ty": "Pa'})),
        chunk(tc(1, function={"arguments": '{"city": '})),
        chunk(tc(0, function={"arguments": 'ris"}'})),
        chunk(tc(1, function={"arguments": '"Oslo"}'})),
        chunk({}, "tool_calls"),
        {
            **base,
            "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        },
        "[DONE]",
    ]


def test_streamed_tool_calls_assembled_by_index_equal_generate() -> None:
    """Split, interleaved tool-call deltas assemble into the message generate would return."""
    events = tool_call_stream()
    rec = Recorder(sse(*events))
    chunks = list(model(rec, stream_usage=True).stream([ASK], tools=[WEATHER]))
    assert rec.body()["stream_options"] == {"include_usage": True}
    streamed = ChunkAccumulator()
    for c in chunks:
        streamed.add(c)
    message = streamed.message()
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("call_a", "get_weather", '{"city": "Paris"}'),
        ("call_b", "get_weather", '{"city": "Oslo"}'),
    ]
    whole = {
        "id": "chatcmpl-1",
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "Let me check.",
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in message.tool_calls
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
    }
    generated = model(Recorder(httpx.Response(200, json=whole))).generate([ASK], tools=[WEATHER])
    assert generated.model_dump(exclude={"id"}) == message.model_dump(exclude={"id"})


def test_quirks_missing_ids_object_arguments_odd_finish_reason() -> None:
    """Missing tool-call ids get one; object arguments become JSON text."""
    body = {
        "choices": [
            {
                "finish_reason": "function_call",
                "message": {
                    "content": None,
                    "tool_calls": [
                        {"function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
                    ],
                },
            }
        ]
    }
    reply = model(Recorder(httpx.Response(200, json=body))).generate([ASK])
    call = reply.tool_calls[0]
    assert call.id.startswith("call_") and call.args == {"city": "Rome"}
    assert reply.metadata["finish_reason"] == "tool_calls"


def test_options_tools_and_structured_output() -> None:
    """Options, tool choice, a pydantic response_format and extra fields are sent."""

    class Weather(BaseModel):
        city: str
        temp: float

    rec = Recorder(httpx.Response(200, json={"choices": [{"message": {"content": "{}"}}]}))
    model(rec, temperature=0.2).generate(
        [ASK],
        tools=[WEATHER],
        options={
            "max_tokens": 10,
            "tool_choice": "get_weather",
            "response_format": Weather,
            "seed": 7,
            "stop": ["\n"],
            "enable_thinking": False,
        },
    )
    body = rec.body()
    assert body["temperature"] == 0.2 and body["max_tokens"] == 10 and body["seed"] == 7
    assert body["stop"] == ["\n"] and body["enable_thinking"] is False
    assert body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert body["response_format"]["json_schema"]["name"] == "Weather"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["city"]


def test_retries_429_honouring_retry_after_then_succeeds() -> None:
    """429 and 503 are retried (Retry-After honoured); then the answer comes through."""
    ok = httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}]})
    rec = Recorder(
        httpx.Response(429, headers={"retry-after": "0"}, json={"error": {"message": "slow down"}}),
        httpx.Response(503, text="busy"),
        ok,
    )
    assert model(rec, max_retries=2).generate([ASK]).text == "hi"
    assert len(rec.requests) == 3


def test_retries_exhausted_and_non_retryable() -> None:
    """After max_retries the last error is raised; a 400 is not retried."""
    rec = Recorder(*(httpx.Response(503, json={"error": {"message": "down"}}) for _ in range(3)))
    with pytest.raises(ModelHTTPError, match="HTTP 503: down"):
        model(rec, max_retries=2).generate([ASK])
    assert len(rec.requests) == 3
    bad = Recorder(httpx.Response(400, json={"error": {"message": "bad model"}}))
    with pytest.raises(ModelHTTPError) as info:
        model(bad, max_retries=5).generate([ASK])
    assert info.value.status_code == 400 and len(bad.requests) == 1


def test_timeouts_connection_errors_and_unreadable_bodies() -> None:
    """Timeouts, refused connections and non-JSON bodies map to the model error tree."""

    def timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("slow", request=request)

    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(ModelTimeoutError, match="did not answer within"):
        model(Recorder(timeout, timeout), max_retries=1).generate([ASK])
    with pytest.raises(ModelError, match=r"cannot reach http://llama\.local/v1"):
        model(Recorder(refused), max_retries=0).generate([ASK])
    with pytest.raises(ModelResponseError, match="not JSON"):
        model(Recorder(httpx.Response(200, text="<html>")), max_retries=0).generate([ASK])
    with pytest.raises(ModelResponseError, match="cannot read"):
        model(Recorder(httpx.Response(200, json={"choices": []}))).generate([ASK])
    with pytest.raises(ModelResponseError, match="not JSON"):
        list(model(Recorder(sse("{broken"))).stream([ASK]))


def test_api_key_never_in_errors_or_repr() -> None:
    """The key appears in no error text or repr, and credentials in URLs are masked."""
    rec = Recorder(httpx.Response(401, json={"error": {"message": "invalid key"}}))
    m = OpenAIChatModel(
        "x",
        base_url="http://user:pw@llama.local/v1",
        api_key="sk-very-secret",
        transport=httpx.MockTransport(rec),
        max_retries=0,
    )
    with pytest.raises(ModelHTTPError) as info:
        m.generate([ASK])
    for text in (str(info.value), repr(m), repr(info.value)):
        assert "sk-very-secret" not in text and "pw@" not in text


def test_real_requests_are_blocked_in_tests() -> None:
    """Without a mock transport the client refuses to send while requests are blocked."""
    with pytest.raises(ModelError, match="blocked"):
        OpenAIChatModel("x", base_url="http://127.0.0.1:9/v1", api_key="k").generate([ASK])


async def test_async_generate_and_stream() -> None:
    """agenerate and astream work over the same transport."""
    ok = httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}]})
    m = model(Recorder(ok, sse(*tool_call_stream())))
    assert (await m.agenerate([ASK])).text == "hi"
    acc = ChunkAccumulator()
    async for chunk in m.astream([ASK], tools=[WEATHER]):
        acc.add(chunk)
    assert [c.id for c in acc.message().tool_calls] == ["call_a", "call_b"]
    await m.aclose()
