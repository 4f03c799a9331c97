"""``AsyncPostgresSaver``: ``PostgresSaver`` on psycopg's asyncio connection pool."""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext, suppress
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
from checkpoint.locks import LockPolicy, ahold
from checkpoint.postgres._common import SETUP_HINT, dialect, errors, require, storage_error
from checkpoint.serde import Serde

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import AsyncConnectionPool

__all__ = ["AsyncPostgresSaver"]

T = TypeVar("T")


class AsyncPostgresSaver(CheckpointSaver):
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

    def __init__(
        self,
        pool: AsyncConnectionPool[Any],
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
        self._opening = asyncio.Lock()

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
        """A saver on a new async pool for ``url``, opened on first use.

        Takes the same arguments as ``PostgresSaver.from_url``.
        """
        _, psycopg_pool = require()
        pool = psycopg_pool.AsyncConnectionPool(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True},
            # one cheap round trip per checkout, so a connection the server dropped
            # (restart, failover, idle timeout) is replaced instead of failing a step
            check=psycopg_pool.AsyncConnectionPool.check_connection,
            open=False,
        )
        return cls(pool, schema=schema, **options)

    async def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        if not self._checked:
            where = f"PostgreSQL schema {self.schema!r}"
            await self._execute(self.logic.check_version(where, SETUP_HINT), False, action)
            self._checked = True
        return await self._execute(program, write, action)

    async def _execute(self, program: Program[T], write: bool | None, action: str) -> T:
        """See ``PostgresSaver._execute``."""
        try:
            if self.pool.closed:
                async with self._opening:  # many first calls at once open it once
                    if self.pool.closed:
                        await self.pool.open()
            async with self.pool.connection() as conn:
                if not conn.autocommit:
                    await conn.set_autocommit(True)
                if write is None:
                    return await adrive(program, conn)
                dialect = self.logic.dialect
                await conn.execute(dialect.begin_write if write else dialect.begin_read)
                try:
                    result = await adrive(program, conn)
                except BaseException:
                    with suppress(*errors()):
                        await conn.execute("ROLLBACK")
                    raise
                await conn.execute("COMMIT")
                return result
        except errors() as exc:
            raise storage_error(action, exc) from exc

    async def asetup(self) -> int:
        """Create the tables, or migrate them to this version; safe to repeat or race."""
        version = await self._execute(self.logic.setup(), True, "setting up the tables")
        self._checked = True
        return version

    async def aput(
        self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None
    ) -> None:
        """Store ``write`` as the new head in one transaction."""
        await self.aput_many(thread_id, (write,), expected_head=expected_head)

    async def aput_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes as one step, in one transaction."""
        action = f"writing checkpoint {writes[-1].id if writes else ''} of thread {thread_id!r}"
        if self.logic.one_statement_put:
            program = self.logic.put_one_statement(thread_id, writes, expected_head)
            await self._run(program, write=None, action=action)
        else:
            program = self.logic.put(thread_id, writes, expected_head)
            await self._run(program, write=True, action=action)
        if self.logic.purge_due():
            await self.apurge_expired()

    async def aput_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        action = f"saving pending writes of thread {thread_id!r}"
        program = self.logic.put_writes(thread_id, checkpoint_id, writes)
        await self._run(program, write=True, action=action)

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state."""
        action = f"reading thread {thread_id!r}"
        program = self.logic.get(thread_id, checkpoint_id)
        return await self._run(program, write=False, action=action)

    async def alist(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Checkpoints newest first."""
        return builtins.list(await self.ahistory(thread_id, limit=limit, before=before))

    async def ahistory(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> CheckpointHistory:
        """Checkpoints newest first, read in one transaction, states built on read."""
        action = f"listing thread {thread_id!r}"
        program = self.logic.history(thread_id, limit, before)
        return await self._run(program, write=False, action=action)

    async def adelete_thread(self, thread_id: str) -> None:
        """Remove everything stored for the thread."""
        action = f"deleting thread {thread_id!r}"
        await self._run(self.logic.delete(thread_id), write=True, action=action)

    async def ahead(self, thread_id: str) -> str | None:
        """The thread's head id."""
        action = f"reading thread {thread_id!r}"
        return await self._run(self.logic.head(thread_id), write=None, action=action)

    async def athreads(self) -> builtins.list[str]:
        """Every thread id in the schema."""
        return await self._run(self.logic.threads(), write=None, action="listing threads")

    async def apurge_expired(self) -> int:
        """Delete the threads whose ttl has passed; how many."""
        program = self.logic.purge_expired()
        return await self._run(program, write=True, action="purging expired threads")

    def alock(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """The thread's run lock (a no-op unless made with ``lock_timeout=``)."""
        if self.lock_policy is None:
            return nullcontext()
        take, renew, release = self.logic.lock_programs(thread_id, self.lock_policy.lease)
        action = f"locking thread {thread_id!r}"

        def run(program: Callable[[str], Program[T]]) -> Callable[[str], Awaitable[T]]:
            return lambda token: self._run(program(token), write=None, action=action)

        return ahold(self.lock_policy, thread_id, run(take), run(renew), run(release))

    async def aclose(self) -> None:
        """Close the pool's connections."""
        await self.pool.close()

    def _sync_only(self) -> TypeError:
        return TypeError(
            "AsyncPostgresSaver has only async methods; use PostgresSaver for sync runs"
        )

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Not available: use :meth:`aput`."""
        raise self._sync_only()

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Not available: use :meth:`aput_writes`."""
        raise self._sync_only()

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """Not available: use :meth:`aget`."""
        raise self._sync_only()

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Not available: use :meth:`alist`."""
        raise self._sync_only()

    def delete_thread(self, thread_id: str) -> None:
        """Not available: use :meth:`adelete_thread`."""
        raise self._sync_only()


async def adrive(program: Program[T], conn: psycopg.AsyncConnection[Any]) -> T:
    """Run ``program``'s statements on ``conn`` (inside the caller's transaction)."""
    send: Any = None
    while True:
        try:
            op = program.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        stmts = op if isinstance(op, tuple) else (op,)
        cursors = [await _send(conn, stmt) for stmt in stmts]
        results = [await _receive(cur, stmt) for cur, stmt in zip(cursors, stmts, strict=True)]
        send = results if isinstance(op, tuple) else results[0]


async def _send(conn: psycopg.AsyncConnection[Any], stmt: Stmt) -> psycopg.AsyncCursor[Any]:
    cur = conn.cursor()
    if stmt.many:
        await cur.executemany(stmt.sql, stmt.params)
    else:
        await cur.execute(stmt.sql, stmt.params)
    return cur


async def _receive(cur: psycopg.AsyncCursor[Any], stmt: Stmt) -> Any:
    if stmt.result == "rows":
        return await cur.fetchall()
    return cur.rowcount if stmt.result == "count" else None
