"""Send fan-out / fan-in per task, graphagent vs LangGraph, and memory against task count.

A router sends N tasks of one node (each squares its own number), a list strategy
collects the results, an in-memory saver checkpoints the thread.

Run: ``make bench`` or ``.venv/bin/python bench/send_fanout.py``.
"""

from __future__ import annotations

import gc
import itertools
import operator
import sys
import tracemalloc
from pathlib import Path
from typing import Annotated, Any, TypedDict

sys.path.insert(0, str(Path(__file__).parent))

from _common import best_of, have_langgraph, machine, ratio

from checkpoint import MemorySaver
from graphagent.graph import END, START, Send, StateGraph


class State(TypedDict):
    xs: list[int]
    ys: Annotated[list[int], operator.add]


def square(arg: Any) -> dict[str, list[int]]:
    return {"ys": [arg["x"] * arg["x"]]}


def fan_out(state: Any) -> list[Any]:
    return [Send("square", {"x": x}) for x in state["xs"]]


def ours(n: int) -> Any:
    g = StateGraph(State).add_node("square", square)
    g.add_conditional_edges(START, fan_out).add_edge("square", END)
    app = g.compile(saver=MemorySaver())
    threads = itertools.count()
    xs = list(range(n))

    def run() -> None:
        out = app.invoke({"xs": xs, "ys": []}, {"thread_id": f"t{next(threads)}"})
        assert len(out["ys"]) == n

    return run


def theirs(n: int) -> Any:
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END as LEND
    from langgraph.graph import START as LSTART
    from langgraph.graph import StateGraph as LStateGraph
    from langgraph.types import Send as LSend

    def lfan_out(state: Any) -> list[Any]:
        return [LSend("square", {"x": x}) for x in state["xs"]]

    g = LStateGraph(State).add_node("square", square)
    g.add_conditional_edges(LSTART, lfan_out).add_edge("square", LEND)
    app = g.compile(checkpointer=InMemorySaver())
    threads = itertools.count()
    xs = list(range(n))

    def run() -> None:
        cfg = {"configurable": {"thread_id": f"t{next(threads)}"}}
        out = app.invoke({"xs": xs, "ys": []}, cfg)
        assert len(out["ys"]) == n

    return run


def peak_bytes(make: Any, n: int) -> int:
    """The peak memory one run of ``n`` tasks allocates (a warm graph, tracemalloc)."""
    run = make(n)
    run()
    gc.collect()
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    print(f"Send fan-out / fan-in, in-memory saver, per task ({machine()})")
    print(f"{'case':<28}{'graphagent':>14}{'LangGraph':>14}   ratio")
    lg = have_langgraph()
    for n in (100, 1000):
        a = best_of(ours(n), repeat=5) / n
        b = best_of(theirs(n), repeat=3) / n if lg else None
        theirs_text = f"{b * 1e6:>11.1f} us" if b is not None else f"{'-':>14}"
        print(f"{f'{n} tasks':<28}{a * 1e6:>11.1f} us{theirs_text}   {ratio(b, a)}")
    print("peak memory of one run (tracemalloc), by task count")
    sizes = (1000, 2000, 4000)
    mine = [peak_bytes(ours, n) for n in sizes]
    line = "  ".join(f"{n}: {m / 1e6:.2f} MB" for n, m in zip(sizes, mine, strict=True))
    print(f"  graphagent {line}  (4000/1000: {mine[2] / mine[0]:.2f}x)")
    if lg:
        lgm = [peak_bytes(theirs, n) for n in sizes]
        line = "  ".join(f"{n}: {m / 1e6:.2f} MB" for n, m in zip(sizes, lgm, strict=True))
        print(f"  LangGraph  {line}  (4000/1000: {lgm[2] / lgm[0]:.2f}x)")


if __name__ == "__main__":
    main()
