"""What the sync and async PostgreSQL savers share: the dialect, the import check, the
constructor and pool setup, and the one place psycopg errors become checkpoint errors."""

from __future__ import annotations

import select
import time
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any, ClassVar, Generic, TypeVar

from typing_extensions import Self

from checkpoint._program import Program
from checkpoint._sql import SqlLogic
from checkpoint._sqlschema import Dialect
from checkpoint.errors import CheckpointError, CheckpointStorageError
from checkpoint.locks import LockPolicy
from checkpoint.serde import Serde

P = TypeVar("P")  # the saver's pool: psycopg_pool's ConnectionPool or AsyncConnectionPool

# Any constant will do: setup() in several processes at once takes turns on it.
_SETUP_LOCK = 7_315_420_017


def dialect(schema: str) -> Dialect:
    """PostgreSQL's spelling, with every table in ``schema``."""
    if not schema or "\x00" in schema:
        raise ValueError(f"invalid schema name {schema!r}")
    quoted = '"' + schema.replace('"', '""') + '"'
    return Dialect(
        name="PostgreSQL",
        param="%b",
        blob="BYTEA",
        real="DOUBLE PRECISION",
        bigint="BIGINT",
        now="CAST(extract(epoch FROM clock_timestamp()) AS DOUBLE PRECISION)",
        tables=quoted + ".",
        # a read sees one snapshot, so a concurrent prune cannot tear the state it rebuilds
        begin_read="BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
        begin_write="BEGIN",
        table_exists="SELECT to_regclass(%s)",
        cte_put=True,
        share_rows=" FOR SHARE",
        setup_prelude=(
            f"SELECT pg_advisory_xact_lock({_SETUP_LOCK})",
            f"CREATE SCHEMA IF NOT EXISTS {quoted}",
        ),
    )


def require() -> tuple[ModuleType, ModuleType]:
    """``psycopg`` and ``psycopg_pool``, or an ImportError that says what to install."""
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise ImportError(
            "the PostgreSQL savers need psycopg 3 and psycopg_pool: "
            "pip install 'psycopg[binary]>=3.1' 'psycopg-pool>=3.2' (the postgres extra)"
        ) from exc
    return psycopg, psycopg_pool


def storage_error(action: str, exc: BaseException) -> CheckpointError:
    """The checkpoint error for a psycopg or pool error (never echoes the connection URL)."""
    psycopg, psycopg_pool = require()
    made: CheckpointError
    if isinstance(exc, psycopg_pool.PoolClosed):
        made = CheckpointStorageError(
            f"PostgreSQL pool is closed while {action}: open it (pool.open()), or make the "
            "saver with from_url, which opens its own"
        )
    elif isinstance(exc, psycopg_pool.PoolTimeout):
        made = CheckpointStorageError(
            f"PostgreSQL unreachable while {action}: no connection within the pool's timeout "
            f"({exc})"
        )
    elif isinstance(exc, psycopg.errors.UndefinedTable):
        made = CheckpointError(
            f"PostgreSQL has no graphagent tables while {action}: run saver.setup() once"
        )
    else:
        made = CheckpointStorageError(
            f"PostgreSQL failed while {action}: {type(exc).__name__}: {exc}"
        )
    made.__cause__ = exc
    return made


# How long a saver's first use waits for its pool before it connects once on its own to
# learn why not: psycopg_pool retries a failed connection quietly until its timeout.
_FIRST_WAIT = 0.25
# FATAL replies that waiting can fix: the server is starting, stopping or full
_TRANSIENT = ("starting up", "shutting down", "in recovery", "too many", "connection slots")


def refusal(exc: BaseException) -> str | None:
    """psycopg's own words when a server answered and refused the connection for a reason
    that waiting will not fix (no such database or role, failed authentication); else None.

    >>> refusal(Exception('connection failed: ... failed: FATAL:  database "app" does not exist'))
    '... failed: FATAL:  database "app" does not exist'
    >>> refusal(Exception("connection failed: ... failed: Connection refused")) is None
    True
    """
    text = str(exc).strip()
    if "FATAL:" not in text or any(word in text for word in _TRANSIENT):
        return None
    return text.removeprefix("connection failed:").strip()


