"""Listing a thread's whole history: 250, 1,000 and 5,000 steps, graphagent beside LangGraph.

A looping graph appends one assistant message per step, so checkpoint ``i`` holds ``i``
messages. We time writing the thread (one run), then ``get_state_history`` read to the
end with every snapshot's messages touched (``len(values["messages"])``: LangGraph
decodes every state anyway, so ours must build them too), and the tracemalloc peak of
that listing. Savers: memory, SQLite (a file), PostgreSQL and Redis; LangGraph's
InMemorySaver, SqliteSaver and PostgresSaver in the same run (its Redis saver needs
RedisJSON and RediSearch, which plain Redis does not have). LangGraph's listing grows
with the square of the steps, so by default it runs up to 1,000 steps (``--lg-max=5000``
for the rest: about half an hour per saver).

Listing cost should grow linearly: 5x the steps, about 5x the time (rebuilding every
checkpoint from scratch made it 25x).

Run: ``make bench`` or ``.venv/bin/python bench/history.py [steps ...] [--lg-max=N]``
(uses ``REDIS_URL``, else redis://127.0.0.1:6379/0, and ``DATABASE_URL``, else
postgresql://127.0.0.1:5432/test; rows whose server does not answer are skipped).
"""

from __future__ import annotations

import gc
import itertools
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _common import have_langgraph, machine
from checkpoint_growth import (
    lg_memory,
    lg_postgres,
    lg_sqlite,
    our_postgres,
    our_sqlite,
    redis_saver,
)

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import AssistantMessage, UserMessage

STEPS = (250, 1000, 5000)
# LangGraph stores and decodes the whole message list at every checkpoint: listing 1,000
# steps takes it about a minute, 5,000 about 25 times that, so it is run up to LG_MAX
# steps (--lg-max=N to change), and its memory peak (tracemalloc slows it several
# times more) up to LG_TRACE_MAX
LG_MAX = int(next((a.split("=")[1] for a in sys.argv if a.startswith("--lg-max=")), "1000"))
LG_TRACE_MAX = 250


def _text(n: int) -> str:
    return f"reply number {n} " * 3


def our_graph(saver: CheckpointSaver, steps: int) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AssistantMessage(_text(len(state["messages"])))]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_conditional_edges(
        "reply", lambda s: "reply" if len(s["messages"]) <= steps else END, ["reply", END]
    )
    return g.compile(saver=saver)


def their_graph(saver: Any, steps: int) -> Any:
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage
    from langgraph.graph import END as LEND
    from langgraph.graph import START as LSTART
    from langgraph.graph import StateGraph as LStateGraph
    from langgraph.graph.message import add_messages

    S = TypedDict("S", {"messages": Annotated[list[Any], add_messages]})  # type: ignore[misc]  # noqa: UP013

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(_text(len(state["messages"])))]}

    g = LStateGraph(S)
    g.add_node("reply", reply)
    g.add_edge(LSTART, "reply")
    g.add_conditional_edges(
        "reply", lambda s: "reply" if len(s["messages"]) <= steps else LEND, ["reply", LEND]
    )
    return g.compile(checkpointer=saver)


# write s, list s, peak MB, snapshots, timeline s (NaN: not measured)
Measure = tuple[float, float, float, int, float]


def _listing(list_all: Callable[[], int], trace: bool = True) -> tuple[float, float, int]:
    took, count = float("inf"), 0
    for _ in range(3):  # best of three, unless one listing already takes seconds
        gc.collect()
        start = time.perf_counter()
        count = list_all()
        took = min(took, time.perf_counter() - start)
        if took > 2:
            break
    if not trace:
        return took, float("nan"), count
    gc.collect()
    tracemalloc.start()
    list_all()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return took, peak / 1e6, count


def ours(saver: CheckpointSaver, steps: int) -> Measure:
    app = our_graph(saver, steps)
    cfg = {"thread_id": f"bench-{uuid.uuid4().hex[:8]}", "recursion_limit": steps + 10}
    start = time.perf_counter()
    app.invoke({"messages": [UserMessage("hi")]}, cfg)
    wrote = time.perf_counter() - start

    def list_all() -> int:
        count = 0
        for snap in app.get_state_history(cfg):
            count += len(snap.values["messages"]) >= 0
        return count

    took, peak, count = _listing(list_all)
    # the Jupyter timeline (and `graphagent threads history`) shows rows, builds no state
    timeline = min(_timed(lambda: app.get_state_history(cfg)._repr_html_()) for _ in range(3))
    saver.delete_thread(cfg["thread_id"])
    return wrote, took, peak, count, timeline


