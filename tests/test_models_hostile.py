"""Issue 14, models: llama-cpp-python's quirks (recorded payloads) and hostile servers.

Each test is a regression test for one item: tool_choice, streams retried mid-way,
deadlines, Retry-After, reused response ids, keys echoed back, missing keys.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from graphagent.agent import ReactAgent
from graphagent.errors import ModelError, ModelHTTPError, ModelTimeoutError, UserError
from graphagent.messages import AssistantMessage, SystemMessage, ToolCall, UserMessage
from graphagent.models import (
    AnthropicChatModel,
    ChunkAccumulator,
    OpenAIChatModel,
    init_chat_model,
)
from graphagent.models._http import retry_delay
from graphagent.tools import ToolDefinition

FIXTURES = Path(__file__).parent / "fixtures" / "llamacpp"
WEATHER = ToolDefinition(
    "get_weather",
    "Get the weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
SYSTEM = SystemMessage("You are a helpful assistant with tools.")
ASK = UserMessage("What is the weather in Paris?")
KEY = "sk-very-secret-key-123"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def llama(handler: Any, **kw: Any) -> OpenAIChatModel:
    kw.setdefault("retry_backoff", 0.001)
    return OpenAIChatModel(
        "smollm2",
        base_url="http://llama.local/v1",
        api_key=KEY,
        transport=httpx.MockTransport(handler),
        **kw,
    )


def event(text: str, id: str = "chatcmpl-1") -> bytes:
    chunk = {"id": id, "choices": [{"index": 0, "delta": {"content": text}}]}
    return f"data: {json.dumps(chunk)}\n\n".encode()


# -- item 1: tool_choice "auto" ------------------------------------------------------------


def test_tool_choice_auto_is_sent_whenever_tools_are() -> None:
    """llama-cpp-python ignores tools without tool_choice: the recorded request is sent."""
    seen: list[Any] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, content=fixture("01-tool-call.response.json"))

    m = llama(server, max_tokens=128, temperature=0)
    reply = m.generate([SYSTEM, ASK], tools=[WEATHER])
    assert seen[0] == json.loads(fixture("01-tool-call.request.json"))
    assert [c.name for c in reply.tool_calls] == ["get_weather"]  # not "get_weather:"
    m.generate([SYSTEM, ASK])
    assert "tool_choice" not in seen[1]  # no tools, no choice
    m.generate([SYSTEM, ASK], tools=[WEATHER], options={"tool_choice": "none"})
    assert seen[2]["tool_choice"] == "none"  # the caller's choice wins


def test_streaming_request_with_tools_matches_the_recorded_one() -> None:
    """The streamed request with tools is the recorded one (tool_choice included)."""
    seen: list[Any] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        if len(seen) == 1:  # what the server answered: 200, event stream, no bytes
            return httpx.Response(200, content=b"", headers={"content-type": "text/event-stream"})
        return httpx.Response(200, content=fixture("01-tool-call.response.json"))

    m = llama(server, max_tokens=128, temperature=0)
    acc = ChunkAccumulator()
    for chunk in m.stream([SYSTEM, ASK], tools=[WEATHER]):
        acc.add(chunk)
    assert seen[0] == json.loads(fixture("05-stream-with-tools.request.json"))
    # the empty stream is neither a hang nor a silent empty answer: the answer is fetched
    # once more without streaming (nothing was received, so nothing is duplicated)
    assert [c.name for c in acc.message().tool_calls] == ["get_weather"]
    assert "stream" not in seen[1]


async def test_empty_stream_with_tools_async_falls_back_too() -> None:
    """astream: the same fallback for the recorded empty body."""
    calls = []

    def server(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            return httpx.Response(200, content=fixture("05-stream-with-tools.response.sse"))
        return httpx.Response(200, content=fixture("01-tool-call.response.json"))

    acc = ChunkAccumulator()
    async for chunk in llama(server).astream([SYSTEM, ASK], tools=[WEATHER]):
        acc.add(chunk)
    assert acc.message().tool_calls[0].args == {"city": "Paris"} and len(calls) == 2


# -- item 2: a stream is retried only before its first byte -------------------------------


class CutStream(httpx.SyncByteStream, httpx.AsyncByteStream):
    """One event, then the connection drops."""

    def __iter__(self) -> Iterator[bytes]:
        yield event("Hello")
        raise httpx.RemoteProtocolError("peer closed connection")

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield event("Hello")
        raise httpx.RemoteProtocolError("peer closed connection")


def cut_then_whole() -> tuple[list[httpx.Request], Any]:
    requests: list[httpx.Request] = []

    def server(request: httpx.Request) -> httpx.Response:
        requests.append(request)
        if len(requests) == 1:
            return httpx.Response(200, stream=CutStream())
        return httpx.Response(200, content=event("Hello") + event(" world") + b"data: [DONE]\n\n")

    return requests, server


def test_a_stream_cut_after_its_first_event_is_not_replayed() -> None:
    """ "Hello" then a cut: an error, not "Hello Hello world" and a second paid call."""
    requests, server = cut_then_whole()
    got: list[str] = []
    with pytest.raises(ModelError, match="was cut after it began"):
        for chunk in llama(server, max_retries=3).stream([ASK]):
            got.append(chunk.text)
    assert got == ["Hello"] and len(requests) == 1


async def test_an_async_stream_cut_after_its_first_event_is_not_replayed() -> None:
    """The async stream loop follows the same policy."""
    requests, server = cut_then_whole()
    got: list[str] = []
    with pytest.raises(ModelError, match="was cut after it began"):
        async for chunk in llama(server, max_retries=3).astream([ASK]):
            got.append(chunk.text)
    assert got == ["Hello"] and len(requests) == 1


async def test_failures_before_the_first_byte_are_retried_in_all_four_loops() -> None:
    """A connection error, then a 503 with a malformed Retry-After, then success."""

    def flaky() -> Any:
        state = {"n": 0}

        def server(request: httpx.Request) -> httpx.Response:
            state["n"] += 1
            if state["n"] == 1:
                raise httpx.ConnectError("refused", request=request)
            if state["n"] == 2:
                return httpx.Response(503, headers={"retry-after": "soon"})
            if json.loads(request.content).get("stream"):
                return httpx.Response(200, content=event("ok") + b"data: [DONE]\n\n")
            return httpx.Response(200, json={"choices": [{"message": {"content": "ok"}}]})

        return server

    assert llama(flaky()).generate([ASK]).text == "ok"
    assert (await llama(flaky()).agenerate([ASK])).text == "ok"
    assert "".join(c.text for c in llama(flaky()).stream([ASK])) == "ok"
    assert "".join([c.text async for c in llama(flaky()).astream([ASK])]) == "ok"


# -- item 3: an overall deadline and a stream idle timeout --------------------------------


class Drip(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A byte every 10 ms, forever (a per-read timeout never fires)."""

    def __init__(self, piece: bytes) -> None:
        self.piece = piece

    def __iter__(self) -> Iterator[bytes]:
        while True:
            time.sleep(0.01)
            yield self.piece

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while True:
            await asyncio.sleep(0.01)
            yield self.piece


