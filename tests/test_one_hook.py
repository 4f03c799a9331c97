"""Listeners, tracing and the progress display hear the engine's one hook: for the same
run they see the same nodes, nested ones included, in the same order, and with nothing
attached the hook is off."""

from __future__ import annotations

import threading
from typing import Any

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from graphagent._internal import observe
from graphagent.graph import END, START, GraphLifecycleListener, ReplaceStrategy, StateGraph
from graphagent.observability import NodeInfo, instrument, listening, uninstrument
from graphagent.observability._progress import Tracker


class Names(GraphLifecycleListener):
    """The nodes a listener hears start, in order."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.lock = threading.Lock()

    def before_node(self, node: str, state: Any, config: Any) -> None:
        with self.lock:
            self.started.append(node)


class Started(Tracker):
    """The progress tracker, keeping the labels of the nodes it saw start."""

    def __init__(self) -> None:
        super().__init__()
        self.labels: list[str] = []

    def on_node_start(self, node: NodeInfo) -> None:
        self.labels.append(node.name)
        super().on_node_start(node)


def _graph() -> Any:
    inner = StateGraph({"n": ReplaceStrategy()})
    inner.add_node("inc", lambda s: {"n": s["n"] + 1}).add_edge(START, "inc").add_edge("inc", END)
    outer = StateGraph({"n": ReplaceStrategy()})
    outer.add_node("first", lambda s: {"n": s["n"] * 10})
    outer.add_node("sub", inner.compile())
    outer.add_node("last", lambda s: {"n": s["n"] - 1})
    outer.add_edge(START, "first").add_edge("first", "sub").add_edge("sub", "last")
    outer.add_edge("last", END)
    return outer.compile()


def test_listener_tracing_and_progress_see_the_same_nodes() -> None:
    """One run, three hearers: the same node names in the same order (the subgraph's
    node included), from the one hook."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    names, tracker = Names(), Started()
    instrument(provider)
    try:
        with listening(tracker):
            assert _graph().invoke({"n": 1}, {"listeners": [names]}) == {"n": 10}
    finally:
        uninstrument()
    spans = sorted(
        (s for s in exporter.get_finished_spans() if s.name.startswith("node ")),
        key=lambda s: s.start_time or 0,
    )
    traced = [s.name.removeprefix("node ") for s in spans]
    assert names.started == ["first", "sub", "inc", "last"]
    assert traced == names.started and tracker.labels == names.started


def test_with_nothing_attached_the_hook_is_off() -> None:
    """No listener, no tracing, no progress: the engine's per-node check finds the hook
    off and hands out the shared no-op watch."""
    assert observe.ACTIVE is False
    assert observe.node("n", "node", ("n",)) is observe.IDLE
    assert _graph().invoke({"n": 1}) == {"n": 10}
    assert observe.ACTIVE is False
