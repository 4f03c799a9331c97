"""Throughput and step latency under load: steps per second, p50/p99 per step.

Scenarios (a scripted ReactAgent with one tool; each turn is three super-steps: model,
tools, model, plus the input checkpoint):

- 1, 4 and 16 conversation threads served concurrently by one asyncio process, on
  MemorySaver and on Redis (AsyncRedisSaver);
- the same on SQLite (AsyncSqliteSaver, a temporary file) and PostgreSQL
  (AsyncPostgresSaver, a schema of its own), beside LangGraph's prebuilt ReAct agent on
  its AsyncSqliteSaver and AsyncPostgresSaver (``durability="sync"``, as ours);
- 4 worker processes taking turns of 200 threads from a Redis queue (RedisSaver), the
  stateless-worker deployment.

A step's latency is the time from the end of the previous super-step (or the call) to the
end of this one, checkpoint write included. Run: ``make bench`` or
``.venv/bin/python bench/load.py`` (``REDIS_URL``, default ``redis://127.0.0.1:6379/0``;
``DATABASE_URL``, default ``postgresql://127.0.0.1:5432/test``); ``--only redis,ping``
runs some scenarios, ``--threads 16 --repeat 3`` one row three times.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).parent))

import redis
from _common import machine

from checkpoint import (
    AsyncPostgresSaver,
    AsyncRedisSaver,
    AsyncSqliteSaver,
    MemorySaver,
    RedisSaver,
)
from checkpoint.base import CheckpointSaver
from graphagent.agent import ReactAgent
from graphagent.messages import AssistantMessage, Message, ToolCall
from graphagent.models import FunctionChatModel

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
POSTGRES_URL = os.environ.get("DATABASE_URL", "postgresql://127.0.0.1:5432/test")
TURNS_PER_THREAD = 12
WORKERS = 4
WORKER_THREADS = 200
WORKER_TURNS = 3


def script(messages: list[Message], tools: Any) -> AssistantMessage:
    """One tool call per user turn, then an answer."""
    if messages[-1].role == "user":
        n = len(messages)
        return AssistantMessage(
            tool_calls=[ToolCall(id=f"c{n}", name="note", arguments=f'{{"turn": {n}}}')]
        )
    return AssistantMessage(f"done: {messages[-1].text}")


def note(turn: int) -> str:
    """Write a turn down."""
    return f"noted {turn}"


def agent(saver: CheckpointSaver) -> ReactAgent:
    """The benchmark's agent."""
    # keep_calls=False: a real model client keeps no log of its requests, and the test
    # double's log would hold every conversation, so later full GCs would cost more
    model = FunctionChatModel(script, keep_calls=False)
    return ReactAgent(name="load", model=model, tools=[note], saver=saver)


class Figures(NamedTuple):
    """One row: steps per second, p50 and p99 step latency (ms), and the driving
    process's CPU time per step (µs, all its threads; None when other processes drive)."""

    steps: float
    p50: float
    p99: float
    cpu: float | None = None


def figures(latencies: list[float], elapsed: float, cpu: float | None = None) -> Figures:
    """The row for ``latencies`` taken in ``elapsed`` seconds and ``cpu`` CPU seconds."""
    n = len(latencies)
    return Figures(
        n / elapsed,
        percentile(latencies, 50) * 1000,
        percentile(latencies, 99) * 1000,
        None if cpu is None else cpu / n * 1e6,
    )


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def _conversation(a: ReactAgent, thread: str, latencies: list[float]) -> None:
    for turn in range(TURNS_PER_THREAD):
        last = time.perf_counter()
        async for _ in a.astream(f"turn {turn}", thread_id=thread, mode="updates"):
            now = time.perf_counter()
            latencies.append(now - last)
            last = now


async def concurrent(saver: CheckpointSaver, threads: int) -> Figures:
    """Steps per second, p50 and p99 step latency (ms) for ``threads`` concurrent threads."""
    a = agent(saver)
    run = uuid.uuid4().hex[:8]
    await _conversation(a, f"warm-{run}", [])
    latencies: list[float] = []
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(_conversation(a, f"{run}-{i}", latencies) for i in range(threads)))
    return figures(latencies, time.perf_counter() - start, time.process_time() - cpu)