async def test_a_dripping_server_hits_the_overall_deadline() -> None:
    """generate and stream, sync and async, stop at ``deadline`` seconds."""
    body = lambda request: httpx.Response(200, stream=Drip(b" "))  # noqa: E731
    sse = lambda request: httpx.Response(200, stream=Drip(b": keep-alive\n"))  # noqa: E731
    with pytest.raises(ModelTimeoutError, match="deadline"):
        llama(body, deadline=0.3).generate([ASK])
    with pytest.raises(ModelTimeoutError, match="deadline"):
        list(llama(sse, deadline=0.3).stream([ASK]))
    with pytest.raises(ModelTimeoutError, match="deadline"):
        await llama(body, deadline=0.3).agenerate([ASK])
    with pytest.raises(ModelTimeoutError, match="deadline"):
        [c async for c in llama(sse, deadline=0.3).astream([ASK])]


def stalling_server() -> tuple[str, list[socket.socket]]:
    """A real server: answers a stream's headers and one event, then says nothing.

    Returns its URL and its sockets (the listener first), for the test to close.
    """
    listener = socket.socket()
    sockets = [listener]
    listener.bind(("127.0.0.1", 0))
    listener.listen()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            sockets.append(conn)
            conn.recv(65536)
            head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            conn.sendall(head + b"transfer-encoding: chunked\r\n\r\n")
            piece = event("Hi")
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            # holds the connection open, silent, until the test closes the listener

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1", sockets


