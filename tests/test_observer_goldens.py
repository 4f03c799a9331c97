"""Golden outputs of the built-in observers: the DEBUG logs (``graphagent.models``,
``graphagent.tools``), the OpenTelemetry spans (names, kinds, attributes, parents,
status, events) and the progress display, for a plain graph, a nested subgraph, a
ReactAgent with tools (sync, async, streamed, with and without content capture),
errors, an interrupt and its resume, a retry and parallel branches.

The goldens (tests/goldens/observers.json) were written by the observers as they were
before they became lifecycle listeners; anything that drifts fails here. Timings are
normalized (``latency_ms=N``, ``(N s)``), file paths cut to their names and line numbers
to ``N``; what parallel work makes unordered is sorted. ``GOLDEN_UPDATE=1`` rewrites
the file (only when an output is meant to change).
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _scripted import failing_after
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from checkpoint import MemorySaver
from graphagent.agent import HumanInTheLoopHook, ReactAgent
from graphagent.graph import END, START, Command, ReplaceStrategy, RetryPolicy, StateGraph
from graphagent.graph import interrupt as pause
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel
from graphagent.observability import capture_content, instrument, progress, uninstrument
from graphagent.tools import tool

GOLDEN = Path(__file__).parent / "goldens" / "observers.json"


# -- normalizing -------------------------------------------------------------------------


def _norm(text: str) -> str:
    text = re.sub(r'File "[^"]*[/\\]([^/\\"]+)"', r'File "\1"', text)
    text = re.sub(r"line \d+", "line N", text)
    text = re.sub(r"id='i-[0-9a-f]+'", "id='i-N'", text)
    text = re.sub(r"(latency_ms|duration_ms)=[\d.]+", r"\1=N", text)
    text = re.sub(r"\d+\.\d s\b", "N s", text)
    # the source line under each frame: code, but of whatever file is on the stack
    return re.sub(r"\n    [^\n]*(?=\n)", "", text)


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return _norm(value)
    if isinstance(value, (list, tuple)):
        return [_value(v) for v in value]
    return value


def _spans(exporter: InMemorySpanExporter) -> list[dict[str, Any]]:
    finished = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished if s.context is not None}

    def chain(span: ReadableSpan) -> list[str]:
        names: list[str] = []
        parent = span.parent
        while parent is not None and parent.span_id in by_id:
            names.append(by_id[parent.span_id].name)
            parent = by_id[parent.span_id].parent
        return names

    out = []
    for span in finished:
        out.append(
            {
                "name": span.name,
                "kind": span.kind.name,
                "parents": chain(span),
                "root": span.parent is None,
                "attributes": {k: _value(v) for k, v in sorted((span.attributes or {}).items())},
                "status": [span.status.status_code.name, span.status.description],
                "events": [
                    [e.name, {k: _value(v) for k, v in sorted((e.attributes or {}).items())}]
                    for e in span.events
                ],
            }
        )
    return sorted(out, key=lambda s: json.dumps(s, sort_keys=True))


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.lock2 = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self.lock2:
            self.records.append(record)


def _logs(handler: _Records) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {"graphagent.models": [], "graphagent.tools": []}
    for record in handler.records:
        fields = dict(getattr(record, "graphagent", {}))
        for key in ("latency_ms", "duration_ms"):
            if key in fields:
                fields[key] = "N"
        entry = [record.levelname, _norm(record.getMessage()), _value_dict(fields)]
        out[record.name].append(entry)
    # tool calls of one answer run concurrently: their order is not the observers'
    out["graphagent.tools"].sort(key=lambda e: json.dumps(e, sort_keys=True))
    return out


def _value_dict(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: _value(v) for k, v in sorted(fields.items())}


@pytest.fixture
def observed() -> Iterator[Callable[..., dict[str, Any]]]:
    """Run a scenario with tracing, DEBUG logs and progress all on; what each showed."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    handler = _Records()
    loggers = [logging.getLogger(n) for n in ("graphagent.models", "graphagent.tools")]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)

    def run(scenario: Callable[[], Any], *, ordered: bool = True) -> dict[str, Any]:
        exporter.clear()
        handler.records.clear()
        out = io.StringIO()
        lines: list[str] = []
        labels: set[str] = set()
        instrument(provider)
        try:
            with progress(stream=out, interval=60) as tracker:
                view = tracker.on_change

                def changed() -> None:
                    with tracker.lock:
                        labels.update(label for label, _ in tracker.nodes.values())
                        labels.update(label for label, _ in tracker.tools.values())
                        labels.update(label for label, _ in tracker.chats.values())
                    line = _norm(tracker.line())
                    with tracker.lock:
                        if not lines or lines[-1] != line:
                            lines.append(line)
                    if view is not None:
                        view()

                tracker.on_change = changed
                try:
                    result: Any = scenario()
                except Exception as exc:
                    result = f"raised {type(exc).__name__}"
        finally:
            uninstrument()
        shown = [_norm(line) for line in out.getvalue().splitlines()]
        return {
            "result": _norm(repr(result)),
            "spans": _spans(exporter),
            "logs": _logs(handler),
            "progress": {
                "lines": lines if ordered else sorted(set(lines)),
                "shown": shown if ordered else sorted(set(shown)),
                "labels": sorted(labels),
                "summary": _norm(tracker.summary()),
            },
        }

    try:
        yield run
    finally:
        for lg, level in zip(loggers, levels, strict=True):
            lg.removeHandler(handler)
            lg.setLevel(level)
        capture_content(False)


