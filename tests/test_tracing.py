"""OpenTelemetry spans (GenAI conventions): invoke_agent, chat, execute_tool, graph and
node spans, nested correctly across the engine's threads and asyncio tasks."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from checkpoint import MemorySaver
from graphagent.agent import HumanInTheLoopHook, ReactAgent
from graphagent.errors import UserError
from graphagent.graph import END, START, AppendStrategy, StateGraph, interrupt
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel
from graphagent.observability import capture_content, instrument, instrumented, uninstrument
from graphagent.tools import tool

SECRET_TEXT = "my card is 4111 1111 1111 1111"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Tracing on, into an in-memory exporter; off again afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrument(provider)
    yield exporter
    uninstrument()
    capture_content(False)


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = named(exporter, name)
    assert len(found) == 1, [s.name for s in exporter.get_finished_spans()]
    return found[0]


def parent_of(exporter: InMemorySpanExporter, span: ReadableSpan) -> ReadableSpan | None:
    if span.parent is None:
        return None
    by_id = {s.context.span_id: s for s in exporter.get_finished_spans()}
    return by_id.get(span.parent.span_id)


def chain(exporter: InMemorySpanExporter, span: ReadableSpan) -> list[str]:
    """The span's name and its ancestors' names, innermost first."""
    names = []
    current: ReadableSpan | None = span
    while current is not None:
        names.append(current.name)
        current = parent_of(exporter, current)
    return names


@tool
def get_weather(city: str) -> str:
    """Get the weather.

    Args:
        city: City name.
    """
    time.sleep(0.02)  # the two calls overlap: they run on the engine's pool
    return f"sunny in {city}"


def weather_agent(**kw: Any) -> ReactAgent:
    calls = [
        ToolCall(id="c1", name="get_weather", arguments='{"city": "Paris"}'),
        ToolCall(id="c2", name="get_weather", arguments='{"city": "Oslo"}'),
    ]
    usage = {"usage": {"prompt_tokens": 31, "completion_tokens": 7}, "finish_reason": "tool_calls"}
    model = FakeChatModel(
        [AssistantMessage(tool_calls=calls, metadata=usage), AssistantMessage("Sunny both.")]
    )
    return ReactAgent(name="weather", model=model, tools=[get_weather], saver=MemorySaver(), **kw)


def check_agent_tree(exporter: InMemorySpanExporter) -> None:
    run = one(exporter, "invoke_agent weather")
    assert run.attributes is not None
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.agent.name"] == "weather"
    assert run.attributes["gen_ai.conversation.id"] == "t1"
    chats = named(exporter, "chat FakeChatModel")
    assert len(chats) == 2
    for chat in chats:
        assert chain(exporter, chat) == ["chat FakeChatModel", "node model", "invoke_agent weather"]
        assert chat.attributes is not None
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "fake"
        assert chat.attributes["gen_ai.request.model"] == "FakeChatModel"
        assert chat.kind == trace.SpanKind.CLIENT
    first = min(chats, key=lambda s: s.start_time or 0)
    assert first.attributes is not None
    assert first.attributes["gen_ai.usage.input_tokens"] == 31
    assert first.attributes["gen_ai.usage.output_tokens"] == 7
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    tools = named(exporter, "execute_tool get_weather")
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in tools if s.attributes) == [
        "c1",
        "c2",
    ]
    for span in tools:
        assert chain(exporter, span) == [
            "execute_tool get_weather",
            "node tools",
            "invoke_agent weather",
        ]
        assert span.attributes is not None
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "get_weather"
        assert span.status.status_code is not StatusCode.ERROR
    # the two calls ran at once on worker threads, still under the tools node
    a, b = tools
    assert a.start_time is not None and b.end_time is not None
    assert b.start_time is not None and a.end_time is not None
    assert a.start_time < b.end_time and b.start_time < a.end_time
    spans = exporter.get_finished_spans()
    assert len({s.context.trace_id for s in spans}) == 1
    for span in spans:
        for key, value in (span.attributes or {}).items():
            assert "Paris" not in str(value) and SECRET_TEXT not in str(value), key


def test_an_agent_run_is_one_trace_of_gen_ai_spans(spans: InMemorySpanExporter) -> None:
    """invoke_agent > node > chat / execute_tool, with the GenAI attributes; concurrent
    tool calls on the engine's threads keep the tools node as their parent."""
    reply = weather_agent().call(SECRET_TEXT, thread_id="t1")
    assert reply.text == "Sunny both."
    check_agent_tree(spans)


