"""Exceptions in spans: the type always, the text only with content capture (issue 30 item 2).

Each test fails a run in a way whose exception text quotes something private (the
prompt, a ToolContext secret, a state value) and reads every exported span as JSON
(attributes, events, status): the secret must appear nowhere unless the user opted in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from graphagent.agent import ReactAgent
from graphagent.errors import ModelHTTPError, ToolExecutionError
from graphagent.graph import END, START, StateGraph
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel, OpenAIChatModel
from graphagent.observability import capture_content, instrument, uninstrument
from graphagent.tools import DefaultToolExecutionExceptionProcessor, ToolContext, tool

PROMPT_SECRET = "my card is 4111 1111 1111 1111"
CONTEXT_SECRET = "tok-7f3a9c-do-not-log"
STATE_SECRET = "patient 0042 has condition X"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on, into the OTel SDK's in-memory exporter; off again afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    yield exporter
    uninstrument()
    capture_content(False)


def exported(exporter: InMemorySpanExporter) -> str:
    """Every finished span as the JSON an exporter would send."""
    return "\n".join(span.to_json() for span in exporter.get_finished_spans())


def exception_events(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    """The attributes of every ``exception`` event, on any span."""
    return [
        dict(event.attributes or {})
        for span in exporter.get_finished_spans()
        for event in span.events
        if event.name == "exception"
    ]


def provider_quoting_the_prompt() -> OpenAIChatModel:
    """A provider that refuses the request and quotes the prompt in its error body."""

    def refuse(request: httpx.Request) -> httpx.Response:
        prompt = json.loads(request.content)["messages"][-1]["content"]
        body = {"error": {"message": f"content policy: {prompt!r} is not allowed"}}
        return httpx.Response(400, json=body)

    return OpenAIChatModel(
        "gpt-test",
        base_url="http://provider.local/v1",
        api_key="sk-test",
        max_retries=0,
        transport=httpx.MockTransport(refuse),
    )


def test_provider_error_quoting_the_prompt_stays_out_of_spans(
    spans: InMemorySpanExporter,
) -> None:
    """A model error quoting the prompt: spans carry ModelHTTPError, never the prompt."""
    agent = ReactAgent(name="shop", model=provider_quoting_the_prompt())
    with pytest.raises(ModelHTTPError, match="4111"):
        agent.call(PROMPT_SECRET)
    assert PROMPT_SECRET not in exported(spans)
    assert "4111" not in exported(spans)
    events = exception_events(spans)
    assert events and {e["exception.type"] for e in events} >= {"graphagent.errors.ModelHTTPError"}
    chat = next(s for s in spans.get_finished_spans() if s.name == "chat gpt-test")
    assert chat.status.status_code is StatusCode.ERROR


def _tool_agent() -> ReactAgent:
    @tool
    def charge(amount: int, ctx: ToolContext) -> str:
        """Charge the card."""
        raise PermissionError(f"gateway refused token {ctx.context['token']}")

    call = ToolCall(id="c1", name="charge", arguments='{"amount": 5}')
    return ReactAgent(
        name="till",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "ok"]),
        tools=[charge],
        tool_context={"token": CONTEXT_SECRET},
        exception_processor=DefaultToolExecutionExceptionProcessor(always_throw=True),
    )


def test_tool_error_quoting_a_tool_context_secret_stays_out_of_spans(
    spans: InMemorySpanExporter,
) -> None:
    """A tool error quoting a ToolContext secret: the type is traced, the secret is not."""
    with pytest.raises(ToolExecutionError):
        _tool_agent().call("charge me")
    assert CONTEXT_SECRET not in exported(spans)
    assert "graphagent.errors.ToolExecutionError" in {
        e["exception.type"] for e in exception_events(spans)
    }


async def test_tool_error_in_an_async_run_stays_out_of_spans(
    spans: InMemorySpanExporter,
) -> None:
    """The same through ainvoke: the async driver records exceptions the same way."""
    with pytest.raises(ToolExecutionError):
        await _tool_agent().acall("charge me")
    assert CONTEXT_SECRET not in exported(spans)


def _graph_failing_on_state() -> Any:
    def check(state: Any) -> None:
        raise ValueError(f"cannot process record {state['record']!r}")

    g = StateGraph().add_node("check", check).add_edge(START, "check").add_edge("check", END)
    return g.compile(name="records")


def test_node_error_quoting_state_stays_out_of_spans(spans: InMemorySpanExporter) -> None:
    """A node error quoting state: the run's span records ValueError and a redacted message."""
    with pytest.raises(ValueError, match="patient 0042"):
        _graph_failing_on_state().invoke({"record": STATE_SECRET})
    text = exported(spans)
    assert STATE_SECRET not in text and "0042" not in text
    (event,) = exception_events(spans)
    assert event["exception.type"] == "ValueError"
    assert "redacted" in event["exception.message"]
    # the stack is kept (where it failed is not content), the message lines are not
    assert "in check" in event["exception.stacktrace"]


def test_chained_causes_and_notes_are_redacted_too(spans: InMemorySpanExporter) -> None:
    """A secret in a __cause__ or an add_note() line stays out of the recorded stack."""

    def wrap(state: Any) -> None:
        try:
            raise KeyError(state["record"])
        except KeyError as exc:
            error = RuntimeError("lookup failed")
            error.__notes__ = [f"while reading {state['record']}"]  # add_note, 3.10 too
            raise error from exc

    g = StateGraph().add_node("wrap", wrap).add_edge(START, "wrap").add_edge("wrap", END)
    with pytest.raises(RuntimeError):
        g.compile(name="chained").invoke({"record": STATE_SECRET})
    assert STATE_SECRET not in exported(spans)
    (event,) = exception_events(spans)
    assert "KeyError" in event["exception.stacktrace"]


def test_content_capture_records_the_exception_text(spans: InMemorySpanExporter) -> None:
    """With capture_content(True) the user opted in: the message is recorded as raised."""
    capture_content(True)
    with pytest.raises(ValueError):
        _graph_failing_on_state().invoke({"record": STATE_SECRET})
    (event,) = exception_events(spans)
    assert STATE_SECRET in event["exception.message"]