# -- scenarios ---------------------------------------------------------------------------


def _plain() -> Any:
    g = StateGraph({"n": ReplaceStrategy()})
    g.add_node("double", lambda s: {"n": s["n"] * 2}).add_node("inc", lambda s: {"n": s["n"] + 1})
    g.add_edge(START, "double").add_edge("double", "inc").add_edge("inc", END)
    return g.compile(saver=MemorySaver())


def _nested() -> Any:
    inner = StateGraph({"n": ReplaceStrategy()})
    inner.add_node("inc", lambda s: {"n": s["n"] + 1}).add_edge(START, "inc").add_edge("inc", END)
    outer = StateGraph({"n": ReplaceStrategy()})
    outer.add_node("first", lambda s: {"n": s["n"] * 10})
    outer.add_node("sub", inner.compile(name="inner"))
    outer.add_node("last", lambda s: {"n": s["n"] - 1})
    outer.add_edge(START, "first").add_edge("first", "sub").add_edge("sub", "last")
    return outer.add_edge("last", END).compile(name="outer")


_BOTH = threading.Barrier(2, timeout=5)


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    with contextlib.suppress(threading.BrokenBarrierError):
        _BOTH.wait()  # the two calls overlap, wherever they run: one progress story
    return f"found {query}"


@tool
def broken(query: str) -> str:
    """Always fails.

    Args:
        query: Ignored.
    """
    raise ValueError(f"cannot look up {query}")


@tool
def ask(question: str) -> str:
    """Ask the human.

    Args:
        question: The question.
    """
    return str(pause(question))


def _agent(**kw: Any) -> ReactAgent:
    calls = [
        ToolCall(id="c1", name="lookup", arguments='{"query": "a"}'),
        ToolCall(id="c2", name="lookup", arguments='{"query": "b"}'),
    ]
    usage = {"usage": {"prompt_tokens": 100, "completion_tokens": 20}, "finish_reason": "tool"}
    model = FakeChatModel([AssistantMessage(tool_calls=calls, metadata=usage), "All found."])
    return ReactAgent(name="researcher", model=model, tools=[lookup], saver=MemorySaver(), **kw)


def test_plain_graph(observed: Callable[..., dict[str, Any]]) -> None:
    """Two nodes on a thread: a graph span with two node spans, the progress lines."""
    _check("plain", observed(lambda: _plain().invoke({"n": 1}, thread_id="t-plain")))


def test_nested_subgraph(observed: Callable[..., dict[str, Any]]) -> None:
    """A subgraph node: the nested run's span under its node's, its node's path."""
    _check("nested", observed(lambda: _nested().invoke({"n": 1})))


def test_agent_with_tools(observed: Callable[..., dict[str, Any]]) -> None:
    """A ReactAgent calling two tools at once: invoke_agent, chat, execute_tool."""
    _check("agent", observed(lambda: _agent().call("go", thread_id="t-agent").text))


def test_agent_with_content(observed: Callable[..., dict[str, Any]]) -> None:
    """The same with content capture on: messages, arguments and results recorded."""
    capture_content(True)
    _check("agent_content", observed(lambda: _agent().call("go").text))


def test_agent_async(observed: Callable[..., dict[str, Any]]) -> None:
    """The async run: the same spans, logs and progress."""
    _check("agent_async", observed(lambda: asyncio.run(_agent().acall("go")).text))


def test_agent_streamed(observed: Callable[..., dict[str, Any]]) -> None:
    """Streaming messages: the model is streamed (``stream=True`` chat spans)."""

    def run() -> Any:
        return len(list(_agent().stream("go", mode="messages")))

    _check("agent_streamed", observed(run))


