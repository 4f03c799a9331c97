"""The grown lifecycle listener: the detailed events (runs nested ones included, nodes
with kind, path and attempt, interrupts, node and tool errors, model and tool calls),
the ways to register it, what a listener costs when it wants little, and a tracer
written by a user with public names only that draws the same span tree as the built-in
OpenTelemetry one."""

from __future__ import annotations

import contextvars
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from _scripted import failing_after
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from checkpoint import MemorySaver
from graphagent.agent import ReactAgent
from graphagent.errors import GraphBubbleUp, ModelHTTPError, UserError
from graphagent.graph import (
    END,
    START,
    Command,
    GraphLifecycleListener,
    ReplaceStrategy,
    RetryPolicy,
    StateGraph,
    interrupt,
)
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel
from graphagent.observability import (
    ChatInfo,
    NodeInfo,
    RunInfo,
    ToolInfo,
    add_listener,
    instrument,
    listening,
    remove_listener,
    uninstrument,
)
from graphagent.tools import tool

# -- a user's tracer, public names only -------------------------------------------------


class Span:
    """What the user's tracer records of one operation."""

    def __init__(self, name: str, parent: Span | None, attributes: dict[str, Any]) -> None:
        self.name = name
        self.parent = parent
        self.attributes = attributes
        self.error: str | None = None
        self.tokens: list[contextvars.Token[Span | None]] = []

    def chain(self) -> tuple[str, ...]:
        """Its name and its ancestors', innermost first."""
        names: list[str] = []
        span: Span | None = self
        while span is not None:
            names.append(span.name)
            span = span.parent
        return tuple(names)


class UserTracer(GraphLifecycleListener):
    """A span per run, node, model call and tool call, parented as OpenTelemetry's are:
    a node's and a tool's span is current while it runs, a run's while its work runs
    (between ``on_run_enter`` and ``on_run_exit``), a streamed model call's never."""

    def __init__(self) -> None:
        self.current: contextvars.ContextVar[Span | None] = contextvars.ContextVar(
            "user_span", default=None
        )
        self.open: dict[object, Span] = {}
        self.finished: list[Span] = []
        self.lock = threading.Lock()

    def _start(self, key: object, name: str, current: bool, **attributes: Any) -> None:
        span = Span(name, self.current.get(), attributes)
        self.open[key] = span
        if current:
            span.tokens.append(self.current.set(span))

    def _end(self, key: object, error: BaseException | None) -> None:
        span = self.open.pop(key)
        if isinstance(error, GraphBubbleUp):
            span.attributes["interrupted"] = True
        elif error is not None:
            span.error = type(error).__name__
        if span.tokens:
            self.current.reset(span.tokens.pop())
        with self.lock:
            self.finished.append(span)

    def on_run_start(self, run: RunInfo) -> None:
        name = getattr(run.agent, "name", None)
        title = f"invoke_agent {name}" if run.agent is not None else f"graph {run.graph}"
        self._start(run, title, False, nested=run.nested)

    def on_run_enter(self, run: RunInfo) -> None:
        self.open[run].tokens.append(self.current.set(self.open[run]))

    def on_run_exit(self, run: RunInfo) -> None:
        self.current.reset(self.open[run].tokens.pop())

    def on_run_end(self, run: RunInfo, values: Any, error: BaseException | None) -> None:
        self._end(run, error)

    def on_node_start(self, node: NodeInfo) -> None:
        extra = {"attempt": node.attempt} if node.attempt > 1 else {}
        self._start(node, f"node {node.name}", True, path="/".join(node.path), **extra)

    def on_interrupt(self, node: NodeInfo) -> None:
        self.open[node].attributes["interrupted"] = True

    def on_node_error(self, node: NodeInfo, error: BaseException) -> None:
        self.open[node].error = type(error).__name__

    def on_node_end(self, node: NodeInfo, update: Any, error: BaseException | None) -> None:
        self._end(node, error)

    def on_model_start(self, call: ChatInfo) -> None:
        self._start(call, f"chat {call.model}", not call.stream)

    def on_model_end(self, call: ChatInfo, answer: Any, error: BaseException | None) -> None:
        self._end(call, error)

    def on_tool_start(self, call: ToolInfo) -> None:
        self._start(call, f"execute_tool {call.name}", True, call_id=call.call_id)

    def on_tool_error(self, call: ToolInfo, error: BaseException) -> None:
        self.open[call].error = type(error).__name__

    def on_tool_end(self, call: ToolInfo, result: Any, error: BaseException | None) -> None:
        self._end(call, error)


