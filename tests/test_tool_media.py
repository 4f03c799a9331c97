"""Tools and tool interceptors returning images and files: the parts reach the model in
its wire format, are stored on the thread, streamed under the id they are stored with,
and drawn in Jupyter as thumbnails."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from checkpoint import CheckpointSaver, MemorySaver
from graphagent import ReactAgent
from graphagent.agent import ToolInterceptor, ToolRequest
from graphagent.agent._interceptors import ToolHandler
from graphagent.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import AnthropicChatModel, FakeChatModel, OpenAIChatModel
from graphagent.tools import ToolCallingManager, ToolContext, tool

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
PDF = b"%PDF-1.7 tiny"


class Server:
    """A MockTransport handler that replays responses and keeps the request bodies."""

    def __init__(self, *responses: dict[str, Any]) -> None:
        self.responses = list(responses)
        self.bodies: list[Any] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return httpx.Response(200, json=self.responses.pop(0))


def openai_answer(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


def openai_call(name: str, call_id: str = "call_1") -> dict[str, Any]:
    return openai_answer(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}
            ],
        }
    )


def anthropic_call(name: str, call_id: str = "toolu_1") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": {}}],
        "stop_reason": "tool_use",
    }


ANTHROPIC_DONE = {
    "id": "msg_2",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "A chart and a report."}],
    "stop_reason": "end_turn",
}


@tool
def screenshot() -> ImagePart:
    """Take a screenshot of the dashboard."""
    return ImagePart(data=PNG)


@tool
def report(ctx: ToolContext) -> list[Any]:
    """Fetch the quarterly report with its chart."""
    return [
        "Q3 report",
        ImagePart(data=PNG),
        FilePart(data=PDF, mime_type="application/pdf", name="q3.pdf"),
        {"pages": 2},
    ]


def test_a_tool_returning_an_image_reaches_an_openai_model() -> None:
    """The image a tool returns follows the tool message in the next request (the
    chat completions API takes text only in a tool message) and is stored on the thread."""
    server = Server(
        openai_call("screenshot"), openai_answer({"role": "assistant", "content": "A dot."})
    )
    model = OpenAIChatModel(
        "gpt-4o-mini", api_key="sk-x", transport=httpx.MockTransport(server), max_retries=0
    )
    agent = ReactAgent(name="eye", model=model, tools=[screenshot], saver=MemorySaver())
    assert agent.call("What is on the dashboard?", thread_id="t").text == "A dot."
    sent = server.bodies[1]["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": ""}
    media = sent[3]["content"]
    assert "screenshot (call call_1)" in media[0]["text"]
    assert media[1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA="},
    }
    stored = agent.get_state(thread_id="t").values["messages"][2]
    assert isinstance(stored, ToolResponseMessage) and stored.parts == (ImagePart(data=PNG),)


async def test_a_tool_returning_text_image_and_file_reaches_an_anthropic_model() -> None:
    """A list of text, an image, a file and data becomes one tool_result with a text
    block, an image block and a document block (async path)."""
    server = Server(anthropic_call("report"), ANTHROPIC_DONE)
    model = AnthropicChatModel(
        "claude-sonnet-4-5", api_key="ak", transport=httpx.MockTransport(server), max_retries=0
    )
    agent = ReactAgent(name="analyst", model=model, tools=[report], saver=MemorySaver())
    reply = await agent.acall("Summarise Q3", thread_id="t")
    assert reply.text == "A chart and a report."
    result = server.bodies[1]["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert result["content"] == [
        {"type": "text", "text": 'Q3 report\n{"pages":2}'},
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAA=",
            },
        },
        {
            "type": "document",
            "source": {
                "type": "base64",
                "media_type": "application/pdf",
                "data": "JVBERi0xLjcgdGlueQ==",
            },
            "title": "q3.pdf",
        },
    ]
    stored = agent.get_state(thread_id="t").values["messages"][2]
    assert stored.content == 'Q3 report\n{"pages":2}'
    assert [p.kind for p in stored.parts] == ["image", "file"]


class Watermark(ToolInterceptor):
    """Adds a rendered image to every tool result (an interceptor with media)."""

    def intercept_tool_call(
        self, request: ToolRequest, handler: ToolHandler
    ) -> ToolResponseMessage:
        answer = handler(request)
        rendered = ImagePart(url="https://img.example/rendered.png")
        return answer.model_copy(update={"parts": (*answer.parts, rendered)})


@tool
def lookup() -> str:
    """Look it up."""
    return "42"


@pytest.mark.parametrize("use_async", [False, True])
async def test_an_interceptor_adding_an_image_reaches_the_model_and_the_thread(
    use_async: bool,
) -> None:
    """Parts an interceptor puts on the tool's message are kept (before: only its text)."""
    server = Server(anthropic_call("lookup"), ANTHROPIC_DONE)
    model = AnthropicChatModel(
        "claude-sonnet-4-5", api_key="ak", transport=httpx.MockTransport(server), max_retries=0
    )
    agent = ReactAgent(
        name="a", model=model, tools=[lookup], interceptors=[Watermark()], saver=MemorySaver()
    )
    if use_async:
        await agent.acall("?", thread_id="t")
    else:
        agent.call("?", thread_id="t")
    result = server.bodies[1]["messages"][2]["content"][0]
    assert result["content"] == [
        {"type": "text", "text": "42"},
        {"type": "image", "source": {"type": "url", "url": "https://img.example/rendered.png"}},
    ]
    stored = agent.get_state(thread_id="t").values["messages"][2]
    assert stored.content == "42" and stored.parts[0].url == "https://img.example/rendered.png"