def test_node_error(observed: Callable[..., dict[str, Any]]) -> None:
    """A failing node: the run's span records the exception, the node's the status."""

    def fail(state: Any) -> Any:
        raise ValueError("secret 4111")

    g = StateGraph({"n": ReplaceStrategy()})
    g.add_node("ok", lambda s: {"n": 1}).add_node("bad", fail)
    g = g.add_edge(START, "ok").add_edge("ok", "bad").add_edge("bad", END)
    _check("node_error", observed(lambda: g.compile(name="failing").invoke({"n": 0})))


def test_model_and_tool_errors(observed: Callable[..., dict[str, Any]]) -> None:
    """A tool error handed to the model, then a model that fails over HTTP."""
    calls = [ToolCall(id="b1", name="broken", arguments='{"query": "x"}')]
    model = failing_after(AssistantMessage(tool_calls=calls))
    agent = ReactAgent(name="unlucky", model=model, tools=[broken])
    _check("errors", observed(lambda: agent.call("go").text))


def test_interrupt_and_resume(observed: Callable[..., dict[str, Any]]) -> None:
    """A node that pauses inside a subgraph, then its resume."""
    inner = StateGraph({"n": ReplaceStrategy()})
    inner.add_node("ask", lambda s: {"n": int(pause("how many?"))})
    inner.add_edge(START, "ask").add_edge("ask", END)
    outer = StateGraph({"n": ReplaceStrategy()})
    outer.add_node("sub", inner.compile(name="asking")).add_edge(START, "sub")
    app = outer.add_edge("sub", END).compile(name="pausing", saver=MemorySaver())
    first = observed(lambda: app.invoke({"n": 0}, thread_id="t-pause"))
    second = observed(lambda: app.invoke(Command(resume="7"), thread_id="t-pause"))
    _check("interrupt", first)
    _check("resume", second)


def test_tool_interrupt_and_hitl(observed: Callable[..., dict[str, Any]]) -> None:
    """A tool that asks the human (the tool span is interrupted), and an approval hook."""
    call = ToolCall(id="q1", name="ask", arguments='{"question": "sure?"}')
    agent = ReactAgent(
        name="asker",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "Done."]),
        tools=[ask],
        saver=MemorySaver(),
    )
    _check("tool_interrupt", observed(lambda: agent.call("go", thread_id="q").text))
    careful = ReactAgent(
        name="careful",
        model=FakeChatModel([AssistantMessage(tool_calls=[call])]),
        tools=[ask],
        hooks=[HumanInTheLoopHook(approval_on={"ask": "costly"})],
        saver=MemorySaver(),
    )
    _check("hitl", observed(lambda: careful.call("go", thread_id="h").text))


def test_retry(observed: Callable[..., dict[str, Any]]) -> None:
    """A node failing once, then succeeding under its retry policy: two node spans."""
    tries = [0]

    def flaky(state: Any) -> Any:
        tries[0] += 1
        if tries[0] == 1:
            raise ConnectionError("flaky")
        return {"n": tries[0]}

    g = StateGraph({"n": ReplaceStrategy()})
    policy = RetryPolicy(max_attempts=3, initial_interval=0.001, jitter=False)
    g.add_node("flaky", flaky, retry=policy).add_edge(START, "flaky").add_edge("flaky", END)
    _check("retry", observed(lambda: g.compile(name="retrying").invoke({"n": 0})))


def test_parallel_branches(observed: Callable[..., dict[str, Any]]) -> None:
    """Two branches at once, then a join: sibling node spans under one run."""
    g = StateGraph({"a": ReplaceStrategy(), "b": ReplaceStrategy(), "c": ReplaceStrategy()})
    g.add_node("left", lambda s: {"a": 1}).add_node("right", lambda s: {"b": 2})
    g.add_node("join", lambda s: {"c": s["a"] + s["b"]})
    g.add_edge(START, "left").add_edge(START, "right")
    g.add_edge("left", "join").add_edge("right", "join").add_edge("join", END)
    app = g.compile(name="fanout")
    _check("parallel", observed(lambda: app.invoke({"a": 0, "b": 0, "c": 0}), ordered=False))


# -- the goldens -------------------------------------------------------------------------

_LOCK = threading.Lock()


def _check(name: str, got: dict[str, Any]) -> None:
    got = json.loads(json.dumps(got, default=repr))
    with _LOCK:
        goldens = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
        if os.environ.get("GOLDEN_UPDATE") == "1":
            goldens[name] = got
            GOLDEN.parent.mkdir(exist_ok=True)
            GOLDEN.write_text(json.dumps(goldens, indent=1, sort_keys=True, ensure_ascii=False))
            return
    assert name in goldens, f"no golden for {name}: run with GOLDEN_UPDATE=1 once"
    assert got == goldens[name]
