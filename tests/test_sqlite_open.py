"""Opening a SQLite file never harms it (issue 30 items 14 and 15).

A read-only store opens read-only: reads work, a write fails naming the file and the fix
(it used to fail to open at all). A reader (``create=False``) never creates tables or
switches the journal mode, and names a file that is not a graphagent store as such (it
used to add graphagent's tables to another application's database and switch it to WAL).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from checkpoint import (
    AsyncSqliteSaver,
    CheckpointError,
    CheckpointStorageError,
    CheckpointWrite,
    SqliteSaver,
    new_checkpoint_id,
)


def _write(n: int = 1, parent: str | None = None) -> CheckpointWrite:
    return CheckpointWrite(new_checkpoint_id(), parent, 0, {"n": ("set", n)}, (), {}, 0.0)


def _store(path: Path) -> str:
    """A graphagent store at ``path`` holding thread 't'; its head id."""
    w = _write()
    with SqliteSaver(path) as saver:
        saver.put("t", w, expected_head=None)
    return w.id


@contextmanager
def _read_only(*paths: Path) -> Iterator[None]:
    """``paths`` read-only for this process: mode 0444 (0555 for a folder), and for root
    (whom modes do not stop) the immutable attribute."""
    modes = {p: p.stat().st_mode & 0o777 for p in paths}
    for p in paths:
        os.chmod(p, 0o555 if p.is_dir() else 0o444)
    immutable: list[Path] = []
    try:
        if os.geteuid() == 0:
            for p in paths:
                made = subprocess.run(["chattr", "+i", str(p)], capture_output=True, check=False)
                if made.returncode != 0:
                    pytest.skip(f"root cannot make a file read-only here: chattr: {made.stderr!r}")
                immutable.append(p)
        yield
    finally:
        for p in immutable:
            subprocess.run(["chattr", "-i", str(p)], check=True)
        for p, mode in modes.items():
            os.chmod(p, mode)


def _locked(path: Path, folder: bool) -> tuple[Path, ...]:
    return (path, path.parent) if folder else (path,)


def _app_db(path: Path) -> None:
    """Another application's SQLite database (rollback journal, its own table)."""
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)")
        conn.execute("INSERT INTO orders (item) VALUES ('tea')")
    conn.close()


