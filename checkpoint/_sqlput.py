"""A SQL saver's step write as a program: the head check, the records, the data, a prune.

A step lands whole or not at all: in the caller's one transaction, or (PostgreSQL without
ttl and keep_last) as one ``WITH`` statement. History is ordered by the per-thread
sequence number the head's move takes, never by a clock.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, cast

from checkpoint import _layout as layout
from checkpoint import _sqlblocks as blocks
from checkpoint._program import Program
from checkpoint._sqlbase import SqlBase
from checkpoint._sqlschema import Stmt, decode_text, encode_text, storable_id
from checkpoint.base import CheckpointWrite, chain_of, refuse_if_deleted
from checkpoint.errors import CheckpointError, CheckpointNotFoundError

__all__ = ["SqlPut"]


class SqlPut(SqlBase):
    """:meth:`put`: a step's write, checked against the head."""

    def put_mode(self, expected_head: str | None) -> bool | None:
        """A put's transaction: none for one statement (see :meth:`put`), else a write."""
        return None if self._as_one_statement(expected_head) else True

    def _as_one_statement(self, expected_head: str | None) -> bool:
        # a new thread's first write checks the thread's delete: the transaction's way
        return self.one_statement_put and expected_head is not None

    def put(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> Program[None]:
        """Check the head and store the chain of writes: as one statement where the
        dialect can (see :attr:`one_statement_put`), else in the caller's transaction."""
        if self._as_one_statement(expected_head):
            return self.put_one_statement(thread_id, writes, expected_head)
        return self._put(thread_id, writes, expected_head)

    def _put(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> Program[None]:
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
        if self.dialect.item_blocks:
            yield from self._seal(tid, parent, plans)
        for p in plans:
            layout.log_put(thread_id, p)
        if first.parent_id is not None:
            yield self.stmt(
                "DELETE FROM {t}graphagent_writes WHERE thread_id = ? AND checkpoint_id = ?",
                tid,
                first.parent_id,
            )
        for w, p in zip(writes, plans, strict=True):
            self._records.keep((thread_id, w.id), p.record)
        if self.keep_last is not None and moved > self.keep_last:
            yield from self._prune(thread_id, self.keep_last)

    def _seal(
        self, tid: bytes, parent: layout.Record | None, plans: Sequence[layout.PutPlan]
    ) -> Program[None]:
        """Store the blocks of log items this write completed (see ``_sqlblocks``): the
        items it wrote, and those stored before it, read back by name."""
        todo = blocks.sealed(parent, plans[-1].record)
        if not todo:
            return
        have: dict[str, bytes] = {f: v for p in plans for f, v in p.data.items()}
        need = [f for b in todo for f in blocks.items_of(*b) if f not in have]
        for i in range(0, len(need), 500):
            names = need[i : i + 500]
            rows = yield self.stmt(
                "SELECT field, value FROM {t}graphagent_data WHERE thread_id = ? AND field IN ("
                + ", ".join("?" * len(names))
                + ")",
                tid,
                *map(encode_text, names),
            )
            have.update((decode_text(f), bytes(v)) for f, v in rows)
        rows = []
        for key, branch, n in todo:
            items = [have.get(f) for f in blocks.items_of(key, branch, n)]
            if None not in items:  # else an item is gone (pruned): no block
                field = encode_text(blocks.block_field(key, branch, n))
                rows.append((tid, field, blocks.pack(cast("list[bytes]", items))))
        if rows:
            yield self.many(
                "INSERT INTO {t}graphagent_data (thread_id, field, value) VALUES (?, ?, ?) "
                "ON CONFLICT (thread_id, field) DO NOTHING",
                rows,
            )

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
        on_head = writes[0].parent_id == expected_head
        return layout.plan_chain(parent, writes, on_head=on_head, dumps=self.serde.dumps)

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

    def _refuse(
        self, thread_id: str, write: CheckpointWrite, expected_head: str | None, current: str | None
    ) -> None:
        """Raise the conflict for a head that did not move, unless it is this very write."""
        if current == write.id:
            return  # a retry of a write that landed before its reply was lost
        raise layout.conflict(thread_id, expected_head, current, store=self.dialect.name)

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
                self._records.keep((thread_id, w.id), p.record)
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
        if fields and self.dialect.item_blocks:
            fields = [*fields, *blocks.dropped_blocks(fields)]
        if fields:
            yield self.many(
                "DELETE FROM {t}graphagent_data WHERE thread_id = ? AND field = ?",
                [(tid, encode_text(f)) for f in fields],
            )
