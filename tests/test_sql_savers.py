"""What SqliteSaver and PostgresSaver promise beyond the shared conformance suite, checked
against the rows they store: whole steps, retries, ttl, keep_last, order by chain, step
size, any thread id."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest

from checkpoint import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointWrite,
    PendingWrite,
    PostgresSaver,
    SerializationError,
    SqliteSaver,
    new_checkpoint_id,
)
from checkpoint.base import CheckpointSaver
from graphagent.messages import UserMessage


@dataclass
class Sql:
    """A SQL store for one test: savers on it, and plain SQL to look at its rows."""

    open: Callable[..., CheckpointSaver]
    query: Callable[[str], list[Any]]
    tables: str  # what goes before a table name in :meth:`count`
    made: list[Any] = field(default_factory=list)

    def make(self, **options: Any) -> Any:
        """A saver on the store (closed after the test)."""
        self.made.append(self.open(**options))
        return self.made[-1]

    def count(self, table: str) -> int:
        """Rows in ``graphagent_<table>``."""
        return int(self.query(f"SELECT count(*) FROM {self.tables}graphagent_{table}")[0][0])

    def stored_bytes(self) -> int:
        """Bytes of every record, value and item stored."""
        t = self.tables
        return int(
            self.query(
                f"SELECT (SELECT coalesce(sum(length(value) + length(field)), 0) "
                f"FROM {t}graphagent_data) + (SELECT coalesce(sum(length(record)), 0) "
                f"FROM {t}graphagent_checkpoints)"
            )[0][0]
        )


@pytest.fixture(params=["sqlite", "postgres"])
def sql(request: pytest.FixtureRequest) -> Iterator[Sql]:
    """A SQLite file or a PostgreSQL schema of this test's own."""
    if request.param == "sqlite":
        path = request.getfixturevalue("tmp_path") / "t.sqlite"

        def lite_query(text: str) -> list[Any]:
            with sqlite3.connect(path) as conn:
                return conn.execute(text).fetchall()

        store = Sql(lambda **kw: SqliteSaver(path, **kw), lite_query, "")
    else:
        url, schema = request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema")

        def open_pg(**kw: Any) -> PostgresSaver:
            saver = PostgresSaver.from_url(url, schema=schema, **kw)
            saver.setup()
            return saver

        def pg_query(text: str) -> list[Any]:
            with psycopg.connect(url) as conn:
                return conn.execute(text).fetchall()  # type: ignore[arg-type]

        store = Sql(open_pg, pg_query, f'"{schema}".')
    yield store
    for saver in store.made:
        saver.close()


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


def chain(saver: CheckpointSaver, thread: str, n: int) -> list[str]:
    ids: list[str] = []
    parent = None
    for i in range(n):
        w = write(parent, {"log": ("append", [i])}, step=i)
        saver.put(thread, w, expected_head=parent)
        ids.append(w.id)
        parent = w.id
    return ids


@pytest.mark.parametrize("retention", [{}, {"keep_last": 5}], ids=["plain", "keep_last"])
def test_a_failing_step_rolls_back_whole(sql: Sql, retention: dict[str, Any]) -> None:
    """A value that cannot be encoded fails the step: no row of it stays (either write path)."""
    saver = sql.make(**retention)
    ids = chain(saver, "t", 2)
    before = (sql.count("data"), sql.count("checkpoints"), saver.head("t"))
    with pytest.raises(SerializationError):
        saver.put("t", write(ids[-1], {"log": ("append", ["ok", object()])}), expected_head=ids[-1])
    assert (sql.count("data"), sql.count("checkpoints"), saver.head("t")) == before


