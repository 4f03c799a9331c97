"""``MemorySaver``: checkpoints in this process's memory, values stored as encoded bytes.

Values and list items are encoded on the way in, exactly as :class:`~checkpoint.RedisSaver`
stores them, so nothing a caller does to a value after a step (or to a loaded state) can
change what is stored, and a graph that runs on memory runs on Redis. A checkpoint's
record (its bookkeeping: ids, step, next nodes, where each value lives) is built by the
saver itself and kept as it is, not encoded: nobody else holds it, and encoding it was a
fifth of a step's cost. A record whose metadata holds more than text and numbers is
encoded once on the way in, so that what cannot be stored fails here as on Redis.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from checkpoint import _layout as layout
from checkpoint._cache import ReadCache
from checkpoint._history import History, needed_fields
from checkpoint._stored import located
from checkpoint.base import (
    DELETE_KEPT,
    Checkpoint,
    CheckpointSaver,
    CheckpointWrite,
    LockOps,
    PendingWrite,
    chain_of,
    id_time,
    new_checkpoint_id,
    refuse_if_deleted,
)
from checkpoint.errors import CheckpointNotFoundError, SerializationError
from checkpoint.locks import LockPolicy
from checkpoint.serde import Serde, default_serde

__all__ = ["MemorySaver"]


@dataclass
class _Thread:
    head: str | None = None
    # records as built; bytes (a record as another saver stores it) are decoded on read
    records: dict[str, layout.Record | bytes] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    data: dict[str, bytes] = field(default_factory=dict)
    writes: dict[str, dict[str, bytes]] = field(default_factory=dict)


class MemorySaver(CheckpointSaver):
    """Keep threads in memory (tests, notebooks, single-process apps).

    Args:
        serde: the codec (default: the process-wide one).
        keep_last: keep only this many newest checkpoints per thread (``None``: all).

    Attributes:
        read_cache: the decoded list items of recently read threads, so a turn decodes
            only what was written since the last (see :class:`~checkpoint.ReadCache`).

    Example:
        >>> from checkpoint import MemorySaver
        >>> saver = MemorySaver()
        >>> saver.get("no-such-thread") is None
        True
    """

    # its threads die with the process: a step's tasks are not stored one by one
    outlives_process = False

    def __init__(
        self,
        *,
        serde: Serde | None = None,
        keep_last: int | None = None,
        lock_timeout: float | None = None,
        lock_lease: float = 30.0,
    ) -> None:
        if keep_last is not None and keep_last < 1:
            raise ValueError("keep_last must be at least 1 (or None to keep everything)")
        self.serde = serde or default_serde
        self.keep_last = keep_last
        self.lock_policy = LockPolicy.optional(lock_timeout, lock_lease)
        self._threads: dict[str, _Thread] = {}
        self.read_cache = ReadCache(self.serde)
        # thread -> the id its delete minted, oldest first (see refuse_if_deleted)
        self._deleted: dict[str, str] = {}
        self._lock = threading.Lock()
        # thread -> (token, lease end on the monotonic clock)
        self._run_locks: dict[str, tuple[str, float]] = {}

    def _lock_ops(self, thread_id: str, policy: LockPolicy) -> LockOps:
        """Take, renew and release of the thread's run lock, in this process's memory."""
        locks, guard = self._run_locks, self._lock

        def take(token: str) -> bool:
            with guard:
                held = locks.get(thread_id)
                if held is not None and held[1] > time.monotonic():
                    return False
                locks[thread_id] = (token, time.monotonic() + policy.lease)
                return True

        def renew(token: str) -> bool:
            with guard:
                held = locks.get(thread_id)
                if held is None or held[0] != token:
                    return False
                locks[thread_id] = (token, time.monotonic() + policy.lease)
                return True

        def release(token: str) -> None:
            with guard:
                if locks.get(thread_id, ("",))[0] == token:
                    del locks[thread_id]

        return take, renew, release

    def _record(self, thread_id: str, t: _Thread, checkpoint_id: str) -> layout.Record:
        record = t.records.get(checkpoint_id)
        if type(record) is layout.Record:
            return record
        if record is None:
            raise CheckpointNotFoundError(
                f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}"
            )
        assert isinstance(record, bytes)
        decoded = layout.decode_record(record, self.serde.loads, checkpoint_id)
        t.records[checkpoint_id] = decoded
        return decoded

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Store ``write`` as the new head (see :meth:`CheckpointSaver.put`)."""
        self.put_many(thread_id, (write,), expected_head=expected_head)

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes as one step (see :meth:`CheckpointSaver.put_many`)."""
        # errors about stored bytes name the thread here, in line: the wrapper every
        # saver gets for this (CheckpointSaver.__init_subclass__) costs a call per step
        try:
            if len(writes) != 1:
                chain_of(writes)
            dumps = self.serde.dumps
            with self._lock:
                t = self._threads.get(thread_id)
                if t is None:
                    t = _Thread()
                if t.head != expected_head:
                    raise layout.conflict(
                        thread_id, expected_head, t.head, store="memory", gone="deleted"
                    )
                if t.head is None and self._deleted:
                    refuse_if_deleted(thread_id, writes[0].id, self._deleted.pop(thread_id, None))
                parent_id = writes[0].parent_id
                parent = self._record(thread_id, t, parent_id) if parent_id is not None else None
                # plan (encode) every write before storing any: a value that cannot be
                # encoded fails the whole step with nothing stored
                plans = layout.plan_chain(parent, writes, on_head=parent_id == t.head, dumps=dumps)
                for plan in plans:
                    if not plan.plain:
                        # checked (and copied) as the other savers would store them
                        record = plan.record
                        record.metadata, record.extra = self.serde.loads(
                            dumps([record.metadata, record.extra])
                        )
                data, records, order = t.data, t.records, t.order
                log_each = layout.logging_puts()
                for plan in plans:
                    data.update(plan.data)
                    records[plan.record.id] = plan.record
                    order.append(plan.record.id)
                    if log_each:
                        layout.log_put(thread_id, plan)
                if parent_id is not None:
                    t.writes.pop(parent_id, None)
                t.head = writes[-1].id
                self._threads[thread_id] = t
                if self.keep_last is not None and len(order) > self.keep_last:
                    self._prune(thread_id, t, self.keep_last)
        except SerializationError as exc:
            located(exc, thread_id)
            raise

    put_many.names_thread = True  # type: ignore[attr-defined]

    def _prune(self, thread_id: str, t: _Thread, keep: int) -> None:
        drop_ids, keep_ids = t.order[:-keep], t.order[-keep:]
        dropped = [self._record(thread_id, t, i) for i in drop_ids]
        kept = [self._record(thread_id, t, i) for i in keep_ids]
        for record in (*dropped, *kept):
            layout.check_claim(record, len(t.data))
        ids, fields = layout.plan_prune(dropped, kept)
        for cid in ids:
            t.records.pop(cid, None)
            t.writes.pop(cid, None)
        for f in fields:
            t.data.pop(f, None)
        t.order = keep_ids

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        by_task: dict[str, list[PendingWrite]] = {}
        for w in writes:
            by_task.setdefault(w.task, []).append(w)
        with self._lock:
            t = self._threads.get(thread_id)
            if t is None or checkpoint_id not in t.records:
                raise CheckpointNotFoundError(
                    f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}"
                )
            slot = t.writes.setdefault(checkpoint_id, {})
            for task, group in by_task.items():
                slot[task] = layout.encode_writes(group, self.serde.dumps)

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head, or the named checkpoint, with its state rebuilt."""
        with self._lock:
            t = self._threads.get(thread_id)
            if t is None or t.head is None:
                if checkpoint_id is not None:
                    raise CheckpointNotFoundError(
                        f"thread {thread_id!r} has no checkpoint {checkpoint_id!r}"
                    )
                return None
            return self._load(thread_id, t, checkpoint_id or t.head)

    def _load(self, thread_id: str, t: _Thread, checkpoint_id: str) -> Checkpoint:
        record = self._record(thread_id, t, checkpoint_id)
        layout.check_claim(record, len(t.data))
        plan = self.read_cache.plan(thread_id, record)
        values = plan.build([t.data.get(f) for f in plan.fields])
        pending = layout.group_writes(t.writes.get(checkpoint_id, {}), self.serde.loads)
        return layout.to_checkpoint(thread_id, record, values, pending)

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> History:
        """Checkpoints newest first, each stored item decoded once, states built on read."""
        with self._lock:
            t = self._threads.get(thread_id)
            if t is None:
                return History(thread_id, [], {}, {}, self.serde.loads)
            ids = layout.older_than(t.order, before)[::-1]
            if limit is not None:
                ids = ids[: max(limit, 0)]
            records = [self._record(thread_id, t, i) for i in ids]
            blobs = {f: t.data.get(f) for f in needed_fields(records, len(t.data))}
            pending = {i: dict(t.writes[i]) for i in ids if i in t.writes}
        return History(thread_id, records, blobs, pending, self.serde.loads)

    def delete_thread(self, thread_id: str) -> None:
        """Forget the thread (see :meth:`CheckpointSaver.delete_thread`)."""
        with self._lock:
            self._threads.pop(thread_id, None)
            self.read_cache.forget(thread_id)
            deleted = self._deleted
            deleted.pop(thread_id, None)
            deleted[thread_id] = new_checkpoint_id()
            # oldest first: forget the markers older than DELETE_KEPT
            cutoff = time.time() - DELETE_KEPT
            while id_time(deleted[oldest := next(iter(deleted))]) < cutoff:
                del deleted[oldest]

    def head(self, thread_id: str) -> str | None:
        """The thread's head id, without loading its state."""
        with self._lock:
            t = self._threads.get(thread_id)
            return t.head if t else None

    def threads(self) -> builtins.list[str]:
        """Every thread id held."""
        with self._lock:
            return sorted(self._threads)

    async def aput(
        self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None
    ) -> None:
        """Async :meth:`put` (no I/O: runs inline)."""
        self.put(thread_id, write, expected_head=expected_head)

    async def aput_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Async :meth:`put_many` (runs inline)."""
        self.put_many(thread_id, writes, expected_head=expected_head)

    async def aput_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Async :meth:`put_writes` (runs inline)."""
        self.put_writes(thread_id, checkpoint_id, writes)

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """Async :meth:`get` (runs inline)."""
        return self.get(thread_id, checkpoint_id)

    async def alist(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Async :meth:`list` (runs inline)."""
        return self.list(thread_id, limit=limit, before=before)

    async def ahistory(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> History:
        """Async :meth:`history` (runs inline)."""
        return self.history(thread_id, limit=limit, before=before)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread` (runs inline)."""
        self.delete_thread(thread_id)

    async def ahead(self, thread_id: str) -> str | None:
        """Async :meth:`head` (runs inline)."""
        return self.head(thread_id)
