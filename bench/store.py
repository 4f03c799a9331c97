"""Long-term memory stores side by side with LangGraph's, over 10,000 items.

Per operation: put, get, a filtered search (one field equal to a value held by 10% of the
items, ten results), a range-filtered search, and a semantic search (64-dim
``FakeEmbeddings``, ten results), for the memory, SQLite and PostgreSQL stores of both
libraries; and for RedisStore (LangGraph's needs Redis Stack modules) the commands sent
per put and get and their time against a PING. Run: ``.venv/bin/python bench/store.py``
(``--quick`` for 2,000 items, ``--only=memory,sqlite`` for some backends). Not a test: it reports.

Put and get time the call alone: every namespace, key and value is built before the timed
loop (fresh objects per call, as a caller's would be, equal to the stored ones but not the
same objects), the loop calls the bound method directly, and the time of the same loop
with an empty body is subtracted, for both libraries alike.
"""

from __future__ import annotations

import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests"))

from _common import have_langgraph, machine, ratio
from _pgserver import NoPgvector, pgvector_server

from checkpoint.store import BaseStore, MemoryStore, PostgresStore, RedisStore, SqliteStore
from graphagent.models import FakeEmbeddings

N = 2_000 if "--quick" in sys.argv else 10_000
# --only memory,sqlite: those backends alone
_ONLY = next((a.split("=", 1)[1] for a in sys.argv if a.startswith("--only=")), "")
KINDS = [k for k in ("memory", "sqlite", "postgres", "redis") if not _ONLY or k in _ONLY]
DIMS = 64
PG_URL = os.environ.get("DATABASE_URL", "postgresql://127.0.0.1:5432/test")
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
EMBED = FakeEmbeddings(DIMS)
WORDS = ["tea", "coffee", "cat", "dog", "paris", "tokyo"]
WORDS += ["music", "chess", "running", "swimming", "jazz", "rain"]


def value(i: int) -> dict[str, Any]:
    words = " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7))
    return {"text": f"user likes {words}", "category": f"c{i % 10}", "rank": i, "flag": i % 2 == 0}


def namespace(i: int) -> tuple[str, ...]:
    return ("bench", f"u{i % 100}")


def per_op(fn: Callable[[int], Any], count: int, rounds: int = 1) -> float:
    """Seconds per call of ``fn(i)``: the best of ``rounds`` rounds of ``count`` calls."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for i in range(count):
            fn(i)
        best = min(best, (time.perf_counter() - start) / count)
    return best


def timed_puts(put: Callable[..., Any], args: list[tuple[Any, str, Any]]) -> float:
    """Seconds per ``put(*a)`` over ``args``, less the same loop with an empty body."""
    start = time.perf_counter()
    for ns, key, val in args:
        put(ns, key, val)
    spent = time.perf_counter() - start
    start = time.perf_counter()
    for _ns, _key, _val in args:  # unpacked as above: only the call is left out
        pass
    return max(spent - (time.perf_counter() - start), 0.0) / len(args)


def timed_gets(get: Callable[..., Any], args: list[tuple[Any, str]], rounds: int) -> float:
    """Seconds per ``get(*a)``: the best of ``rounds`` rounds over ``args``, each less the
    same loop with an empty body."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        for ns, key in args:
            get(ns, key)
        spent = time.perf_counter() - start
        start = time.perf_counter()
        for _ns, _key in args:
            pass
        best = min(best, max(spent - (time.perf_counter() - start), 0.0) / len(args))
    return best


