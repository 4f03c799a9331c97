"""Per node-step cost of lifecycle listeners: nothing attached, Spring's five methods,
the detailed node events, and OpenTelemetry tracing (a listener too).

A linear graph of 100 trivial nodes, no saver; one invoke, time divided by the nodes;
best of 7 rounds. With nothing attached the engine checks one flag per node; the other
rows show what a listener costs when there is one.

Run: ``.venv/bin/python bench/listeners.py``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _common import best_of, machine

from graphagent.graph import END, START, GraphLifecycleListener, StateGraph
from graphagent.observability import NodeInfo, add_listener, remove_listener

N = 100


def inc(state: Any) -> dict[str, int]:
    return {"x": state["x"] + 1}


class Spring(GraphLifecycleListener):
    """Spring's five methods, doing nothing."""

    def before_node(self, node: str, state: Any, config: Any) -> None:
        pass

    def after_node(self, node: str, state: Any, update: Any, config: Any) -> None:
        pass


class Detailed(GraphLifecycleListener):
    """The detailed node events, timing each node by its info object."""

    def __init__(self) -> None:
        self.open: dict[NodeInfo, int] = {}

    def on_node_start(self, node: NodeInfo) -> None:
        self.open[node] = node.attempt

    def on_node_end(self, node: NodeInfo, update: Any, error: BaseException | None) -> None:
        del self.open[node]


def app() -> Any:
    g = StateGraph()
    names = [f"n{i}" for i in range(N)]
    for name in names:
        g.add_node(name, inc)
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    return g.add_edge(names[-1], END).compile()


def per_step(listener: GraphLifecycleListener | None) -> float:
    graph = app()
    cfg: dict[str, Any] = {"recursion_limit": N + 5}
    if listener is not None:
        add_listener(listener)
    try:
        return best_of(lambda: graph.invoke({"x": 0}, cfg), number=20) / N
    finally:
        if listener is not None:
            remove_listener(listener)


def main() -> None:
    print(f"lifecycle listeners, per node-step, {N} nodes, no saver ({machine()})")
    rows: list[tuple[str, GraphLifecycleListener | None]] = [
        ("nothing attached", None),
        ("Spring's before/after_node", Spring()),
        ("on_node_start/on_node_end", Detailed()),
    ]
    try:
        from opentelemetry.sdk.trace import TracerProvider

        from graphagent.observability._otel import Tracing

        rows.append(("OpenTelemetry tracing (no exporter)", Tracing(TracerProvider())))
    except ImportError:
        pass
    for label, listener in rows:
        print(f"{label:<40}{per_step(listener) * 1e6:>9.1f} us")


if __name__ == "__main__":
    main()
