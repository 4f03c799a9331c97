"""Cost of one more step as a thread grows: bytes written and time, at 10/100/1,000 messages.

A step appends one assistant message inside a running loop; we measure the
checkpoint it writes. Savers: memory, SQLite (a file), PostgreSQL and Redis. Beside them,
LangGraph's InMemorySaver, SqliteSaver and PostgresSaver in the same run, and a Redis step
write against one raw PING round trip.

Run: ``make bench`` or ``.venv/bin/python bench/checkpoint_growth.py``
(uses ``REDIS_URL``, else redis://127.0.0.1:6379/0, and ``DATABASE_URL``, else
postgresql://127.0.0.1:5432/test; rows whose server does not answer are skipped).
"""

from __future__ import annotations

import functools
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
from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import AssistantMessage, UserMessage

SIZES = (10, 100, 1000)
RESULTS: dict[tuple[str, int], tuple[float, float]] = {}
STEPS = 30
ROUNDS = 3  # each size measured this often, the sizes in turn; the median is shown


class CountingSaver(CheckpointSaver):
    """Wraps a saver; counts the bytes each put stores (values, items, record)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.last_bytes = 0
        self.times: list[float] = []

    def put(self, thread_id: str, write: Any, *, expected_head: str | None) -> None:
        from checkpoint import _layout

        parent = self.inner._record_for_bench(thread_id, write.parent_id)
        plan = _layout.plan_put(
            parent, write, on_head=write.parent_id == expected_head, dumps=self.inner.serde_dumps
        )
        self.last_bytes = len(plan.record_blob) + sum(len(k) + len(v) for k, v in plan.data.items())
        start = time.perf_counter()
        self.inner.saver.put(thread_id, write, expected_head=expected_head)
        self.times.append(time.perf_counter() - start)

    def put_writes(self, *a: Any, **k: Any) -> None:
        self.inner.saver.put_writes(*a, **k)

    def get(self, *a: Any, **k: Any) -> Any:
        return self.inner.saver.get(*a, **k)

    def list(self, *a: Any, **k: Any) -> Any:
        return self.inner.saver.list(*a, **k)

    def delete_thread(self, *a: Any, **k: Any) -> None:
        self.inner.saver.delete_thread(*a, **k)


class Inner:
    def __init__(self, saver: Any) -> None:
        self.saver = saver
        serde = getattr(saver, "serde", None) or saver.logic.serde
        self.serde_dumps = serde.dumps

    def _record_for_bench(self, thread_id: str, cid: str | None) -> Any:
        if cid is None:
            return None
        s = self.saver
        if isinstance(s, MemorySaver):
            return s._record(thread_id, s._threads[thread_id], cid)
        if isinstance(s, SqliteSaver | PostgresSaver):
            program = s.logic._parent(thread_id, cid, verify=True)
            return s._run(program, write=False, action="bench")
        return s._run(s.logic.record(thread_id, cid), write=False, action="bench")


def looping_graph(saver: CheckpointSaver, stop_at: int) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AssistantMessage(f"reply number {len(state['messages'])} " * 3)]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_conditional_edges(
        "reply", lambda s: "reply" if len(s["messages"]) < stop_at else END, ["reply", END]
    )
    return g.compile(saver=saver)


def ours(saver: Any, size: int) -> tuple[float, float]:
    history = [UserMessage(f"message {i} " * 3) for i in range(size)]
    cfg: dict[str, Any] = {"recursion_limit": STEPS + 5}

    # bytes: one run through a wrapper that sizes each write
    counting = CountingSaver(Inner(saver))
    cfg["thread_id"] = f"bench-{uuid.uuid4().hex[:8]}"
    step_bytes: list[float] = []
    for _ in looping_graph(counting, size + STEPS).stream({"messages": history}, cfg):
        step_bytes.append(float(counting.last_bytes))
    saver.delete_thread(cfg["thread_id"])

    # time: another run on the saver itself
    cfg["thread_id"] = f"bench-{uuid.uuid4().hex[:8]}"
    step_times: list[float] = []
    last = time.perf_counter()
    for _ in looping_graph(saver, size + STEPS).stream({"messages": history}, cfg):
        now = time.perf_counter()
        step_times.append(now - last)
        last = now
    saver.delete_thread(cfg["thread_id"])
    return median(step_bytes[2:]), median(step_times[2:])


Stored = Callable[[], int]


@contextmanager
def lg_memory() -> Iterator[tuple[Any, Stored]]:
    """LangGraph's InMemorySaver and what it holds, in bytes."""
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()

    def stored() -> int:
        total = 0
        for blob in saver.blobs.values():
            total += len(blob[1])
        for ns in saver.storage.values():
            for cps in ns.values():
                for cp, meta, _ in cps.values():
                    total += len(cp[1]) + len(meta[1]) if isinstance(meta, tuple) else len(cp[1])
        for w in saver.writes.values():
            for v in w.values():
                total += len(v[2][1])
        return total

    yield saver, stored