@asynccontextmanager
async def pg_schema(prefix: str) -> AsyncIterator[str]:
    """A PostgreSQL schema of its own, dropped afterwards."""
    import psycopg

    schema = f"{prefix}_{uuid.uuid4().hex[:8]}"
    try:
        yield schema
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")


@asynccontextmanager
async def our_sqlite() -> AsyncIterator[CheckpointSaver]:
    """graphagent's AsyncSqliteSaver on a temporary file."""
    with tempfile.TemporaryDirectory() as tmp:
        saver = AsyncSqliteSaver(f"{tmp}/load.sqlite")
        yield saver
        await saver.aclose()


@asynccontextmanager
async def our_postgres() -> AsyncIterator[CheckpointSaver]:
    """graphagent's AsyncPostgresSaver in a schema of its own."""
    async with pg_schema("bench_ga") as schema:
        saver = AsyncPostgresSaver.from_url(POSTGRES_URL, schema=schema, max_size=16)
        await saver.asetup()
        yield saver
        await saver.aclose()


def lg_agent(checkpointer: Any) -> Any:
    """LangGraph's prebuilt ReAct agent with the same script and tool as ours."""
    import warnings

    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool as lc_tool
    from langgraph.prebuilt import create_react_agent

    warnings.filterwarnings("ignore", message="create_react_agent has been moved")

    @lc_tool
    def note(turn: int) -> str:
        """Write a turn down."""
        return f"noted {turn}"

    class Scripted(FakeMessagesListChatModel):
        def bind_tools(self, tools: Any, **kw: Any) -> Any:
            return self

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            if messages[-1].type == "human":
                n = len(messages)
                msg = AIMessage(
                    "", tool_calls=[{"id": f"c{n}", "name": "note", "args": {"turn": n}}]
                )
            else:
                msg = AIMessage(f"done: {messages[-1].content}")
            return ChatResult(generations=[ChatGeneration(message=msg)])

        async def _agenerate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> Any:
            return self._generate(messages)

    return create_react_agent(
        Scripted(responses=[AIMessage("unused")]), [note], checkpointer=checkpointer
    )


@asynccontextmanager
async def lg_sqlite() -> AsyncIterator[Any]:
    """LangGraph's AsyncSqliteSaver on a temporary file."""
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver as LAsyncSqliteSaver

    with tempfile.TemporaryDirectory() as tmp:
        async with LAsyncSqliteSaver.from_conn_string(f"{tmp}/lg.sqlite") as saver:
            yield saver


@asynccontextmanager
async def lg_postgres() -> AsyncIterator[Any]:
    """LangGraph's AsyncPostgresSaver on a pool, in a schema of its own."""
    import psycopg
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver as LAsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    async with pg_schema("bench_lg") as schema:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
            admin.execute(f"CREATE SCHEMA {schema}")
        kwargs = {
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
            "options": f"-c search_path={schema}",
        }
        async with AsyncConnectionPool(POSTGRES_URL, max_size=16, kwargs=kwargs) as pool:
            saver = LAsyncPostgresSaver(pool)  # type: ignore[arg-type]
            await saver.setup()
            yield saver


async def lg_concurrent(app: Any, threads: int) -> Figures:
    """:func:`concurrent` for a LangGraph agent (checkpoints written within the step)."""

    async def conversation(thread: str, latencies: list[float]) -> None:
        cfg = {"configurable": {"thread_id": thread}}
        for turn in range(TURNS_PER_THREAD):
            last = time.perf_counter()
            async for _ in app.astream(
                {"messages": [("user", f"turn {turn}")]},
                cfg,
                stream_mode="updates",
                durability="sync",
            ):
                now = time.perf_counter()
                latencies.append(now - last)
                last = now

    run = uuid.uuid4().hex[:8]
    await conversation(f"warm-{run}", [])
    latencies: list[float] = []
    start, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(conversation(f"{run}-{i}", latencies) for i in range(threads)))
    return figures(latencies, time.perf_counter() - start, time.process_time() - cpu)


Backend = Callable[[], AbstractAsyncContextManager[Any]]


