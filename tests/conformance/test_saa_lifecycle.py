"""Graph lifecycle listeners, ported from Spring AI Alibaba's
spring-ai-alibaba-graph-core/src/test/java/com/alibaba/cloud/ai/graph/NodeAfterListenerTest.java
and the listener cases of StateGraphTest.java (same directory).

Spring's ``after(nodeId, state, ...)`` hands the state with the node's update applied;
graphagent's ``after_node(node, state, update, config)`` hands the node's input state and
the update it returned (with parallel nodes, "the state after one of them" is not a
state the run ever had). The assertions say the same thing in that shape.
"""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from typing import Any

import pytest

from graphagent.graph import (
    END,
    START,
    AppendStrategy,
    GraphLifecycleListener,
    ReplaceStrategy,
    StateGraph,
)


class _Recorder(GraphLifecycleListener):
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.before: Counter[str] = Counter()
        self.after: Counter[str] = Counter()
        self.inputs: dict[str, list[str]] = {}
        self.updates: dict[str, Any] = {}

    def before_node(self, node: str, state: Any, config: Any) -> None:
        with self.lock:
            self.before[node] += 1

    def after_node(self, node: str, state: Any, update: Any, config: Any) -> None:
        with self.lock:
            self.after[node] += 1
            self.inputs[node] = list(state.get("log", []))
            self.updates[node] = update


def _node(name: str) -> Any:
    return lambda state: {"log": [name]}


def _graph(edges: list[tuple[str, str]], nodes: list[str]) -> StateGraph:
    g = StateGraph({"log": AppendStrategy()})
    for n in nodes:
        g.add_node(n, _node(n))
    for a, b in edges:
        g.add_edge(a, b)
    return g


# origin: spring-ai-alibaba NodeAfterListenerTest::testNodeAfterListenerForNormalNodes
def test_before_and_after_called_for_each_node() -> None:
    """before/after fire once per node, and after sees what the node wrote."""
    rec = _Recorder()
    g = _graph([(START, "A"), ("A", "B"), ("B", END)], ["A", "B"])
    list(g.compile(listeners=[rec]).stream({}))
    assert rec.before == {"A": 1, "B": 1}
    assert rec.after == {"A": 1, "B": 1}
    assert rec.updates["A"] == {"log": ["A"]}
    assert rec.inputs["B"] == ["A"]  # B ran on the state A left


# origin: spring-ai-alibaba NodeAfterListenerTest::testNodeAfterListenerForStreamingNodes
def test_after_called_for_a_node_that_streams() -> None:
    """A node that streams custom output is still reported after it returns."""

    def streaming(state: Any, config: Any) -> dict[str, Any]:
        for chunk in ("chunk1", "chunk2", "chunk3"):
            config.writer(chunk)
        return {"log": ["streamed"]}

    rec = _Recorder()
    g = StateGraph({"log": AppendStrategy()})
    g.add_node("normalNode", _node("normalNode")).add_node("streamingNode", streaming)
    g.add_node("finalNode", _node("finalNode"))
    g.add_edge(START, "normalNode").add_edge("normalNode", "streamingNode")
    g.add_edge("streamingNode", "finalNode").add_edge("finalNode", END)
    chunks = [c for m, c in g.compile(listeners=[rec]).stream({}, mode=["custom"])]
    assert chunks == ["chunk1", "chunk2", "chunk3"]
    assert set(rec.after) == {"normalNode", "streamingNode", "finalNode"}
    assert rec.updates["streamingNode"] == {"log": ["streamed"]}


# origin: spring-ai-alibaba NodeAfterListenerTest::testNodeAfterListenerForParallelNodes
def test_after_called_for_parallel_nodes() -> None:
    """Nodes of one super-step (run concurrently) are each reported once."""
    rec = _Recorder()
    edges = [(START, "A"), ("A", "A1"), ("A", "A2"), ("A", "A3")]
    edges += [("A1", "B"), ("A2", "B"), ("A3", "B"), ("B", END)]
    g = _graph(edges, ["A", "A1", "A2", "A3", "B"])
    list(g.compile(listeners=[rec]).stream({}))
    assert rec.after == {"A": 1, "A1": 1, "A2": 1, "A3": 1, "B": 1}