# -- scenarios ---------------------------------------------------------------------------


@tool
def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    if query == "bad":
        raise ValueError("no such thing")
    return f"found {query}"


@tool
def ask(question: str) -> str:
    """Ask the human.

    Args:
        question: The question.
    """
    return str(interrupt(question))


def _agent_run() -> None:
    calls = [
        ToolCall(id="c1", name="lookup", arguments='{"query": "a"}'),
        ToolCall(id="c2", name="lookup", arguments='{"query": "bad"}'),
    ]
    model = failing_after(AssistantMessage(tool_calls=calls))
    agent = ReactAgent(name="unlucky", model=model, tools=[lookup])
    with pytest.raises(ModelHTTPError):
        agent.call("go")


def _streamed_agent_run() -> None:
    call = ToolCall(id="q1", name="ask", arguments='{"question": "sure?"}')
    agent = ReactAgent(
        name="asker",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "Done."]),
        tools=[ask],
        saver=MemorySaver(),
    )
    list(agent.stream("go", thread_id="q", mode="messages"))
    list(agent.stream(Command(resume="yes"), thread_id="q", mode="messages"))


def _nested_run() -> None:
    tries = [0]

    def flaky(state: Any) -> Any:
        tries[0] += 1
        if tries[0] == 1:
            raise ConnectionError("flaky")
        return {"n": int(interrupt("how many?"))}

    inner = StateGraph({"n": ReplaceStrategy()})
    policy = RetryPolicy(max_attempts=2, initial_interval=0.001, jitter=False)
    inner.add_node("ask", flaky, retry=policy).add_edge(START, "ask").add_edge("ask", END)
    outer = StateGraph({"n": ReplaceStrategy()})
    outer.add_node("first", lambda s: {"n": 1}).add_node("sub", inner.compile(name="asking"))
    outer.add_edge(START, "first").add_edge("first", "sub").add_edge("sub", END)
    app = outer.compile(name="pausing", saver=MemorySaver())
    app.invoke({"n": 0}, thread_id="t")
    app.invoke(Command(resume="7"), thread_id="t")


def _otel_tree(exporter: InMemorySpanExporter) -> Counter[tuple[Any, ...]]:
    spans = exporter.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    tree: Counter[tuple[Any, ...]] = Counter()
    for span in spans:
        names, parent = [span.name], span.parent
        while parent is not None:
            names.append(by_id[parent.span_id].name)
            parent = by_id[parent.span_id].parent
        attributes = span.attributes or {}
        marks = (
            bool(attributes.get("graphagent.interrupted")),
            attributes.get("error.type"),
            attributes.get("graphagent.node.attempt"),
        )
        tree[(tuple(names), *marks)] += 1
    return tree


def _user_tree(tracer: UserTracer) -> Counter[tuple[Any, ...]]:
    return Counter(
        (s.chain(), bool(s.attributes.get("interrupted")), s.error, s.attributes.get("attempt"))
        for s in tracer.finished
    )


