"""SqliteSaver beyond the shared conformance suite: the file, WAL, busy writers, retention,
schema versions, and what a step writes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from checkpoint import (
    AsyncSqliteSaver,
    CheckpointConflictError,
    CheckpointError,
    CheckpointStorageError,
    CheckpointWrite,
    PendingWrite,
    SerializationError,
    SqliteSaver,
    ThreadLockedError,
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


def chain(saver: SqliteSaver, thread: str, n: int) -> list[str]:
    ids: list[str] = []
    parent = None
    for i in range(n):
        w = write(parent, {"log": ("append", [i])}, step=i)
        saver.put(thread, w, expected_head=parent)
        ids.append(w.id)
        parent = w.id
    return ids


def rows(path: Path, query: str) -> list[Any]:
    with sqlite3.connect(path) as conn:
        return conn.execute(query).fetchall()


SCRIPT = textwrap.dedent(
    """
    import sys
    from checkpoint import SqliteSaver
    from graphagent.graph import StateGraph, START, END, AppendStrategy
    from graphagent.messages import AssistantMessage, UserMessage

    path, text = sys.argv[1:3]
    def reply(state):
        return {"messages": [AssistantMessage(f"seen {len(state['messages'])}")]}
    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    app = g.add_edge(START, "reply").add_edge("reply", END).compile(saver=SqliteSaver(path))
    out = app.invoke({"messages": [UserMessage(text)]}, {"thread_id": "shared"})
    print("|".join(m.text for m in out["messages"]))
    """
)


def test_thread_continues_in_another_process(tmp_path: Path) -> None:
    """Two Python processes, one after the other, continue one thread in the file."""
    path = tmp_path / "t.sqlite"
    outputs = []
    for text in ("first", "second"):
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(path), text],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        outputs.append(done.stdout.strip())
    assert outputs[1] == "first|seen 1|second|seen 3"
    assert rows(path, "PRAGMA journal_mode") == [("wal",)]


def test_memory_database_and_from_path(tmp_path: Path) -> None:
    """':memory:' works; from_path creates folders; a missing folder is named."""
    mem = SqliteSaver(":memory:")
    chain(mem, "t", 2)
    cp = mem.get("t")
    assert cp is not None and cp.values == {"log": [0, 1]}
    deep = tmp_path / "a" / "b" / "threads.sqlite"
    with pytest.raises(CheckpointStorageError, match="folder does not exist"):
        SqliteSaver(deep)
    with SqliteSaver.from_path(deep) as saver:
        chain(saver, "t", 1)
    assert deep.is_file()


def test_a_writer_held_up_too_long_gets_thread_locked(tmp_path: Path) -> None:
    """Another connection holding the file's write lock past timeout: a clear error, no write."""
    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path, timeout=0.2)
    ids = chain(saver, "t", 1)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(ThreadLockedError, match="stayed locked by another writer"):
            saver.put("t", write(ids[0], {"log": ("append", ["x"])}), expected_head=ids[0])
        assert saver.head("t") == ids[0]  # readers are never blocked in WAL mode
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert issubclass(ThreadLockedError, CheckpointConflictError)
    w = write(ids[0], {"log": ("append", ["x"])})
    saver.put("t", w, expected_head=ids[0])
    assert saver.head("t") == w.id


def test_a_failing_step_rolls_back_whole(tmp_path: Path) -> None:
    """A value that cannot be encoded fails the step after the head check: nothing stays."""
    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path)
    ids = chain(saver, "t", 2)
    before = rows(path, "SELECT count(*) FROM graphagent_data")
    bad = write(ids[-1], {"log": ("append", ["ok", object()])})
    with pytest.raises(SerializationError):
        saver.put("t", bad, expected_head=ids[-1])
    assert saver.head("t") == ids[-1]
    assert rows(path, "SELECT count(*) FROM graphagent_data") == before
    assert [c.id for c in saver.list("t")] == ids[::-1]


def test_retry_of_a_landed_write_is_not_a_conflict(tmp_path: Path) -> None:
    """Putting the same write twice (a retry after a lost reply) succeeds once."""
    saver = SqliteSaver(tmp_path / "t.sqlite")
    w = write(None, {"n": ("set", 1)})
    saver.put("t", w, expected_head=None)
    saver.put("t", w, expected_head=None)
    assert [c.id for c in saver.list("t")] == [w.id]


def test_ttl_expires_threads_and_purges_them(tmp_path: Path) -> None:
    """After ttl seconds without a write a thread reads as absent and is deleted."""
    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path, ttl=0.3)
    ids = chain(saver, "old", 2)
    saver.put_writes("old", ids[-1], [PendingWrite("n", "update", 1)])
    time.sleep(0.4)
    chain(saver, "new", 1)
    assert saver.get("old") is None and saver.head("old") is None
    assert saver.threads() == ["new"]
    with pytest.raises(CheckpointConflictError, match="is gone"):
        saver.put("old", write(ids[-1], {}), expected_head=ids[-1])
    assert saver.purge_expired() == 0  # the write above already dropped it
    assert rows(path, "SELECT count(*) FROM graphagent_checkpoints") == [(1,)]
    assert rows(path, "SELECT count(*) FROM graphagent_writes") == [(0,)]
    chain(saver, "old", 1)  # a thread id can start again after it expired
    assert saver.threads() == ["new", "old"]


