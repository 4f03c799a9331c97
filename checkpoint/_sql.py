"""Every SQL saver operation as a program of statements, with no I/O.

Each operation is a generator that yields a :class:`~checkpoint._sqlschema.Stmt` (or a
tuple of them, which a driver may send together) and receives what each asked for: its
rows, the number of rows it changed, or nothing. A driver runs a whole program inside one
transaction, so ``SqliteSaver``, ``PostgresSaver`` and ``AsyncPostgresSaver`` only open
connections, begin, execute, commit and translate errors. The tables are described in
``_sqlschema``. The saver methods that run each program are written once too: sync in
:class:`SqlSaver`, async in :class:`AsyncSqlSaver`; a saver supplies their ``_run``.

History is ordered by the per-thread sequence number that the step's own transaction
takes, never by a clock.
"""

from __future__ import annotations

import builtins
import time
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from typing_extensions import Self

from checkpoint import _layout as layout
from checkpoint._history import History, needed_fields
from checkpoint._sqlschema import (
    LATEST,
    MIGRATIONS,
    Dialect,
    Program,
    Stmt,
    decode_text,
    encode_text,
    result_kind,
    storable_id,
)
from checkpoint.base import (
    DELETE_KEPT,
    Checkpoint,
    CheckpointHistory,
    CheckpointSaver,
    CheckpointWrite,
    LockOps,
    PendingWrite,
    chain_of,
    new_checkpoint_id,
    refuse_if_deleted,
)
from checkpoint.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointNotFoundError,
)
from checkpoint.locks import LockPolicy, ahold
from checkpoint.serde import Serde, default_serde

__all__ = ["AsyncSqlSaver", "SqlLogic", "SqlSaver", "drive"]

T = TypeVar("T")
_CHUNK = 500  # parameters per IN (...) list: below every SQLite build's limit


