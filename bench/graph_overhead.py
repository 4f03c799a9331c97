"""Per node-step overhead of a linear graph of trivial nodes, graphagent vs LangGraph.

Run: ``make bench`` or ``.venv/bin/python bench/graph_overhead.py``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any, TypedDict

sys.path.insert(0, str(Path(__file__).parent))

from _common import best_of, have_langgraph, machine, ratio

from checkpoint import MemorySaver
from graphagent.graph import END, START, StateGraph


def inc(state: Any) -> dict[str, int]:
    return {"x": state["x"] + 1}


def ours(n: int, saver: bool) -> Any:
    g = StateGraph()
    names = [f"n{i}" for i in range(n)]
    for name in names:
        g.add_node(name, inc)
    g.add_edge(START, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], END)
    app = g.compile(saver=MemorySaver() if saver else None)
    threads = itertools.count()
    cfg: dict[str, Any] = {"recursion_limit": n + 5}

    def run() -> None:
        if saver:
            cfg["thread_id"] = f"t{next(threads)}"
        out = app.invoke({"x": 0}, cfg)
        assert out["x"] == n

    return run


def theirs(n: int, saver: bool) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END as LEND
    from langgraph.graph import START as LSTART
    from langgraph.graph import StateGraph as LStateGraph

    class S(TypedDict):
        x: int

    g = LStateGraph(S)
    names = [f"n{i}" for i in range(n)]
    for name in names:
        g.add_node(name, inc)
    g.add_edge(LSTART, names[0])
    for a, b in itertools.pairwise(names):
        g.add_edge(a, b)
    g.add_edge(names[-1], LEND)
    app = g.compile(checkpointer=InMemorySaver() if saver else None)
    threads = itertools.count()

    def run() -> None:
        cfg: dict[str, Any] = {"recursion_limit": n + 5}
        if saver:
            cfg["configurable"] = {"thread_id": f"t{next(threads)}"}
        out = app.invoke({"x": 0}, cfg)
        assert out["x"] == n

    return run


def main() -> None:
    print(f"graph overhead per node-step ({machine()})")
    print(f"{'case':<28}{'graphagent':>14}{'LangGraph':>14}   ratio")
    lg = have_langgraph()
    for saver in (False, True):
        for n in (10, 100):
            label = f"{n} nodes, {'MemorySaver' if saver else 'no saver'}"
            number = 200 if n == 10 else 20
            a = best_of(ours(n, saver), number=number) / n
            b = best_of(theirs(n, saver), number=max(1, number // 10)) / n if lg else None
            theirs_text = f"{b * 1e6:>11.1f} us" if b is not None else f"{'-':>14}"
            print(f"{label:<28}{a * 1e6:>11.1f} us{theirs_text}   {ratio(b, a)}")


if __name__ == "__main__":
    main()
