"""``PostgresSaver``, the sync saver (the package's face re-exports it)."""

from __future__ import annotations

import functools
from contextlib import suppress
from typing import TYPE_CHECKING, Any, TypeVar

from checkpoint._program import Program, ProgramSaver, drive
from checkpoint._sql import SqlLogic
from checkpoint._sqlschema import Stmt
from checkpoint.postgres._common import (
    Attempt,
    PostgresBase,
    errors,
    first_connection,
    storage_error,
)
from checkpoint.postgres._cursors import cursor_for, let_go, packed

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool  # noqa: F401 (the quoted pool type below)

__all__ = ["PostgresSaver"]

T = TypeVar("T")


class PostgresSaver(PostgresBase["ConnectionPool[Any]"], ProgramSaver[SqlLogic]):
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

    _pool_class = "ConnectionPool"
    _open_pool = True

    def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        if not self._checked:
            self._execute(self._check_version(), False, action)
            self._checked = True
        return self._execute(program, write, action)

    def _execute(self, program: Program[T], write: bool | None, action: str) -> T:
        """Run ``program`` in a write or a snapshot-read transaction, or (``None``: a
        program of statements that are each whole on their own) in none."""
        try:
            if not self._checked:
                first_connection(self.pool, action)
            attempt = Attempt(self.pool, self._take())
            try:
                return self._on(attempt, program, write)
            finally:
                if attempt.conn is not None:
                    self.pool.putconn(attempt.conn)
        except errors() as exc:
            raise storage_error(action, exc) from exc

    def _take(self) -> psycopg.Connection[Any]:
        conn: psycopg.Connection[Any] = self.pool.getconn()
        if not conn.autocommit:
            conn.autocommit = True  # transactions are begun here, one per program
        return conn

    def _on(self, attempt: Attempt, program: Program[T], write: bool | None) -> T:
        take = self._take

        def perform(op: Stmt | tuple[Stmt, ...]) -> Any:
            return attempt.run(functools.partial(_perform, op=op), take)

        if write is None:
            return drive(program, perform)
        dialect = self.logic.dialect
        opening = dialect.begin_write if write else dialect.begin_read
        attempt.run(lambda conn: conn.execute(opening), take)
        try:
            result = drive(program, perform)
        except BaseException:
            _rollback(attempt.conn)
            raise
        attempt.conn.execute("COMMIT")
        return result

    def setup(self) -> int:
        """Create the tables, or migrate them to this version; safe to repeat or race.

        Returns:
            the schema version now in place.
        """
        version = self._execute(self.logic.setup(), True, "setting up the tables")
        self._checked = True
        return version

    def purge_expired(self) -> int:
        """Delete the threads whose ttl has passed (writes do this now and then); how many."""
        return self._do(self._purge_call())

    def close(self) -> None:
        """Close the pool's connections."""
        self.pool.close()


def _rollback(conn: psycopg.Connection[Any]) -> None:
    """Roll back after a failed program; a broken connection is the pool's to discard."""
    with suppress(*errors()):
        conn.execute("ROLLBACK")


def _perform(conn: psycopg.Connection[Any], *, op: Stmt | tuple[Stmt, ...]) -> Any:
    if isinstance(op, tuple):
        return [_execute_stmt(conn, stmt) for stmt in op]
    return _execute_stmt(conn, op)


def _execute_stmt(conn: psycopg.Connection[Any], stmt: Stmt) -> Any:
    if stmt.many:
        conn.cursor(binary=True).executemany(stmt.sql, stmt.params)
        return None
    cur = cursor_for(conn, stmt.sql)
    cur.execute(stmt.sql, packed(stmt.params))
    if stmt.result == "rows":
        rows = cur.fetchall()
        let_go(conn, stmt.sql, len(rows))
        return rows
    return cur.rowcount if stmt.result == "count" else None
