"""One more turn on a long conversation: what starting a turn costs as the history grows.

A one-node chat graph: the turn appends the user's message, the node answers with one
assistant message, and the run stores its checkpoint. The thread holds 10, 100, 1,000 and
10,000 messages before the turn. Each saver is measured twice:

* warm: the saver object that wrote the thread serves the turn (a worker that served the
  conversation before);
* cold: a saver object that never served the thread does (a fresh process, or another
  worker); for the in-memory saver, the same saver with its read cache emptied.

Beside them, in the same run: LangGraph's InMemorySaver, SqliteSaver and PostgresSaver on
the same graph (they keep no decoded state between turns: warm and cold are alike).

Run: ``.venv/bin/python bench/turn.py`` (uses ``REDIS_URL``, else
redis://127.0.0.1:6379/0, and ``DATABASE_URL``, else postgresql://127.0.0.1:5432/test;
rows whose server does not answer are skipped). ``--sizes 10,1000`` measures fewer sizes;
``--in-a-row 25`` also times 25 warm turns in a row at 1,000 messages on one thread, ours
and LangGraph's, best and median (the best of many is least disturbed by a busy machine).
Each of those turns starts after a garbage collection, so the database server has sat
idle for a few milliseconds, as between a user's turns; ``--back-to-back`` collects once
and sends the turns one after another instead (on a virtual machine, waking an idle
server process costs a PostgreSQL turn about 1 ms: see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import gc
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from _common import have_langgraph, machine, median

from checkpoint import MemorySaver, PostgresSaver, RedisSaver, SqliteSaver
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import AssistantMessage, UserMessage

SIZES = (10, 100, 1000, 10000)
POSTGRES_URL = os.environ.get("DATABASE_URL", "postgresql://127.0.0.1:5432/test")
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")


def threads_for(size: int) -> int:
    """How many threads of ``size`` messages are built: one turn is timed on each."""
    return 3 if size >= 10000 else 5 if size >= 1000 else 9


def history(size: int) -> list[Any]:
    """A conversation of ``size`` messages: user and assistant in turn, chat-sized."""
    out: list[Any] = []
    for i in range(size):
        if i % 2:
            out.append(AssistantMessage(f"answer {i}: " + "the reply to that is this " * 4))
        else:
            out.append(UserMessage(f"question {i}: what about this and that? " * 2))
    return out


def chat_graph(saver: Any) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AssistantMessage(f"reply to message {len(state['messages'])}")]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    return g.compile(saver=saver)


def timed(fn: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start
    finally:
        gc.enable()


Row = dict[int, tuple[float, float | None]]  # size -> (warm, cold) seconds per turn


def ours(make: Callable[[], Any], fresh: Callable[[Any], Any], size: int) -> tuple[float, float]:
    """Median warm and cold turn on ``threads_for(size)`` threads of ``size`` messages.

    ``make()`` gives the writing saver; ``fresh(saver)`` a saver that never served them.
    """
    saver = make()
    app = chat_graph(saver)
    start = history(size)
    names = [f"turn-{uuid.uuid4().hex[:8]}" for _ in range(threads_for(size) * 2)]
    for name in names:
        app.invoke({"messages": start}, {"thread_id": name})
        app.invoke({"messages": [UserMessage("warm-up question")]}, {"thread_id": name})
    warm_names, cold_names = names[::2], names[1::2]
    warm = [
        timed(lambda n=n: app.invoke({"messages": [UserMessage("next")]}, {"thread_id": n}))
        for n in warm_names
    ]
    cold = []
    for name in cold_names:
        other = fresh(saver)
        cold_app = chat_graph(other)
        cfg = {"thread_id": name}
        cold.append(
            timed(lambda a=cold_app, c=cfg: a.invoke({"messages": [UserMessage("next")]}, c))
        )
        if other is not saver:
            other.close()
    for name in names:
        saver.delete_thread(name)
    if hasattr(saver, "close"):
        saver.close()
    return median(warm), median(cold)


def memory_fresh(saver: MemorySaver) -> MemorySaver:
    """The same saver, its decoded items forgotten (memory has no other process)."""
    cache = getattr(saver, "read_cache", None)
    if cache is not None:
        cache.clear()
    return saver


@contextmanager
def sqlite_file() -> Iterator[str]:
    with tempfile.TemporaryDirectory() as tmp:
        yield f"{tmp}/turn.sqlite"


def postgres_up() -> bool:
    import psycopg

    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.Error:
        return False
    return True


def redis_up() -> bool:
    try:
        saver = RedisSaver.from_url(REDIS_URL, prefix="bench-turn-ping")
        saver.client.ping()
        saver.close()
    except Exception:
        return False
    return True


def their_app(saver: Any) -> Any:
    """LangGraph's one-node chat graph on ``saver`` (``add_messages``)."""
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage
    from langgraph.graph import END as LEND
    from langgraph.graph import START as LSTART
    from langgraph.graph import StateGraph as LStateGraph
    from langgraph.graph.message import add_messages

    S = TypedDict("S", {"messages": Annotated[list[Any], add_messages]})  # type: ignore[misc]  # noqa: UP013

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply to message {len(state['messages'])}")]}

    g = LStateGraph(S)
    g.add_node("reply", reply)
    g.add_edge(LSTART, "reply")
    g.add_edge("reply", LEND)
    return g.compile(checkpointer=saver)


