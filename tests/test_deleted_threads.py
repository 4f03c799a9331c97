"""Nothing is written to a thread deleted under a run (issue 13 item 4, issue 30 item 4),
on every saver.

A run that paused after its thread was deleted used to write the thread's pending-writes
key back on Redis: a key with no TTL, invisible to ``threads()``, that never went away.
The checks that fixed it (a pause needs its checkpoint; a step needs the head it read)
missed a thread deleted during its *first* run: nothing is stored before the first step
commits, so the step's write (``expected_head=None``) looked like a new thread's and
brought the thread back with its question. ``delete_thread`` now leaves a marker that
refuses writes minted before it (kept a day; it expires on Redis).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis

from checkpoint import (
    AsyncPostgresSaver,
    AsyncRedisSaver,
    AsyncSqliteSaver,
    CheckpointNotFoundError,
    CheckpointWrite,
    MemorySaver,
    PendingWrite,
    PostgresSaver,
    RedisSaver,
    SqliteSaver,
    new_checkpoint_id,
)
from checkpoint.base import CheckpointSaver
from graphagent.errors import CheckpointNotFoundError as RunCheckpointNotFoundError
from graphagent.errors import GraphAgentError
from graphagent.graph import END, START, AppendStrategy, Command, StateGraph, interrupt


def _keys(saver: CheckpointSaver) -> list[bytes]:
    """Every Redis key under the saver's prefix ([] for other savers)."""
    if not isinstance(saver, RedisSaver):
        return []
    client = saver.client
    pattern = f"{{{saver.prefix}:*"
    if isinstance(client, redis.RedisCluster):
        return list(client.scan_iter(match=pattern, count=1000, target_nodes=client.ALL_NODES))
    return list(client.scan_iter(match=pattern, count=1000))


def _only_tombstones(saver: CheckpointSaver) -> None:
    """No key of the thread is left but the delete's own marker, which expires."""
    for key in _keys(saver):
        assert key.endswith(b":gone"), key
        assert saver.client.pttl(key) > 0  # type: ignore[attr-defined]