def test_retried_and_stale_writes(sql: Sql) -> None:
    """A retried write that landed succeeds once; a write to a deleted thread says it is gone."""
    saver = sql.make()
    ids = chain(saver, "t", 2)
    w = write(ids[-1], {"log": ("append", ["x"])})
    saver.put("t", w, expected_head=ids[-1])
    saver.put("t", w, expected_head=ids[-1])  # the client's retry after a lost reply
    assert [c.id for c in saver.list("t")] == [w.id, *ids[::-1]]
    saver.delete_thread("t")
    other = sql.make()  # another process, which never saw the thread
    with pytest.raises(CheckpointConflictError, match="is gone"):
        other.put("t", write(w.id, {"log": ("append", ["y"])}), expected_head=w.id)
    assert saver.get("t") is None and sql.count("data") == 0


def test_ttl_expires_threads_and_purges_them(sql: Sql) -> None:
    """After ttl seconds without a write a thread reads as absent and is deleted."""
    saver = sql.make(ttl=0.3)
    ids = chain(saver, "old", 2)
    saver.put_writes("old", ids[-1], [PendingWrite("n", "update", 1)])
    time.sleep(0.4)
    chain(saver, "new", 1)  # a write purges what has expired
    assert saver.get("old") is None and saver.head("old") is None
    assert saver.threads() == ["new"]
    with pytest.raises(CheckpointConflictError, match="is gone"):
        saver.put("old", write(ids[-1], {}), expected_head=ids[-1])
    assert saver.purge_expired() == 0
    assert sql.count("checkpoints") == 1 and sql.count("writes") == 0
    chain(saver, "old", 1)  # a thread id can start again after it expired
    assert saver.threads() == ["new", "old"]


def test_keep_last_prunes_rows_not_still_used(sql: Sql) -> None:
    """keep_last deletes old records and the values only they used."""
    saver = sql.make(keep_last=2)
    parent = None
    for i in range(10):
        w = write(parent, {"log": ("append", [i]), "n": ("set", i)}, step=i)
        saver.put("t", w, expected_head=parent)
        parent = w.id
    assert sql.count("checkpoints") == 2
    cp = saver.get("t")
    assert cp is not None and cp.values == {"log": list(range(10)), "n": 9}
    assert sql.count("data") == 10 + 2  # all ten log items; the two kept 'n' values


def test_history_order_is_the_chain_not_the_clock(sql: Sql) -> None:
    """Ids from a clock that runs behind still list in write order, and prune the oldest."""
    saver = sql.make(keep_last=2)
    parent = None
    ids = []
    for i in range(4):
        w = write(parent, {"log": ("append", [i])}, step=i)
        w.id = f"{0xFFFF - i:016x}{i:08x}"  # each id sorts before the previous one
        saver.put("t", w, expected_head=parent)
        ids.append(w.id)
        parent = w.id
    assert [c.id for c in saver.list("t")] == [ids[3], ids[2]]
    head = saver.get("t")
    assert head is not None and head.values["log"] == [0, 1, 2, 3]


def test_step_write_size_does_not_grow_with_history(sql: Sql) -> None:
    """Appending one message at 1,000 messages stores about what it stores at 10."""
    saver = sql.make()
    parent = None
    sizes = {}
    for i in range(1001):
        w = write(parent, {"messages": ("append", [UserMessage(f"message {i}")])}, step=i)
        if i in (10, 1000):
            before = sql.stored_bytes()
        saver.put("t", w, expected_head=parent)
        if i in (10, 1000):
            sizes[i] = sql.stored_bytes() - before
        parent = w.id
    assert sizes[1000] <= sizes[10] * 1.5 + 16, sizes


def test_odd_thread_ids_are_kept_apart(sql: Sql) -> None:
    """Any str is a thread id: NUL, lone surrogates, separators; none collide."""
    saver = sql.make()
    names = ["a", "a\x00b", "x\ud800y", "p:eu:1", "p|1", "ünï"]
    for name in names:
        chain(saver, name, 1)
    assert saver.threads() == sorted(names)
    cp = saver.get("x\ud800y")
    assert cp is not None and cp.thread_id == "x\ud800y"
    with pytest.raises(CheckpointError):
        saver.get("a", "bad\x00id")