async def test_a_silent_stream_hits_the_idle_timeout() -> None:
    """A stream that goes quiet stops after ``stream_idle_timeout``, not ``timeout``."""
    url, sockets = stalling_server()
    m = OpenAIChatModel(
        "m",
        base_url=url,
        api_key=KEY,
        transport=httpx.HTTPTransport(),
        async_transport=httpx.AsyncHTTPTransport(),
        timeout=600,
        stream_idle_timeout=0.3,
        max_retries=0,
    )
    try:
        got: list[str] = []
        with pytest.raises(ModelTimeoutError, match="idle"):
            for chunk in m.stream([ASK]):
                got.append(chunk.text)
        assert got == ["Hi"]
        with pytest.raises(ModelTimeoutError, match="idle"):
            [c async for c in m.astream([ASK])]
    finally:
        m.close()
        await m.aclose()
        for sock in sockets:
            sock.close()


# -- item 4: Retry-After that is not a number or a date -----------------------------------


@pytest.mark.parametrize("header", ["soon", "Mon, 99 Foo 2026 25:61:61 GMT", "1e999x", ""])
def test_malformed_retry_after_falls_back_to_backoff(header: str) -> None:
    """No ValueError: the jittered backoff is used."""
    response = httpx.Response(429, headers={"retry-after": header})
    for attempt in (1, 3):
        assert 0 <= retry_delay(attempt, response, 0.5) <= 0.5 * 2 ** (attempt - 1)


# -- item 5: message ids are ours ---------------------------------------------------------


