"""PostgresSaver beyond the shared conformance suite: setup and schema versions, another
process, the async saver, ttl, what a step writes, and failures named."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from _pgconns import terminate

from checkpoint import (
    AsyncPostgresSaver,
    CheckpointConflictError,
    CheckpointError,
    CheckpointStorageError,
    CheckpointWrite,
    PendingWrite,
    PostgresSaver,
    new_checkpoint_id,
)
from checkpoint._sqlschema import LATEST
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import AssistantMessage, UserMessage


def write(parent: str | None, changes: dict[str, Any], step: int = 0) -> CheckpointWrite:
    return CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=parent,
        step=step,
        changes=changes,
        next=(),
        metadata={},
        created_at=time.time(),
    )


def chain(saver: PostgresSaver, thread: str, n: int) -> list[str]:
    ids: list[str] = []
    parent = None
    for i in range(n):
        w = write(parent, {"log": ("append", [i])}, step=i)
        saver.put(thread, w, expected_head=parent)
        ids.append(w.id)
        parent = w.id
    return ids


@pytest.fixture
def pg(postgres_url: str, pg_schema: str) -> Iterator[Any]:
    """A factory of PostgresSavers on this test's schema (set up), closed afterwards."""
    made: list[PostgresSaver] = []

    def make(**kw: Any) -> PostgresSaver:
        made.append(PostgresSaver.from_url(postgres_url, schema=pg_schema, **kw))
        made[-1].setup()
        return made[-1]

    yield make
    for s in made:
        s.close()


def query(url: str, sql: str) -> list[Any]:
    with psycopg.connect(url) as conn:
        return conn.execute(sql).fetchall()


def test_setup_is_explicit_idempotent_and_safe_to_race(postgres_url: str, pg_schema: str) -> None:
    """Before setup() a saver names the fix; setup() run by several at once migrates once."""
    saver = PostgresSaver.from_url(postgres_url, schema=pg_schema)
    try:
        with pytest.raises(CheckpointError, match=r"no graphagent tables yet: run saver.setup"):
            saver.get("t")
        results: list[Any] = []
        racers = [threading.Thread(target=lambda: results.append(saver.setup())) for _ in range(4)]
        for r in racers:
            r.start()
        for r in racers:
            r.join()
        assert results == [LATEST] * 4
        assert saver.setup() == LATEST
        rows = query(postgres_url, f'SELECT version FROM "{pg_schema}".graphagent_migrations')
        assert sorted(rows) == [(v,) for v in range(1, LATEST + 1)]
        assert saver.get("t") is None
    finally:
        saver.close()


def test_a_newer_schema_is_refused(postgres_url: str, pg_schema: str, pg: Any) -> None:
    """Tables migrated by a newer graphagent are refused before any read or write."""
    pg()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'INSERT INTO "{pg_schema}".graphagent_migrations VALUES (99, 0)')
    fresh = PostgresSaver.from_url(postgres_url, schema=pg_schema)
    try:
        with pytest.raises(CheckpointError, match="newer than this version"):
            fresh.get("t")
        with pytest.raises(CheckpointError, match="newer than this version"):
            fresh.setup()
    finally:
        fresh.close()


def test_unreachable_database_is_a_storage_error_without_the_password() -> None:
    """A server that does not answer fails with CheckpointStorageError, password unshown."""
    saver = PostgresSaver.from_url("postgresql://u:s3cret@127.0.0.1:1/x", timeout=1)
    try:
        with pytest.raises(CheckpointStorageError, match="PostgreSQL unreachable") as err:
            saver.get("t")
        assert "s3cret" not in str(err.value)
    finally:
        saver.close()


