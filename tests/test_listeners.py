"""Graph lifecycle listeners: what they are told, registered at compile or per run."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from checkpoint import MemorySaver
from graphagent.agent import ReactAgent
from graphagent.errors import UserError
from graphagent.graph import (
    END,
    START,
    Command,
    GraphLifecycleListener,
    ReplaceStrategy,
    StateGraph,
    interrupt,
)
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel
from graphagent.tools import tool


class Log(GraphLifecycleListener):
    def __init__(self) -> None:
        self.events: list[tuple[Any, ...]] = []

    def on_start(self, graph: str, input: Any, config: Any) -> None:
        self.events.append(("start", graph, input))

    def before_node(self, node: str, state: Any, config: Any) -> None:
        self.events.append(("before", node))

    def after_node(self, node: str, state: Any, update: Any, config: Any) -> None:
        self.events.append(("after", node, update))

    def on_error(self, node: str | None, error: BaseException, config: Any) -> None:
        self.events.append(("error", node, type(error).__name__))

    def on_complete(self, graph: str, values: Any, config: Any) -> None:
        self.events.append(("complete", graph, dict(values)))


def _two_nodes(fail: bool = False) -> StateGraph:
    def b(state: Any) -> dict[str, Any]:
        if fail:
            raise ValueError("boom")
        return {"n": state["n"] + 10}

    g = StateGraph({"n": ReplaceStrategy()})
    g.add_node("a", lambda s: {"n": s["n"] + 1}).add_node("b", b)
    return g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)


def test_events_in_order_at_compile() -> None:
    """A compile-time listener hears start, each node with its update, and the end."""
    log = Log()
    _two_nodes().compile(name="g", listeners=[log]).invoke({"n": 0})
    assert log.events == [
        ("start", "g", {"n": 0}),
        ("before", "a"),
        ("after", "a", {"n": 1}),
        ("before", "b"),
        ("after", "b", {"n": 11}),
        ("complete", "g", {"n": 11}),
    ]


def test_per_run_listener_only_hears_its_run() -> None:
    """A listener in the run config hears that run, not the next one."""
    log = Log()
    app = _two_nodes().compile()
    app.invoke({"n": 0}, {"listeners": [log]})
    app.invoke({"n": 0})
    assert [e[0] for e in log.events].count("start") == 1
    assert log.events[-1][0] == "complete"


def test_error_reported_once_with_node_name() -> None:
    """A failing node is reported once, by name; no completion follows."""
    log = Log()
    with pytest.raises(ValueError, match="boom"):
        _two_nodes(fail=True).compile(listeners=[log]).invoke({"n": 0})
    assert log.events[-1] == ("error", "b", "ValueError")
    assert [e[0] for e in log.events].count("error") == 1
    assert "complete" not in [e[0] for e in log.events]


def test_raising_listener_is_logged_and_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """A listener's own bug is logged at WARNING; the run still finishes."""

    class Broken(GraphLifecycleListener):
        def before_node(self, node: str, state: Any, config: Any) -> None:
            raise RuntimeError("listener bug")

    with caplog.at_level(logging.WARNING, logger="graphagent.graph"):
        out = _two_nodes().compile(listeners=[Broken()]).invoke({"n": 0})
    assert out == {"n": 11}
    assert "before_node" in caplog.text


def test_not_a_listener_refused() -> None:
    """Passing something else names the class to subclass."""
    with pytest.raises(UserError, match="GraphLifecycleListener"):
        _two_nodes().compile(listeners=[object()])
    with pytest.raises(UserError, match="config\\['listeners'\\]"):
        _two_nodes().compile().invoke({"n": 0}, {"listeners": [print]})


def test_async_and_stream_runs_are_heard() -> None:
    """ainvoke and stream report the same events as invoke."""
    sync_log, async_log, stream_log = Log(), Log(), Log()
    _two_nodes().compile(listeners=[sync_log]).invoke({"n": 0})
    asyncio.run(_two_nodes().compile(listeners=[async_log]).ainvoke({"n": 0}))
    list(_two_nodes().compile(listeners=[stream_log]).stream({"n": 0}))
    assert sync_log.events == async_log.events == stream_log.events


def test_interrupt_completes_without_after_node() -> None:
    """A node that pauses gets no after_node; the run completes (paused) with its state."""

    def ask(state: Any) -> dict[str, Any]:
        return {"n": interrupt("how many?")}

    g = (
        StateGraph({"n": ReplaceStrategy()})
        .add_node("ask", ask)
        .add_edge(START, "ask")
        .add_edge("ask", END)
    )
    log = Log()
    app = g.compile(saver=MemorySaver(), listeners=[log])
    app.invoke({"n": 0}, thread_id="t")
    assert [e[0] for e in log.events] == ["start", "before", "complete"]
    app.invoke(Command(resume=5), thread_id="t")
    assert log.events[-2] == ("after", "ask", {"n": 5})


def test_subgraph_nodes_reported_and_no_duplicates() -> None:
    """A subgraph's nodes are reported once each; on_start/on_complete are the outer run's."""
    inner = _two_nodes().compile(name="inner")
    outer = StateGraph({"n": ReplaceStrategy()}).add_node("sub", inner).add_edge(START, "sub")
    log = Log()
    outer.add_edge("sub", END).compile(name="outer").invoke({"n": 0}, {"listeners": [log]})
    names = [e[:2] for e in log.events]
    assert names == [
        ("start", "outer"),
        ("before", "sub"),
        ("before", "a"),
        ("after", "a"),
        ("before", "b"),
        ("after", "b"),
        ("after", "sub"),
        ("complete", "outer"),
    ]


def test_agent_nodes_reported() -> None:
    """An agent's hook, model and tools nodes are reported with their updates."""

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    call = ToolCall(id="1", name="add", arguments='{"a": 1, "b": 2}')
    model = FakeChatModel([AssistantMessage(tool_calls=[call]), "3"])
    agent = ReactAgent(name="calc", model=model, tools=[add])
    log = Log()
    agent.invoke("1+2?", {"listeners": [log]})
    nodes = [e[1] for e in log.events if e[0] == "after"]
    assert nodes == ["model", "tools", "model"]
    tools_update = next(e[2] for e in log.events if e[:2] == ("after", "tools"))
    assert tools_update["messages"][0].content == "3"


def test_agent_built_with_listeners_hears_every_run() -> None:
    """ReactAgent(listeners=[...]) registers them at compile: every call is heard."""
    log = Log()
    agent = ReactAgent(name="a", model=FakeChatModel(["one", "two"]), listeners=[log])
    agent.call("hi")
    agent.call("again")
    assert [e[1] for e in log.events if e[0] == "start"] == ["a", "a"]