def test_reused_provider_ids_do_not_replace_messages() -> None:
    """Ollama-style reused ids: a ReactAgent keeps every message and finishes."""
    answers = [
        {
            "id": "chatcmpl-7",
            "choices": [
                {
                    "message": {
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "lookup", "arguments": "{}"},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
        },
        {"id": "chatcmpl-7", "choices": [{"message": {"content": "42"}}]},
    ]

    def server(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=answers.pop(0))

    def lookup() -> str:
        """Look the answer up."""
        return "42"

    agent = ReactAgent(name="a", model=llama(server), tools=[lookup], max_iterations=3)
    out = agent.invoke("what is it?")
    roles = [m.role for m in out["messages"]]
    assert roles == ["user", "assistant", "tool", "assistant"]
    first, last = out["messages"][1], out["messages"][3]
    assert first.id != last.id != "chatcmpl-7"
    assert first.metadata["provider_id"] == last.metadata["provider_id"] == "chatcmpl-7"


def test_streamed_messages_get_our_id_and_keep_the_providers() -> None:
    """A stream's chunks carry one id of ours; the provider's is in metadata."""
    body = event("a", "chatcmpl-7") + event("b", "chatcmpl-7") + b"data: [DONE]\n\n"
    m = llama(lambda request: httpx.Response(200, content=body))
    messages = []
    for _ in range(2):
        acc = ChunkAccumulator()
        chunks = list(m.stream([ASK]))
        assert len({c.id for c in chunks}) == 1
        for chunk in chunks:
            acc.add(chunk)
        messages.append(acc.message())
    assert messages[0].id != messages[1].id and "chatcmpl" not in messages[0].id
    assert messages[0].metadata["provider_id"] == "chatcmpl-7"


# -- item 6: the client's own key is redacted everywhere ----------------------------------


def test_a_body_echoing_the_key_is_redacted(caplog: pytest.LogCaptureFixture) -> None:
    """401 bodies, mid-stream errors and unreadable bodies never show the key."""
    echo = {"error": {"message": f"bad header Authorization: Bearer {KEY}"}}
    answers = [
        httpx.Response(401, json=echo),
        httpx.Response(200, content=f"data: {json.dumps(echo)}\n\n".encode()),
        httpx.Response(200, text=f"<html>{KEY}</html>"),
        httpx.Response(200, json={"choices": [], "echo": KEY}),
    ]
    m = llama(lambda request: answers.pop(0), max_retries=0)
    errors: list[ModelError] = []
    for call in (m.generate, m.stream, m.generate, m.generate):
        with caplog.at_level("DEBUG"), pytest.raises(ModelError) as info:
            result = call([ASK])
            if not isinstance(result, AssistantMessage):
                list(result)
        errors.append(info.value)
    assert isinstance(errors[0], ModelHTTPError)
    for err in errors:
        for text in (str(err), repr(err), getattr(err, "body", ""), str(err.__cause__ or "")):
            assert KEY not in text
        assert "***" in str(err) or "cannot read" in str(err) or "not JSON" in str(err)
    assert KEY not in caplog.text


def test_anthropic_key_echo_is_redacted() -> None:
    """The same for the x-api-key header of Anthropic's client."""
    echo = {"error": {"type": "authentication_error", "message": f"x-api-key {KEY} invalid"}}
    m = AnthropicChatModel(
        "claude-x",
        api_key=KEY,
        transport=httpx.MockTransport(lambda r: httpx.Response(401, json=echo)),
        max_retries=0,
    )
    with pytest.raises(ModelHTTPError) as info:
        m.generate([ASK])
    assert KEY not in str(info.value) and KEY not in info.value.body


# -- item 7: a missing key is named before any request ------------------------------------


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY"),
        ("dashscope:qwen-plus", "DASHSCOPE_API_KEY"),
        ("deepseek:deepseek-chat", "DEEPSEEK_API_KEY"),
        ("moonshot:kimi", "MOONSHOT_API_KEY"),
        ("anthropic:claude-x", "ANTHROPIC_API_KEY"),
    ],
)
def test_a_missing_key_names_its_variable(
    spec: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No silent "" key and bare 401: a UserError naming the variable, nothing sent."""
    monkeypatch.delenv(variable, raising=False)
    sent: list[httpx.Request] = []
    transport = httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(401))
    model = init_chat_model(spec, transport=transport, max_retries=0)
    with pytest.raises(UserError, match=variable):
        model.generate([ASK])
    with pytest.raises(UserError, match=variable):
        list(model.stream([ASK]))
    assert sent == []


def test_keyless_servers_and_explicit_keys_still_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Local servers need no key; OpenAIChatModel names OPENAI_API_KEY for OpenAI's URL."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    ok = httpx.MockTransport(
        lambda r: httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}]})
    )
    for spec in ("ollama:llama3.1", "llamacpp:smollm2", "vllm:m"):
        assert init_chat_model(spec, transport=ok).generate([ASK]).text == "hi"
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        OpenAIChatModel("gpt-4o", transport=ok).generate([ASK])
    assert OpenAIChatModel("gpt-4o", api_key="k", transport=ok).generate([ASK]).text == "hi"


def test_tool_call_history_is_sent_with_empty_content() -> None:
    """The recorded 500 (content null rejected) cannot happen: content is ""."""
    seen: list[Any] = []

    def server(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, content=fixture("03-tool-result-turn.response.json"))

    call = ToolCall(id="c", name="get_weather", arguments="")
    llama(server).generate([ASK, AssistantMessage(tool_calls=[call])], tools=[WEATHER])
    assistant = seen[0]["messages"][1]
    assert assistant["content"] == "" and assistant["tool_calls"][0]["function"]["arguments"]