def their_history(size: int) -> list[Any]:
    """:func:`history` in LangGraph's message types."""
    from langchain_core.messages import AIMessage, HumanMessage

    out: list[Any] = []
    for i in range(size):
        if i % 2:
            out.append(AIMessage(f"answer {i}: " + "the reply to that is this " * 4))
        else:
            out.append(HumanMessage(f"question {i}: what about this and that? " * 2))
    return out


def theirs(size: int, backend: Callable[[], Any]) -> float:
    """LangGraph's median turn on the same graph (``add_messages``), synchronous durability."""
    from langchain_core.messages import HumanMessage

    start = their_history(size)
    with backend() as saver:
        app = their_app(saver)
        times = []
        for t in range(threads_for(size)):
            cfg = {"configurable": {"thread_id": f"lg-{t}"}}
            app.invoke({"messages": start}, cfg, durability="sync")
            app.invoke({"messages": [HumanMessage("warm-up")]}, cfg, durability="sync")
            times.append(
                timed(
                    lambda cfg=cfg: app.invoke(
                        {"messages": [HumanMessage("next")]}, cfg, durability="sync"
                    )
                )
            )
    return median(times)


def in_turn(fn: Callable[[], Any], turns: int, back_to_back: bool) -> list[float]:
    """``fn`` timed ``turns`` times, sorted: each after a collection (:func:`timed`), or
    back to back with the collector off for the whole row."""
    if not back_to_back:
        return sorted(timed(fn) for _ in range(turns))
    gc.collect()
    gc.disable()
    try:
        out = []
        for _ in range(turns):
            start = time.perf_counter()
            fn()
            out.append(time.perf_counter() - start)
    finally:
        gc.enable()
    return sorted(out)


def in_a_row(
    turns: int, size: int, ours_saver: Any, backend: Callable[[], Any], back_to_back: bool = False
) -> tuple[tuple[float, float], tuple[float, float]]:
    """``turns`` warm turns in a row on one thread of ``size`` messages, ours and
    LangGraph's: (best, median) seconds each. The best turn of many is the figure a busy
    machine disturbs least."""
    from langchain_core.messages import HumanMessage

    app = chat_graph(ours_saver)
    cfg: dict[str, Any] = {"thread_id": f"row-{uuid.uuid4().hex[:8]}"}
    app.invoke({"messages": history(size)}, cfg)
    app.invoke({"messages": [UserMessage("warm-up")]}, cfg)
    mine = in_turn(
        lambda: app.invoke({"messages": [UserMessage("next")]}, cfg), turns, back_to_back
    )
    ours_saver.delete_thread(cfg["thread_id"])
    with backend() as saver:
        lg = their_app(saver)
        lcfg = {"configurable": {"thread_id": "lg-row"}}
        lg.invoke({"messages": their_history(size)}, lcfg, durability="sync")
        lg.invoke({"messages": [HumanMessage("warm-up")]}, lcfg, durability="sync")
        other = in_turn(
            lambda: lg.invoke({"messages": [HumanMessage("next")]}, lcfg, durability="sync"),
            turns,
            back_to_back,
        )
    return (mine[0], median(mine)), (other[0], median(other))


@contextmanager
def lg_memory() -> Iterator[Any]:
    from langgraph.checkpoint.memory import InMemorySaver

    yield InMemorySaver()


@contextmanager
def lg_sqlite() -> Iterator[Any]:
    from langgraph.checkpoint.sqlite import SqliteSaver as LSqliteSaver

    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(f"{tmp}/lg.sqlite", check_same_thread=False)
        saver = LSqliteSaver(conn)
        saver.setup()
        yield saver
        conn.close()


