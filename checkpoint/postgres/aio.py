"""``AsyncPostgresSaver``: ``PostgresSaver`` on psycopg's asyncio connection pool."""

from __future__ import annotations

import asyncio
import functools
from contextlib import suppress
from typing import TYPE_CHECKING, Any, TypeVar

from checkpoint._program import AsyncOnly, AsyncProgramSaver, Program, adrive
from checkpoint._sql import SqlLogic
from checkpoint._sqlschema import Stmt
from checkpoint.postgres._common import (
    Attempt,
    PostgresBase,
    afirst_connection,
    errors,
    storage_error,
)
from checkpoint.postgres._cursors import cursor_for, let_go, packed

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import AsyncConnectionPool  # noqa: F401 (the quoted pool type below)

__all__ = ["AsyncPostgresSaver"]

T = TypeVar("T")


class AsyncPostgresSaver(
    AsyncOnly,
    PostgresBase["AsyncConnectionPool[Any]"],
    AsyncProgramSaver[SqlLogic],
    sync_twin="PostgresSaver",
):
    """``PostgresSaver`` for async services, over a ``psycopg_pool.AsyncConnectionPool``.

    Same tables and layout as :class:`~checkpoint.PostgresSaver` (the two read each other's
    threads). Its sync methods raise ``TypeError``; use the ``a``-twins, :meth:`asetup`
    and :meth:`aclose`.

    Args:
        pool: the async pool (see :meth:`from_url`); opened on first use if it is not.
            The saver begins its own transactions, so it puts the connections it takes
            in autocommit mode.
        schema: the schema holding the tables.
        ttl: seconds after a thread's last write that it expires (``None``: never).
        keep_last: keep only this many newest checkpoints per thread.
        serde: the codec (default: the process-wide one).
        lock_timeout: opt in to one run at a time per thread.
        lock_lease: seconds a run lock outlives a crashed holder.
    """

    _pool_class = "AsyncConnectionPool"
    _open_pool = False  # an async pool opens inside a running loop: on first use

    @functools.cached_property
    def _opening(self) -> asyncio.Lock:
        """Held while the pool opens, so that many first calls at once open it once."""
        return asyncio.Lock()

    async def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        if not self._checked:
            await self._execute(self._check_version(), False, action)
            self._checked = True
        return await self._execute(program, write, action)

    async def _execute(self, program: Program[T], write: bool | None, action: str) -> T:
        """See ``PostgresSaver._execute``."""
        try:
            if self.pool.closed:
                async with self._opening:
                    if self.pool.closed:
                        await self.pool.open()
            if not self._checked:
                await afirst_connection(self.pool, action)
            attempt = Attempt(self.pool, await self._take())
            try:
                return await self._on(attempt, program, write)
            finally:
                if attempt.conn is not None:
                    await self.pool.putconn(attempt.conn)
        except errors() as exc:
            raise storage_error(action, exc) from exc

    async def _take(self) -> psycopg.AsyncConnection[Any]:
        conn: psycopg.AsyncConnection[Any] = await self.pool.getconn()
        if not conn.autocommit:
            await conn.set_autocommit(True)
        return conn

    async def _on(self, attempt: Attempt, program: Program[T], write: bool | None) -> T:
        take = self._take

        async def perform(op: Stmt | tuple[Stmt, ...]) -> Any:
            return await attempt.arun(functools.partial(_perform, op=op), take)

        if write is None:
            return await adrive(program, perform)
        dialect = self.logic.dialect
        opening = dialect.begin_write if write else dialect.begin_read
        await attempt.arun(lambda conn: conn.execute(opening), take)
        try:
            result = await adrive(program, perform)
        except BaseException:
            with suppress(*errors()):
                await attempt.conn.execute("ROLLBACK")
            raise
        await attempt.conn.execute("COMMIT")
        return result

    async def asetup(self) -> int:
        """Create the tables, or migrate them to this version; safe to repeat or race."""
        version = await self._execute(self.logic.setup(), True, "setting up the tables")
        self._checked = True
        return version

    async def apurge_expired(self) -> int:
        """Delete the threads whose ttl has passed (writes do this now and then); how many."""
        return await self._ado(self._purge_call())

    async def aclose(self) -> None:
        """Close the pool's connections."""
        await self.pool.close()


async def _perform(conn: psycopg.AsyncConnection[Any], *, op: Stmt | tuple[Stmt, ...]) -> Any:
    if isinstance(op, tuple):
        return [await _execute_stmt(conn, stmt) for stmt in op]
    return await _execute_stmt(conn, op)


async def _execute_stmt(conn: psycopg.AsyncConnection[Any], stmt: Stmt) -> Any:
    if stmt.many:
        await conn.cursor(binary=True).executemany(stmt.sql, stmt.params)
        return None
    cur = cursor_for(conn, stmt.sql)
    await cur.execute(stmt.sql, packed(stmt.params))
    if stmt.result == "rows":
        rows = await cur.fetchall()
        let_go(conn, stmt.sql, len(rows))
        return rows
    return cur.rowcount if stmt.result == "count" else None