def measure(store: Any, *, semantic: Any) -> dict[str, float | None]:
    """Seconds per op on ``store`` (graphagent's and LangGraph's share the method names)."""
    rng = random.Random(7)
    out: dict[str, float | None] = {}
    puts = [(namespace(i), f"k{i}", value(i)) for i in range(N)]
    out["put"] = timed_puts(store.put, puts)
    # a first read of each of 1,000 keys (the SQL stores keep what they read), one round;
    # then 2,000 random gets, best of 3 rounds (the warm figure)
    firsts = [(namespace(k), f"k{k}") for k in rng.sample(range(N), 1_000)]
    out["get, first read"] = timed_gets(store.get, firsts, 1)
    keys = [rng.randrange(N) for _ in range(2_000)]
    out["get"] = timed_gets(store.get, [(namespace(k), f"k{k}") for k in keys], 3)
    out["search, filter eq"] = per_op(
        lambda i: store.search(("bench",), filter={"category": f"c{i % 10}"}, limit=10), 100, 3
    )
    out["search, filter range"] = per_op(
        lambda i: store.search(
            ("bench",), filter={"rank": {"$gte": N - 50 * (i % 10 + 1)}}, limit=10
        ),
        50,
        3,
    )
    out["semantic search"] = semantic() if semantic else None
    return out


def semantic_on(store: Any) -> Callable[[], float]:
    def run() -> float:
        for i in range(N):
            store.put(("sem",), f"k{i}", value(i))
        queries = ["tea and cats", "jazz in paris", "swimming in the rain", "chess"]
        return per_op(lambda i: store.search(("sem",), query=queries[i % 4], limit=10), 8, 3)

    return run


def ours(kind: str, tmp: Path) -> tuple[dict[str, float | None], Callable[[], None]]:
    index = {"embed": EMBED, "dims": DIMS, "fields": ["text"]}
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    prefix = f"bench-{uuid.uuid4().hex[:8]}"

    def make(indexed: bool) -> BaseStore:
        kw: dict[str, Any] = {"index": index} if indexed else {}
        if kind == "memory":
            return MemoryStore(**kw)
        if kind == "sqlite":
            return SqliteStore(tmp / f"ours-{indexed}.sqlite", **kw)
        if kind == "postgres":
            return PostgresStore.from_url(PG_URL, schema=schema + ("_i" if indexed else ""), **kw)
        return RedisStore.from_url(REDIS_URL, prefix=prefix + ("-i" if indexed else ""), **kw)

    plain, indexed = make(False), make(True)

    def cleanup() -> None:
        for store in (plain, indexed):
            store.clear()
            if isinstance(store, PostgresStore):
                store.conn.execute(f'DROP SCHEMA IF EXISTS "{store.schema}" CASCADE')
            store.close()

    return measure(plain, semantic=semantic_on(indexed)), cleanup