def test_keep_last_prunes_rows_not_still_used(tmp_path: Path) -> None:
    """keep_last deletes old records and the items only they used."""
    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path, keep_last=2)
    parent = None
    for i in range(10):
        w = write(parent, {"log": ("append", [i]), "n": ("set", i)}, step=i)
        saver.put("t", w, expected_head=parent)
        parent = w.id
    assert rows(path, "SELECT count(*) FROM graphagent_checkpoints") == [(2,)]
    # the kept log items are all ten; the 'n' values of dropped steps are gone
    cp = saver.get("t")
    assert cp is not None and cp.values == {"log": list(range(10)), "n": 9}
    assert rows(path, "SELECT count(*) FROM graphagent_data") == [(10 + 2,)]


def test_history_order_is_the_chain_not_the_clock(tmp_path: Path) -> None:
    """Ids from a clock that runs behind still list in write order, and prune the oldest."""
    saver = SqliteSaver(tmp_path / "t.sqlite", keep_last=2)
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


def test_step_write_size_does_not_grow_with_history(tmp_path: Path) -> None:
    """Appending one message at 1,000 messages stores about what it stores at 10."""
    path = tmp_path / "t.sqlite"
    saver = SqliteSaver(path)
    query = (
        "SELECT (SELECT coalesce(sum(length(value) + length(field)), 0) FROM graphagent_data)"
        " + (SELECT coalesce(sum(length(record)), 0) FROM graphagent_checkpoints)"
    )
    parent = None
    sizes = {}
    for i in range(1001):
        w = write(parent, {"messages": ("append", [UserMessage(f"message {i}")])}, step=i)
        if i in (10, 1000):
            before = rows(path, query)[0][0]
        saver.put("t", w, expected_head=parent)
        if i in (10, 1000):
            sizes[i] = rows(path, query)[0][0] - before
        parent = w.id
    assert sizes[1000] <= sizes[10] * 1.5 + 16, sizes


def test_odd_thread_ids_are_kept_apart(tmp_path: Path) -> None:
    """Any str is a thread id: NUL, lone surrogates, separators; none collide."""
    saver = SqliteSaver(tmp_path / "t.sqlite")
    names = ["a", "a\x00b", "x\ud800y", "p:eu:1", "p|1", "ünï"]
    for name in names:
        chain(saver, name, 1)
    assert saver.threads() == sorted(names)
    assert saver.get("x\ud800y") is not None
    with pytest.raises(CheckpointError):
        saver.get("a", "bad\x00id")


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    """A file migrated by a newer graphagent is refused with what to do."""
    path = tmp_path / "t.sqlite"
    SqliteSaver(path).close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO graphagent_migrations VALUES (99, 0)")
    with pytest.raises(CheckpointError, match="newer than this version"):
        SqliteSaver(path)


async def test_async_saver_runs_a_graph_and_shares_the_file(tmp_path: Path) -> None:
    """AsyncSqliteSaver serves ainvoke; the sync saver reads what it wrote."""
    path = tmp_path / "t.sqlite"
    saver = AsyncSqliteSaver(path)
    g = StateGraph({"messages": AppendStrategy()})
    g.add_node("reply", lambda s: {"messages": [AssistantMessage(f"{len(s['messages'])}")]})
    app = g.add_edge(START, "reply").add_edge("reply", END).compile(saver=saver)
    await app.ainvoke({"messages": [UserMessage("hi")]}, {"thread_id": "t"})
    out = await app.ainvoke({"messages": [UserMessage("again")]}, {"thread_id": "t"})
    assert [m.text for m in out["messages"]] == ["hi", "1", "again", "3"]
    assert await saver.athreads() == ["t"]
    await saver.aclose()
    cp = SqliteSaver(path).get("t")
    assert cp is not None and len(cp.values["messages"]) == 4


def test_a_forked_child_opens_its_own_connection(tmp_path: Path) -> None:
    """A saver used before os.fork() works in the child: its own connection and lock."""
    import os

    saver = SqliteSaver(tmp_path / "t.sqlite")
    ids = chain(saver, "t", 1)
    inherited = saver._conn
    saver._guard.acquire()  # as if another thread of the parent were mid-call at the fork
    pid = os.fork()
    if pid == 0:  # the child: continue the thread, then leave without running teardown
        code = 1
        try:
            saver.put("t", write(ids[0], {"log": ("append", ["child"])}), expected_head=ids[0])
            code = 0 if saver._conn is not inherited else 2
        finally:
            os._exit(code)
    saver._guard.release()
    for _ in range(200):  # a child stuck on the parent's lock would never exit
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise AssertionError("the forked child hung on the saver")
    assert os.waitstatus_to_exitcode(status) == 0
    cp = saver.get("t")
    assert cp is not None and cp.values["log"] == [0, "child"]