@contextmanager
def lg_sqlite() -> Iterator[tuple[Any, Stored]]:
    """LangGraph's SqliteSaver on a temporary file, and the bytes its tables hold."""
    from langgraph.checkpoint.sqlite import SqliteSaver as LSqliteSaver

    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(f"{tmp}/lg.sqlite", check_same_thread=False)
        saver = LSqliteSaver(conn)
        saver.setup()

        def stored() -> int:
            row = conn.execute(
                "SELECT (SELECT coalesce(sum(length(checkpoint) + length(metadata)), 0) "
                "FROM checkpoints) + (SELECT coalesce(sum(length(value)), 0) FROM writes)"
            ).fetchone()
            return int(row[0])

        yield saver, stored
        conn.close()


@contextmanager
def lg_postgres() -> Iterator[tuple[Any, Stored]]:
    """LangGraph's PostgresSaver in a schema of its own, and the bytes its tables hold."""
    import psycopg
    from langgraph.checkpoint.postgres import PostgresSaver as LPostgresSaver
    from psycopg.rows import dict_row

    schema = f"bench_lg_{uuid.uuid4().hex[:8]}"
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

        def stored() -> int:
            row = conn.execute(
                "SELECT (SELECT coalesce(sum(pg_column_size(checkpoint) + "
                "pg_column_size(metadata)), 0) FROM checkpoints) + (SELECT "
                "coalesce(sum(length(blob)), 0) FROM checkpoint_blobs) + (SELECT "
                "coalesce(sum(length(blob)), 0) FROM checkpoint_writes) AS n"
            ).fetchone()
            assert row is not None
            return int(row["n"])

        yield saver, stored
    finally:
        conn.close()
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


def theirs(size: int, backend: Callable[[], Any] = lg_memory) -> tuple[float, float]:
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.graph import END as LEND
    from langgraph.graph import START as LSTART
    from langgraph.graph import StateGraph as LStateGraph
    from langgraph.graph.message import add_messages

    # functional form: a class body would be string annotations under __future__
    S = TypedDict("S", {"messages": Annotated[list[Any], add_messages]})  # type: ignore[misc]  # noqa: UP013

    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(f"reply number {len(state['messages'])} " * 3)]}

    with backend() as (saver, stored):
        g = LStateGraph(S)
        g.add_node("reply", reply)
        g.add_edge(LSTART, "reply")
        stop_at = size + STEPS
        g.add_conditional_edges(
            "reply", lambda s: "reply" if len(s["messages"]) < stop_at else LEND, ["reply", LEND]
        )
        app = g.compile(checkpointer=saver)
        history = [HumanMessage(f"message {i} " * 3) for i in range(size)]
        step_bytes: list[float] = []
        step_times: list[float] = []
        # durability="sync": each step's checkpoint is stored before the step returns,
        # as graphagent does (LangGraph's default stores it in the background)
        cfg = {"configurable": {"thread_id": "bytes"}, "recursion_limit": STEPS + 5}
        before = stored()
        for _ in app.stream({"messages": history}, cfg, stream_mode="updates", durability="sync"):
            after = stored()
            step_bytes.append(float(after - before))
            before = after
        cfg = {"configurable": {"thread_id": "time"}, "recursion_limit": STEPS + 5}
        last = time.perf_counter()
        for _ in app.stream({"messages": history}, cfg, stream_mode="updates", durability="sync"):
            now = time.perf_counter()
            step_times.append(now - last)
            last = now
    return median(step_bytes[2:]), median(step_times[2:])


POSTGRES_URL = os.environ.get("DATABASE_URL", "postgresql://127.0.0.1:5432/test")


@contextmanager
def our_sqlite() -> Iterator[SqliteSaver]:
    """graphagent's SqliteSaver on a temporary file."""
    with tempfile.TemporaryDirectory() as tmp, SqliteSaver(f"{tmp}/ga.sqlite") as saver:
        yield saver


