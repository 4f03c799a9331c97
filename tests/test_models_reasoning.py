"""Reasoning content and image/file parts: parsed from realistic provider payloads, stored,
streamed as their own chunks, and sent back only where the provider takes them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from checkpoint import CheckpointSaver
from checkpoint.serde import dumps, loads
from graphagent import ReactAgent
from graphagent.errors import ModelError
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import AnthropicChatModel, ChunkAccumulator, OpenAIChatModel
from graphagent.models._reasoning import ThinkSplitter, split_think
from graphagent.tools import tool

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"


class Server:
    """A MockTransport handler that replays responses and keeps the request bodies."""

    def __init__(self, *responses: httpx.Response) -> None:
        self.responses = list(responses)
        self.bodies: list[Any] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return self.responses.pop(0)


def sse(*events: Any, named: bool = False) -> httpx.Response:
    lines = []
    for e in events:
        data = e if isinstance(e, str) else json.dumps(e)
        head = f"event: {e['type']}\n" if named and not isinstance(e, str) else ""
        lines.append(f"{head}data: {data}\n\n")
    return httpx.Response(
        200, content="".join(lines).encode(), headers={"content-type": "text/event-stream"}
    )


def deepseek(server: Server) -> OpenAIChatModel:
    return OpenAIChatModel(
        "deepseek-reasoner",
        base_url="https://api.deepseek.example/v1",
        api_key="sk-x",
        transport=httpx.MockTransport(server),
        max_retries=0,
    )


def claude(server: Server) -> AnthropicChatModel:
    return AnthropicChatModel(
        "claude-sonnet-4-5", api_key="ak", transport=httpx.MockTransport(server), max_retries=0
    )


# DeepSeek's documented reasoner answer: reasoning_content beside content
DEEPSEEK_ANSWER = {
    "id": "930c60df-bf64-41c9-a88e-3ec75f81e00e",
    "object": "chat.completion",
    "created": 1705651092,
    "model": "deepseek-reasoner",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "9.8 is greater than 9.11.",
                "reasoning_content": "Compare the tenths: 8 > 1, so 9.8 is larger.",
            },
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 17,
        "completion_tokens": 120,
        "total_tokens": 137,
        "completion_tokens_details": {"reasoning_tokens": 104},
    },
}


def deepseek_stream() -> httpx.Response:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "8d1b0f",
            "object": "chat.completion.chunk",
            "model": "deepseek-reasoner",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    return sse(
        chunk({"role": "assistant", "content": None, "reasoning_content": ""}),
        chunk({"content": None, "reasoning_content": "Compare the tenths: "}),
        chunk({"content": None, "reasoning_content": "8 > 1, so 9.8 is larger."}),
        chunk({"content": "9.8 is greater", "reasoning_content": None}),
        chunk({"content": " than 9.11.", "reasoning_content": None}),
        chunk({"content": "", "reasoning_content": None}, "stop"),
        "[DONE]",
    )


def test_deepseek_reasoning_content_is_kept_apart_from_the_answer() -> None:
    """``reasoning_content`` becomes ``reasoning``; ``text`` is the answer alone."""
    answer = deepseek(Server(httpx.Response(200, json=DEEPSEEK_ANSWER))).generate("9.11 or 9.8?")
    assert answer.text == "9.8 is greater than 9.11."
    assert answer.reasoning == "Compare the tenths: 8 > 1, so 9.8 is larger."


def test_deepseek_stream_sends_reasoning_as_its_own_chunks_and_adds_up() -> None:
    """Thinking streams in chunks with ``reasoning`` and no content, before the answer."""
    chunks = list(deepseek(Server(deepseek_stream())).stream("9.11 or 9.8?"))
    thinking = [c for c in chunks if c.reasoning]
    assert [c.reasoning for c in thinking] == ["Compare the tenths: ", "8 > 1, so 9.8 is larger."]
    assert all(c.content == "" for c in thinking)
    assert chunks.index(thinking[-1]) < next(i for i, c in enumerate(chunks) if c.content)
    acc = ChunkAccumulator()
    for c in chunks:
        acc.add(c)
    whole = acc.message()
    assert whole.reasoning == "Compare the tenths: 8 > 1, so 9.8 is larger."
    assert whole.text == "9.8 is greater than 9.11."


def test_reasoning_is_never_sent_back_to_an_openai_compatible_server() -> None:
    """DeepSeek answers 400 to a request carrying ``reasoning_content``: it is left out."""
    server = Server(httpx.Response(200, json=DEEPSEEK_ANSWER))
    history = [
        UserMessage("9.11 or 9.8?"),
        AssistantMessage("9.8.", reasoning="tenths"),
        UserMessage("Sure?"),
    ]
    deepseek(server).generate(history)
    sent = server.bodies[0]["messages"][1]
    assert sent == {"role": "assistant", "content": "9.8."}
    assert "tenths" not in json.dumps(server.bodies[0])


def test_vllm_and_ollama_reasoning_field_is_read_too() -> None:
    """Servers that name it ``reasoning`` (vLLM, Ollama) are read the same way."""
    body = json.loads(json.dumps(DEEPSEEK_ANSWER))
    message = body["choices"][0]["message"]
    message["reasoning"] = message.pop("reasoning_content")
    answer = deepseek(Server(httpx.Response(200, json=body))).generate("q")
    assert answer.reasoning.startswith("Compare") and answer.text.startswith("9.8")


def test_qwen_think_tags_split_in_whole_and_streamed_answers() -> None:
    """Qwen3 without a reasoning parser writes ``<think>...</think>`` first: split out,
    whichever way the stream cuts the tags."""
    raw = "<think>\nThe user greets me.\n</think>\n\nHello! How can I help?"
    assert split_think(raw) == ("\nThe user greets me.\n", "Hello! How can I help?")
    assert split_think("No tags <think> here") == ("", "No tags <think> here")
    for size in (1, 2, 3, 5, 8, 13):
        splitter, reasoning, content = ThinkSplitter(), "", ""
        for i in range(0, len(raw), size):
            r, c = splitter.feed(raw[i : i + size])
            reasoning, content = reasoning + r, content + c
        r, c = splitter.flush()
        assert (reasoning + r, content + c) == split_think(raw), size
    body = {
        "model": "qwen3",
        "choices": [{"message": {"role": "assistant", "content": raw}, "finish_reason": "stop"}],
    }
    answer = deepseek(Server(httpx.Response(200, json=body))).generate("hi")
    assert (answer.reasoning, answer.text) == split_think(raw)
    pieces = ["<th", "ink>\nThe user", " greets me.\n</th", "ink>\n\nHello!", " How can I help?"]
    events = [{"choices": [{"delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    events.append({"choices": [{"delta": {}, "finish_reason": "stop"}]})
    chunks = list(deepseek(Server(sse(*events, "[DONE]"))).stream("hi"))
    assert "".join(c.reasoning for c in chunks) == "\nThe user greets me.\n"
    assert "".join(c.content for c in chunks) == "Hello! How can I help?"


def test_think_tags_can_be_turned_off() -> None:
    """``think_tags=False`` leaves the content as the server sent it."""
    body = {"choices": [{"message": {"content": "<think>x</think>y"}, "finish_reason": "stop"}]}
    m = OpenAIChatModel(
        "m",
        base_url="http://h/v1",
        think_tags=False,
        transport=httpx.MockTransport(lambda r: httpx.Response(200, json=body)),
    )
    assert m.generate("q").text == "<think>x</think>y"


# Anthropic's documented extended-thinking answer with a tool call
CLAUDE_THINKING = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [
        {
            "type": "thinking",
            "thinking": "The user wants the weather; call the tool.",
            "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        },
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {"city": "Paris"}},
    ],
    "stop_reason": "tool_use",
    "usage": {"input_tokens": 50, "output_tokens": 80},
}


def test_anthropic_thinking_blocks_are_kept_and_sent_back_signed() -> None:
    """Thinking text becomes ``reasoning``; the signed blocks go back first in the turn
    (the API needs them to continue a tool call made while thinking)."""
    ok = {"content": [{"type": "text", "text": "Sunny."}], "stop_reason": "end_turn"}
    server = Server(httpx.Response(200, json=CLAUDE_THINKING), httpx.Response(200, json=ok))
    m = claude(server)
    answer = m.generate("Weather in Paris?")
    assert answer.reasoning == "The user wants the weather; call the tool."
    assert answer.text == "Let me check." and answer.tool_calls[0].name == "weather"
    stored = loads(dumps(answer))  # as a checkpoint gives it back: read-only metadata
    result = ToolResponseMessage("21 C", tool_call_id="toolu_01", name="weather")
    m.generate([UserMessage("Weather in Paris?"), stored, result])
    turn = server.bodies[1]["messages"][1]["content"]
    assert [b["type"] for b in turn] == ["thinking", "redacted_thinking", "text", "tool_use"]
    assert turn[0]["signature"] == CLAUDE_THINKING["content"][0]["signature"]  # type: ignore[index]
    assert turn[1]["data"] == "EmwKAhgBEgy3va3pzix/LafPsn4a"


def test_anthropic_thinking_stream_adds_up_to_the_same_message() -> None:
    """thinking_delta events stream as reasoning chunks; the signature arrives whole."""
    events = [
        {"type": "message_start", "message": {"id": "msg_01", "model": "claude-sonnet-4-5"}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "The user wants "},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "the weather; call the tool."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {
                "type": "signature_delta",
                "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
            },
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
        },
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}},
        {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "text_delta", "text": "Let me check."},
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 3,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Paris"}'},
        },
        {"type": "content_block_stop", "index": 3},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 80},
        },
        {"type": "message_stop"},
    ]
    server = Server(sse(*events, named=True), httpx.Response(200, json=CLAUDE_THINKING))
    m = claude(server)
    chunks = list(m.stream("Weather in Paris?"))
    assert [c.reasoning for c in chunks if c.reasoning] == [
        "The user wants ",
        "the weather; call the tool.",
    ]
    acc = ChunkAccumulator()
    for c in chunks:
        acc.add(c)
    streamed, whole = acc.message(), m.generate("Weather in Paris?")
    assert streamed.reasoning == whole.reasoning
    assert streamed.metadata["thinking_blocks"] == whole.metadata["thinking_blocks"]
    assert streamed.tool_calls[0].args == {"city": "Paris"}


@pytest.fixture
def thinking_agent_server() -> Iterator[Server]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "model": "deepseek-reasoner",
            "choices": [{"delta": delta, "finish_reason": finish}],
        }

    call = {"index": 0, "id": "c1", "type": "function"}
    first = sse(
        chunk({"reasoning_content": "I should look it up."}),
        chunk({"tool_calls": [{**call, "function": {"name": "lookup", "arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
        "[DONE]",
    )
    second = sse(
        chunk({"reasoning_content": "The tool said 42."}),
        chunk({"content": "It is 42."}),
        chunk({}, "stop"),
        "[DONE]",
    )
    yield Server(first, second)


def test_an_agent_stores_streams_and_withholds_reasoning(
    saver: CheckpointSaver, thinking_agent_server: Server
) -> None:
    """Through a ReactAgent on every saver: reasoning is stored on each answer, streamed
    as its own message events, and never sent back to the model."""

    @tool
    def lookup() -> str:
        """Look the answer up."""
        return "42"

    agent = ReactAgent(
        name="thinker", model=deepseek(thinking_agent_server), tools=[lookup], saver=saver
    )
    streamed = [c for c, _ in agent.stream("What is it?", thread_id="t-r", mode="messages")]
    assert [c.reasoning for c in streamed if getattr(c, "reasoning", "")] == [
        "I should look it up.",
        "The tool said 42.",
    ]
    answers = [
        m
        for m in agent.get_state(thread_id="t-r").values["messages"]
        if isinstance(m, AssistantMessage)
    ]
    assert [a.reasoning for a in answers] == ["I should look it up.", "The tool said 42."]
    assert answers[-1].text == "It is 42."
    second_request = json.dumps(thinking_agent_server.bodies[1])
    assert "I should look it up." not in second_request


def test_parts_are_stored_and_read_back_on_every_saver(saver: CheckpointSaver) -> None:
    """A user's image and a tool's image survive a checkpoint round trip on every saver."""

    def answer(state: Any, config: Any) -> dict[str, Any]:
        chart = ImagePart(data=PNG)
        return {
            "messages": [ToolResponseMessage("chart", tool_call_id="c", name="plot", parts=[chart])]
        }

    g = StateGraph({"messages": AppendStrategy()})
    g.add_node("answer", answer)
    g.add_edge(START, "answer")
    g.add_edge("answer", END)
    app = g.compile(saver=saver)
    user = UserMessage(
        "what is this?",
        parts=[
            ImagePart(data=PNG, mime_type="image/png"),
            FilePart(data=b"%PDF-1.7", mime_type="application/pdf", name="r.pdf"),
        ],
    )
    app.invoke({"messages": [user]}, {"thread_id": "t-parts"})
    stored = app.get_state({"thread_id": "t-parts"}).values["messages"]
    assert stored[0] == user and stored[0].parts[1].name == "r.pdf"
    assert stored[1].parts[0].data == PNG


def test_openai_wire_format_for_images_and_files() -> None:
    """User parts become content parts; a tool's images follow the tool results in one
    user message (the API takes text only in a tool message)."""
    server = Server(httpx.Response(200, json=DEEPSEEK_ANSWER))
    history = [
        UserMessage(
            "What is in these?",
            parts=[
                ImagePart(url="https://img.example/cat.jpg"),
                FilePart(data=b"%PDF", mime_type="application/pdf", name="r.pdf"),
            ],
        ),
        AssistantMessage(
            tool_calls=[ToolCall(id="c1", name="shot"), ToolCall(id="c2", name="shot")]
        ),
        ToolResponseMessage(
            "screenshot taken", tool_call_id="c1", name="shot", parts=[ImagePart(data=PNG)]
        ),
        ToolResponseMessage("nothing", tool_call_id="c2", name="shot"),
    ]
    deepseek(server).generate(history)
    sent = server.bodies[0]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "user"]
    assert sent[0]["content"] == [
        {"type": "text", "text": "What is in these?"},
        {"type": "image_url", "image_url": {"url": "https://img.example/cat.jpg"}},
        {
            "type": "file",
            "file": {"filename": "r.pdf", "file_data": "data:application/pdf;base64,JVBERg=="},
        },
    ]
    assert sent[2]["content"] == "screenshot taken"
    assert "shot (call c1)" in sent[4]["content"][0]["text"]
    assert sent[4]["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0K")
    with pytest.raises(ModelError, match=r"FilePart\(data=\.\.\.\)"):
        deepseek(Server()).generate([UserMessage("x", parts=[FilePart(url="https://f/a.pdf")])])


def test_anthropic_wire_format_for_images_and_files() -> None:
    """Images and documents become blocks, in user turns and inside tool results."""
    ok = {"content": [{"type": "text", "text": "A cat."}], "stop_reason": "end_turn"}
    server = Server(httpx.Response(200, json=ok))
    history = [
        UserMessage(
            "What is this?",
            parts=[
                ImagePart(data=PNG),
                FilePart(data=b"hello", mime_type="text/plain", name="n.txt"),
                FilePart(url="https://f.example/a.pdf", mime_type="application/pdf"),
            ],
        ),
        AssistantMessage(tool_calls=[ToolCall(id="t1", name="shot")]),
        ToolResponseMessage(
            "done",
            tool_call_id="t1",
            name="shot",
            parts=[ImagePart(url="https://img.example/s.png")],
        ),
    ]
    claude(server).generate(history)
    turns = server.bodies[0]["messages"]
    assert turns[0]["content"][1] == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA=",
        },
    }
    assert turns[0]["content"][2]["source"] == {
        "type": "text",
        "media_type": "text/plain",
        "data": "hello",
    }
    assert turns[0]["content"][2]["title"] == "n.txt"
    assert turns[0]["content"][3]["source"] == {"type": "url", "url": "https://f.example/a.pdf"}
    result = turns[2]["content"][0]
    assert result["content"] == [
        {"type": "text", "text": "done"},
        {"type": "image", "source": {"type": "url", "url": "https://img.example/s.png"}},
    ]


def test_a_part_needs_exactly_one_source() -> None:
    """An image with neither bytes nor URL (or both) is refused, naming the fix."""
    with pytest.raises(ValueError, match="exactly one of data="):
        ImagePart()
    with pytest.raises(ValueError, match="exactly one of data="):
        ImagePart(data=b"x", url="https://x")


def test_chat_shows_the_thinking_apart_from_the_answer() -> None:
    """``graphagent chat`` writes the reasoning on its own "(thinking)" line, then the answer."""
    import io

    from checkpoint import MemorySaver
    from graphagent.cli._chat import Chat
    from graphagent.models import FakeChatModel

    model = FakeChatModel([AssistantMessage("It is 42.", reasoning="Six times seven.")])
    agent = ReactAgent(name="sage", model=model, saver=MemorySaver())
    out, err = io.StringIO(), io.StringIO()
    Chat(agent, "t-chat", out, input, err).turn("What is it?")
    assert out.getvalue() == "sage (thinking)> Six times seven.\nsage> It is 42.\n"


def test_the_state_card_shows_thinking_folded_and_images_as_thumbnails() -> None:
    """In Jupyter, a thread's card folds each answer's reasoning and draws images small."""
    from checkpoint import MemorySaver
    from graphagent.models import FakeChatModel

    model = FakeChatModel([AssistantMessage("A red dot.", reasoning="Looks like a pixel.")])
    agent = ReactAgent(name="eye", model=model, saver=MemorySaver())
    photo = ImagePart(data=PNG)
    report = FilePart(data=b"%PDF", mime_type="application/pdf", name="report.pdf")
    agent.invoke(
        {"messages": [UserMessage("What is this?", parts=[photo, report])]}, {"thread_id": "v"}
    )
    card = agent.get_state(thread_id="v")._repr_html_()
    assert f'<img src="{photo.data_url}"' in card and "max-height:96px" in card
    assert "report.pdf" in card
    assert "<details" in card and "Looks like a pixel." in card and "thinking (19 chars)" in card


def test_checkpoint_alone_reads_and_rewrites_parts_and_reasoning() -> None:
    """A process without graphagent reads a message with parts or reasoning field by field
    and stores it again byte for byte."""
    from checkpoint import _library

    for message in (
        UserMessage("see", parts=[ImagePart(data=PNG)]),
        AssistantMessage("42", reasoning="6*7"),
        ToolResponseMessage("ok", tool_call_id="c", name="t", parts=[FilePart(url="https://f/a")]),
    ):
        name = f"graphagent.{type(message).__name__}"
        from graphagent.messages import _ENCODERS

        frame = _ENCODERS[type(message)](message)
        plain = _library.decode(name, frame)
        assert plain is not None
        assert plain[_library.OPTIONAL[name]] == frame[-1]
        assert _library.encode(plain) == frame


def test_checkpoint_knows_which_fields_are_optional() -> None:
    """The optional trailing field of each message type is the same on both sides."""
    from checkpoint._library import OPTIONAL
    from graphagent.messages import _OPTIONAL

    assert {f"graphagent.{cls.__name__}": name for cls, name in _OPTIONAL.items()} == OPTIONAL