def _timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def theirs(backend: Callable[[], AbstractContextManager[tuple[Any, Any]]], steps: int) -> Measure:
    from langchain_core.messages import HumanMessage

    with backend() as (saver, _):
        app = their_graph(saver, steps)
        cfg = {"configurable": {"thread_id": "history"}, "recursion_limit": steps + 10}
        start = time.perf_counter()
        app.invoke({"messages": [HumanMessage("hi")]}, cfg, durability="sync")
        wrote = time.perf_counter() - start

        def list_all() -> int:
            count = 0
            for snap in app.get_state_history(cfg):
                count += len(snap.values["messages"]) >= 0
            return count

        took, peak, count = _listing(list_all, trace=steps <= LG_TRACE_MAX)
    return wrote, took, peak, count, float("nan")


def _ours_rows() -> Iterator[tuple[str, Callable[[int], Measure]]]:
    yield "graphagent MemorySaver", lambda n: ours(MemorySaver(), n)
    yield "graphagent SqliteSaver", lambda n: _with(our_sqlite, n)
    yield "graphagent PostgresSaver", lambda n: _with(our_postgres, n)
    rs = redis_saver()
    if rs is not None:
        yield "graphagent RedisSaver", lambda n: ours(rs, n)


def _with(make: Callable[[], AbstractContextManager[Any]], steps: int) -> Measure:
    with make() as saver:
        if saver is None:
            raise LookupError("no server")
        return ours(saver, steps)


def _cell(got: Measure | None) -> str:
    if got is None:
        return f"{'-':>24}"
    peak = "    -" if got[2] != got[2] else f"{got[2]:>5.1f}"  # NaN: not traced
    return f"{got[1]:>10.3f} s ({peak} MB)"


def main() -> None:
    steps = tuple(int(a) for a in sys.argv[1:] if a.isdigit()) or STEPS
    assert len(steps) >= 2, "give at least two sizes"
    print(f"listing a thread's whole history ({machine()})")
    rows: list[tuple[str, dict[int, Measure]]] = []
    for name, run in _ours_rows():
        try:
            rows.append((name, {n: run(n) for n in steps}))
        except LookupError:
            print(f"({name}: no server answers, skipped)")
    if have_langgraph():
        for name, backend in (
            ("LangGraph InMemorySaver", lg_memory),
            ("LangGraph SqliteSaver", lg_sqlite),
            ("LangGraph PostgresSaver", lg_postgres),
        ):
            try:
                got = {n: theirs(backend, n) for n in steps if n <= LG_MAX}
                if got:
                    rows.append((name, got))
            except Exception as exc:  # a missing package or server: report, go on
                print(f"({name} skipped: {type(exc).__name__}: {exc})")
    print("list = get_state_history read to the end, every snapshot's messages touched, in")
    print("seconds (tracemalloc peak while listing); write = seconds to run the thread;")
    print("growth = listing time ratio between consecutive sizes")
    cells = "".join(f"{f'{n} steps':>24}" for n in steps)
    pairs = list(itertools.pairwise(steps))
    growth_head = "".join(f"{f'{b}/{a}':>11}" for a, b in pairs)
    print(f"{'saver':<26}{cells}{growth_head}   write {'/'.join(map(str, steps))}")
    for name, got in rows:
        text = "".join(_cell(got.get(n)) for n in steps)
        growth = "".join(
            f"{got[b][1] / got[a][1]:>10.1f}x" if a in got and b in got else f"{'-':>11}"
            for a, b in pairs
        )
        writes = " / ".join(f"{got[n][0]:.2f}" if n in got else "-" for n in steps)
        print(f"{name:<26}{text}{growth}   {writes}")
    print("the Jupyter timeline of the whole history (get_state_history()._repr_html_()):")
    for name, got in rows:
        if name.startswith("graphagent"):
            shown = ", ".join(f"{n} steps {got[n][4]:.3f} s" for n in steps if n in got)
            print(f"  {name}: {shown}")
    by_name = dict(rows)
    print("LangGraph / graphagent, listing time:")
    for ours_name, their_name in (
        ("graphagent MemorySaver", "LangGraph InMemorySaver"),
        ("graphagent SqliteSaver", "LangGraph SqliteSaver"),
        ("graphagent PostgresSaver", "LangGraph PostgresSaver"),
        ("graphagent RedisSaver", "LangGraph InMemorySaver"),
    ):
        a, b = by_name.get(ours_name), by_name.get(their_name)
        if a is None or b is None or not set(a) & set(b):
            continue
        ratios = ", ".join(
            f"{n} steps {b[n][1] / a[n][1]:.1f}x" for n in steps if n in a and n in b
        )
        print(f"  {their_name} vs {ours_name}: {ratios}")


if __name__ == "__main__":
    main()
