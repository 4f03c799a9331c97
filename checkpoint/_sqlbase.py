"""What every SQL saver program stands on: statements in the dialect, the schema's
migrations, the decoded-record cache, and the run lock's programs.

See ``_sql`` for the operations; ``_sqlschema`` describes the tables.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from checkpoint import _layout as layout
from checkpoint._cache import ReadCache
from checkpoint._program import Locks, Program
from checkpoint._sqlschema import LATEST, MIGRATIONS, Dialect, Stmt, encode_text, result_kind
from checkpoint.errors import CheckpointError, CheckpointNotFoundError
from checkpoint.serde import Serde, default_serde

__all__ = ["SqlBase"]


class SqlBase:
    """The statement helpers, schema programs and caches the SQL programs share.

    Args:
        dialect: the database's spelling.
        ttl: seconds after a thread's last write that it expires (``None``: never).
        keep_last: keep only this many newest checkpoints per thread.
        serde: the codec (default: the process-wide one).
    """

    def __init__(
        self,
        dialect: Dialect,
        *,
        ttl: float | None,
        keep_last: int | None,
        serde: Serde | None,
    ) -> None:
        if keep_last is not None and keep_last < 1:
            raise ValueError("keep_last must be at least 1 (or None to keep everything)")
        if ttl is not None and ttl <= 0:
            raise ValueError("ttl must be a positive number of seconds (or None: never expire)")
        self.dialect = dialect
        self.ttl = ttl
        self.keep_last = keep_last
        self.serde = serde or default_serde
        self._sql: dict[str, str] = {}
        self._records: layout.BoundedCache[tuple[str, str], layout.Record] = layout.BoundedCache()
        self.cache = ReadCache(self.serde)
        self._next_purge = 0.0

    def purge_due(self) -> bool:
        """Whether this saver should purge expired threads now (at most once per
        ``min(ttl, 60)`` seconds, so a busy saver does not scan on every step)."""
        if self.ttl is None or time.monotonic() < self._next_purge:
            return False
        self._next_purge = time.monotonic() + min(self.ttl, 60.0)
        return True

    def sql(self, template: str) -> str:
        """``template`` in this dialect: tables qualified, ``?`` placeholders translated."""
        done = self._sql.get(template)
        if done is None:
            d = self.dialect
            done = template.format(
                t=d.tables, now=d.now, blob=d.blob, real=d.real, bigint=d.bigint, extra=d.extra_ddl
            )
            if d.param != "?":
                done = done.replace("?", d.param)
            self._sql[template] = done
        return done

    def stmt(self, template: str, *params: Any) -> Stmt:
        """A statement from a template and its parameters (result: see :func:`result_kind`)."""
        sql = self.sql(template)
        return Stmt(sql, params, result=result_kind(sql))

    def query(self, template: str, *params: Any) -> Stmt:
        """A statement whose rows the program reads, whatever it starts with."""
        return Stmt(self.sql(template), params, result="rows")

    def many(self, template: str, rows: Sequence[Sequence[Any]]) -> Stmt:
        """A statement run once per parameter row; its result is not needed."""
        return Stmt(self.sql(template), rows, many=True, result="none")

    def changing(self, template: str, column: str, *params: Any) -> Stmt:
        """A statement whose caller asks whether it changed a row (see :meth:`changed`)."""
        if self.dialect.returning:
            return self.stmt(f"{template} RETURNING {column}", *params)
        return Stmt(self.sql(template), params, result="count")

    @staticmethod
    def changed(result: Any) -> bool:
        """Whether a :meth:`changing` statement changed exactly one row."""
        return len(result) == 1 if isinstance(result, list) else bool(result == 1)

    # -- schema -------------------------------------------------------------------

    def setup(self) -> Program[int]:
        """Create or migrate the tables; idempotent. Returns the schema version."""
        for text in self.dialect.setup_prelude:
            yield Stmt(text, result=result_kind(text))
        yield self.stmt(
            "CREATE TABLE IF NOT EXISTS {t}graphagent_migrations "
            "(version INTEGER PRIMARY KEY, applied_at {real} NOT NULL)"
        )
        rows = yield self.stmt("SELECT version FROM {t}graphagent_migrations")
        have = max((int(r[0]) for r in rows), default=0)
        self._refuse_newer(have)
        for version in range(have + 1, LATEST + 1):
            for text in MIGRATIONS[version - 1]:
                yield self.stmt(text)
            yield self.stmt(
                "INSERT INTO {t}graphagent_migrations (version, applied_at) VALUES (?, {now})",
                version,
            )
        return LATEST

    def check_version(self, where: str, how_to_setup: str) -> Program[None]:
        """Refuse to run on tables that are missing, older or newer than this code."""
        found = yield Stmt(
            self.dialect.table_exists, (f"{self.dialect.tables}graphagent_migrations",)
        )
        if not found or found[0][0] is None:
            raise CheckpointError(f"{where} has no graphagent tables yet: {how_to_setup}")
        rows = yield self.stmt("SELECT max(version) FROM {t}graphagent_migrations")
        have = int(rows[0][0] or 0)
        self._refuse_newer(have)
        if have < LATEST:
            raise CheckpointError(
                f"{where} holds graphagent tables at schema version {have}, and this version "
                f"of graphagent needs {LATEST}: {how_to_setup} to migrate them"
            )

    def _refuse_newer(self, have: int) -> None:
        if have > LATEST:
            raise CheckpointError(
                f"the database's graphagent tables are at schema version {have}, newer than "
                f"this version of graphagent knows ({LATEST}); upgrade graphagent"
            )

    # -- reading --------------------------------------------------------------------

    def _alive(self) -> tuple[str, tuple[Any, ...]]:
        """SQL condition (on ``threads``) and parameters: the thread has not expired."""
        if self.ttl is None:
            return "", ()
        return " AND touched_at >= {now} - ?", (self.ttl,)

    def _record(self, thread_id: str, cid: str, blob: bytes) -> layout.Record:
        # Records never change once written, so decoding each id once is always safe.
        key = (thread_id, cid)
        cached = self._records.get(key)
        if cached is None:
            record = layout.decode_record(bytes(blob), self.serde.loads, cid)
            cached = self._records.keep(key, record)
        return cached

    def _not_found(self, thread_id: str, cid: str) -> CheckpointNotFoundError:
        return CheckpointNotFoundError(f"thread {thread_id!r} has no checkpoint {cid!r}")

    def _check_claims(self, tid: bytes, records: Sequence[layout.Record]) -> Program[None]:
        """Refuse records naming more data than the thread stores (counted only for claims
        too large to simply try)."""
        if any(layout.claimed(r) > layout.FREE_CLAIM for r in records):
            rows = yield self.stmt(
                "SELECT count(*) FROM {t}graphagent_data WHERE thread_id = ?", tid
            )
            for record in records:
                layout.check_claim(record, int(rows[0][0]))

    def _delete(self, tid: bytes) -> Program[None]:
        for table in ("threads", "checkpoints", "data", "writes"):
            yield self.stmt(f"DELETE FROM {{t}}graphagent_{table} WHERE thread_id = ?", tid)

    # -- the opt-in run lock ------------------------------------------------------------

    def lock_programs(self, thread_id: str, lease: float) -> Locks:
        """Take, renew and release of the thread's lock, each one statement.

        Taking succeeds when the lock is free, its lease has ended, or it already holds
        our token (a retried take whose first reply was lost).
        """
        tid = encode_text(thread_id)

        def take(token: str) -> Program[bool]:
            result = yield self.changing(
                "INSERT INTO {t}graphagent_locks AS l (thread_id, token, expires_at) "
                "VALUES (?, ?, {now} + ?) ON CONFLICT (thread_id) DO UPDATE "
                "SET token = excluded.token, expires_at = excluded.expires_at "
                "WHERE l.expires_at <= {now} OR l.token = excluded.token",
                "token",
                tid,
                token,
                lease,
            )
            return self.changed(result)

        def renew(token: str) -> Program[bool]:
            result = yield self.changing(
                "UPDATE {t}graphagent_locks SET expires_at = {now} + ? "
                "WHERE thread_id = ? AND token = ?",
                "token",
                lease,
                tid,
                token,
            )
            return self.changed(result)

        def release(token: str) -> Program[None]:
            yield self.stmt(
                "DELETE FROM {t}graphagent_locks WHERE thread_id = ? AND token = ?", tid, token
            )

        return take, renew, release
