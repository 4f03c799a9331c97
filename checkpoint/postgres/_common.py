"""What the sync and async PostgreSQL savers share: the dialect, the import check and the
one place psycopg errors become checkpoint errors."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from checkpoint._sqlschema import Dialect
from checkpoint.errors import CheckpointError, CheckpointStorageError

# Any constant will do: setup() in several processes at once takes turns on it.
_SETUP_LOCK = 7_315_420_017


def dialect(schema: str) -> Dialect:
    """PostgreSQL's spelling, with every table in ``schema``."""
    if not schema or "\x00" in schema:
        raise ValueError(f"invalid schema name {schema!r}")
    quoted = '"' + schema.replace('"', '""') + '"'
    return Dialect(
        name="PostgreSQL",
        param="%s",
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
            "pip install 'graphagent[postgres]'"
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


def errors() -> tuple[type[BaseException], ...]:
    """The exception classes :func:`storage_error` translates."""
    psycopg, psycopg_pool = require()
    found: tuple[Any, ...] = (psycopg.Error, psycopg_pool.PoolTimeout)
    return found


SETUP_HINT = "run saver.setup() once (it creates and migrates them; safe to repeat)"