def test_a_run_that_pauses_after_its_thread_was_deleted_writes_nothing(
    saver: CheckpointSaver,
) -> None:
    """delete_thread under a running step: the step's pause fails (the checkpoint it
    belongs to is gone) and no key of the thread comes back."""
    deleted: list[bool] = []

    def first(state: Any) -> dict[str, Any]:
        return {"log": ["first"]}

    def second(state: Any) -> dict[str, Any]:
        if not deleted:
            saver.delete_thread("t")  # another process deletes the thread meanwhile
            deleted.append(True)
        return {"log": [interrupt("go on?")]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("first", first).add_node("second", second)
    g.add_edge(START, "first").add_edge("first", "second").add_edge("second", END)
    app = g.compile(saver=saver)
    with pytest.raises(RunCheckpointNotFoundError, match="'t'"):
        app.invoke({"log": ["hi"]}, {"thread_id": "t"})
    assert saver.get("t") is None and saver.head("t") is None
    assert "t" not in getattr(saver, "threads", lambda: [])()
    _only_tombstones(saver)


def test_pending_writes_to_a_deleted_thread_fail(saver: CheckpointSaver) -> None:
    """put_writes for a checkpoint of a deleted thread raises and stores nothing."""
    w = CheckpointWrite(new_checkpoint_id(), None, 0, {"n": ("set", 1)}, (), {}, 0.0)
    saver.put("t", w, expected_head=None)
    saver.delete_thread("t")
    with pytest.raises(CheckpointNotFoundError, match="'t'"):
        saver.put_writes("t", w.id, [PendingWrite("n", "update", 1)])
    assert saver.get("t") is None
    _only_tombstones(saver)


def _thread(saver: CheckpointSaver) -> str:
    w = CheckpointWrite(new_checkpoint_id(), None, 0, {"n": ("set", 1)}, (), {}, 0.0)
    saver.put("t", w, expected_head=None)
    return w.id


def test_postgres_pending_writes_wait_for_a_delete_in_flight(
    postgres_url: str, pg_schema: str
) -> None:
    """put_writes racing a delete_thread that has not committed yet waits for it, then
    finds the checkpoint gone: no orphan row in the writes table."""
    with PostgresSaver.from_url(postgres_url, schema=pg_schema) as saver:
        saver.setup()
        cid = _thread(saver)
        outcome: list[BaseException | None] = []

        def pause() -> None:
            try:
                saver.put_writes("t", cid, [PendingWrite("n", "update", 1)])
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        with psycopg.connect(postgres_url) as conn:
            for table in ("threads", "checkpoints", "data", "writes"):
                conn.execute(f'DELETE FROM "{pg_schema}".graphagent_{table}')
            pausing = threading.Thread(target=pause)
            pausing.start()
            time.sleep(0.5)  # the pending writes arrive while the delete is in flight
            conn.commit()
        pausing.join(timeout=10)
        assert len(outcome) == 1 and isinstance(outcome[0], CheckpointNotFoundError)
        with psycopg.connect(postgres_url) as conn:
            rows = conn.execute(f'SELECT count(*) FROM "{pg_schema}".graphagent_writes')
            assert rows.fetchone() == (0,)


def _deleting_graph(saver: CheckpointSaver, ask: bool) -> Any:
    """START -> work -> END; the first time work runs it deletes the thread it runs on
    (another process deleting it meanwhile), then asks (``ask``) or returns."""
    deleted: list[bool] = []

    def work(state: Any) -> dict[str, Any]:
        if not deleted:
            saver.delete_thread("t")
            deleted.append(True)
        return {"log": [interrupt("go on?") if ask else "done"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("work", work).add_edge(START, "work").add_edge("work", END)
    return g.compile(saver=saver)


@pytest.mark.parametrize("ask", [True, False], ids=["pausing", "finishing"])
def test_every_saver_keeps_a_thread_deleted_during_its_first_run_deleted(
    saver: CheckpointSaver, ask: bool
) -> None:
    """A thread deleted while its first run's first step runs stays deleted: the step's
    write (a pause with its question, or the step's result) fails naming the delete, a
    resume finds nothing, and the id can start a new thread afterwards (memory, SQLite,
    PostgreSQL, Redis, Cluster)."""
    app = _deleting_graph(saver, ask)
    cfg = {"thread_id": "t"}
    with pytest.raises(RunCheckpointNotFoundError, match="'t' was deleted"):
        app.invoke({"log": ["hi"]}, cfg)
    assert saver.get("t") is None and saver.head("t") is None
    assert "t" not in getattr(saver, "threads", lambda: [])()
    _only_tombstones(saver)
    with pytest.raises(GraphAgentError):
        app.invoke(Command(resume="yes"), cfg)
    assert saver.get("t") is None
    out = app.invoke({"log": ["again"]}, cfg)  # a new thread under the same id
    assert out["log"][0] == "again"
    state = saver.get("t")
    assert state is not None and state.values["log"][0] == "again"


def test_every_saver_refuses_a_first_write_older_than_the_threads_delete(
    saver: CheckpointSaver,
) -> None:
    """put with expected_head=None of a checkpoint minted before delete_thread raises
    CheckpointNotFoundError and stores nothing; one minted after it starts the thread."""
    early = CheckpointWrite(new_checkpoint_id(), None, 0, {"n": ("set", 1)}, (), {}, 0.0)
    saver.delete_thread("t")
    with pytest.raises(CheckpointNotFoundError, match="'t' was deleted"):
        saver.put("t", early, expected_head=None)
    assert saver.get("t") is None
    late = CheckpointWrite(new_checkpoint_id(), None, 0, {"n": ("set", 2)}, (), {}, 0.0)
    saver.put("t", late, expected_head=None)
    cp = saver.get("t")
    assert cp is not None and cp.values == {"n": 2}


@pytest.fixture(params=["memory", "sqlite_async", "postgres_async", "redis_async"])
def async_saver(request: pytest.FixtureRequest) -> Iterator[CheckpointSaver]:
    """Each saver's async face (MemorySaver's a-methods, AsyncSqliteSaver, ...)."""
    kind = request.param
    if kind == "memory":
        yield MemorySaver()
    elif kind == "sqlite_async":
        yield AsyncSqliteSaver(request.getfixturevalue("tmp_path") / "threads.sqlite")
    elif kind == "postgres_async":
        url, schema = request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema")
        with PostgresSaver.from_url(url, schema=schema) as pg:
            pg.setup()
        yield AsyncPostgresSaver.from_url(url, schema=schema)
    else:
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        yield AsyncRedisSaver.from_url(url, prefix=prefix)


def test_async_savers_keep_a_thread_deleted_during_its_first_run_deleted(
    async_saver: CheckpointSaver,
) -> None:
    """ainvoke: the same, with the delete awaited from an async node (memory, SQLite,
    PostgreSQL and Redis async savers)."""
    saver = async_saver
    deleted: list[bool] = []

    async def work(state: Any) -> dict[str, Any]:
        if not deleted:
            await saver.adelete_thread("t")
            deleted.append(True)
        return {"log": [interrupt("go on?")]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("work", work).add_edge(START, "work").add_edge("work", END)
    app = g.compile(saver=saver)

    async def main() -> None:
        try:
            with pytest.raises(RunCheckpointNotFoundError, match="'t' was deleted"):
                await app.ainvoke({"log": ["hi"]}, {"thread_id": "t"})
            assert await saver.aget("t") is None
        finally:
            closing = getattr(saver, "aclose", None)
            if closing is not None:
                await closing()

    asyncio.run(main())


def test_sqlite_store_of_schema_1_migrates_and_keeps_its_threads(tmp_path: Path) -> None:
    """A store made before the delete marker's table (schema 1) gains it on open; its
    threads read as before and deleting one works."""
    path = tmp_path / "threads.sqlite"
    with SqliteSaver(path) as saver:
        cid = _thread(saver)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE graphagent_deleted")
        conn.execute("DELETE FROM graphagent_migrations WHERE version > 1")
    conn.close()
    with SqliteSaver(path) as saver:
        assert saver.head("t") == cid
        saver.delete_thread("t")
        assert saver.get("t") is None