@contextmanager
def our_postgres() -> Iterator[PostgresSaver | None]:
    """graphagent's PostgresSaver in a schema of its own (``None``: no server answers)."""
    import psycopg

    schema = f"bench_ga_{uuid.uuid4().hex[:8]}"
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.Error:
        print("(no PostgreSQL at DATABASE_URL: PostgreSQL rows skipped)")
        yield None
        return
    with PostgresSaver.from_url(POSTGRES_URL, schema=schema) as saver:
        saver.setup()
        try:
            yield saver
        finally:
            with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
                admin.execute(f"DROP SCHEMA {schema} CASCADE")


def redis_saver() -> RedisSaver | None:
    url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
    saver = RedisSaver.from_url(url, prefix=f"bench-{uuid.uuid4().hex[:6]}")
    try:
        saver.client.ping()
    except Exception:
        print(f"(no Redis at {url}: Redis rows skipped)")
        return None
    return saver


def ping_time(saver: RedisSaver) -> float:
    times = []
    for _ in range(500):
        start = time.perf_counter()
        saver.client.ping()
        times.append(time.perf_counter() - start)
    return median(times)


def in_rounds(measure: Callable[[int], tuple[float, float]]) -> dict[int, tuple[float, float]]:
    """Bytes and median step time per size, the sizes measured in turn ``ROUNDS`` times:
    a busy spell (or the loopback's round trip moving, as it does on a VM) then touches
    every size alike instead of one size's only run."""
    got: dict[int, list[tuple[float, float]]] = {n: [] for n in SIZES}
    for _ in range(ROUNDS):
        for n in SIZES:
            got[n].append(measure(n))
    return {n: (got[n][0][0], median([t for _, t in got[n]])) for n in SIZES}


def main() -> None:
    print(f"one more step as the thread grows ({machine()})")
    print("bytes = what the step's checkpoint stores; time = the whole step inside a run")
    rows: list[tuple[str, dict[int, tuple[float, float]]]] = []
    memory = MemorySaver()
    rows.append(("graphagent MemorySaver", in_rounds(lambda n: ours(memory, n))))
    with our_sqlite() as lite:
        rows.append(("graphagent SqliteSaver", in_rounds(lambda n: ours(lite, n))))
    with our_postgres() as pg:
        if pg is not None:
            rows.append(("graphagent PostgresSaver", in_rounds(lambda n: ours(pg, n))))
    rs = redis_saver()
    if rs is not None:
        rows.append(("graphagent RedisSaver", in_rounds(lambda n: ours(rs, n))))
    if have_langgraph():
        rows.append(("LangGraph InMemorySaver", in_rounds(theirs)))
        for name, backend in (("SqliteSaver", lg_sqlite), ("PostgresSaver", lg_postgres)):
            try:
                rows.append(
                    (f"LangGraph {name}", in_rounds(functools.partial(theirs, backend=backend)))
                )
            except ImportError as exc:
                print(f"(LangGraph {name} not installed: {exc})")
    header = "".join(f"{f'@{n} msgs':>22}" for n in SIZES)
    print(f"{'saver':<26}{header}{'bytes 1000/10':>16}{'time 1000/10':>14}")
    for name, cells in rows:
        text = "".join(f"{cells[n][0]:>10.0f} B {cells[n][1] * 1e6:>7.0f} us" for n in SIZES)
        b = cells[1000][0] / cells[10][0]
        t = cells[1000][1] / cells[10][1]
        print(f"{name:<26}{text}{b:>15.2f}x{t:>13.2f}x")
        for n in SIZES:
            RESULTS[(name, n)] = cells[n]
    if rs is not None:
        ping = ping_time(rs)
        app_times = []
        thread = f"bench-put-{uuid.uuid4().hex[:6]}"
        from checkpoint import CheckpointWrite, new_checkpoint_id

        parent = None
        for i in range(300):
            w = CheckpointWrite(
                id=new_checkpoint_id(),
                parent_id=parent,
                step=i,
                changes={"messages": ("append", [AssistantMessage(f"reply {i}")])},
                next=("reply",),
                metadata={"source": "loop", "step": i},
                created_at=time.time(),
            )
            start = time.perf_counter()
            rs.put(thread, w, expected_head=parent)
            app_times.append(time.perf_counter() - start)
            parent = w.id
        rs.delete_thread(thread)
        put = median(app_times)
        print(
            f"Redis step write {put * 1e6:.0f} us vs PING {ping * 1e6:.0f} us "
            f"on loopback: {put / ping:.2f}x one round trip"
        )
        rs.close()


if __name__ == "__main__":
    main()