class SqlLogic:
    """The SQL savers' operations, as programs; see the module docstring.

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
        self._records: dict[tuple[str, str], layout.Record] = {}
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
            if len(self._records) > 4096:
                self._records.clear()
            cached = self._records[key] = layout.decode_record(bytes(blob), self.serde.loads, cid)
        return cached

    def _not_found(self, thread_id: str, cid: str) -> CheckpointNotFoundError:
        return CheckpointNotFoundError(f"thread {thread_id!r} has no checkpoint {cid!r}")

    def head(self, thread_id: str) -> Program[str | None]:
        """The thread's head id."""
        cond, extra = self._alive()
        rows = yield self.stmt(
            "SELECT head FROM {t}graphagent_threads WHERE thread_id = ?" + cond,
            encode_text(thread_id),
            *extra,
        )
        return str(rows[0][0]) if rows else None

    def get(self, thread_id: str, checkpoint_id: str | None) -> Program[Checkpoint | None]:
        """The head (or the named checkpoint) with its state."""
        if checkpoint_id is not None and not storable_id(checkpoint_id):
            raise self._not_found(thread_id, checkpoint_id)
        tid = encode_text(thread_id)
        cond, extra = self._alive()
        rows = yield self.stmt(
            "SELECT c.id, c.record FROM {t}graphagent_threads t JOIN {t}graphagent_checkpoints c "
            "ON c.thread_id = t.thread_id AND c.id = COALESCE(?, t.head) "
            "WHERE t.thread_id = ?" + cond.replace("touched_at", "t.touched_at"),
            checkpoint_id,
            tid,
            *extra,
        )
        if not rows:
            if checkpoint_id is not None:
                raise self._not_found(thread_id, checkpoint_id)
            return None
        record = self._record(thread_id, str(rows[0][0]), rows[0][1])
        found = yield from self._load(thread_id, [record])
        return found[0]

    def history(self, thread_id: str, limit: int | None, before: str | None) -> Program[History]:
        """Checkpoints newest first (by the thread's sequence, not by any clock); every
        field they need is read once, in one transaction, and states are built on read."""
        tid = encode_text(thread_id)
        if (yield from self.head(thread_id)) is None:
            return History(thread_id, [], {}, {}, self.serde.loads)
        where = "thread_id = ?"
        params: builtins.list[Any] = [tid]
        if before is not None:
            seq = []
            if storable_id(before):
                seq = yield self.stmt(
                    "SELECT seq FROM {t}graphagent_checkpoints WHERE thread_id = ? AND id = ?",
                    tid,
                    before,
                )
            if seq:
                where, params = where + " AND seq < ?", [*params, seq[0][0]]
            else:  # not one of ours: fall back to the ids' time order
                safe = before.encode("utf-8", "replace").decode().replace("\x00", "")
                where, params = where + " AND id < ?", [*params, safe]
        query = (
            "SELECT id, record FROM {t}graphagent_checkpoints WHERE " + where + " ORDER BY seq DESC"
        )
        if limit is not None:
            query, params = query + " LIMIT ?", [*params, max(limit, 0)]
        rows, count = yield (
            self.stmt(query, *params),
            self.stmt("SELECT count(*) FROM {t}graphagent_data WHERE thread_id = ?", tid),
        )
        records = [self._listed(thread_id, str(cid), blob) for cid, blob in rows]
        fields = needed_fields(records, int(count[0][0]))
        blobs, pending = yield from self._read(tid, fields, None)
        return History(thread_id, records, blobs, pending, self.serde.loads)

    def _listed(self, thread_id: str, cid: str, blob: bytes) -> layout.Record:
        # a listing decodes without caching: thousands of records would only evict the
        # ones the next step needs
        cached = self._records.get((thread_id, cid))
        return cached or layout.decode_record(bytes(blob), self.serde.loads, cid)

    def _read(
        self, tid: bytes, fields: Sequence[str], checkpoint_id: str | None
    ) -> Program[tuple[dict[str, bytes | None], dict[str, dict[str, bytes]]]]:
        """The stored values of ``fields`` and the thread's pending writes (only
        ``checkpoint_id``'s, if given), in one batch: values by field, writes by
        checkpoint and task."""
        batch = [self._data(tid, fields[i : i + _CHUNK]) for i in range(0, len(fields), _CHUNK)]
        if checkpoint_id is None:
            batch.append(
                self.stmt(
                    "SELECT checkpoint_id, task, value FROM {t}graphagent_writes "
                    "WHERE thread_id = ?",
                    tid,
                )
            )
        else:
            batch.append(
                self.stmt(
                    "SELECT checkpoint_id, task, value FROM {t}graphagent_writes "
                    "WHERE thread_id = ? AND checkpoint_id = ?",
                    tid,
                    checkpoint_id,
                )
            )
        *found, writes = yield tuple(batch)
        blobs: dict[str, bytes | None] = {
            decode_text(f): bytes(v) for part in found for f, v in part
        }
        pending: dict[str, dict[str, bytes]] = {}
        for cid, task, value in writes:
            pending.setdefault(str(cid), {})[decode_text(task)] = bytes(value)
        return blobs, pending

    def _data(self, tid: bytes, fields: Sequence[str]) -> Stmt:
        marks = ", ".join("?" * len(fields))
        return self.stmt(
            "SELECT field, value FROM {t}graphagent_data "
            f"WHERE thread_id = ? AND field IN ({marks})",
            tid,
            *(encode_text(f) for f in fields),
        )

    def _load(
        self, thread_id: str, records: builtins.list[layout.Record]
    ) -> Program[builtins.list[Checkpoint]]:
        """Rebuild each record's state, reading every field they need once."""
        if not records:
            return []
        tid = encode_text(thread_id)
        yield from self._check_claims(tid, records)
        wanted = [layout.read_fields(r) for r in records]
        names = sorted({f for fields in wanted for f in fields})
        only = records[0].id if len(records) == 1 else None
        blobs, pending = yield from self._read(tid, names, only)
        out = []
        for record, fields in zip(records, wanted, strict=True):
            values = layout.rebuild(record, [blobs.get(f) for f in fields], self.serde.loads)
            writes = layout.group_writes(pending.get(record.id, {}), self.serde.loads)
            out.append(layout.to_checkpoint(thread_id, record, values, writes))
        return out

    def _check_claims(self, tid: bytes, records: Sequence[layout.Record]) -> Program[None]:
        """Refuse records naming more data than the thread stores (counted only for claims
        too large to simply try)."""
        if any(layout.claimed(r) > layout.FREE_CLAIM for r in records):
            rows = yield self.stmt(
                "SELECT count(*) FROM {t}graphagent_data WHERE thread_id = ?", tid
            )
            for record in records:
                layout.check_claim(record, int(rows[0][0]))

    def threads(self) -> Program[builtins.list[str]]:
        """Every thread id stored (and not expired)."""
        cond, extra = self._alive()
        rows = yield self.stmt(
            "SELECT thread_id FROM {t}graphagent_threads WHERE 1 = 1" + cond, *extra
        )
        return sorted(decode_text(r[0]) for r in rows)

    # -- writing --------------------------------------------------------------------

    def put(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> Program[None]:
        """Check the head and store the chain of writes, in the caller's one transaction."""
        first = self._checked(writes, expected_head)
        tid = encode_text(thread_id)
        moved = yield from self._move_head(thread_id, writes, expected_head)
        if moved is None:
            return  # a retry of this very write, which already landed
        if expected_head is None:
            # after the insert of the thread's row: a delete in flight waits for it
            yield from self._not_deleted(thread_id, first)
        parent = None
        if first.parent_id is not None:
            # the head check just proved that the expected head exists; a fork's parent
            # may have been pruned or deleted by another process since we cached it
            verify = first.parent_id != expected_head
            parent = yield from self._parent(thread_id, first.parent_id, verify=verify)
        plans = self._plan(parent, writes, expected_head)
        base = moved - len(writes)
        yield self.many(
            "INSERT INTO {t}graphagent_checkpoints (thread_id, id, seq, record) "
            "VALUES (?, ?, ?, ?)",
            [
                (tid, w.id, base + n, p.record_blob)
                for n, (w, p) in enumerate(zip(writes, plans, strict=True), 1)
            ],
        )
        data = [(tid, encode_text(f), v) for p in plans for f, v in p.data.items()]
        if data:
            yield self.many(
                "INSERT INTO {t}graphagent_data (thread_id, field, value) VALUES (?, ?, ?)", data
            )
        for p in plans:
            layout.log_put(thread_id, p)
        if first.parent_id is not None:
            yield self.stmt(
                "DELETE FROM {t}graphagent_writes WHERE thread_id = ? AND checkpoint_id = ?",
                tid,
                first.parent_id,
            )
        for w, p in zip(writes, plans, strict=True):
            self._records[(thread_id, w.id)] = p.record
        if self.keep_last is not None and moved > self.keep_last:
            yield from self._prune(thread_id, self.keep_last)

    def _not_deleted(self, thread_id: str, first: CheckpointWrite) -> Program[None]:
        """Refuse a new thread's first write minted before the thread's delete; forget the
        delete once a newer write starts the thread again."""
        tid = encode_text(thread_id)
        rows = yield self.stmt("SELECT stamp FROM {t}graphagent_deleted WHERE thread_id = ?", tid)
        if rows:
            refuse_if_deleted(thread_id, first.id, str(rows[0][0]))
            yield self.stmt("DELETE FROM {t}graphagent_deleted WHERE thread_id = ?", tid)

    @staticmethod
    def _checked(writes: Sequence[CheckpointWrite], expected_head: str | None) -> CheckpointWrite:
        """The chain's first write, once every id in it is known to be storable."""
        first = chain_of(writes)[0]
        for cid in (*(w.id for w in writes), first.parent_id, expected_head):
            if cid is not None and not storable_id(cid):
                raise CheckpointError(f"checkpoint id {cid!r} is not storable text")
        return first

    def _plan(
        self,
        parent: layout.Record | None,
        writes: Sequence[CheckpointWrite],
        expected_head: str | None,
    ) -> builtins.list[layout.PutPlan]:
        """Every write's plan, each on top of the one before (the first on ``parent``)."""
        plans = []
        on_head = writes[0].parent_id == expected_head
        for write in writes:
            plan = layout.plan_put(parent, write, on_head=on_head, dumps=self.serde.dumps)
            plans.append(plan)
            parent, on_head = plan.record, True
        return plans

    def _move_head(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> Program[int | None]:
        """Move the head from ``expected_head`` to the chain's last write, taking one
        sequence number per write; the last one taken.

        ``None``: the head already is that write. Conflicts raise, having written nothing.
        """
        tid = encode_text(thread_id)
        if self.ttl is not None:
            yield from self._drop_if_expired(tid)
        template, params = self._head_move(tid, writes, expected_head)
        moved = yield self.changing(template, "seq", *params)
        if isinstance(moved, list) and moved:  # RETURNING gave the new sequence number
            return int(moved[0][0])
        rows = yield self.stmt(
            "SELECT head, seq FROM {t}graphagent_threads WHERE thread_id = ?", tid
        )
        if moved == 1:  # counted, without RETURNING
            return int(rows[0][1])
        self._refuse(thread_id, writes[-1], expected_head, str(rows[0][0]) if rows else None)
        return None

    @staticmethod
    def _head_move(
        tid: bytes, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> tuple[str, tuple[Any, ...]]:
        """The statement (and its parameters) that moves the head from ``expected_head``
        to the chain's last write, adding a sequence number per write; it changes no row
        when the head is elsewhere (``None``: when the thread exists)."""
        count, last = len(writes), writes[-1].id
        if expected_head is None:
            return (
                "INSERT INTO {t}graphagent_threads (thread_id, head, seq, touched_at) "
                "VALUES (?, ?, ?, {now}) ON CONFLICT (thread_id) DO NOTHING"
            ), (tid, last, count)
        return (
            "UPDATE {t}graphagent_threads SET head = ?, seq = seq + ?, touched_at = {now} "
            "WHERE thread_id = ? AND head = ?"
        ), (last, count, tid, expected_head)

    def _refuse_moved(
        self, thread_id: str, write: CheckpointWrite, expected_head: str | None
    ) -> Program[None]:
        """:meth:`_refuse`, naming the head the thread has now."""
        rows = yield self.stmt(
            "SELECT head FROM {t}graphagent_threads WHERE thread_id = ?", encode_text(thread_id)
        )
        self._refuse(thread_id, write, expected_head, str(rows[0][0]) if rows else None)

    @staticmethod
    def _refuse(
        thread_id: str, write: CheckpointWrite, expected_head: str | None, current: str | None
    ) -> None:
        """Raise the conflict for a head that did not move, unless it is this very write."""
        if current == write.id:
            return  # a retry of a write that landed before its reply was lost
        if current is None:
            raise CheckpointConflictError(
                f"thread {thread_id!r} is gone (deleted, or expired after its ttl) while this "
                f"run expected checkpoint {expected_head!r}; nothing was written. Start the "
                "thread again"
            )
        raise CheckpointConflictError(
            f"thread {thread_id!r} moved to checkpoint {current!r} while this run expected "
            f"{expected_head!r}; nothing was written. Reload the thread and run again, or "
            "serialise runs per thread"
        )

    def put_one_statement(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> Program[None]:
        """:meth:`put` as one statement that needs no transaction around it (PostgreSQL).

        The head check and every insert are data-modifying parts of one ``WITH``
        statement: they land together, or, when the head moved, none of them does. Only
        for savers without ttl and keep_last (see :attr:`one_statement_put`).
        """
        first = self._checked(writes, expected_head)
        tid = encode_text(thread_id)
        parent = None
        if first.parent_id is not None:
            verify = first.parent_id != expected_head
            try:
                parent = yield from self._parent(thread_id, first.parent_id, verify=verify)
            except CheckpointNotFoundError:
                if verify:
                    raise
                # the expected head is not there: the head check below would fail too
                yield from self._refuse_moved(thread_id, writes[-1], expected_head)
                return
        plans = self._plan(parent, writes, expected_head)
        rows = yield self._one_statement(tid, writes, expected_head, plans)
        if rows:
            for w, p in zip(writes, plans, strict=True):
                self._records[(thread_id, w.id)] = p.record
                layout.log_put(thread_id, p)
            return
        yield from self._refuse_moved(thread_id, writes[-1], expected_head)

    def _one_statement(
        self,
        tid: bytes,
        writes: Sequence[CheckpointWrite],
        expected_head: str | None,
        plans: Sequence[layout.PutPlan],
    ) -> Stmt:
        """The step's whole write; it returns the new sequence number, or no row when the
        head had moved (then none of its parts wrote anything)."""
        head, head_params = self._head_move(tid, writes, expected_head)
        count = len(writes)
        data = {f: v for p in plans for f, v in p.data.items()}
        return self.stmt(
            f"WITH moved AS ({head} RETURNING seq), "
            "cp AS (INSERT INTO {t}graphagent_checkpoints (thread_id, id, seq, record) "
            "SELECT ?, i, seq - ? + n, r FROM moved, "
            "unnest(?::text[], ?::bytea[]) WITH ORDINALITY AS x(i, r, n)), "
            "d AS (INSERT INTO {t}graphagent_data (thread_id, field, value) "
            "SELECT ?, f, v FROM moved, unnest(?::bytea[], ?::bytea[]) AS x(f, v)), "
            "w AS (DELETE FROM {t}graphagent_writes WHERE thread_id = ? AND checkpoint_id = ? "
            "AND EXISTS (SELECT 1 FROM moved)) "
            "SELECT seq FROM moved",
            *head_params,
            tid,
            count,
            [w.id for w in writes],
            [p.record_blob for p in plans],
            tid,
            [encode_text(f) for f in data],
            list(data.values()),
            tid,
            writes[0].parent_id,
        )

    @property
    def one_statement_put(self) -> bool:
        """Whether :meth:`put_one_statement` may stand in for :meth:`put` here."""
        return self.dialect.cte_put and self.ttl is None and self.keep_last is None

    def _parent(self, thread_id: str, parent_id: str, *, verify: bool) -> Program[layout.Record]:
        cached = self._records.get((thread_id, parent_id))
        if cached is not None and not verify:
            return cached
        rows = yield self.stmt(
            "SELECT record FROM {t}graphagent_checkpoints WHERE thread_id = ? AND id = ?",
            encode_text(thread_id),
            parent_id,
        )
        if not rows:
            raise self._not_found(thread_id, parent_id)
        return self._record(thread_id, parent_id, rows[0][0])

    def _drop_if_expired(self, tid: bytes) -> Program[None]:
        rows = yield self.stmt(
            "SELECT 1 FROM {t}graphagent_threads WHERE thread_id = ? AND touched_at < {now} - ?",
            tid,
            self.ttl,
        )
        if rows:
            yield from self._delete(tid)

    def _prune(self, thread_id: str, keep: int) -> Program[None]:
        tid = encode_text(thread_id)
        rows = yield self.stmt(
            "SELECT id, record FROM {t}graphagent_checkpoints WHERE thread_id = ? ORDER BY seq",
            tid,
        )
        if len(rows) <= keep:
            return
        records = [self._record(thread_id, str(cid), blob) for cid, blob in rows]
        yield from self._check_claims(tid, records)
        drop, fields = layout.plan_prune(records[: len(rows) - keep], records[len(rows) - keep :])
        for cid in drop:
            self._records.pop((thread_id, cid), None)
        yield self.many(
            "DELETE FROM {t}graphagent_checkpoints WHERE thread_id = ? AND id = ?",
            [(tid, cid) for cid in drop],
        )
        yield self.many(
            "DELETE FROM {t}graphagent_writes WHERE thread_id = ? AND checkpoint_id = ?",
            [(tid, cid) for cid in drop],
        )
        if fields:
            yield self.many(
                "DELETE FROM {t}graphagent_data WHERE thread_id = ? AND field = ?",
                [(tid, encode_text(f)) for f in fields],
            )

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> Program[None]:
        """Keep a step's finished work; the checkpoint must exist (and not have expired)."""
        tid = encode_text(thread_id)
        cond, extra = self._alive()
        found: Any = []
        if storable_id(checkpoint_id):
            # the rows stay locked until the writes commit: a delete_thread in flight is
            # waited for (then the checkpoint is gone), never left with orphan writes
            found = yield self.stmt(
                "SELECT 1 FROM {t}graphagent_checkpoints c JOIN {t}graphagent_threads t "
                "ON t.thread_id = c.thread_id WHERE c.thread_id = ? AND c.id = ?"
                + cond.replace("touched_at", "t.touched_at")
                + self.dialect.share_rows,
                tid,
                checkpoint_id,
                *extra,
            )
        if not found:
            raise self._not_found(thread_id, checkpoint_id)
        by_task: dict[str, builtins.list[PendingWrite]] = {}
        for w in writes:
            by_task.setdefault(w.task, []).append(w)
        if not by_task:
            return
        rows = [
            (tid, checkpoint_id, encode_text(task), layout.encode_writes(group, self.serde.dumps))
            for task, group in by_task.items()
        ]
        yield self.many(
            "INSERT INTO {t}graphagent_writes (thread_id, checkpoint_id, task, value) "
            "VALUES (?, ?, ?, ?) ON CONFLICT (thread_id, checkpoint_id, task) "
            "DO UPDATE SET value = excluded.value",
            rows,
        )
        if self.ttl is not None:
            yield self.stmt(
                "UPDATE {t}graphagent_threads SET touched_at = {now} WHERE thread_id = ?", tid
            )

    def delete(self, thread_id: str) -> Program[None]:
        """Remove everything stored for the thread (not a run's lock on it)."""
        # list() first: another thread of a pooled saver may be adding records meanwhile
        for key in [k for k in list(self._records) if k[0] == thread_id]:
            self._records.pop(key, None)
        tid = encode_text(thread_id)
        yield self.stmt(
            "INSERT INTO {t}graphagent_deleted (thread_id, stamp, deleted_at) "
            "VALUES (?, ?, {now}) ON CONFLICT (thread_id) DO UPDATE "
            "SET stamp = excluded.stamp, deleted_at = excluded.deleted_at",
            tid,
            new_checkpoint_id(),
        )
        # a first write in flight has inserted the thread's row: this waits for it to
        # commit (PostgreSQL), so that the delete below sees what it stored
        yield self.stmt(
            "INSERT INTO {t}graphagent_threads (thread_id, head, seq, touched_at) "
            "VALUES (?, '', 0, {now}) ON CONFLICT (thread_id) DO NOTHING",
            tid,
        )
        yield from self._delete(tid)
        yield self.stmt(
            "DELETE FROM {t}graphagent_deleted WHERE deleted_at < {now} - ?", DELETE_KEPT
        )

    def _delete(self, tid: bytes) -> Program[None]:
        for table in ("threads", "checkpoints", "data", "writes"):
            yield self.stmt(f"DELETE FROM {{t}}graphagent_{table} WHERE thread_id = ?", tid)

    def purge_expired(self) -> Program[int]:
        """Delete every thread whose ttl has passed; how many went."""
        if self.ttl is None:
            return 0
        rows = yield self.stmt(
            "SELECT thread_id FROM {t}graphagent_threads WHERE touched_at < {now} - ?", self.ttl
        )
        for (tid,) in rows:
            yield from self._delete(bytes(tid))
        return len(rows)

    # -- the opt-in run lock ------------------------------------------------------------

    def lock_programs(
        self, thread_id: str, lease: float
    ) -> tuple[
        Callable[[str], Program[bool]],
        Callable[[str], Program[bool]],
        Callable[[str], Program[None]],
    ]:
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


def drive(program: Program[T], execute: Callable[[Stmt], Any]) -> T:
    """Run ``program`` (inside the caller's transaction): each statement through
    ``execute``, which returns what the program receives for it (a list for a batch)."""
    send: Any = None
    while True:
        try:
            op = program.send(send)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send = [execute(stmt) for stmt in op] if isinstance(op, tuple) else execute(op)


# -- the saver interface over those programs ------------------------------------------------


@dataclass(slots=True)  # not frozen: one is made per saver call, and frozen costs 3x
class _Call(Generic[T]):
    """What one saver method runs: a program, its transaction and, for error messages,
    what it was doing."""

    program: Program[T]
    write: bool | None
    action: str


class _SqlCalls(CheckpointSaver):
    """Each saver method's :class:`_Call`, for :class:`SqlSaver` and :class:`AsyncSqlSaver`.

    A call's transaction (``write``): ``True`` a write, ``False`` one snapshot read,
    ``None`` none (each statement whole on its own). The two a saver chooses are class
    attributes: ``_small_read`` for ``head`` and ``threads`` (one ``SELECT`` each) and
    ``_lock_write`` for each statement of the run lock.
    """

    logic: SqlLogic
    _small_read: ClassVar[bool | None]
    _lock_write: ClassVar[bool | None]

    def _put_call(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> _Call[None]:
        action = f"writing checkpoint {writes[-1].id if writes else ''} of thread {thread_id!r}"
        # a new thread's first write checks the thread's delete: the transaction's way
        if self.logic.one_statement_put and expected_head is not None:
            program = self.logic.put_one_statement(thread_id, writes, expected_head)
            return _Call(program, None, action)
        return _Call(self.logic.put(thread_id, writes, expected_head), True, action)

    def _put_writes_call(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> _Call[None]:
        program = self.logic.put_writes(thread_id, checkpoint_id, writes)
        return _Call(program, True, f"saving pending writes of thread {thread_id!r}")

    def _get_call(self, thread_id: str, checkpoint_id: str | None) -> _Call[Checkpoint | None]:
        program = self.logic.get(thread_id, checkpoint_id)
        return _Call(program, False, f"reading thread {thread_id!r}")

    def _history_call(
        self, thread_id: str, limit: int | None, before: str | None
    ) -> _Call[History]:
        program = self.logic.history(thread_id, limit, before)
        return _Call(program, False, f"listing thread {thread_id!r}")

    def _delete_call(self, thread_id: str) -> _Call[None]:
        return _Call(self.logic.delete(thread_id), True, f"deleting thread {thread_id!r}")

    def _head_call(self, thread_id: str) -> _Call[str | None]:
        program = self.logic.head(thread_id)
        return _Call(program, self._small_read, f"reading thread {thread_id!r}")

    def _threads_call(self) -> _Call[builtins.list[str]]:
        return _Call(self.logic.threads(), self._small_read, "listing threads")

    def _purge_call(self) -> _Call[int]:
        return _Call(self.logic.purge_expired(), True, "purging expired threads")

    def _lock_call(self, program: Program[T], thread_id: str) -> _Call[T]:
        return _Call(program, self._lock_write, f"locking thread {thread_id!r}")


class SqlSaver(_SqlCalls):
    """The saver methods of ``SqliteSaver`` and ``PostgresSaver``: each runs its call
    through the driver's ``_run``."""

    @abstractmethod
    def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        """Run ``program`` in the transaction ``write`` names (see :class:`_SqlCalls`);
        the driver's errors become checkpoint errors that name ``action``."""

    @abstractmethod
    def close(self) -> None:
        """Close the saver's connections."""

    def _do(self, call: _Call[T]) -> T:
        return self._run(call.program, write=call.write, action=call.action)

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Store ``write`` as the new head, atomically (see ``CheckpointSaver.put``)."""
        self.put_many(thread_id, (write,), expected_head=expected_head)

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes as one step, atomically (see ``CheckpointSaver.put_many``)."""
        self._do(self._put_call(thread_id, writes, expected_head))
        if self.logic.purge_due():
            self.purge_expired()

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        self._do(self._put_writes_call(thread_id, checkpoint_id, writes))

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state, from one snapshot."""
        return self._do(self._get_call(thread_id, checkpoint_id))

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> CheckpointHistory:
        """Checkpoints newest first, read in one transaction, states built on read."""
        return self._do(self._history_call(thread_id, limit, before))

    def delete_thread(self, thread_id: str) -> None:
        """Remove everything stored for the thread."""
        self._do(self._delete_call(thread_id))

    def head(self, thread_id: str) -> str | None:
        """The thread's head id, without loading its state."""
        return self._do(self._head_call(thread_id))

    def threads(self) -> builtins.list[str]:
        """Every thread id stored (expired ones excepted)."""
        return self._do(self._threads_call())

    def purge_expired(self) -> int:
        """Delete the threads whose ttl has passed (writes do this now and then); how many."""
        return self._do(self._purge_call())

    def _lock_ops(self, thread_id: str, policy: LockPolicy) -> LockOps:
        """Take, renew and release of the thread's run lock, each one statement."""
        take, renew, release = self.logic.lock_programs(thread_id, policy.lease)

        def run(program: Callable[[str], Program[T]]) -> Callable[[str], T]:
            return lambda token: self._do(self._lock_call(program(token), thread_id))

        return run(take), run(renew), run(release)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncSqlSaver(_SqlCalls):
    """The ``a``-methods of ``AsyncPostgresSaver``: :class:`SqlSaver`'s, awaiting an
    async ``_run``."""

    @abstractmethod
    async def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        """See :meth:`SqlSaver._run`."""

    async def _ado(self, call: _Call[T]) -> T:
        return await self._run(call.program, write=call.write, action=call.action)

    async def aput(
        self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None
    ) -> None:
        """Store ``write`` as the new head, atomically (see ``CheckpointSaver.put``)."""
        await self.aput_many(thread_id, (write,), expected_head=expected_head)

    async def aput_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes as one step, atomically (see ``CheckpointSaver.put_many``)."""
        await self._ado(self._put_call(thread_id, writes, expected_head))
        if self.logic.purge_due():
            await self.apurge_expired()

    async def aput_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        await self._ado(self._put_writes_call(thread_id, checkpoint_id, writes))

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state, from one snapshot."""
        return await self._ado(self._get_call(thread_id, checkpoint_id))

    async def alist(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Checkpoints newest first."""
        return builtins.list(await self.ahistory(thread_id, limit=limit, before=before))

    async def ahistory(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> CheckpointHistory:
        """Checkpoints newest first, read in one transaction, states built on read."""
        return await self._ado(self._history_call(thread_id, limit, before))

    async def adelete_thread(self, thread_id: str) -> None:
        """Remove everything stored for the thread."""
        await self._ado(self._delete_call(thread_id))

    async def ahead(self, thread_id: str) -> str | None:
        """The thread's head id, without loading its state."""
        return await self._ado(self._head_call(thread_id))

    async def athreads(self) -> builtins.list[str]:
        """Every thread id stored (expired ones excepted)."""
        return await self._ado(self._threads_call())

    async def apurge_expired(self) -> int:
        """Delete the threads whose ttl has passed (writes do this now and then); how many."""
        return await self._ado(self._purge_call())

    def alock(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """The thread's run lock (a no-op unless made with ``lock_timeout=``)."""
        if self.lock_policy is None:
            return nullcontext()
        take, renew, release = self.logic.lock_programs(thread_id, self.lock_policy.lease)

        def run(program: Callable[[str], Program[T]]) -> Callable[[str], Awaitable[T]]:
            return lambda token: self._ado(self._lock_call(program(token), thread_id))

        return ahold(self.lock_policy, thread_id, run(take), run(renew), run(release))