async def test_async_saver_runs_a_graph_and_reads_sync_threads(
    postgres_url: str, pg_schema: str, pg: Any
) -> None:
    """AsyncPostgresSaver serves ainvoke, conflicts like the sync one, and shares its tables."""
    sync = pg()
    ids = chain(sync, "s", 2)
    saver = AsyncPostgresSaver.from_url(postgres_url, schema=pg_schema, lock_timeout=5)
    try:
        # the first calls race to open the pool, then to migrate: both happen once
        assert await asyncio.gather(*(saver.asetup() for _ in range(4))) == [LATEST] * 4
        cp = await saver.aget("s")
        assert cp is not None and cp.values["log"] == [0, 1]
        with pytest.raises(CheckpointConflictError):
            await saver.aput("s", write(ids[0], {}), expected_head=ids[0])
        g = StateGraph({"messages": AppendStrategy()})
        g.add_node("reply", lambda s: {"messages": [AssistantMessage(f"{len(s['messages'])}")]})
        app = g.add_edge(START, "reply").add_edge("reply", END).compile(saver=saver)
        await app.ainvoke({"messages": [UserMessage("hi")]}, {"thread_id": "a"})
        out = await app.ainvoke({"messages": [UserMessage("again")]}, {"thread_id": "a"})
        assert [m.text for m in out["messages"]] == ["hi", "1", "again", "3"]
        assert await saver.athreads() == ["a", "s"]
        # with lock_timeout, concurrent runs on one thread take turns, and all land
        await asyncio.gather(
            *(app.ainvoke({"messages": [UserMessage("q")]}, {"thread_id": "L"}) for _ in range(4))
        )
        locked = await saver.aget("L")
        assert locked is not None
        texts = [m.text for m in locked.values["messages"]]
        assert texts == ["q", "1", "q", "3", "q", "5", "q", "7"]  # each run whole, in turn
        with pytest.raises(TypeError, match="only async methods"):
            saver.get("a")
    finally:
        await saver.aclose()
    again = sync.get("a")
    assert again is not None and len(again.values["messages"]) == 4


async def test_every_async_method_matches_its_sync_twin(
    postgres_url: str, pg_schema: str, pg: Any
) -> None:
    """Each a-method of AsyncPostgresSaver reads and writes what PostgresSaver's twin does,
    with a step as one statement and, with keep_last, as a transaction."""
    sync = pg()
    for keep_last in (None, 2):
        thread = f"s{keep_last}"
        ids = chain(sync, thread, 3)
        saver = AsyncPostgresSaver.from_url(postgres_url, schema=pg_schema, keep_last=keep_last)
        try:
            assert await saver.ahead(thread) == sync.head(thread) == ids[-1]
            assert await saver.ahead("none") is None
            assert [c.id for c in await saver.alist(thread)] == ids[::-1]
            older = await saver.ahistory(thread, limit=1, before=ids[-1])
            assert [c.id for c in older] == [ids[1]]
            done = [PendingWrite("n", "update", {"x": 1})]
            await saver.aput_writes(thread, ids[-1], done)
            mine, theirs = await saver.aget(thread, ids[-1]), sync.get(thread, ids[-1])
            assert mine is not None and mine == theirs and mine.pending_writes == tuple(done)
            step = write(ids[-1], {"log": ("append", [3])}, step=3)
            await saver.aput_many(thread, [step], expected_head=ids[-1])
            assert sync.head(thread) == step.id
            expected = [0, 1, 2, 3]
            assert sync.get(thread).values["log"] == expected  # type: ignore[union-attr]
            kept = [c.id for c in sync.list(thread)]
            assert kept == ([step.id, *ids[::-1]] if keep_last is None else [step.id, ids[-1]])
            assert thread in await saver.athreads()
            assert await saver.apurge_expired() == 0  # no ttl: nothing expires
            async with saver.alock(thread):  # no lock_timeout: a no-op
                await saver.adelete_thread(thread)
            assert await saver.aget(thread) is None and sync.head(thread) is None
        finally:
            await saver.aclose()