async def sql_rows(row: Callable[[str, Figures], None]) -> None:
    """SQLite and PostgreSQL, ours and LangGraph's, at 1, 4 and 16 concurrent threads."""
    ours: list[tuple[str, Backend]] = [("SQLite", our_sqlite), ("PostgreSQL", our_postgres)]
    for name, backend in ours:
        for threads in (1, 4, 16):
            async with backend() as saver:
                row(
                    f"{name} (async), {threads} concurrent threads",
                    await concurrent(saver, threads),
                )
    try:
        import langgraph.checkpoint.postgres
        import langgraph.checkpoint.sqlite  # noqa: F401
    except ImportError as exc:
        print(f"(LangGraph SQL savers not installed: {exc}; pip install -e '.[bench]')")
        return
    theirs: list[tuple[str, Backend]] = [("SQLite", lg_sqlite), ("PostgreSQL", lg_postgres)]
    for name, backend in theirs:
        for threads in (1, 4, 16):
            async with backend() as saver:
                lg = await lg_concurrent(lg_agent(saver), threads)
                row(f"LangGraph {name}, {threads} concurrent threads", lg)


def sync_single(saver: CheckpointSaver) -> Figures:
    """One thread, sync API: the latency floor of a step on this saver."""
    a = agent(saver)
    latencies: list[float] = []
    start, cpu = time.perf_counter(), time.process_time()
    for turn in range(TURNS_PER_THREAD * 4):
        last = time.perf_counter()
        for _ in a.stream(f"turn {turn}", thread_id="sync-1", mode="updates"):
            now = time.perf_counter()
            latencies.append(now - last)
            last = now
    return figures(latencies, time.perf_counter() - start, time.process_time() - cpu)


def worker(url: str, prefix: str, queue: str) -> int:
    """Worker mode: take "<thread>|<turn>" jobs until STOP; report step latencies."""
    client = redis.Redis.from_url(url)
    a = agent(RedisSaver(client, prefix=prefix))
    latencies: list[float] = []
    while True:
        item = client.blpop([queue], timeout=60)
        if item is None or item[1] == b"STOP":
            break
        thread, turn = item[1].decode().split("|")
        last = time.perf_counter()
        for _ in a.stream(f"turn {turn}", thread_id=thread, mode="updates"):
            now = time.perf_counter()
            latencies.append(now - last)
            last = now
    client.rpush(f"{queue}:latencies", ",".join(f"{x:.6f}" for x in latencies))
    return 0


