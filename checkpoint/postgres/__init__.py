"""``PostgresSaver``: threads in PostgreSQL tables, through a psycopg 3 connection pool.

Install with ``pip install 'graphagent[postgres]'``. The tables (``graphagent_*``, in the
schema you name) are created by an explicit, idempotent :meth:`PostgresSaver.setup`, whose
migrations are numbered; every saver checks the schema version before its first use.
Each step lands whole or not at all, as one ``WITH`` statement (or, with ``ttl`` or
``keep_last``, one transaction): a conditional ``UPDATE`` of the thread's head row (a
conditional ``INSERT`` for a new thread) is the head check, so of two racing writers one
lands and the other gets ``CheckpointConflictError`` with nothing written. Values are
msgpack (no pickle) in ``BYTEA`` columns; a step writes only what it changed.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext, suppress
from typing import TYPE_CHECKING, Any, TypeVar

from typing_extensions import Self

from checkpoint._sql import SqlLogic
from checkpoint._sqlschema import Program, Stmt
from checkpoint.base import (
    Checkpoint,
    CheckpointHistory,
    CheckpointSaver,
    CheckpointWrite,
    PendingWrite,
)
from checkpoint.locks import LockPolicy, hold
from checkpoint.postgres._common import SETUP_HINT, dialect, errors, require, storage_error
from checkpoint.postgres.aio import AsyncPostgresSaver
from checkpoint.serde import Serde

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["AsyncPostgresSaver", "PostgresSaver"]

T = TypeVar("T")


class PostgresSaver(CheckpointSaver):
    """Keep threads in PostgreSQL, so any process that reaches the database resumes them.

    Args:
        pool: an open ``psycopg_pool.ConnectionPool`` (see :meth:`from_url`). The saver
            begins its own transactions, so it puts the connections it takes in
            autocommit mode.
        schema: the schema holding the tables (``setup()`` creates it if missing).
        ttl: seconds after a thread's last write that it expires (``None``: never).
        keep_last: keep only this many newest checkpoints per thread.
        serde: the codec (default: the process-wide one).
        lock_timeout: opt in to one run at a time per thread (see ``RedisSaver``).
        lock_lease: seconds a run lock outlives a crashed holder.

    Example::

        saver = PostgresSaver.from_url("postgresql://app@db/app")
        saver.setup()  # once per database (and after upgrades); safe to repeat
        app = graph.compile(saver=saver)
    """

    def __init__(
        self,
        pool: ConnectionPool[Any],
        *,
        schema: str = "public",
        ttl: float | None = None,
        keep_last: int | None = None,
        serde: Serde | None = None,
        lock_timeout: float | None = None,
        lock_lease: float = 30.0,
    ) -> None:
        self.pool = pool
        self.schema = schema
        self.logic = SqlLogic(dialect(schema), ttl=ttl, keep_last=keep_last, serde=serde)
        self.lock_policy = LockPolicy.optional(lock_timeout, lock_lease)
        self._checked = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        schema: str = "public",
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
        **options: Any,
    ) -> Self:
        """Connect a pool to ``url`` (``postgresql://user@host:5432/db``), lazily.

        Args:
            url: a libpq connection string or URL.
            schema: the schema holding the tables.
            min_size: connections the pool keeps open.
            max_size: connections it may open.
            timeout: seconds to wait for a connection before ``CheckpointStorageError``.
            options: the constructor's other keyword arguments (``ttl``, ``keep_last``, ...).
        """
        _, psycopg_pool = require()
        pool = psycopg_pool.ConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True},
            # one cheap round trip per checkout, so a connection the server dropped
            # (restart, failover, idle timeout) is replaced instead of failing a step
            check=psycopg_pool.ConnectionPool.check_connection,
            open=True,
        )
        return cls(pool, schema=schema, **options)

    def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        if not self._checked:
            where = f"PostgreSQL schema {self.schema!r}"
            self._execute(self.logic.check_version(where, SETUP_HINT), False, action)
            self._checked = True
        return self._execute(program, write, action)

    def _execute(self, program: Program[T], write: bool | None, action: str) -> T:
        """Run ``program`` in a write or a snapshot-read transaction, or (``None``: a
        program of statements that are each whole on their own) in none."""
        try:
            with self.pool.connection() as conn:
                if not conn.autocommit:
                    conn.autocommit = True  # transactions are begun here, one per program
                if write is None:
                    return drive(program, conn)
                dialect = self.logic.dialect
                conn.execute(dialect.begin_write if write else dialect.begin_read)
                try:
                    result = drive(program, conn)
                except BaseException:
                    rollback(conn)
                    raise
                conn.execute("COMMIT")
                return result
        except errors() as exc:
            raise storage_error(action, exc) from exc

    def setup(self) -> int:
        """Create the tables, or migrate them to this version; safe to repeat or race.

        Returns:
            the schema version now in place.
        """
        version = self._execute(self.logic.setup(), True, "setting up the tables")
        self._checked = True
        return version

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Store ``write`` as the new head, atomically (see ``CheckpointSaver.put``)."""
        self.put_many(thread_id, (write,), expected_head=expected_head)

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes as one step, atomically (see ``CheckpointSaver.put_many``)."""
        action = f"writing checkpoint {writes[-1].id if writes else ''} of thread {thread_id!r}"
        if self.logic.one_statement_put:
            program = self.logic.put_one_statement(thread_id, writes, expected_head)
            self._run(program, write=None, action=action)
        else:
            program = self.logic.put(thread_id, writes, expected_head)
            self._run(program, write=True, action=action)
        if self.logic.purge_due():
            self.purge_expired()

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        action = f"saving pending writes of thread {thread_id!r}"
        program = self.logic.put_writes(thread_id, checkpoint_id, writes)
        self._run(program, write=True, action=action)

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state, from one snapshot."""
        action = f"reading thread {thread_id!r}"
        return self._run(self.logic.get(thread_id, checkpoint_id), write=False, action=action)

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Checkpoints newest first."""
        return builtins.list(self.history(thread_id, limit=limit, before=before))

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> CheckpointHistory:
        """Checkpoints newest first, read in one transaction, states built on read."""
        action = f"listing thread {thread_id!r}"
        program = self.logic.history(thread_id, limit, before)
        return self._run(program, write=False, action=action)

    def delete_thread(self, thread_id: str) -> None:
        """Remove everything stored for the thread."""
        action = f"deleting thread {thread_id!r}"
        self._run(self.logic.delete(thread_id), write=True, action=action)

    def head(self, thread_id: str) -> str | None:
        """The thread's head id, without loading its state."""
        action = f"reading thread {thread_id!r}"
        return self._run(self.logic.head(thread_id), write=None, action=action)

    def threads(self) -> builtins.list[str]:
        """Every thread id in the schema."""
        return self._run(self.logic.threads(), write=None, action="listing threads")

    def purge_expired(self) -> int:
        """Delete the threads whose ttl has passed (writes do this now and then); how many."""
        return self._run(self.logic.purge_expired(), write=True, action="purging expired threads")

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        """The thread's run lock (a no-op unless made with ``lock_timeout=``)."""
        if self.lock_policy is None:
            return nullcontext()
        take, renew, release = self.logic.lock_programs(thread_id, self.lock_policy.lease)
        action = f"locking thread {thread_id!r}"

        def run(program: Callable[[str], Program[T]]) -> Callable[[str], T]:
            return lambda token: self._run(program(token), write=None, action=action)

        return hold(self.lock_policy, thread_id, run(take), run(renew), run(release))

    def close(self) -> None:
        """Close the pool's connections."""
        self.pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def rollback(conn: psycopg.Connection[Any]) -> None:
    """Roll back after a failed program; a broken connection is the pool's to discard."""
    with suppress(*errors()):
        conn.execute("ROLLBACK")


def drive(program: Program[T], conn: psycopg.Connection[Any]) -> T:
    """Run ``program``'s statements on ``conn`` (inside the caller's transaction)."""
    send: Any = None
    while True:
        try:
            op = program.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        stmts = op if isinstance(op, tuple) else (op,)
        cursors = [_send(conn, stmt) for stmt in stmts]
        results = [_receive(cur, stmt) for cur, stmt in zip(cursors, stmts, strict=True)]
        send = results if isinstance(op, tuple) else results[0]


def _send(conn: psycopg.Connection[Any], stmt: Stmt) -> psycopg.Cursor[Any]:
    cur = conn.cursor()
    if stmt.many:
        cur.executemany(stmt.sql, stmt.params)
    else:
        cur.execute(stmt.sql, stmt.params)
    return cur


def _receive(cur: psycopg.Cursor[Any], stmt: Stmt) -> Any:
    if stmt.result == "rows":
        return cur.fetchall()
    return cur.rowcount if stmt.result == "count" else None