# origin: spring-ai-alibaba NodeAfterListenerTest::testNodeAfterListenerReceivesCorrectStatePerNode
def test_after_receives_each_nodes_own_state() -> None:
    """Each node's report carries its own input and update, not a neighbour's."""
    rec = _Recorder()
    g = StateGraph({"log": AppendStrategy()})
    for n in ("node1", "node2", "node3"):
        g.add_node(n, _node(f"{n}_data"))
    g.add_edge(START, "node1").add_edge("node1", "node2").add_edge("node2", "node3")
    g.add_edge("node3", END)
    asyncio.run(g.compile(listeners=[rec]).ainvoke({}))
    for i, n in enumerate(("node1", "node2", "node3")):
        assert rec.updates[n] == {"log": [f"{n}_data"]}
        assert len(rec.inputs[n]) == i


# The three cases below come from spring-ai-alibaba
# spring-ai-alibaba-graph-core/src/test/java/com/alibaba/cloud/ai/graph/StateGraphTest.java,
# whose graph is one node "agent_1" writing prop1 = "test" after the input.


class _Ends(GraphLifecycleListener):
    def __init__(self, name: str, heard: list[tuple[str, ...]]) -> None:
        self.name = name
        self.heard = heard

    def on_start(self, graph: str, input: Any, config: Any) -> None:
        self.heard.append((self.name, "start", graph))

    def on_complete(self, graph: str, values: Any, config: Any) -> None:
        self.heard.append((self.name, "complete", dict(values)["prop1"]))

    def on_error(self, node: str | None, error: BaseException, config: Any) -> None:
        self.heard.append((self.name, "error", str(node), type(error).__name__))


def _agent_1(fail: bool = False) -> StateGraph:
    def agent_1(state: Any) -> dict[str, Any]:
        if fail:
            _ = 1 / 0  # Spring's test divides by zero too
        return {"prop1": "test"}

    g = StateGraph({"prop1": ReplaceStrategy(), "input": ReplaceStrategy()})
    return g.add_node("agent_1", agent_1).add_edge(START, "agent_1").add_edge("agent_1", END)


# origin: spring-ai-alibaba StateGraphTest::testLifecycleListenerGraphWithCompleteAndStart
def test_start_and_complete_are_heard() -> None:
    """onStart and onComplete fire once each, around the run, with its final state."""
    heard: list[tuple[str, ...]] = []
    app = _agent_1().compile(name="g", listeners=[_Ends("l", heard)])
    assert app.invoke({"input": "test1"}) == {"input": "test1", "prop1": "test"}
    assert heard == [("l", "start", "g"), ("l", "complete", "test")]


# origin: spring-ai-alibaba StateGraphTest::testLifecycleListenerGraphWithError
def test_error_is_heard_and_raised() -> None:
    """A node dividing by zero: the run raises, onError names the node, no onComplete."""
    heard: list[tuple[str, ...]] = []
    app = _agent_1(fail=True).compile(name="g", listeners=[_Ends("l", heard)])
    with pytest.raises(ZeroDivisionError):
        app.invoke({"input": "test1"})
    assert heard == [("l", "start", "g"), ("l", "error", "agent_1", "ZeroDivisionError")]


# origin: spring-ai-alibaba StateGraphTest::testLifecycleListenerGraphWithLIFO
def test_two_listeners_nest_like_context_managers() -> None:
    """Two listeners both hear the run. Spring calls its listeners last-registered
    first (a deque); graphagent's nest like ``with`` blocks: the first registered
    hears the start first and the end last, so it sees the whole of the second's."""
    heard: list[tuple[str, ...]] = []
    first, second = _Ends("listener1", heard), _Ends("listener2", heard)
    _agent_1().compile(listeners=[first, second]).invoke({"input": "test1"})
    assert heard == [
        ("listener1", "start", "graph"),
        ("listener2", "start", "graph"),
        ("listener2", "complete", "test"),
        ("listener1", "complete", "test"),
    ]