def test_connections_killed_mid_run_are_replaced(
    postgres_url: str, pg_schema: str, pg: Any
) -> None:
    """Every pooled connection terminated during a node: the pool reconnects, the run completes."""
    pg()  # setup
    sep = "&" if "?" in postgres_url else "?"
    saver = PostgresSaver.from_url(
        f"{postgres_url}{sep}application_name={pg_schema}", schema=pg_schema
    )

    done: list[str] = []

    def node(state: Any) -> dict[str, Any]:
        if not done:
            done.append("killed")
            terminate(postgres_url, pg_schema)
        return {"log": ["b"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", lambda s: {"log": ["a"]}).add_node("b", node)
    app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile(saver=saver)
    try:
        assert app.invoke({"log": []}, {"thread_id": "t"})["log"] == ["a", "b"]
        assert done == ["killed"]
    finally:
        saver.close()


def test_a_closed_pool_is_named(postgres_url: str, pg_schema: str) -> None:
    """A saver on a pool that was never opened says so, instead of a driver error."""
    from psycopg_pool import ConnectionPool

    pool: ConnectionPool[Any] = ConnectionPool(postgres_url, open=False)
    saver = PostgresSaver(pool, schema=pg_schema)
    with pytest.raises(CheckpointStorageError, match="pool is closed"):
        saver.setup()


def _missing_database(postgres_url: str) -> str:
    """The test server's URL with a database name that does not exist."""
    return postgres_url.rsplit("/", 1)[0] + "/graphagent_no_such_db"


@pytest.mark.parametrize("first", ["get", "setup"])
def test_a_missing_database_is_named_at_once(postgres_url: str, first: str) -> None:
    """The server answers but has no such database: psycopg's reason at once, not
    "unreachable" after the pool's timeout."""
    saver = PostgresSaver.from_url(_missing_database(postgres_url), timeout=10)
    started = time.monotonic()
    try:
        with pytest.raises(CheckpointStorageError) as err:
            saver.get("t") if first == "get" else saver.setup()
        assert time.monotonic() - started < 3
        message = str(err.value)
        assert 'database "graphagent_no_such_db" does not exist' in message
        assert "refused the connection" in message and "unreachable" not in message
    finally:
        saver.close()


async def test_a_missing_database_is_named_at_once_async(postgres_url: str) -> None:
    """The async saver names the missing database at once too."""
    saver = AsyncPostgresSaver.from_url(_missing_database(postgres_url), timeout=10)
    started = time.monotonic()
    try:
        with pytest.raises(CheckpointStorageError, match=r"graphagent_no_such_db.*does not exist"):
            await saver.aget("t")
        assert time.monotonic() - started < 3
    finally:
        await saver.aclose()


def test_an_unreachable_server_names_the_cause_after_the_timeout() -> None:
    """No server at all is still waited for (it may be starting), then reported as
    unreachable with the connection's own reason."""
    saver = PostgresSaver.from_url("postgresql://127.0.0.1:1/x", timeout=1)
    try:
        with pytest.raises(CheckpointStorageError, match=r"unreachable.*Connection refused"):
            saver.get("t")
    finally:
        saver.close()


def _chat(saver: Any) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        return {"messages": [AssistantMessage(f"answer {len(state['messages'])}")]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    return g.add_edge(START, "reply").add_edge("reply", END).compile(saver=saver)


@pytest.mark.parametrize("unseen", [False, True], ids=["seen-by-poll", "unseen"])
def test_connections_the_server_closed_while_idle_are_replaced(
    postgres_url: str, pg_schema: str, pg: Any, monkeypatch: pytest.MonkeyPatch, unseen: bool
) -> None:
    """The pool's connections are terminated between turns. The checkout's local poll
    sees it; and when it does not (``unseen``: the server's goodbye not arrived yet), the
    first statement fails on the dead connection and is sent once more on a fresh one: a
    read, and a one-statement write, each land exactly once."""
    from checkpoint.postgres import _common

    pg()  # setup
    sep = "&" if "?" in postgres_url else "?"
    saver = PostgresSaver.from_url(
        f"{postgres_url}{sep}application_name={pg_schema}", schema=pg_schema, min_size=2
    )
    if unseen:
        monkeypatch.setattr(_common, "_readable", lambda conn: False)
    try:
        app = _chat(saver)
        cfg = {"thread_id": "t"}
        app.invoke({"messages": [UserMessage("one")]}, cfg)
        terminate(postgres_url, pg_schema)
        cp = saver.get("t")  # the read: retried
        assert cp is not None and [m.text for m in cp.values["messages"]] == ["one", "answer 1"]
        terminate(postgres_url, pg_schema)
        head = saver.head("t")
        step = write(head, {"messages": ("append", [UserMessage("two")])}, step=5)
        terminate(postgres_url, pg_schema)
        saver.put("t", step, expected_head=head)  # the one-statement write: retried
        assert saver.head("t") == step.id
        assert saver.list("t")[0].id == step.id
        terminate(postgres_url, pg_schema)
        out = app.invoke({"messages": [UserMessage("three")]}, cfg)
        assert [m.text for m in out["messages"]] == ["one", "answer 1", "two", "three", "answer 4"]
    finally:
        saver.close()


def test_a_dead_connection_is_not_retried_after_the_first_statement(
    pg: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the first statement of a program is sent again: a connection that dies in the
    middle of a transaction fails the call (named), and nothing of it is stored."""
    from checkpoint.postgres import _sync

    saver = pg()
    ids = chain(saver, "t", 2)
    real = _sync._execute_stmt
    calls: list[str] = []

    def dying(conn: Any, stmt: Any) -> Any:
        calls.append(stmt.sql)
        if len(calls) == 2:
            conn.close()  # the connection dies under the program's second statement
        return real(conn, stmt)

    monkeypatch.setattr(_sync, "_execute_stmt", dying)
    with pytest.raises(CheckpointStorageError):
        saver.put_writes("t", ids[-1], [PendingWrite("n", "update", {"x": 1})])
    monkeypatch.setattr(_sync, "_execute_stmt", real)
    cp = saver.get("t")
    assert cp is not None and cp.pending_writes == ()


def test_a_warm_turn_is_two_statements_and_a_long_one_reads_again(
    pg: Any, monkeypatch: pytest.MonkeyPatch, postgres_url: str
) -> None:
    """A warm worker's turn is one statement to read (head, new items, pending writes:
    index look-ups, no scan of the thread's rows) and one to write; when another worker
    appended more than the read guesses, or the read cache is empty, the state is read
    whole in a snapshot, and is the same."""
    from checkpoint.postgres import _sync

    one, two = pg(), pg()
    app, other = _chat(one), _chat(two)
    cfg = {"thread_id": "t"}
    app.invoke({"messages": [UserMessage(f"m{i}") for i in range(30)]}, cfg)
    app.invoke({"messages": [UserMessage("warm-up")]}, cfg)
    real = _sync._execute_stmt
    sent: list[str] = []

    reads: list[Any] = []

    def counting(conn: Any, stmt: Any) -> Any:
        sent.append(stmt.sql.split()[0])
        reads.append(stmt)
        return real(conn, stmt)

    monkeypatch.setattr(_sync, "_execute_stmt", counting)
    app.invoke({"messages": [UserMessage("next")]}, cfg)
    assert sent == ["WITH", "WITH"], sent
    read = next(st for st in reads if st.sql.startswith("WITH c AS"))
    with psycopg.connect(postgres_url) as conn:  # the read looks up, it never scans
        plan = "\n".join(r[0] for r in conn.execute("EXPLAIN ANALYZE " + read.sql, read.params))
    assert "Rows Removed by Filter" not in plan and "Seq Scan" not in plan, plan
    other.invoke({"messages": [UserMessage(f"x{i}") for i in range(40)]}, cfg)
    sent.clear()
    out = app.invoke({"messages": [UserMessage("after")]}, cfg)
    assert sent[0] == "WITH" and "BEGIN" in sent, sent
    texts = [m.text for m in out["messages"]]
    assert texts[-43:] == [*(f"x{i}" for i in range(40)), "answer 75", "after", "answer 77"]
    one.read_cache.clear()
    warm, cold = one.get("t"), two.get("t")
    assert warm is not None and cold is not None and warm.values == cold.values


def test_a_pool_whose_connections_make_dicts_serves_the_saver(
    postgres_url: str, pg_schema: str, pg: Any
) -> None:
    """A pool shared with code that wants dict rows (``row_factory=dict_row``, as
    LangGraph's saver needs) serves the savers too: they read tuples whatever the
    connections' row factory."""
    import psycopg_pool
    from psycopg.rows import dict_row

    ids = chain(pg(), "t", 3)
    pool = psycopg_pool.ConnectionPool(
        postgres_url, kwargs={"autocommit": True, "row_factory": dict_row}, open=True
    )
    saver = PostgresSaver(pool, schema=pg_schema)
    try:
        assert saver.head("t") == ids[-1]
        cp = saver.get("t")
        assert cp is not None and cp.values["log"] == [0, 1, 2]
        step = write(ids[-1], {"log": ("append", [3])}, step=3)
        saver.put("t", step, expected_head=ids[-1])
        assert [c.id for c in saver.list("t")] == [step.id, *ids[::-1]]
    finally:
        pool.close()


async def test_an_async_pool_whose_connections_make_dicts_serves_the_saver(
    postgres_url: str, pg_schema: str, pg: Any
) -> None:
    """:func:`test_a_pool_whose_connections_make_dicts_serves_the_saver`, async."""
    import psycopg_pool
    from psycopg.rows import dict_row

    ids = chain(pg(), "t", 3)
    pool = psycopg_pool.AsyncConnectionPool(
        postgres_url, kwargs={"autocommit": True, "row_factory": dict_row}, open=False
    )
    await pool.open()
    saver = AsyncPostgresSaver(pool, schema=pg_schema)
    try:
        assert await saver.ahead("t") == ids[-1]
        cp = await saver.aget("t")
        assert cp is not None and cp.values["log"] == [0, 1, 2]
        step = write(ids[-1], {"log": ("append", [3])}, step=3)
        await saver.aput("t", step, expected_head=ids[-1])
        assert [c.id for c in await saver.alist("t")] == [step.id, *ids[::-1]]
    finally:
        await pool.close()


def test_the_cursors_a_connection_keeps_hold_no_long_read(pg: Any) -> None:
    """A pooled connection keeps its statements' cursors (a new one costs more than a
    small statement), but not one that fetched a long read: it would hold those rows
    until its next run."""
    from checkpoint.postgres import _cursors

    chain(pg(), "t", 100)
    cold = pg()
    cp = cold.get("t")
    assert cp is not None and cp.values["log"] == list(range(100))
    held = [
        cur.pgresult.ntuples
        for kept in list(_cursors._cursors.values())
        for cur in kept.values()
        if cur.pgresult is not None
    ]
    assert held and max(held) <= _cursors.ROWS_KEPT, held


def test_packed_arrays_arrive_as_sent(postgres_url: str) -> None:
    """The arrays the savers pack themselves (``bytea[]``, ``text[]``) reach the server
    byte for byte: NUL, quotes, braces, backslashes, commas, non-UTF-8 bytes, long and
    empty elements; an empty list and a list of other values are psycopg's to send."""
    from checkpoint.postgres._cursors import cursor_for, packed

    blobs = [b"", b"\x00", b'"{a,b}"\\', b"\xff\xfe" * 3000, "é|x|1".encode(), b"NULL"]
    texts = ["", "a,b", '"q"', "{x}", "\\", "é ✓ \U0001f600", "NULL"]
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        sql = "SELECT %b::bytea[], %b::text[], %b::bytea[], %b::int[], cardinality(%b::text[])"
        params = packed([blobs, texts, [], [1, 2], texts])
        assert type(params[0]) is not list and type(params[1]) is not list
        assert params[2] == [] and params[3] == [1, 2]
        row = cursor_for(conn, sql).execute(sql, params).fetchone()
        assert row == (blobs, texts, [], [1, 2], len(texts))
