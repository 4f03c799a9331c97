"""SSE parsing, the Anthropic client, init_chat_model and the test doubles."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from graphagent.errors import ModelResponseError, UserError
from graphagent.messages import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import (
    AnthropicChatModel,
    ChunkAccumulator,
    FakeChatModel,
    FunctionChatModel,
    OpenAIChatModel,
    init_chat_model,
)
from graphagent.models._http import retry_delay
from graphagent.models._sse import iter_events
from graphagent.tools import ToolDefinition

WEATHER = ToolDefinition("get_weather", "Weather", {"type": "object", "properties": {}})


def test_sse_parsing_rules() -> None:
    """Multi-line data joins, comments and keep-alives are skipped, CRLF and events work."""
    lines = [
        ": keep-alive",
        "event: message_start",
        'data: {"a":',
        "data: 1}",
        "",
        "",
        "id: 7",
        "data:no-space\r",
        "",
        "data: tail without blank line",
    ]
    events = list(iter_events(lines))
    assert [(e.event, e.data) for e in events] == [
        ("message_start", '{"a":\n1}'),
        ("message", "no-space"),
        ("message", "tail without blank line"),
    ]
    assert events[1].id == "7"


def test_retry_delay_rules() -> None:
    """Retry-After wins (capped); otherwise jittered exponential backoff."""
    resp = httpx.Response(429, headers={"retry-after": "3"})
    assert retry_delay(1, resp, 0.5) == 3.0
    assert retry_delay(1, httpx.Response(429, headers={"retry-after": "999"}), 0.5) == 60.0
    assert all(0 <= retry_delay(3, None, 0.5) <= 2.0 for _ in range(50))


def anthropic(*responses: httpx.Response) -> tuple[AnthropicChatModel, list[httpx.Request]]:
    seen: list[httpx.Request] = []
    queue = list(responses)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    m = AnthropicChatModel(
        "claude-x", api_key="ak-secret", transport=httpx.MockTransport(handler), max_retries=0
    )
    return m, seen


def test_anthropic_request_shape() -> None:
    """System goes apart; tool results are user tool_result blocks; turns alternate."""
    m, seen = anthropic(
        httpx.Response(
            200, json={"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}
        )
    )
    history = [
        SystemMessage("Be brief."),
        UserMessage("Weather in Paris and Oslo?"),
        AssistantMessage(
            "Checking.",
            tool_calls=[
                ToolCall(id="t1", name="get_weather", arguments='{"city": "Paris"}'),
                ToolCall(id="t2", name="get_weather", arguments='{"city": "Oslo"}'),
            ],
        ),
        ToolResponseMessage("21 C", tool_call_id="t1", name="get_weather"),
        ToolResponseMessage("3 C", tool_call_id="t2", name="get_weather"),
    ]
    m.generate(history, tools=[WEATHER], options={"tool_choice": "required", "temperature": 0})
    body = json.loads(seen[0].content)
    assert seen[0].headers["x-api-key"] == "ak-secret"
    assert seen[0].headers["anthropic-version"] == "2023-06-01"
    assert body["system"] == "Be brief." and body["max_tokens"] == 1024
    assert [t["role"] for t in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"][1] == {
        "type": "tool_use",
        "id": "t1",
        "name": "get_weather",
        "input": {"city": "Paris"},
    }
    assert [b["tool_use_id"] for b in body["messages"][2]["content"]] == ["t1", "t2"]
    assert body["tools"][0]["input_schema"] == {"type": "object", "properties": {}}
    assert body["tool_choice"] == {"type": "any"}


def test_anthropic_response_and_stream_agree() -> None:
    """tool_use blocks become tool calls; the event stream adds up to the same message."""
    whole = {
        "id": "msg_1",
        "model": "claude-x",
        "content": [
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "tu_1", "name": "get_weather", "input": {"city": "Paris"}},
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"id": "msg_1", "model": "claude-x", "usage": {"input_tokens": 10}},
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("ping", {"type": "ping"}),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Let me "},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "look."},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {
                    "type": "tool_use",
                    "id": "tu_1",
                    "name": "get_weather",
                    "input": {},
                },
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '"Paris"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 5},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    text = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    m, _ = anthropic(
        httpx.Response(200, json=whole),
        httpx.Response(200, content=text.encode(), headers={"content-type": "text/event-stream"}),
    )
    generated = m.generate([UserMessage("hi")], tools=[WEATHER])
    acc = ChunkAccumulator()
    for chunk in m.stream([UserMessage("hi")], tools=[WEATHER]):
        acc.add(chunk)
    streamed = acc.message()
    assert generated.tool_calls[0].args == streamed.tool_calls[0].args == {"city": "Paris"}
    assert generated.content == streamed.content == "Let me look."
    assert (
        generated.metadata
        == streamed.metadata
        == {
            "finish_reason": "tool_calls",
            "model": "claude-x",
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            "provider_id": "msg_1",
        }
    )
    assert generated.id != streamed.id and "msg_1" not in (generated.id, streamed.id)


def test_anthropic_errors() -> None:
    """An error event mid-stream raises ModelResponseError."""
    bad = 'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error"}}\n\n'
    m, _ = anthropic(httpx.Response(200, content=bad.encode()))
    with pytest.raises(ModelResponseError, match="overloaded_error"):
        list(m.stream([UserMessage("hi")]))


def test_init_chat_model(monkeypatch: pytest.MonkeyPatch) -> None:
    """Providers pick client, base URL and key variables; mistakes are named."""
    monkeypatch.setenv("DASHSCOPE_API_KEY", "ds-key")
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://gpu-box:11434/v1")
    qwen = init_chat_model("dashscope:qwen-plus")
    assert isinstance(qwen, OpenAIChatModel)
    assert qwen.http.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert qwen.http._headers["Authorization"] == "Bearer ds-key"
    assert init_chat_model("ollama:llama3.1").http.base_url == "http://gpu-box:11434/v1"
    assert init_chat_model("vllm:m", base_url="http://h:1/v1").http.base_url == "http://h:1/v1"
    assert isinstance(init_chat_model("anthropic:claude-x"), AnthropicChatModel)
    assert init_chat_model("deepseek:deepseek-chat").stream_usage is True  # type: ignore[attr-defined]
    with pytest.raises(UserError, match="provider:model"):
        init_chat_model("gpt-4o")
    with pytest.raises(UserError, match="one of openai"):
        init_chat_model("nowhere:model")


def test_fake_chat_model_replays_streams_and_records() -> None:
    """FakeChatModel answers in order, streams chunks that add up, and records requests."""
    call = ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}')
    fake = FakeChatModel(
        [AssistantMessage("Checking the weather", tool_calls=[call]), "Done."], chunk_size=3
    )
    chunks = list(fake.stream([UserMessage("hi")], tools=[WEATHER], options={"temperature": 0}))
    acc = ChunkAccumulator()
    for c in chunks:
        acc.add(c)
    assert acc.message() == fake.responses[0]
    assert len(chunks) > 5
    assert fake.generate([UserMessage("again")]).text == "Done."
    assert fake.calls[0].tools[0].name == "get_weather"
    assert fake.calls[0].options is not None and fake.calls[0].options.temperature == 0
    with pytest.raises(ModelResponseError, match="ran out of responses"):
        fake.generate([UserMessage("more")])


async def test_test_doubles_can_keep_no_request_log() -> None:
    """keep_calls=False: a long run with a test double holds no conversation in memory."""
    fake = FakeChatModel(["a", "b"], keep_calls=False)
    assert fake.generate([UserMessage("hi")]).text == "a"
    assert (await fake.agenerate([UserMessage("hi")])).text == "b"
    echo = FunctionChatModel(lambda messages, tools: messages[-1].text, keep_calls=False)
    assert echo.generate([UserMessage("x")]).text == "x"
    assert "".join([c.text async for c in echo.astream([UserMessage("y")])]) == "y"
    assert fake.calls == [] and echo.calls == []
    assert len(FunctionChatModel(lambda m, t: "z").calls) == 0


async def test_function_chat_model() -> None:
    """FunctionChatModel answers with the function, sync and async, with options if asked."""
    model = FunctionChatModel(
        lambda messages, tools, options: f"{len(messages)} msgs, {len(tools)} tools"
    )
    assert (
        await model.agenerate([UserMessage("a"), UserMessage("b")], tools=[WEATHER])
    ).text == "2 msgs, 1 tools"
    parts = [c.text async for c in model.astream([UserMessage("a")])]
    assert "".join(parts) == "1 msgs, 0 tools"


def test_test_doubles_record_a_copy_of_the_conversation_with_coerced_messages() -> None:
    """Strings and role dicts are coerced wherever they are in the list; the recorded
    list is the model's own (changing the caller's list afterwards does not reach it)."""
    model = FakeChatModel(["a", "b"])
    history: list[Any] = [UserMessage("u", id="u1"), AssistantMessage("x", id="a1")]
    model.generate(history)
    history.append(UserMessage("later"))
    assert [m.id for m in model.calls[0].messages] == ["u1", "a1"]
    model.generate([UserMessage("u", id="u1"), "plain", {"role": "assistant", "content": "y"}])
    recorded = model.calls[1].messages
    assert [type(m).__name__ for m in recorded] == [
        "UserMessage",
        "UserMessage",
        "AssistantMessage",
    ]
    assert recorded[1].text == "plain" and recorded[2].text == "y"