def _probe_args(pool: Any) -> tuple[str, dict[str, Any]] | None:
    """The pool's connection string and arguments, when they are plain values."""
    conninfo, kwargs = pool.conninfo, pool.kwargs or {}
    if not isinstance(conninfo, str) or not isinstance(kwargs, dict):
        return None  # callables (psycopg_pool 3.3): resolved by the pool only
    return conninfo, {**kwargs, "connect_timeout": max(1, round(pool.timeout))}


def _refused(action: str, why: str) -> CheckpointStorageError:
    return CheckpointStorageError(f"PostgreSQL refused the connection while {action}: {why}")


def _unreachable(action: str, pool: Any, cause: BaseException | None) -> CheckpointStorageError:
    why = f": {str(cause).strip()}" if cause is not None else ""
    return CheckpointStorageError(
        f"PostgreSQL unreachable while {action}: no connection within the pool's timeout "
        f"({pool.timeout:g} s){why}"
    )


def first_connection(pool: Any, action: str) -> None:
    """Before a sync saver's first use, make sure its pool can connect, failing at once
    with psycopg's reason when the server refuses (``database "app" does not exist``)
    instead of after the pool's timeout as "unreachable".

    Raises:
        CheckpointStorageError: the server refused, or no connection came in time.
    """
    psycopg, psycopg_pool = require()
    started = time.monotonic()
    try:
        pool.putconn(pool.getconn(timeout=_FIRST_WAIT))
        return
    except psycopg_pool.PoolTimeout:
        pass
    probe = _probe_args(pool)
    cause: BaseException | None = None
    if probe is not None:
        try:
            psycopg.connect(probe[0], **probe[1]).close()
        except psycopg.OperationalError as exc:
            why = refusal(exc)
            if why is not None:
                raise _refused(action, why) from exc
            cause = exc
    try:
        wait = max(pool.timeout - (time.monotonic() - started), _FIRST_WAIT)
        pool.putconn(pool.getconn(timeout=wait))
    except psycopg_pool.PoolTimeout as exc:
        raise _unreachable(action, pool, cause) from exc


async def afirst_connection(pool: Any, action: str) -> None:
    """:func:`first_connection` for an async saver's (open) pool."""
    psycopg, psycopg_pool = require()
    started = time.monotonic()
    try:
        await pool.putconn(await pool.getconn(timeout=_FIRST_WAIT))
        return
    except psycopg_pool.PoolTimeout:
        pass
    probe = _probe_args(pool)
    cause: BaseException | None = None
    if probe is not None:
        try:
            await (await psycopg.AsyncConnection.connect(probe[0], **probe[1])).close()
        except psycopg.OperationalError as exc:
            why = refusal(exc)
            if why is not None:
                raise _refused(action, why) from exc
            cause = exc
    try:
        wait = max(pool.timeout - (time.monotonic() - started), _FIRST_WAIT)
        await pool.putconn(await pool.getconn(timeout=wait))
    except psycopg_pool.PoolTimeout as exc:
        raise _unreachable(action, pool, cause) from exc


def _readable(conn: Any) -> bool:
    """Whether an idle connection's socket has something to read: what a server that
    closed it (a restart, ``pg_terminate_backend``, an idle timeout) left, its goodbye or
    the end of the stream. A local poll: no round trip."""
    try:
        fd = conn.fileno()
    except Exception:
        return True  # closed: let the real check say so
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])


def check_idle(conn: Any) -> None:
    """The pool's check of a connection it hands out: a round trip only when the socket
    shows the server closed it (or sent something), else none. A connection that dies
    unseen fails its first statement instead, which the saver then sends once more on
    another connection (see :class:`Attempt`).

    Raises:
        psycopg.Error: the connection is dead (the pool replaces it).
    """
    if conn.closed or conn.broken or _readable(conn):
        _, psycopg_pool = require()
        psycopg_pool.ConnectionPool.check_connection(conn)


async def acheck_idle(conn: Any) -> None:
    """:func:`check_idle` for an async pool."""
    if conn.closed or conn.broken or _readable(conn):
        _, psycopg_pool = require()
        await psycopg_pool.AsyncConnectionPool.check_connection(conn)