async def test_the_async_run_nests_the_same_way(spans: InMemorySpanExporter) -> None:
    """ainvoke: asyncio tasks (tools gathered, nodes awaited) carry the parent context."""
    reply = await weather_agent().acall(SECRET_TEXT, thread_id="t1")
    assert reply.text == "Sunny both."
    check_agent_tree(spans)


def test_a_stream_is_traced_but_the_callers_code_is_not_inside_it(
    spans: InMemorySpanExporter,
) -> None:
    """While the caller handles a streamed event, its own spans are not children of the
    run (the run's context is current only while the run works)."""
    tracer = trace.get_tracer("caller", tracer_provider=_provider(spans))
    with tracer.start_as_current_span("request"):
        for _ in weather_agent().stream(SECRET_TEXT, thread_id="t1", mode="messages"):
            with tracer.start_as_current_span("handle event"):
                pass
    check_agent_tree_parented(spans, "request")
    for handled in named(spans, "handle event"):
        assert chain(spans, handled) == ["handle event", "request"]


def _provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def check_agent_tree_parented(exporter: InMemorySpanExporter, outer: str) -> None:
    run = one(exporter, "invoke_agent weather")
    assert chain(exporter, run) == ["invoke_agent weather", outer]
    for span in named(exporter, "execute_tool get_weather"):
        assert chain(exporter, span)[1:] == ["node tools", "invoke_agent weather", outer]


def fan_out_graph() -> StateGraph:
    seen: list[str] = []

    def work(name: str) -> Any:
        def run(state: Any) -> dict[str, Any]:
            seen.append(threading.current_thread().name)
            time.sleep(0.01)
            return {"log": [name]}

        return run

    g = StateGraph({"log": AppendStrategy()})
    for name in ("a", "b", "c"):
        g.add_node(name, work(name))
        g.add_edge(START, name)
    g.add_node("join", work("join"))
    g.add_edge(["a", "b", "c"], "join").add_edge("join", END)
    return g


def test_a_graph_run_and_its_parallel_nodes(spans: InMemorySpanExporter) -> None:
    """A plain graph: 'graph NAME' under the caller's span, one 'node X' per node (the
    parallel ones on worker threads), each a child of the run."""
    app = fan_out_graph().compile(name="fan")
    tracer = trace.get_tracer("caller", tracer_provider=_provider(spans))
    with tracer.start_as_current_span("outer"):
        assert app.invoke({"log": []})["log"][-1] == "join"
    run = one(spans, "graph fan")
    assert chain(spans, run) == ["graph fan", "outer"]
    assert run.attributes is not None and "gen_ai.operation.name" not in run.attributes
    for name in ("a", "b", "c", "join"):
        node = one(spans, f"node {name}")
        assert parent_of(spans, node) is run
        assert node.attributes is not None and node.attributes["graphagent.node.name"] == name


async def test_an_async_graph_run_and_its_parallel_nodes(spans: InMemorySpanExporter) -> None:
    """The same through ainvoke (async nodes and sync nodes in worker threads)."""

    async def slow(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0.01)
        return {"log": ["async"]}

    g = fan_out_graph()
    g.add_node("d", slow).add_edge(START, "d").add_edge("d", END)
    await g.compile(name="fan").ainvoke({"log": []})
    run = one(spans, "graph fan")
    for name in ("a", "b", "c", "d", "join"):
        assert parent_of(spans, one(spans, f"node {name}")) is run


def test_failures_mark_their_spans(spans: InMemorySpanExporter) -> None:
    """A tool that raises: its span is an error (error.type), the run goes on; a node
    that raises: its span and the run's are errors."""

    @tool
    def broken(x: int) -> str:
        """Break."""
        raise ValueError("no")

    model = FakeChatModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="b1", name="broken", arguments='{"x": 1}')]),
            "ok",
        ]
    )
    ReactAgent(name="b", model=model, tools=[broken]).call("go")
    failed = one(spans, "execute_tool broken")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes["error.type"] == "ValueError"
    assert one(spans, "invoke_agent b").status.status_code is not StatusCode.ERROR

    def boom(state: Any) -> None:
        raise RuntimeError("node failed")

    g = StateGraph().add_node("boom", boom).add_edge(START, "boom").add_edge("boom", END)
    with pytest.raises(RuntimeError):
        g.compile(name="bad").invoke({})
    node, run = one(spans, "node boom"), one(spans, "graph bad")
    assert node.status.status_code is StatusCode.ERROR
    assert node.attributes is not None and node.attributes["error.type"] == "RuntimeError"
    assert run.status.status_code is StatusCode.ERROR


