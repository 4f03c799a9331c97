"""``SqliteSaver``: threads in one SQLite file, durable with nothing to run beside the program.

Built on Python's own ``sqlite3``. The file is in WAL mode, so readers never wait for a
writer. A file this process cannot write is opened read-only (writes then fail, naming
it); ``create=False`` opens an existing store without creating or changing anything.
Each step is one ``BEGIN IMMEDIATE`` transaction that checks the thread's head, writes
the step's record and only the values and items it changed (see ``_layout``),
moves the head and drops the parent's pending writes; it lands whole or not at all.
Several processes may share one file: a writer waits up to ``timeout`` seconds for
another's transaction, then gets ``ThreadLockedError``; a writer whose expected head
moved gets ``CheckpointConflictError``, as on every other saver.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import logging
import os
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from typing_extensions import Self

from checkpoint._program import Program, ProgramSaver, drive
from checkpoint._sql import SqlLogic
from checkpoint._sqlschema import LATEST, Dialect, Stmt
from checkpoint.errors import CheckpointError, CheckpointStorageError, ThreadLockedError
from checkpoint.locks import LockPolicy
from checkpoint.serde import Serde

__all__ = ["AsyncSqliteSaver", "SqliteSaver"]

_log = logging.getLogger("graphagent.checkpoint")

T = TypeVar("T")

_SQLITE = Dialect(
    name="SQLite",
    param="?",
    blob="BLOB",
    real="REAL",
    bigint="INTEGER",
    now="((julianday('now') - 2440587.5) * 86400.0)",
    tables="",
    begin_read="BEGIN",
    begin_write="BEGIN IMMEDIATE",
    table_exists="SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?",
    extra_ddl=" WITHOUT ROWID",
    returning=sqlite3.sqlite_version_info >= (3, 35, 0),
    item_blocks=True,
)


class SqliteSaver(ProgramSaver[SqlLogic]):
    """Keep threads in a SQLite file, so a conversation survives restarts without a server.

    Args:
        path: the database file (created with its tables if missing), or ``":memory:"``
            for a private in-memory database.
        ttl: seconds after a thread's last write that it expires (``None``: never).
            Expired threads read as absent and are deleted by later writes.
        keep_last: keep only this many newest checkpoints per thread.
        serde: the codec (default: the process-wide one).
        timeout: seconds a write waits for another connection's transaction on the
            file before ``ThreadLockedError`` (SQLite's busy timeout).
        lock_timeout: opt in to one run at a time per thread (see ``RedisSaver``).
        lock_lease: seconds a run lock outlives a crashed holder.
        create: create the file and its tables if missing (and switch it to WAL). With
            ``False`` (for tools that only look), the file must exist and hold graphagent's
            tables: nothing is created, and neither the tables nor the journal mode of the
            file change on open. Either way a file this process cannot write (or whose
            folder it cannot write: SQLite keeps its ``-wal`` and ``-shm`` files there) is
            opened read-only: reads work, and a write raises ``CheckpointStorageError``.

    Attributes:
        read_only: the file was opened read-only (see ``create``).

    Example:
        >>> from checkpoint import SqliteSaver
        >>> saver = SqliteSaver(":memory:")
        >>> saver.get("no-such-thread") is None
        True
    """

    # head, threads and the lock's statements in transactions too, as every other call:
    # BEGIN costs no round trip here
    _small_read = False
    _lock_write = True

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        ttl: float | None = None,
        keep_last: int | None = None,
        serde: Serde | None = None,
        timeout: float = 5.0,
        lock_timeout: float | None = None,
        lock_lease: float = 30.0,
        create: bool = True,
    ) -> None:
        self.path = os.fspath(path)
        self.timeout = timeout
        self.logic = SqlLogic(_SQLITE, ttl=ttl, keep_last=keep_last, serde=serde)
        self.lock_policy = LockPolicy.optional(lock_timeout, lock_lease)
        self._guard = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        self._create = create
        # fixed now: a connection opened again later (after close() or a fork) must open
        # this file whatever the working folder is then
        self._uri = "" if self.path == ":memory:" else Path(self.path).absolute().as_uri()
        self.read_only = False
        self._why_read_only = ""
        self._schema = LATEST  # what _check_store finds, for a reader
        if self.path != ":memory:":
            self._check_path(create)
        if create and not self.read_only:
            self._run(self.logic.setup(), write=True, action="creating its tables")
        else:
            self._run(self._check_store(), write=False, action="opening it")

    def _check_path(self, create: bool) -> None:
        """Refuse a path that cannot be opened as asked; note a file this process cannot
        write (it is then opened read-only)."""
        file, folder = Path(self.path), Path(self.path).parent
        if not create and not file.is_file():
            raise CheckpointStorageError(
                f"no SQLite file {self.path!r} (create=False opens an existing graphagent "
                "store only; check the path)"
            )
        if not folder.is_dir():
            raise CheckpointStorageError(
                f"cannot open SQLite database {self.path!r}: its folder does not exist "
                "(create it, or use SqliteSaver.from_path, which does)"
            )
        if not file.exists():
            return
        if not os.access(file, os.W_OK):
            self.read_only, self._why_read_only = True, "the file is not writable"
        elif not os.access(folder, os.W_OK):
            # SQLite writes its -wal and -shm files beside the database
            self.read_only, self._why_read_only = True, "its folder is not writable"
        if self.read_only:
            _log.warning(
                "SQLite database %r is read-only for this process (%s): opened for reading; "
                "writes will fail",
                self.path,
                self._why_read_only,
            )

    def _check_store(self) -> Program[None]:
        """Refuse a file that holds no graphagent store, or one of another schema version."""
        found = yield Stmt(_SQLITE.table_exists, ("graphagent_migrations",))
        if not found:
            raise CheckpointError(
                f"SQLite file {self.path!r} is not a graphagent store (it has no graphagent "
                "tables): check the path. SqliteSaver(path) with create=True adds graphagent's "
                "tables beside the file's own"
            )
        rows = yield Stmt("SELECT max(version) FROM graphagent_migrations")
        self._schema = int(rows[0][0] or 0)
        if self._schema > LATEST:
            raise CheckpointError(
                f"SQLite file {self.path!r} holds graphagent tables at schema version "
                f"{self._schema}, newer than this version of graphagent knows ({LATEST}): "
                "upgrade graphagent"
            )
        # an older schema is read as it is (a reader changes nothing); a write that needs
        # a newer table says how to migrate (see _error)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], **options: Any) -> Self:
        """Open (or create) the database at ``path``, creating missing folders on the way.

        ``options`` are the constructor's keyword arguments; with ``create=False`` no
        folder is made.
        """
        if os.fspath(path) != ":memory:" and options.get("create", True):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        return cls(path, **options)

    # -- the driver ----------------------------------------------------------------

    def _connection(self) -> sqlite3.Connection:
        # A connection must not cross os.fork(): a child opens its own (see _run).
        if self._conn is None:
            conn = sqlite3.connect(
                self._target(),
                timeout=self.timeout,
                isolation_level=None,
                check_same_thread=False,
                uri=self.path != ":memory:",
            )
            if self._create and not self.read_only and self.path != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
            # WAL + NORMAL: a crash of the program never loses a committed step; a power
            # cut may lose the last few, never leaving one half-written.
            conn.execute("PRAGMA synchronous=NORMAL")
            self._conn, self._pid = conn, os.getpid()
        return self._conn

    def _target(self) -> str:
        """What ``sqlite3.connect`` opens: a URI, so that a reader never creates a file."""
        if self.path == ":memory:":
            return self.path
        uri = self._uri
        if not self.read_only:
            return uri if self._create else f"{uri}?mode=rw"
        shm = Path(f"{self.path}-shm")
        if os.access(Path(self.path).parent, os.W_OK) or shm.exists():
            return f"{uri}?mode=ro"
        # A WAL store in a read-only folder has no -shm file to coordinate readers through;
        # SQLite opens it only as immutable (no writer can be changing it: none can write)
        return f"{uri}?mode=ro&immutable=1"

    def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        if self._pid and self._pid != os.getpid():
            # a forked child: the parent's lock may have been held by one of its threads
            self._guard, self._conn = threading.Lock(), None
        if self.read_only and write is not False:
            raise self._read_only_error(action)
        with self._guard:
            try:
                conn = self._connection()
                if write is not None:  # None: each statement commits on its own
                    conn.execute(_SQLITE.begin_write if write else _SQLITE.begin_read)
                try:
                    result = drive(program, functools.partial(_perform, conn))
                    if write is not None:
                        conn.execute("COMMIT")
                    return result
                except BaseException:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
            except sqlite3.Error as exc:
                raise self._error(action, exc) from exc

    def _read_only_error(self, action: str) -> CheckpointStorageError:
        why = self._why_read_only or "SQLite refused to write it"
        return CheckpointStorageError(
            f"SQLite database {self.path!r} is read-only for this process ({why}), so it "
            f"was opened for reading and cannot be written while {action}. Make the file and "
            "its folder writable by this user (chmod u+w), or copy the file to a writable "
            "place and open the copy"
        )

    def _error(self, action: str, exc: sqlite3.Error) -> CheckpointError:
        text = str(exc)
        code = getattr(exc, "sqlite_errorname", "")  # Python 3.11+; the text before that
        if code.startswith("SQLITE_READONLY") or "readonly database" in text:
            return self._read_only_error(action)
        if "no such table: graphagent_" in text and self._schema < LATEST:
            return CheckpointStorageError(
                f"SQLite file {self.path!r} holds graphagent tables of an older schema "
                f"(version {self._schema}; this version of graphagent writes {LATEST}), opened "
                f"without changing them (create=False or read-only), so {action} fails. Open "
                "it once with SqliteSaver(path) (writable) to migrate it"
            )
        if code == "SQLITE_NOTADB" or "file is not a database" in text:
            return CheckpointStorageError(
                f"{self.path!r} is not a SQLite database, so not a graphagent store: check the path"
            )
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return ThreadLockedError(
                f"SQLite database {self.path!r} stayed locked by another writer for "
                f"{self.timeout:g} s (timeout) while {action}; nothing was written. Try "
                "again, or raise timeout"
            )
        return CheckpointStorageError(
            f"SQLite failed while {action} in {self.path!r}: {type(exc).__name__}: {text}"
        )

    def purge_expired(self) -> int:
        """Delete the threads whose ttl has passed (writes do this now and then); how many."""
        return self._do(self._purge_call())

    def close(self) -> None:
        """Close the connection (a later call opens a new one)."""
        with self._guard:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


def _perform(conn: sqlite3.Connection, op: Stmt | tuple[Stmt, ...]) -> Any:
    if isinstance(op, tuple):
        return [_execute(conn, stmt) for stmt in op]
    return _execute(conn, op)


def _execute(conn: sqlite3.Connection, stmt: Stmt) -> Any:
    if stmt.many:
        conn.executemany(stmt.sql, stmt.params)
        return None
    cur = conn.execute(stmt.sql, stmt.params)
    if stmt.result == "rows":
        return cur.fetchall()
    return cur.rowcount if stmt.result == "count" else None


class AsyncSqliteSaver(SqliteSaver):
    """``SqliteSaver`` for async services: its ``a``-methods run on a worker thread of its own.

    Same file format (the two read each other's threads); the sync methods work too.
    Close it with :meth:`aclose` (a later call opens it again).
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", **options: Any) -> None:
        super().__init__(path, **options)
        self._executor: ThreadPoolExecutor | None = None

    async def _to_thread(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        loop = asyncio.get_running_loop()
        if self._executor is None:  # first use, or used again after aclose()
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="graphagent-sqlite")
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def ahead(self, thread_id: str) -> str | None:
        """Async :meth:`head`."""
        # head is one query; the default goes through aget, a whole load
        return await self._to_thread(self.head, thread_id)

    async def athreads(self) -> builtins.list[str]:
        """Async :meth:`threads`."""
        return await self._to_thread(self.threads)

    async def aclose(self) -> None:
        """Close the connection and the worker thread."""
        await self._to_thread(self.close)
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)