@contextmanager
def lg_postgres() -> Iterator[Any]:
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver as LPostgresSaver
    from psycopg.rows import dict_row

    schema = f"bench_lgturn_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    conn = psycopg.connect(
        POSTGRES_URL,
        autocommit=True,
        prepare_threshold=0,
        row_factory=dict_row,
        options=f"-c search_path={schema}",
    )
    try:
        saver = LPostgresSaver(conn)  # type: ignore[arg-type]
        saver.setup()
        yield saver
    finally:
        conn.close()
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--no-langgraph", action="store_true")
    parser.add_argument(
        "--in-a-row",
        type=int,
        default=0,
        metavar="N",
        help="also time N warm turns in a row at 1,000 messages, ours and LangGraph's "
        "(memory, SQLite, PostgreSQL): best and median",
    )
    parser.add_argument(
        "--back-to-back",
        action="store_true",
        help="with --in-a-row: no collection (and so no idle gap) between the turns",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"one more turn on a thread of n messages ({machine()})")
    print("warm: the saver that wrote the thread; cold: one that never served it")
    rows: list[tuple[str, Row]] = []

    def measure(name: str, one: Callable[[int], tuple[float, float | None]]) -> None:
        cells: Row = {}
        for n in sizes:
            cells[n] = one(n)
        rows.append((name, cells))
        show(name, cells)

    def show(name: str, cells: Row) -> None:
        text = ""
        for n in sizes:
            warm, cold = cells[n]
            cold_text = f"{cold * 1e3:>7.2f}" if cold is not None else f"{'':>7}"
            text += f"{warm * 1e3:>8.2f}{cold_text}"
        print(f"{name:<28}{text}", flush=True)

    header = "".join(f"{f'@{n} warm / cold ms':>15}" for n in sizes)
    print(f"{'saver':<28}{header}")
    measure("graphagent MemorySaver", lambda n: ours(MemorySaver, memory_fresh, n))
    with sqlite_file() as path:
        measure(
            "graphagent SqliteSaver",
            lambda n: ours(lambda: SqliteSaver(path), lambda _: SqliteSaver(path), n),
        )
    if postgres_up():
        schema = f"bench_turn_{uuid.uuid4().hex[:8]}"
        first = PostgresSaver.from_url(POSTGRES_URL, schema=schema)
        first.setup()
        try:
            measure(
                "graphagent PostgresSaver",
                lambda n: ours(
                    lambda: PostgresSaver.from_url(POSTGRES_URL, schema=schema),
                    lambda _: PostgresSaver.from_url(POSTGRES_URL, schema=schema),
                    n,
                ),
            )
        finally:
            import psycopg

            first.close()
            with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA {schema} CASCADE")
    else:
        print("(no PostgreSQL at DATABASE_URL: PostgreSQL rows skipped)")
    if redis_up():
        prefix = f"bench-turn-{uuid.uuid4().hex[:6]}"
        measure(
            "graphagent RedisSaver",
            lambda n: ours(
                lambda: RedisSaver.from_url(REDIS_URL, prefix=prefix),
                lambda _: RedisSaver.from_url(REDIS_URL, prefix=prefix),
                n,
            ),
        )
    else:
        print(f"(no Redis at {REDIS_URL}: Redis rows skipped)")
    if have_langgraph() and not args.no_langgraph:
        backends: list[tuple[str, Callable[[], Any]]] = [
            ("LangGraph InMemorySaver", lg_memory),
            ("LangGraph SqliteSaver", lg_sqlite),
        ]
        if postgres_up():
            backends.append(("LangGraph PostgresSaver", lg_postgres))
        for name, backend in backends:
            try:
                measure(name, lambda n, b=backend: (theirs(n, b), None))
            except ImportError as exc:
                print(f"({name} not installed: {exc})")
    if 10 in sizes and 1000 in sizes:
        print("\nwarm turn at 1,000 messages / at 10:")
        for name, cells in rows:
            print(f"  {name:<28}{cells[1000][0] / cells[10][0]:>6.2f}x")
        theirs_at = {name: cells[1000][0] for name, cells in rows if name.startswith("LangGraph")}
        pairs = [
            ("graphagent MemorySaver", "LangGraph InMemorySaver"),
            ("graphagent SqliteSaver", "LangGraph SqliteSaver"),
            ("graphagent PostgresSaver", "LangGraph PostgresSaver"),
        ]
        ours_at = {name: cells[1000] for name, cells in rows}
        for mine, other in pairs:
            if mine in ours_at and other in theirs_at:
                warm, cold = ours_at[mine]
                print(
                    f"  {mine} vs {other} at 1,000: warm {theirs_at[other] / warm:.1f}x less, "
                    f"cold {theirs_at[other] / (cold or warm):.1f}x less"
                )

    if args.in_a_row and have_langgraph() and not args.no_langgraph:
        row_turns(args.in_a_row, args.back_to_back)


def row_turns(turns: int, back_to_back: bool = False) -> None:
    """The ``--in-a-row`` table."""
    how = "back to back" if back_to_back else "each after a collection"
    print(f"\n{turns} warm turns in a row at 1,000 messages ({how}), best / median ms:")
    with sqlite_file() as path:
        pairs: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
            ("memory", MemorySaver, lg_memory),
            ("SQLite", lambda: SqliteSaver(path), lg_sqlite),
        ]
        schema = f"bench_row_{uuid.uuid4().hex[:8]}"
        if postgres_up():
            pairs.append(
                (
                    "PostgreSQL",
                    lambda: PostgresSaver.from_url(POSTGRES_URL, schema=schema),
                    lg_postgres,
                )
            )
        for name, make, backend in pairs:
            saver = make()
            if name == "PostgreSQL":
                saver.setup()
            try:
                (mb, mm), (tb, tm) = in_a_row(turns, 1000, saver, backend, back_to_back)
            finally:
                if hasattr(saver, "close"):
                    saver.close()
            print(
                f"  {name:<11} graphagent {mb * 1e3:6.2f} / {mm * 1e3:6.2f}   LangGraph "
                f"{tb * 1e3:6.2f} / {tm * 1e3:6.2f}   {tb / mb:5.1f}x / {tm / mm:5.1f}x less"
            )
        if postgres_up():
            import psycopg

            with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


if __name__ == "__main__":
    main()
