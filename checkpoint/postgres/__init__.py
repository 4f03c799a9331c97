"""``PostgresSaver``: threads in PostgreSQL tables, through a psycopg 3 connection pool.

Needs the ``postgres`` extra (``pip install -e '.[postgres]'`` in a clone). The tables
(``graphagent_*``, in the schema you name) are created by an explicit, idempotent
:meth:`PostgresSaver.setup`, whose migrations are numbered; every saver checks the schema
version before its first use.
Each step lands whole or not at all, as one ``WITH`` statement (or, with ``ttl`` or
``keep_last``, one transaction): a conditional ``UPDATE`` of the thread's head row (a
conditional ``INSERT`` for a new thread) is the head check, so of two racing writers one
lands and the other gets ``CheckpointConflictError`` with nothing written. Values are
msgpack (no pickle) in ``BYTEA`` columns; a step writes only what it changed.

:func:`check_idle` / :func:`acheck_idle` are the savers' pool check, for a
``psycopg_pool`` pool of your own: a connection the server closed while it sat idle is
replaced before it is handed out, at no round trip for a live one.
"""

from __future__ import annotations

from checkpoint.postgres._common import acheck_idle, check_idle
from checkpoint.postgres._sync import PostgresSaver
from checkpoint.postgres.aio import AsyncPostgresSaver

__all__ = ["AsyncPostgresSaver", "PostgresSaver", "acheck_idle", "check_idle"]