@pytest.mark.parametrize("scenario", [_agent_run, _streamed_agent_run, _nested_run])
def test_a_user_tracer_draws_the_same_tree_as_the_builtin_one(
    scenario: Callable[[], None],
) -> None:
    """Written with public names only, a tracer sees what the OpenTelemetry one does:
    the same spans under the same parents, paused, failed and retried alike."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    user = UserTracer()
    instrument(provider)
    add_listener(user)
    try:
        scenario()
    finally:
        remove_listener(user)
        uninstrument()
    assert not user.open
    tree = _otel_tree(exporter)
    assert sum(tree.values()) > 3
    assert _user_tree(user) == tree


# -- the events, in order ----------------------------------------------------------------


class Events(GraphLifecycleListener):
    """Every detailed event, as a tuple."""

    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []
        self.lock = threading.Lock()

    def add(self, *event: Any) -> None:
        with self.lock:
            self.events.append(event)

    def on_run_start(self, run: RunInfo) -> None:
        self.add("run", run.graph, run.nested)

    def on_run_end(self, run: RunInfo, values: Any, error: BaseException | None) -> None:
        self.add("run end", run.graph, type(error).__name__ if error else sorted(values or {}))

    def on_node_start(self, node: NodeInfo) -> None:
        self.add("node", "/".join(node.path), node.kind, node.attempt)

    def on_interrupt(self, node: NodeInfo) -> None:
        self.add("interrupt", node.name)

    def on_node_error(self, node: NodeInfo, error: BaseException) -> None:
        self.add("node error", node.name, type(error).__name__)

    def on_node_end(self, node: NodeInfo, update: Any, error: BaseException | None) -> None:
        self.add("node end", node.name, update)

    def on_model_start(self, call: ChatInfo) -> None:
        self.add("model", call.model, len(call.messages), call.stream)

    def on_model_end(self, call: ChatInfo, answer: Any, error: BaseException | None) -> None:
        self.add(
            "model end", getattr(answer, "text", None), type(error).__name__ if error else None
        )

    def on_tool_start(self, call: ToolInfo) -> None:
        self.add("tool", call.name, call.call_id, call.arguments)

    def on_tool_error(self, call: ToolInfo, error: BaseException) -> None:
        self.add("tool error", call.name, type(error).__name__)

    def on_tool_end(self, call: ToolInfo, result: Any, error: BaseException | None) -> None:
        self.add("tool end", call.name, result, type(error).__name__ if error else None)


def test_nested_runs_retries_and_interrupts_in_order() -> None:
    """A subgraph whose node fails once, is retried, then pauses; and its resume."""
    events = Events()
    with listening(events):
        _nested_run()
    assert events.events == [
        ("run", "pausing", False),
        ("node", "first", "node", 1),
        ("node end", "first", {"n": 1}),
        ("node", "sub", "subgraph", 1),
        ("run", "asking", True),
        ("node", "sub/ask", "node", 1),
        ("node error", "ask", "ConnectionError"),
        ("node end", "ask", None),
        ("node", "sub/ask", "node", 2),
        ("interrupt", "ask"),
        ("node end", "ask", None),
        ("run end", "asking", "GraphInterrupt"),
        ("interrupt", "sub"),
        ("node end", "sub", None),
        ("run end", "pausing", ["__interrupt__", "n"]),
        # the resume: the subgraph's node runs again with the answer
        ("run", "pausing", False),
        ("node", "sub", "subgraph", 1),
        ("run", "asking", True),
        ("node", "sub/ask", "node", 1),
        ("node end", "ask", {"n": 7}),
        ("run end", "asking", ["n"]),
        ("node end", "sub", {"n": 7}),
        ("run end", "pausing", ["n"]),
    ]


def test_model_and_tool_calls_with_their_failures() -> None:
    """A model asks for two tools (one fails, its error goes to the model), then the
    model fails: each call's start and end, the tool's error before its end."""
    events = Events()
    with listening(events):
        _agent_run()
    got = events.events
    tools = [e for e in got if e[0].startswith("tool")]
    expected = [
        ("tool", "lookup", "c1", '{"query": "a"}'),
        ("tool", "lookup", "c2", '{"query": "bad"}'),
        ("tool end", "lookup", "found a", None),
        ("tool end", "lookup", None, None),
        ("tool error", "lookup", "ValueError"),
    ]
    assert sorted(tools, key=repr) == sorted(expected, key=repr)
    assert got.index(("tool error", "lookup", "ValueError")) < got.index(
        ("tool end", "lookup", None, None)
    )
    rest = [e for e in got if not e[0].startswith("tool")]
    assert rest == [
        ("run", "unlucky", False),
        ("node", "model", "model", 1),
        ("model", "FunctionChatModel", 1, False),
        ("model end", "", None),
        ("node end", "model", rest[4][2]),
        ("node", "tools", "tools", 1),
        ("node end", "tools", rest[6][2]),
        ("node", "model", "model", 1),
        ("model", "FunctionChatModel", 4, False),
        ("model end", None, "ModelHTTPError"),
        ("node error", "model", "ModelHTTPError"),
        ("node end", "model", None),
        ("run end", "unlucky", "ModelHTTPError"),
    ]


def test_a_tool_that_pauses_ends_with_the_pause() -> None:
    """A tool calling interrupt(): its end carries the GraphBubbleUp; streamed model
    calls say so."""
    events = Events()
    with listening(events):
        _streamed_agent_run()
    assert ("tool end", "ask", None, "GraphInterrupt") in events.events
    assert ("tool end", "ask", "yes", None) in events.events
    assert ("model", "FakeChatModel", 1, True) in events.events
    assert ("interrupt", "tools") in events.events


# -- registering -------------------------------------------------------------------------


def _one_node() -> Any:
    g = StateGraph({"n": ReplaceStrategy()})
    return g.add_node("a", lambda s: {"n": 1}).add_edge(START, "a").add_edge("a", END)


def test_every_way_to_register_hears_model_and_tool_calls() -> None:
    """At compile, per run, in a block and process-wide: the same events."""
    heard: list[list[tuple[Any, ...]]] = []

    def agent(**kw: Any) -> ReactAgent:
        call = ToolCall(id="c1", name="lookup", arguments='{"query": "a"}')
        model = FakeChatModel([AssistantMessage(tool_calls=[call]), "ok"])
        return ReactAgent(name="r", model=model, tools=[lookup], **kw)

    at_compile = Events()
    agent(listeners=[at_compile]).call("go")
    per_run, in_block, everywhere = Events(), Events(), Events()
    agent().invoke("go", {"listeners": [per_run]})
    with listening(in_block):
        agent().call("go")
    add_listener(everywhere)
    try:
        agent().call("go")
    finally:
        remove_listener(everywhere)
    agent().call("go")  # heard by none
    for events in (at_compile, per_run, in_block, everywhere):
        heard.append([e[:2] for e in events.events if e[0] != "node end"])
    assert heard[0] == heard[1] == heard[2] == heard[3]
    assert ("tool", "lookup") in heard[0] and ("model", "FakeChatModel") in heard[0]


def test_registering_something_else_is_refused() -> None:
    """add_listener and listening take listeners only, saying what to subclass."""
    with pytest.raises(UserError, match="GraphLifecycleListener"):
        add_listener(print)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="listening"), listening(object()):  # type: ignore[arg-type]
        pass


def test_a_raising_detailed_method_is_logged_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As with Spring's five: a bug in on_node_end is a WARNING, not a failed run."""

    class Broken(GraphLifecycleListener):
        def on_node_end(self, node: NodeInfo, update: Any, error: BaseException | None) -> None:
            raise RuntimeError("listener bug")

    assert _one_node().compile(listeners=[Broken()]).invoke({"n": 0}) == {"n": 1}
    assert "on_node_end" in caplog.text