def test_a_pause_is_not_an_error(spans: InMemorySpanExporter) -> None:
    """interrupt() marks the node span interrupted, not failed."""

    def ask(state: Any) -> dict[str, Any]:
        return {"answer": interrupt("ok?")}

    g = StateGraph().add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)
    app = g.compile(saver=MemorySaver(), name="hitl")
    app.invoke({}, {"thread_id": "p"})
    node = one(spans, "node ask")
    assert node.attributes is not None and node.attributes["graphagent.interrupted"] is True
    assert node.status.status_code is not StatusCode.ERROR


def test_an_agent_inside_a_tool_nests_under_the_tool(spans: InMemorySpanExporter) -> None:
    """A sub-agent called from a tool is an invoke_agent span under execute_tool."""
    helper = ReactAgent(name="helper", model=FakeChatModel(["helped"]))

    @tool
    def ask_helper(question: str) -> str:
        """Ask the helper."""
        return helper.call(question).text

    call = ToolCall(id="h1", name="ask_helper", arguments='{"question": "q"}')
    boss = ReactAgent(
        name="boss",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "done"]),
        tools=[ask_helper],
    )
    assert boss.call("go").text == "done"
    inner = one(spans, "invoke_agent helper")
    assert chain(spans, inner) == [
        "invoke_agent helper",
        "execute_tool ask_helper",
        "node tools",
        "invoke_agent boss",
    ]


def test_content_is_recorded_only_when_opted_in(spans: InMemorySpanExporter) -> None:
    """capture_content adds gen_ai.input/output messages and tool arguments/results."""
    capture_content(True)
    weather_agent().call(SECRET_TEXT, thread_id="t1")
    chat = min(named(spans, "chat FakeChatModel"), key=lambda s: s.start_time or 0)
    assert chat.attributes is not None
    assert SECRET_TEXT in str(chat.attributes["gen_ai.input.messages"])
    assert "get_weather" in str(chat.attributes["gen_ai.output.messages"])
    tool_span = next(
        s
        for s in named(spans, "execute_tool get_weather")
        if s.attributes and s.attributes["gen_ai.tool.call.id"] == "c1"
    )
    assert tool_span.attributes is not None
    assert "Paris" in str(tool_span.attributes["gen_ai.tool.call.arguments"])
    assert tool_span.attributes["gen_ai.tool.call.result"] == "sunny in Paris"


def test_a_human_in_the_loop_agent_pause_traces_cleanly(spans: InMemorySpanExporter) -> None:
    """An approval pause: the tools are not run, no span is an error."""
    call = ToolCall(id="m1", name="get_weather", arguments='{"city": "Rome"}')
    agent = ReactAgent(
        name="careful",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "ok"]),
        tools=[get_weather],
        hooks=[HumanInTheLoopHook(approval_on={"get_weather": "check"})],
        saver=MemorySaver(),
    )
    agent.call("weather", thread_id="h")
    assert not named(spans, "execute_tool get_weather")
    assert all(s.status.status_code is not StatusCode.ERROR for s in spans.get_finished_spans())


def test_uninstrument_stops_tracing(spans: InMemorySpanExporter) -> None:
    """After uninstrument() nothing is recorded; instrumented() says which it is."""
    assert instrumented()
    uninstrument()
    assert not instrumented()
    weather_agent().call("hi", thread_id="t1")
    assert spans.get_finished_spans() == ()


def test_instrument_without_opentelemetry_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No OpenTelemetry installed: a UserError naming the extra to install."""
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.delitem(sys.modules, "graphagent.observability._otel", raising=False)
    with pytest.raises(UserError, match=r"pip install 'opentelemetry-api>=1.27'"):
        instrument()
    assert not instrumented()