def theirs(kind: str, tmp: Path) -> dict[str, float | None] | None:
    if not have_langgraph() or kind == "redis":
        return None
    import warnings

    warnings.simplefilter("ignore")
    index = {"embed": EMBED.embed_documents, "dims": DIMS, "fields": ["text"]}
    if kind == "memory":
        from langgraph.store.memory import InMemoryStore

        return measure(InMemoryStore(), semantic=semantic_on(InMemoryStore(index=index)))  # type: ignore[arg-type]
    if kind == "sqlite":
        from langgraph.store.sqlite import SqliteStore as LgSqlite

        with LgSqlite.from_conn_string(str(tmp / "theirs.sqlite")) as store:
            store.setup()
            result = measure(store, semantic=None)
        try:  # their vector search needs sqlite-vec loaded into sqlite3
            with LgSqlite.from_conn_string(str(tmp / "theirs-i.sqlite"), index=index) as store:  # type: ignore[arg-type]
                store.setup()
                result["semantic search"] = semantic_on(store)()
        except Exception as exc:
            result["semantic search"] = None
            why = f"{type(exc).__name__}: {exc}"[:100]
            print(f"  LangGraph SqliteStore semantic search cannot run here: {why}")
        return result
    import psycopg
    from langgraph.store.postgres import PostgresStore as LgPostgres

    schema = f"lgbench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_URL, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = f"{PG_URL}?options=-csearch_path%3D{schema}"
    try:
        with LgPostgres.from_conn_string(url) as store:
            store.setup()
            result = measure(store, semantic=None)
        try:  # their vector search needs the pgvector extension
            with LgPostgres.from_conn_string(url, index=index) as store:  # type: ignore[arg-type]
                store.setup()
                result["semantic search"] = semantic_on(store)()
        except Exception as exc:
            result["semantic search"] = None
            why = type(exc).__name__
            print(f"  LangGraph PostgresStore semantic search cannot run here (pgvector?): {why}")
        return result
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def pgvector_semantic() -> None:
    """Semantic search on PostgreSQL with pgvector, both libraries on one server (the test
    server if it has pgvector, else a private PostgreSQL 16 from the pgserver package)."""
    import psycopg

    index = {"embed": EMBED, "dims": DIMS, "fields": ["text"]}
    try:
        server = pgvector_server(PG_URL)
        url = server.__enter__()
    except NoPgvector as exc:
        print(f"postgres + pgvector: not measured ({exc})")
        return
    try:
        schema = f"bench_{uuid.uuid4().hex[:8]}"
        with PostgresStore.from_url(url, schema=schema, index=index, pgvector=True) as store:
            mine = semantic_on(store)()
            store.conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        line = f"  {'semantic search':22s} ours {mine * 1e6:9.1f} us"
        if have_langgraph():
            from langgraph.store.postgres import PostgresStore as LgPostgres

            lg_index = {"embed": EMBED.embed_documents, "dims": DIMS, "fields": ["text"]}
            theirs_schema = f"lgbench_{uuid.uuid4().hex[:8]}"
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{theirs_schema}"')
            sep = "&" if "?" in url else "?"
            scoped = f"{url}{sep}options=-csearch_path%3D{theirs_schema},public"
            try:
                with LgPostgres.from_conn_string(scoped, index=lg_index) as lg:  # type: ignore[arg-type]
                    lg.setup()
                    lg_time = semantic_on(lg)()
                line += f"   LangGraph {lg_time * 1e6:9.1f} us   {ratio(lg_time, mine)}"
            finally:
                with psycopg.connect(url, autocommit=True) as conn:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{theirs_schema}" CASCADE')
        print(f"postgres + pgvector (HNSW): (load average {os.getloadavg()[0]:.2f})")
        print(line)
    finally:
        server.__exit__(None, None, None)


def redis_round_trips() -> None:
    import redis

    store = RedisStore.from_url(REDIS_URL, prefix=f"bench-{uuid.uuid4().hex[:8]}")
    client = store.client
    sent: list[Any] = []
    original = client.execute_command

    def counting(*args: Any, **kw: Any) -> Any:
        sent.append(args[0])
        return original(*args, **kw)

    store.put(("warm",), "k", value(0))
    store.get(("warm",), "k")
    client.execute_command = counting
    store.put(("rt",), "k", value(1))
    puts = len(sent)
    store.get(("rt",), "k")
    gets = len(sent) - puts
    client.execute_command = original
    ping = per_op(lambda i: client.ping(), 2_000)
    put = per_op(lambda i: store.put(namespace(i), f"k{i}", value(i)), 2_000)
    get = per_op(lambda i: store.get(namespace(i), f"k{i}"), 2_000)
    print(
        f"  Redis: {puts} command per put, {gets} per get; PING {ping * 1e6:.0f} us, "
        f"put {put * 1e6:.0f} us ({put / ping:.1f}x a PING), get {get * 1e6:.0f} us "
        f"({get / ping:.1f}x a PING)"
    )
    store.clear()
    store.close()
    redis.Redis.from_url(REDIS_URL).close()


def main() -> None:
    print(f"store benchmark, {N:,} items; {machine()}")
    tmp = Path(tempfile.mkdtemp(prefix="store-bench-"))
    for kind in KINDS:
        mine, cleanup = ours(kind, tmp)
        cleanup()
        other = theirs(kind, tmp)
        print(f"{kind}: (load average {os.getloadavg()[0]:.2f})")
        for op, t in mine.items():
            lg = other.get(op) if other else None
            if t is None:
                print(f"  {op:22s} ours n/a")
                continue
            line = f"  {op:22s} ours {t * 1e6:9.1f} us"
            if lg is not None:
                line += f"   LangGraph {lg * 1e6:9.1f} us   {ratio(lg, t)}"
            print(line)
    if "postgres" in KINDS:
        pgvector_semantic()
    if "redis" in KINDS:
        redis_round_trips()


if __name__ == "__main__":
    main()
