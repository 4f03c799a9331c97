"""Every SQL saver operation as a program of statements, with no I/O.

Each operation is a program (see ``checkpoint._program``) that yields a
:class:`~checkpoint._sqlschema.Stmt` (or a tuple of them, which a driver may send
together) and receives what each asked for: its rows, the number of rows it changed, or
nothing. A driver runs a whole program inside one transaction, so ``SqliteSaver``,
``PostgresSaver`` and ``AsyncPostgresSaver`` only open connections, begin, execute, commit
and translate errors. The tables are described in ``_sqlschema``.

History is ordered by the per-thread sequence number that the step's own transaction
takes, never by a clock.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from contextlib import suppress
from typing import Any, TypeVar

from checkpoint import _layout as layout
from checkpoint import _sqlblocks as blocks
from checkpoint._cache import ReadPlan
from checkpoint._history import History, needed_fields
from checkpoint._program import Program
from checkpoint._sqlput import SqlPut
from checkpoint._sqlschema import (
    Stmt,
    decode_text,
    encode_text,
    storable_id,
)
from checkpoint.base import DELETE_KEPT, Checkpoint, PendingWrite, new_checkpoint_id

__all__ = ["SqlLogic"]

T = TypeVar("T")

# items after the held ones that a warm PostgreSQL read fetches with the head, per branch:
# a turn of a chat or a tool loop appends fewer
_GUESS = 16
_CHUNK = 500  # parameters per IN (...) list: below every SQLite build's limit
_MAX_BLOCKS = 4096  # blocks a read names at most (~1M items)
_AFTER_SEP = bytes([ord(layout.SEP) + 1])  # the byte after '|': ends a field-prefix range


class SqlLogic(SqlPut):
    """The SQL savers' operations, as programs; see the module docstring.

    Args:
        dialect: the database's spelling.
        ttl: seconds after a thread's last write that it expires (``None``: never).
        keep_last: keep only this many newest checkpoints per thread.
        serde: the codec (default: the process-wide one).
    """

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
        """The head (or the named checkpoint) with its state: on PostgreSQL first as one
        statement (see :meth:`get_mode`), else in the driver's snapshot transaction."""
        if self.dialect.cte_put:
            return self._get_at_once(thread_id, checkpoint_id)
        return self._get(thread_id, checkpoint_id)

    def get_mode(self) -> bool | None:
        """A get's transaction: none where :meth:`get` reads as one statement, else a
        snapshot read."""
        return None if self.dialect.cte_put else False

    def _get_at_once(self, thread_id: str, checkpoint_id: str | None) -> Program[Checkpoint | None]:
        """:meth:`get` as one statement, without a transaction (one statement sees one
        snapshot): the record, its pending writes and the data fields the read cache
        guesses a warm turn needs (the items after those it holds, and the values set at
        the checkpoint). Only when the record needs more than that (a cold read, a long
        turn, another worker's fork) is it read again in a snapshot transaction."""
        if checkpoint_id is not None and not storable_id(checkpoint_id):
            raise self._not_found(thread_id, checkpoint_id)
        guess = self.cache.guess(thread_id, _GUESS)
        if not guess:  # nothing held: the whole state is read anyway
            return (yield from self._in_snapshot(self._get(thread_id, checkpoint_id)))
        tid = encode_text(thread_id)
        cond, extra = self._alive()
        rows = yield self.query(
            # each part index look-ups, whatever the table's statistics say (an OR of the
            # data conditions, a join on COALESCE, or a flattened join would scan the
            # thread's rows: O(history)); OFFSET 0 keeps the look-up per guessed field
            "WITH c AS (SELECT id, record FROM {t}graphagent_checkpoints "
            "WHERE thread_id = ? AND id = (SELECT COALESCE(?::text, head) "
            "FROM {t}graphagent_threads WHERE thread_id = ?" + cond + ")) "
            "SELECT 0, c.id, NULL, c.record FROM c UNION ALL "
            "SELECT 1, NULL, d.field, d.value FROM unnest(?::bytea[]) AS g(f) "
            "CROSS JOIN LATERAL (SELECT field, value FROM {t}graphagent_data "
            "WHERE thread_id = ? AND field = g.f OFFSET 0) AS d UNION ALL "
            "SELECT 1, NULL, field, value FROM {t}graphagent_data "
            "WHERE thread_id = ? AND field = (SELECT ? || convert_to(id, 'UTF8') FROM c) "
            "UNION ALL SELECT 2, checkpoint_id, task, value FROM {t}graphagent_writes "
            "WHERE thread_id = ? AND checkpoint_id = (SELECT id FROM c)",
            tid,
            checkpoint_id,
            tid,
            *extra,
            [encode_text(f) for f in guess],
            tid,
            tid,
            encode_text(layout.val_field("")),
            tid,
        )
        found = [r for r in rows if r[0] == 0]
        if not found:
            if checkpoint_id is not None:
                raise self._not_found(thread_id, checkpoint_id)
            return None
        record = self._record(thread_id, str(found[0][1]), found[0][3])
        plan = self.cache.plan(thread_id, record)
        got = {decode_text(r[2]): bytes(r[3]) for r in rows if r[0] == 1}
        # (counted first: a damaged record may claim far more fields than anyone stores)
        blobs = [got.get(f) for f in plan.fields] if plan.count <= len(got) else [None]
        if None in blobs:  # more than the guess: read whole, claims counted
            return (yield from self._in_snapshot(self._get(thread_id, checkpoint_id)))
        values = plan.build(blobs)
        pending = {decode_text(r[2]): bytes(r[3]) for r in rows if r[0] == 2}
        writes_of = layout.group_writes(pending, self.serde.loads)
        return layout.to_checkpoint(thread_id, record, values, writes_of)

    def _in_snapshot(self, program: Program[T]) -> Program[T]:
        """``program`` in a snapshot read transaction of its own (a program run without
        one, whose driver begins none)."""
        yield self.stmt(self.dialect.begin_read)
        try:
            result = yield from program
        except Exception:
            with suppress(Exception):  # a broken connection is the pool's to discard
                yield self.stmt("ROLLBACK")
            raise
        yield self.stmt("COMMIT")
        return result

    def _get(self, thread_id: str, checkpoint_id: str | None) -> Program[Checkpoint | None]:
        if checkpoint_id is not None and not storable_id(checkpoint_id):
            raise self._not_found(thread_id, checkpoint_id)
        tid = encode_text(thread_id)
        cond, extra = self._alive()
        rows = yield self.stmt(
            # the id first, then one index look-up (a join on COALESCE scans the thread's
            # checkpoints on PostgreSQL)
            "SELECT id, record FROM {t}graphagent_checkpoints WHERE thread_id = ? AND id = "
            "(SELECT COALESCE(?, head) FROM {t}graphagent_threads WHERE thread_id = ?" + cond + ")",
            tid,
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
        """Rebuild each record's state, reading only what the read cache lacks (on a warm
        thread: the items written since its last read), in one batch per record."""
        tid = encode_text(thread_id)
        out = []
        for record in records:
            plan = self.cache.plan(thread_id, record)
            singles = plan.singles
            batch = [
                self._data(tid, singles[i : i + _CHUNK]) for i in range(0, len(singles), _CHUNK)
            ]
            by_block = self._by_block(plan)
            for n, (key, branch, start, end) in enumerate(plan.spans):
                if n not in by_block:
                    batch.extend(self._span(tid, key, branch, start, end))
            for names in by_block.values():
                batch.extend(
                    self._data(tid, names[i : i + _CHUNK]) for i in range(0, len(names), _CHUNK)
                )
            batch.append(
                self.stmt(
                    "SELECT checkpoint_id, task, value FROM {t}graphagent_writes "
                    "WHERE thread_id = ? AND checkpoint_id = ?",
                    tid,
                    record.id,
                )
            )
            *found, writes = yield tuple(batch)
            cut = len(found) - _statements(by_block)
            found, done = found[:cut], _from_blocks(plan, by_block, found[cut:])
            again = [n for n in by_block if n not in done]
            if again:  # a block missing or unreadable (a file written before blocks)
                reread = yield tuple(self._span(tid, *plan.spans[n])[0] for n in again)
                found = _with_reread(plan, found, done, dict(zip(again, reread, strict=True)))
            blobs, short = _in_plan_order(plan, found, done)
            if short:
                # a range came back with fewer rows than it names: refuse a damaged
                # record's claim as such (counted only now: a count of the thread's rows
                # on every read cost as much as reading 2,000 of them); else the build
                # names the missing item
                yield from self._check_claims(tid, [record])
            values = plan.build(blobs)
            pending = {decode_text(task): bytes(value) for _, task, value in writes}
            writes_of = layout.group_writes(pending, self.serde.loads)
            out.append(layout.to_checkpoint(thread_id, record, values, writes_of))
        return out

    def _by_block(self, plan: ReadPlan) -> dict[int, list[str]]:
        """The spans of ``plan`` read by block (SQLite, long ranges), by their position:
        the fields to read, the items before the first block, then the blocks, then the
        items after the last (see ``_sqlblocks``)."""
        if not self.dialect.item_blocks:
            return {}
        out = {}
        for n, (key, branch, start, end) in enumerate(plan.spans):
            span = blocks.blocks_in(start, end)
            # (a range of more blocks than that is read by range: a damaged record's
            # claim of 10^9 items is refused before any name is made for it)
            if end - start > _CHUNK and 0 < len(span) <= _MAX_BLOCKS:
                stem = layout.log_stem(key, branch)
                head = range(start, span.start * blocks.BLOCK)
                tail = range(span.stop * blocks.BLOCK, end)
                out[n] = [
                    *(f"{stem}{i}" for i in head),
                    *(blocks.block_field(key, branch, b) for b in span),
                    *(f"{stem}{i}" for i in tail),
                ]
        return out

    def _span(self, tid: bytes, key: str, branch: str, start: int, end: int) -> list[Stmt]:
        """Statements reading items ``start..end`` of a log branch: a few by name, many
        by one range of the branch's fields (an index scan, not one look-up each)."""
        stem = layout.log_stem(key, branch)
        if end - start <= _CHUNK:
            return [self._data(tid, [f"{stem}{i}" for i in range(start, end)])]
        low = encode_text(stem)
        return [
            self.stmt(
                "SELECT field, value FROM {t}graphagent_data "
                "WHERE thread_id = ? AND field >= ? AND field < ?",
                tid,
                low,
                low[:-1] + _AFTER_SEP,
            )
        ]

    def threads(self) -> Program[builtins.list[str]]:
        """Every thread id stored (and not expired)."""
        cond, extra = self._alive()
        rows = yield self.stmt(
            "SELECT thread_id FROM {t}graphagent_threads WHERE 1 = 1" + cond, *extra
        )
        return sorted(decode_text(r[0]) for r in rows)

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
        """Remove everything stored for the thread (not a run's lock on it), leaving the
        id the delete minted, so that writes of runs older than the delete are refused."""
        # list() first: another thread of a pooled saver may be adding records meanwhile
        for key in [k for k in list(self._records) if k[0] == thread_id]:
            self._records.pop(key, None)
        self.cache.forget(thread_id)
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


def _in_plan_order(
    plan: ReadPlan,
    found: Sequence[Sequence[Any]],
    done: Mapping[int, list[bytes | None]] | None = None,
) -> tuple[list[bytes | None], bool]:
    """The bytes of ``plan.fields``, in its order, from the rows the batch of
    :meth:`SqlLogic._load` read (``None``: not stored), and whether a range read came
    back with fewer rows than the items it names (the list then ends with ``None`` at
    that range: no name is built for a claim the rows cannot meet)."""
    rows = iter(found)
    singles = {
        decode_text(f): bytes(v) for _ in range(0, len(plan.singles), _CHUNK) for f, v in next(rows)
    }
    blobs: list[bytes | None] = [singles.get(f) for f in plan.singles]
    for n, (key, branch, start, end) in enumerate(plan.spans):
        read = done.get(n) if done else None
        if read is not None:  # read by block
            blobs.extend(read)
            continue
        got = next(rows)
        if end - start <= _CHUNK:  # read by name: only items came back
            by_name = {decode_text(f): bytes(v) for f, v in got}
            stem = layout.log_stem(key, branch)
            blobs.extend([by_name.get(f"{stem}{i}") for i in range(start, end)])
            continue
        if len(got) < end - start:
            blobs.append(None)
            return blobs, True
        # read by range: look each item up by its own name (a stranger under the
        # prefix, "007" or "x", is no item's name); a dict of the rows is built in C
        named: dict[Any, Any] = dict(got)
        if named and type(next(iter(named))) is not bytes:
            named = {bytes(f): v for f, v in named.items()}
        prefix = encode_text(layout.log_stem(key, branch))
        # each name made and looked up in C (maps), not by a loop of bytecode
        names = map(prefix.__add__, layout.numerals(start, end))
        part = list(map(named.get, names))
        if named and type(next(iter(named.values()))) is not bytes:  # one driver: one type
            part = [None if v is None else bytes(v) for v in part]
        blobs.extend(part)
    return blobs, False


def _statements(by_block: Mapping[int, list[str]]) -> int:
    """How many statements :meth:`SqlLogic._load` adds for the spans read by block."""
    return sum(-(-len(names) // _CHUNK) for names in by_block.values())


def _from_blocks(
    plan: ReadPlan, by_block: Mapping[int, list[str]], found: Sequence[Sequence[Any]]
) -> dict[int, list[bytes | None]]:
    """The items of each span read by block, from the rows of its statements (a span
    with a block missing or unreadable is left out; an item missing is ``None``)."""
    rows = iter(found)
    out: dict[int, list[bytes | None]] = {}
    for n, names in by_block.items():
        got = {
            decode_text(f): bytes(v) for _ in range(0, len(names), _CHUNK) for f, v in next(rows)
        }
        key, branch, start, end = plan.spans[n]
        span = blocks.blocks_in(start, end)
        items = blocks.assemble(got, key, branch, span)
        if items is None:
            continue
        head = span.start * blocks.BLOCK - start
        tail = len(names) - head - len(span)
        out[n] = [
            *map(got.get, names[:head]),
            *items,
            *map(got.get, names[len(names) - tail :]),
        ]
    return out


def _with_reread(
    plan: ReadPlan,
    found: Sequence[Sequence[Any]],
    done: Mapping[int, Any],
    reread: Mapping[int, Sequence[Any]],
) -> list[Sequence[Any]]:
    """``found`` with the rows of the spans read again put in their spans' places."""
    singles = -(-len(plan.singles) // _CHUNK)
    rest = iter(found[singles:])
    spans = range(len(plan.spans))
    return [
        *found[:singles],
        *(reread[n] if n in reread else next(rest) for n in spans if n not in done),
    ]