# -- what it costs -----------------------------------------------------------------------


@pytest.fixture
def no_events(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Building an event fails the test."""
    from graphagent._internal import observe

    def refuse(*args: Any, **kw: Any) -> Any:
        raise AssertionError("an event was built with nobody listening")

    for name in ("RunInfo", "NodeInfo", "ChatInfo", "ToolInfo"):
        monkeypatch.setattr(observe, name, refuse)
    yield


@pytest.mark.usefixtures("no_events")
def test_nothing_attached_builds_no_event() -> None:
    """No listener, tracing or display: a run, its nodes, its model and tool calls
    build no event object (the engine's one flag check says nobody listens)."""
    call = ToolCall(id="c1", name="lookup", arguments='{"query": "a"}')
    model = FakeChatModel([AssistantMessage(tool_calls=[call]), "ok"])
    assert ReactAgent(name="r", model=model, tools=[lookup]).call("go").text == "ok"
    assert _one_node().compile().invoke({"n": 0}) == {"n": 1}


def test_a_listener_of_nodes_is_not_asked_about_calls() -> None:
    """A listener overriding only node methods gets no scope for model or tool calls:
    they cost it nothing."""
    from graphagent._internal import observe

    class Nodes(GraphLifecycleListener):
        def before_node(self, node: str, state: Any, config: Any) -> None:
            pass

    with listening(Nodes()):
        assert observe.chat("p", "m", [], [], None, stream=False) is observe.IDLE
        assert observe.tool("t", "c", "{}") is observe.IDLE
        assert observe.node("n", "node", ("n",)) is not observe.IDLE


def test_a_method_set_on_the_listener_itself_is_called() -> None:
    """Overriding is found on the object too, not only in its class."""
    seen: list[str] = []
    listener = GraphLifecycleListener()
    listener.before_node = lambda node, state, config: seen.append(node)  # type: ignore[method-assign]
    _one_node().compile(listeners=[listener]).invoke({"n": 0})
    assert seen == ["a"]
