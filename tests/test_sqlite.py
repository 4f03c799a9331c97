"""SqliteSaver beyond the shared conformance suite: the file, WAL, busy writers, retention,
schema versions, and what a step writes."""

from __future__ import annotations

import sqlite3
import threading
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


def test_memory_database_and_from_path(tmp_path: Path) -> None:
    """':memory:' works; from_path creates folders (and a WAL file); a missing folder is named."""
    mem = SqliteSaver(":memory:")
    chain(mem, "t", 2)
    cp = mem.get("t")
    assert cp is not None and cp.values == {"log": [0, 1]}
    deep = tmp_path / "a" / "b" / "threads.sqlite"
    with pytest.raises(CheckpointStorageError, match="folder does not exist"):
        SqliteSaver(deep)
    with SqliteSaver.from_path(deep) as saver:
        chain(saver, "t", 1)
    assert deep.is_file() and rows(deep, "PRAGMA journal_mode") == [("wal",)]


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
    assert await saver.athreads() == ["t"]  # used again after aclose(): it reopens
    await saver.aclose()
    cp = SqliteSaver(path).get("t")
    assert cp is not None and len(cp.values["messages"]) == 4


async def test_every_async_method_runs_on_the_saver_s_own_thread(tmp_path: Path) -> None:
    """Each a-method of AsyncSqliteSaver runs its sync twin on the saver's one worker
    thread, never on asyncio's shared pool."""
    seen: dict[str, str] = {}

    class Recording(AsyncSqliteSaver):
        pass

    names = ["put", "put_many", "put_writes", "get", "history", "delete_thread", "head"]
    for name in [*names, "threads"]:

        def record(self: Any, *args: Any, __name: str = name, **kwargs: Any) -> Any:
            seen.setdefault(__name, threading.current_thread().name)
            return getattr(AsyncSqliteSaver, __name)(self, *args, **kwargs)

        setattr(Recording, name, record)
    saver = Recording(tmp_path / "t.sqlite")
    first, second = write(None, {"log": ("append", [1])}), write(None, {})
    await saver.aput("t", first, expected_head=None)
    second.parent_id = first.id
    await saver.aput_many("t", [second], expected_head=first.id)
    await saver.aput_writes("t", second.id, [])
    assert (await saver.aget("t")) is not None
    assert [c.id for c in await saver.alist("t")] == [second.id, first.id]
    assert len(await saver.ahistory("t")) == 2
    assert await saver.ahead("t") == second.id
    assert await saver.athreads() == ["t"]
    await saver.adelete_thread("t")
    await saver.aclose()
    assert sorted(seen) == sorted([*names, "threads"])
    assert {thread.split("_")[0] for thread in seen.values()} == {"graphagent-sqlite"}


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