R = TypeVar("R")


class Attempt:
    """One program's connection, taken again once if it turns out dead at the program's
    first statement (the server closed it while it sat in the pool, unseen by the check).

    Sending the first statement again is safe for every program: a read changes nothing,
    ``BEGIN`` neither, and a one-statement write that landed before its reply was lost
    is recognised as itself when it comes again (the savers' retry rule).

    Args:
        pool: the pool (a dead connection goes back to it, which discards it).
        conn: the connection taken.
    """

    __slots__ = ("conn", "first", "pool")

    def __init__(self, pool: Any, conn: Any) -> None:
        self.pool = pool
        self.conn = conn
        self.first = True

    def dead(self, exc: BaseException) -> bool:
        """Whether ``exc`` from a statement means: the first statement found the
        connection dead, so it goes back to the pool and the statement is sent again."""
        if not self.first:
            return False
        self.first = False
        psycopg, _ = require()
        if not isinstance(exc, psycopg.OperationalError) or not self.conn.broken:
            return False
        dead, self.conn = self.conn, None
        self.pool.putconn(dead)
        return True

    def run(self, send: Callable[[Any], R], take: Callable[[], Any]) -> R:
        """``send(conn)``; the first time, once more on ``take()`` if the connection was
        dead."""
        if not self.first:
            return send(self.conn)
        try:
            result = send(self.conn)
        except Exception as exc:
            if not self.dead(exc):
                raise
            self.pool.check()  # the others idle may be dead too (a restart): replaced
            self.conn = take()
            return send(self.conn)
        self.first = False
        return result

    async def arun(
        self, send: Callable[[Any], Awaitable[R]], take: Callable[[], Awaitable[Any]]
    ) -> R:
        """:meth:`run` on an async connection."""
        if not self.first:
            return await send(self.conn)
        try:
            result = await send(self.conn)
        except Exception as exc:
            if not self.dead(exc):
                raise
            await self.pool.check()
            self.conn = await take()
            return await send(self.conn)
        self.first = False
        return result


def errors() -> tuple[type[BaseException], ...]:
    """The exception classes :func:`storage_error` translates."""
    psycopg, psycopg_pool = require()
    found: tuple[Any, ...] = (psycopg.Error, psycopg_pool.PoolTimeout)
    return found


SETUP_HINT = "run saver.setup() once (it creates and migrates them; safe to repeat)"


class PostgresBase(Generic[P]):
    """The constructor and :meth:`from_url` of ``PostgresSaver`` and ``AsyncPostgresSaver``.

    Each names the ``psycopg_pool`` class it runs on and whether ``from_url`` opens it.
    """

    _pool_class: ClassVar[str]
    _open_pool: ClassVar[bool]
    # head, threads and the lock's statements are each one statement, whole on its own:
    # run without a transaction, they save BEGIN's and COMMIT's round trips
    _small_read: ClassVar[bool | None] = None
    _lock_write: ClassVar[bool | None] = None

    def __init__(
        self,
        pool: P,
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
        """Connect a pool to ``url`` (``postgresql://user@host:5432/db``), lazily (an async
        saver's pool opens on first use).

        Args:
            url: a libpq connection string or URL.
            schema: the schema holding the tables.
            min_size: connections the pool keeps open.
            max_size: connections it may open.
            timeout: seconds to wait for a connection before ``CheckpointStorageError``.
            options: the constructor's other keyword arguments (``ttl``, ``keep_last``, ...).
        """
        _, psycopg_pool = require()
        pool_class = getattr(psycopg_pool, cls._pool_class)
        pool = pool_class(
            url,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True},
            # a connection the server dropped (restart, failover, idle timeout) is
            # replaced instead of failing a step: seen by a local poll at checkout, or
            # when its first statement fails (then sent again on a fresh one)
            check=check_idle if cls._open_pool else acheck_idle,
            open=cls._open_pool,
        )
        return cls(pool, schema=schema, **options)

    def _check_version(self) -> Program[None]:
        """Refuse tables that are missing, older or newer than this code."""
        return self.logic.check_version(f"PostgreSQL schema {self.schema!r}", SETUP_HINT)