def test_the_manager_alone_keeps_a_tools_parts() -> None:
    """ToolCallingManager (used without an agent) returns the parts on the tool message."""
    asked = AssistantMessage(tool_calls=[ToolCall(id="c1", name="report")])
    result = ToolCallingManager().execute_tool_calls([UserMessage("?")], asked, tools=[report])
    message = result.tool_responses[0]
    assert message.content == 'Q3 report\n{"pages":2}'
    assert [p.kind for p in message.parts] == ["image", "file"]
    assert result.conversation_history[-1] is message


def test_a_tool_image_is_stored_on_every_saver_and_drawn_as_a_thumbnail(
    saver: CheckpointSaver,
) -> None:
    """On every saver the tool's image survives the checkpoint and the thread's Jupyter
    card draws it small."""
    model = FakeChatModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="c1", name="screenshot")]),
            AssistantMessage("A dot."),
        ]
    )
    agent = ReactAgent(name="eye", model=model, tools=[screenshot], saver=saver)
    agent.call("look", thread_id="t-media")
    snapshot = agent.get_state(thread_id="t-media")
    assert snapshot.values["messages"][2].parts[0].data == PNG
    card = snapshot._repr_html_()
    assert f'<img src="{ImagePart(data=PNG).data_url}"' in card and "max-height:96px" in card


def test_a_custom_result_converter_still_converts_the_non_media_pieces() -> None:
    """``result_converter`` turns the data beside the parts into text; the parts pass."""

    @tool(result_converter=lambda value: f"<{value}>")
    def chart() -> list[Any]:
        """Draw the chart."""
        return [{"n": 1}, ImagePart(data=PNG)]

    asked = AssistantMessage(tool_calls=[ToolCall(id="c1", name="chart")])
    message = ToolCallingManager().execute_tool_calls([], asked, tools=[chart]).tool_responses[0]
    assert message.content == "<{'n': 1}>" and message.parts == (ImagePart(data=PNG),)


def test_context_editing_counts_and_clears_a_tools_images() -> None:
    """An old tool result that is only an image counts toward the trigger, and clearing
    it drops its image too (the image is what costs the tokens)."""
    from graphagent.agent import ContextEditingInterceptor, approximate_tokens

    calls = [ToolCall(id=str(i), name="screenshot") for i in range(3)]
    shots = [
        ToolResponseMessage("", tool_call_id=str(i), name="screenshot", parts=[ImagePart(data=PNG)])
        for i in range(3)
    ]
    history = [UserMessage("watch"), AssistantMessage(tool_calls=calls), *shots]
    assert approximate_tokens(shots) >= 3 * 500
    edited = ContextEditingInterceptor(trigger=1000, keep=1).edited(history)
    assert [(m.content, len(m.parts)) for m in edited[2:]] == [
        ("[cleared]", 0),
        ("[cleared]", 0),
        ("", 1),
    ]
