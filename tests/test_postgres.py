"""PostgresSaver beyond the shared conformance suite: setup and schema versions, another
process, the async saver, ttl, what a step writes, and failures named."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from checkpoint import (
    AsyncPostgresSaver,
    CheckpointConflictError,
    CheckpointError,
    CheckpointStorageError,
    CheckpointWrite,
    PendingWrite,
    PostgresSaver,
    SerializationError,
    new_checkpoint_id,
)
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
        assert results == [1] * 4
        assert saver.setup() == 1
        rows = query(postgres_url, f'SELECT version FROM "{pg_schema}".graphagent_migrations')
        assert rows == [(1,)]
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


SCRIPT = textwrap.dedent(
    """
    import sys
    from checkpoint import PostgresSaver
    from graphagent.graph import StateGraph, START, END, AppendStrategy
    from graphagent.messages import AssistantMessage, UserMessage

    url, schema, text = sys.argv[1:4]
    def reply(state):
        return {"messages": [AssistantMessage(f"seen {len(state['messages'])}")]}
    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    with PostgresSaver.from_url(url, schema=schema) as saver:
        app = g.add_edge(START, "reply").add_edge("reply", END).compile(saver=saver)
        out = app.invoke({"messages": [UserMessage(text)]}, {"thread_id": "shared"})
    print("|".join(m.text for m in out["messages"]))
    """
)


def test_thread_continues_in_another_process(postgres_url: str, pg_schema: str, pg: Any) -> None:
    """Two Python processes, one after the other, continue one thread in PostgreSQL."""
    pg()  # setup
    outputs = []
    for text in ("first", "second"):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, postgres_url, pg_schema, text],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        outputs.append(done.stdout.strip())
    assert outputs[1] == "first|seen 1|second|seen 3"


def test_a_failing_step_rolls_back_whole(postgres_url: str, pg_schema: str, pg: Any) -> None:
    """A value that cannot be encoded fails the step after the head check: nothing stays."""
    saver = pg()
    ids = chain(saver, "t", 2)
    count = f'SELECT count(*) FROM "{pg_schema}".graphagent_data'
    before = query(postgres_url, count)
    with pytest.raises(SerializationError):
        saver.put("t", write(ids[-1], {"log": ("append", ["ok", object()])}), expected_head=ids[-1])
    assert saver.head("t") == ids[-1]
    assert query(postgres_url, count) == before


def test_ttl_expires_threads_and_purges_them(postgres_url: str, pg_schema: str, pg: Any) -> None:
    """After ttl seconds without a write a thread reads as absent; purge deletes it."""
    saver = pg(ttl=0.3)
    ids = chain(saver, "old", 2)
    saver.put_writes("old", ids[-1], [PendingWrite("n", "update", 1)])
    time.sleep(0.4)
    chain(saver, "new", 1)
    assert saver.get("old") is None and saver.threads() == ["new"]
    with pytest.raises(CheckpointConflictError, match="is gone"):
        saver.put("old", write(ids[-1], {}), expected_head=ids[-1])
    assert saver.purge_expired() == 0  # that write already dropped it
    rows = query(postgres_url, f'SELECT count(*) FROM "{pg_schema}".graphagent_checkpoints')
    assert rows == [(1,)]


def test_step_write_size_does_not_grow_with_history(
    postgres_url: str, pg_schema: str, pg: Any
) -> None:
    """Appending one message at 1,000 messages stores about what it stores at 10."""
    saver = pg()
    size = (
        f'SELECT (SELECT coalesce(sum(length(value) + length(field)), 0) FROM "{pg_schema}"'
        f'.graphagent_data) + (SELECT coalesce(sum(length(record)), 0) FROM "{pg_schema}"'
        ".graphagent_checkpoints)"
    )
    parent = None
    sizes = {}
    with psycopg.connect(postgres_url) as conn:
        for i in range(1001):
            w = write(parent, {"messages": ("append", [UserMessage(f"message {i}")])}, step=i)
            if i in (10, 1000):
                before = conn.execute(size).fetchall()[0][0]
                conn.commit()
            saver.put("t", w, expected_head=parent)
            if i in (10, 1000):
                sizes[i] = conn.execute(size).fetchall()[0][0] - before
                conn.commit()
            parent = w.id
    assert sizes[1000] <= sizes[10] * 1.5 + 16, sizes


def test_odd_thread_ids_are_kept_apart(pg: Any) -> None:
    """Any str is a thread id (NUL and lone surrogates included); none collide."""
    saver = pg()
    names = ["a", "a\x00b", "x\ud800y", "p:eu:1", "p|1", "ünï"]
    for name in names:
        chain(saver, name, 1)
    assert saver.threads() == sorted(names)
    with pytest.raises(CheckpointError):
        saver.get("a", "bad\x00id")


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
        assert await asyncio.gather(*(saver.asetup() for _ in range(4))) == [1] * 4
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
        with pytest.raises(TypeError, match="only async methods"):
            saver.get("a")
    finally:
        await saver.aclose()
    again = sync.get("a")
    assert again is not None and len(again.values["messages"]) == 4


def test_connections_killed_mid_run_are_replaced(
    postgres_url: str, pg_schema: str, pg: Any
) -> None:
    """Every pooled connection terminated during a node: the pool reconnects, the run completes."""
    pg()  # setup
    sep = "&" if "?" in postgres_url else "?"
    saver = PostgresSaver.from_url(
        f"{postgres_url}{sep}application_name={pg_schema}", schema=pg_schema
    )

    def kill_connections() -> None:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s AND pid <> pg_backend_pid()",
                (pg_schema,),
            )

    done: list[str] = []

    def node(state: Any) -> dict[str, Any]:
        if not done:
            done.append("killed")
            kill_connections()
        return {"log": ["b"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", lambda s: {"log": ["a"]}).add_node("b", node)
    app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile(saver=saver)
    try:
        assert app.invoke({"log": []}, {"thread_id": "t"})["log"] == ["a", "b"]
        assert done == ["killed"]
    finally:
        saver.close()


def test_retried_and_stale_writes(pg: Any) -> None:
    """A retried write that landed succeeds once; a write to a deleted thread says it is gone."""
    saver = pg()
    ids = chain(saver, "t", 2)
    w = write(ids[-1], {"log": ("append", ["x"])})
    saver.put("t", w, expected_head=ids[-1])
    saver.put("t", w, expected_head=ids[-1])  # the client's retry after a lost reply
    assert [c.id for c in saver.list("t")] == [w.id, *ids[::-1]]
    saver.delete_thread("t")
    saver.logic._records.clear()  # as in another process, which never saw the head
    with pytest.raises(CheckpointConflictError, match="is gone"):
        saver.put("t", write(w.id, {"log": ("append", ["y"])}), expected_head=w.id)
    assert saver.get("t") is None