def processes() -> Figures:
    """Steps per second and p50/p99 step latency (ms) of WORKERS processes on one Redis."""
    client = redis.Redis.from_url(REDIS_URL)
    prefix = f"bench-load-{uuid.uuid4().hex[:8]}"
    queue = f"{{{prefix}:queue}}"
    procs = [
        subprocess.Popen([sys.executable, __file__, "--worker", REDIS_URL, prefix, queue])
        for _ in range(WORKERS)
    ]
    try:
        time.sleep(1.0)  # let the workers import and connect before the clock starts
        start = time.perf_counter()
        for turn in range(WORKER_TURNS):
            client.rpush(queue, *(f"t{i}|{turn}" for i in range(WORKER_THREADS)))
            while client.llen(queue):
                time.sleep(0.005)
        client.rpush(queue, *["STOP"] * WORKERS)
        reports = [client.blpop([f"{queue}:latencies"], timeout=120) for _ in procs]
        elapsed = time.perf_counter() - start
        for p in procs:
            p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        keys = list(client.scan_iter(match=f"{{{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    latencies = [float(x) for r in reports if r for x in r[1].decode().split(",") if x]
    return figures(latencies, elapsed)


async def step_vs_ping(rounds: int = 400) -> tuple[float, float]:
    """Median seconds of one async Redis step write (one message appended to a thread of
    10) and of one PING on the same client, taken in turns in one run."""
    from checkpoint.base import CheckpointWrite, new_checkpoint_id
    from graphagent.messages import UserMessage

    saver = AsyncRedisSaver.from_url(REDIS_URL, prefix=f"bench-load-{uuid.uuid4().hex[:8]}")
    head: str | None = None

    async def step(i: int) -> None:
        nonlocal head
        w = CheckpointWrite(
            id=new_checkpoint_id(),
            parent_id=head,
            step=i,
            changes={"messages": ("append", [UserMessage(f"message {i}")])},
            next=("model",),
            metadata={"source": "loop", "step": i},
            created_at=time.time(),
        )
        await saver.aput("ping", w, expected_head=head)
        head = w.id

    puts: list[float] = []
    pings: list[float] = []
    try:
        for i in range(10):
            await step(i)
        for i in range(rounds):
            start = time.perf_counter()
            await saver.client.ping()
            pings.append(time.perf_counter() - start)
            start = time.perf_counter()
            await step(10 + i)
            puts.append(time.perf_counter() - start)
    finally:
        await saver.adelete_thread("ping")
        await saver.aclose()
    return percentile(puts, 50), percentile(pings, 50)


SCENARIOS = ("memory", "langgraph", "redis", "sql", "processes", "ping")


async def main(only: frozenset[str], threads: tuple[int, ...], repeat: int) -> None:
    """Print the table (the ``only`` scenarios, each ``repeat`` times)."""
    print(f"# load: {machine()}; scripted ReactAgent, 1 tool, {TURNS_PER_THREAD} turns/thread")
    print(f"{'scenario':<42} {'steps/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'CPU µs/step':>12}")

    def row(label: str, f: Figures) -> None:
        cpu = "-" if f.cpu is None else f"{f.cpu:.0f}"
        print(f"{label:<42} {f.steps:>9.0f} {f.p50:>8.3f} {f.p99:>8.3f} {cpu:>12}", flush=True)

    for _ in range(repeat):
        if "memory" in only:
            row("MemorySaver, 1 thread, sync", sync_single(MemorySaver()))
            for n in threads:
                row(f"MemorySaver, {n} concurrent threads", await concurrent(MemorySaver(), n))
        if "langgraph" in only:
            try:
                from langgraph.checkpoint.memory import InMemorySaver
            except ImportError:
                print("(LangGraph not installed: pip install -e '.[bench]')")
            else:
                for n in threads:
                    lg = await lg_concurrent(lg_agent(InMemorySaver()), n)
                    row(f"LangGraph InMemorySaver, {n} conc. threads", lg)
        if "redis" in only:
            prefix = f"bench-load-{uuid.uuid4().hex[:8]}"
            sync_saver = RedisSaver.from_url(REDIS_URL, prefix=prefix)
            try:
                row("Redis, 1 thread, sync", sync_single(sync_saver))
            finally:
                sync_saver.delete_thread("sync-1")
            for n in threads:
                prefix = f"bench-load-{uuid.uuid4().hex[:8]}"
                saver = AsyncRedisSaver.from_url(REDIS_URL, prefix=prefix)
                try:
                    row(f"Redis (async), {n} concurrent threads", await concurrent(saver, n))
                finally:
                    for thread in await saver.athreads():
                        await saver.adelete_thread(thread)
                    await saver.aclose()
        if "sql" in only:
            await sql_rows(row)
        if "processes" in only:
            row(f"Redis, {WORKERS} processes x {WORKER_THREADS} threads", processes())
        if "ping" in only:
            put, ping = await step_vs_ping()
            print(
                f"async Redis step write {put * 1e6:.0f} us vs PING {ping * 1e6:.0f} us on the "
                f"same client: {put / ping:.2f}x"
            )
    from redis.utils import HIREDIS_AVAILABLE

    print(
        f"(redis-server {redis.Redis.from_url(REDIS_URL).info()['redis_version']} on loopback; "
        f"hiredis {'on' if HIREDIS_AVAILABLE else 'off: pip install hiredis'})"
    )


def _options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        default=",".join(SCENARIOS),
        help=f"comma-separated scenarios to run (default: all of {','.join(SCENARIOS)})",
    )
    parser.add_argument(
        "--threads", default="1,4,16", help="concurrent threads per row (default: 1,4,16)"
    )
    parser.add_argument("--repeat", type=int, default=1, help="run the rows this many times")
    options = parser.parse_args()
    unknown = set(options.only.split(",")) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios {sorted(unknown)}; choose from {','.join(SCENARIOS)}")
    return options


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        raise SystemExit(worker(*sys.argv[2:5]))
    opts = _options()
    asyncio.run(
        main(
            frozenset(opts.only.split(",")),
            tuple(int(n) for n in opts.threads.split(",")),
            opts.repeat,
        )
    )