def _tables_and_journal(path: Path) -> tuple[list[str], str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
        return sorted(tables), journal
    finally:
        conn.close()


@pytest.mark.parametrize("folder", [False, True], ids=["file", "file_and_folder"])
def test_sqlite_sync_read_only_file_reads_and_refuses_writes_by_name(
    tmp_path: Path, folder: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """SqliteSaver on a read-only store (the file, or the file and its folder) reads its
    threads, logging that writes will fail; a write raises naming the file and how to make
    it writable; nothing changes."""
    path = tmp_path / "store" / "threads.sqlite"
    path.parent.mkdir()
    head = _store(path)
    before = path.read_bytes()
    with _read_only(*_locked(path, folder)):
        with caplog.at_level(logging.WARNING, logger="graphagent.checkpoint"):
            saver = SqliteSaver(path)
        assert "writes will fail" in caplog.text and str(path) in caplog.text
        with saver:
            assert saver.read_only
            cp = saver.get("t")
            assert cp is not None and cp.id == head and cp.values == {"n": 1}
            assert saver.threads() == ["t"] and saver.head("t") == head
            with pytest.raises(CheckpointStorageError, match="read-only") as caught:
                saver.put("t", _write(2, head), expected_head=head)
            assert str(path) in str(caught.value) and "writable" in str(caught.value)
            with pytest.raises(CheckpointStorageError, match="read-only"):
                saver.delete_thread("t")
        assert path.read_bytes() == before


@pytest.mark.parametrize("folder", [False, True], ids=["file", "file_and_folder"])
def test_sqlite_async_read_only_file_reads_and_refuses_writes_by_name(
    tmp_path: Path, folder: bool
) -> None:
    """AsyncSqliteSaver on a read-only store: the same, through the a-methods."""
    path = tmp_path / "store" / "threads.sqlite"
    path.parent.mkdir()
    head = _store(path)

    async def main() -> None:
        saver = AsyncSqliteSaver(path)
        try:
            cp = await saver.aget("t")
            assert cp is not None and cp.id == head
            with pytest.raises(CheckpointStorageError, match="read-only"):
                await saver.aput("t", _write(2, head), expected_head=head)
        finally:
            await saver.aclose()

    with _read_only(*_locked(path, folder)):
        asyncio.run(main())


@pytest.mark.parametrize("maker", [SqliteSaver, AsyncSqliteSaver, SqliteSaver.from_path])
def test_sqlite_reader_leaves_another_applications_database_alone(
    tmp_path: Path, maker: type[SqliteSaver]
) -> None:
    """create=False on another application's database (sync and async savers, from_path)
    raises "not a graphagent store" and adds no table nor switches it to WAL."""
    path = tmp_path / "app.db"
    _app_db(path)
    before = _tables_and_journal(path)
    assert before == (["orders"], "delete")
    with pytest.raises(CheckpointError, match="not a graphagent store") as caught:
        maker(path, create=False)
    assert str(path) in str(caught.value)
    assert _tables_and_journal(path) == before


def test_sqlite_reader_names_a_file_that_is_not_a_database(tmp_path: Path) -> None:
    """create=False on a text file says it is not a SQLite database, and leaves it alone."""
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\n" * 100)
    with pytest.raises(CheckpointError, match="not a SQLite database") as caught:
        SqliteSaver(path, create=False)
    assert str(path) in str(caught.value)
    assert path.read_text() == "shopping list\n" * 100


def test_sqlite_reader_creates_no_file(tmp_path: Path) -> None:
    """create=False on a missing file raises naming it and creates neither it nor its folder."""
    path = tmp_path / "missing" / "threads.sqlite"
    for maker in (SqliteSaver, SqliteSaver.from_path):
        with pytest.raises(CheckpointStorageError, match="no SQLite file") as caught:
            maker(path, create=False)
        assert str(path) in str(caught.value)
    assert not path.parent.exists()


def test_sqlite_reader_reads_and_writes_a_graphagent_store(tmp_path: Path) -> None:
    """create=False on a graphagent store reads it and may write to it, changing nothing on
    open."""
    path = tmp_path / "threads.sqlite"
    head = _store(path)
    before = _tables_and_journal(path)
    with SqliteSaver(path, create=False) as saver:
        assert not saver.read_only
        assert saver.head("t") == head
        saver.put("t", _write(2, head), expected_head=head)
    assert _tables_and_journal(path) == before


def test_sqlite_reader_reads_a_store_of_an_older_schema_and_says_how_to_migrate(
    tmp_path: Path,
) -> None:
    """create=False on a store of schema 1 (before the delete marker's table) reads it,
    changes nothing, and a delete says to open it once with SqliteSaver(path)."""
    path = tmp_path / "threads.sqlite"
    head = _store(path)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE graphagent_deleted")
        conn.execute("DELETE FROM graphagent_migrations WHERE version > 1")
    conn.close()
    before = _tables_and_journal(path)
    with SqliteSaver(path, create=False) as saver:
        assert saver.head("t") == head
        with pytest.raises(CheckpointStorageError, match=r"older schema.*SqliteSaver\(path\)"):
            saver.delete_thread("t")
        assert saver.head("t") == head
    assert _tables_and_journal(path) == before


def test_graphagent_threads_on_another_applications_sqlite_file_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`graphagent threads list --db app.db` (another application's database) exits 2 with
    one line naming it "not a graphagent store", and adds no table nor switches it to WAL."""
    from graphagent.cli import main

    path = tmp_path / "app.db"
    _app_db(path)
    before = _tables_and_journal(path)
    assert main(["threads", "list", "--db", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not a graphagent store" in err and err.count("\n") == 1, err
    assert _tables_and_journal(path) == before
