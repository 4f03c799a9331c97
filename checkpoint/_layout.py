"""Storage layout shared by every saver: pure functions, no I/O.

A thread is stored as:

* records: checkpoint id -> record (small: bookkeeping plus, per key, *where* its
  value lives, never the value itself);
* data: field -> encoded bytes, for values and list items;
* pending writes: per checkpoint, per task.

Replace-style keys ("set" changes) of one step are stored together, once, in field
``v|<checkpoint id>`` (a map of key -> value); a record maps each such key to the
checkpoint that wrote its current value, so a key unchanged for 500 steps costs
nothing per step, and a step that sets four counters writes one field.

Append-style keys ("append"/"reset" changes) are logs. A log is a list of ranges
``(branch, start, end)``; branch ``b`` holds items in fields ``l|<key>|<b>|<i>``. A
checkpoint written on top of the thread's head extends the head's last branch in
place, so appending one message to a 1,000-message history writes one item and a
record whose size does not depend on the history. A checkpoint written on top of
an older one (a fork: ``update_state`` on history, time travel) starts a new branch
and keeps the parent's ranges, so forks share the history they have in common.

Only the line that started a branch may extend it: a record lists the branches it
*owns* (``own``). A fork owns none of the branches it shares, so when it appends
later it starts its own branch, and the shared items (which the original line
goes on reading, and may go on extending) are never overwritten.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain
from typing import Any, TypeVar

from checkpoint._record import LAYOUT, Record, damaged, decode_record, own_map
from checkpoint._stored import STORED_WAY_OUT, located
from checkpoint.base import Checkpoint, CheckpointWrite, PendingWrite
from checkpoint.errors import CheckpointConflictError, SerializationError

__all__ = [
    "FREE_CLAIM",
    "LAYOUT",
    "BoundedCache",
    "PutPlan",
    "Record",
    "check_claim",
    "claimed",
    "conflict",
    "damaged",
    "decode_record",
    "decode_writes",
    "encode_writes",
    "group_writes",
    "log_put",
    "log_stem",
    "logging_puts",
    "numerals",
    "older_than",
    "own_map",
    "plan_chain",
    "plan_prune",
    "plan_put",
    "read_fields",
    "rebuild",
    "to_checkpoint",
]

Dumps = Callable[[Any], bytes]
Loads = Callable[[bytes], Any]
Range = tuple[str, int, int]
K = TypeVar("K")
V = TypeVar("V")
SEP = "|"
# A record may name this many data fields without the saver counting what is stored first:
# building that many names costs little, and each one missing is then an error of its own.
FREE_CLAIM = 4096


def claimed(record: Record) -> int:
    """How many data fields ``record`` needs, without building their names."""
    return len(_versions(record)) + sum(
        end - start for ranges in record.logs.values() for _, start, end in ranges
    )


def check_claim(record: Record, stored: int) -> None:
    """Refuse a record that names more data fields than the thread stores (a 100-byte
    record claiming 10^9 items would otherwise be read until memory runs out).

    Raises:
        SerializationError: naming the claim and what is stored.
    """
    wanted = claimed(record)
    if wanted > stored:
        raise damaged(
            record.id,
            f"it names {wanted} stored values and list items, and the thread holds {stored}",
        )


def val_field(version: str) -> str:
    """Data field holding the values set at checkpoint ``version`` (a key -> value map)."""
    return f"v{SEP}{version}"


def log_stem(key: str, branch: str) -> str:
    """What the data fields of branch ``branch`` of the log of ``key`` start with: item
    ``i`` is in ``log_stem(key, branch) + str(i)``."""
    return f"l{SEP}{key}{SEP}{branch}{SEP}"


_NUMERALS: list[bytes] = []
_NUMERALS_HELD = 1 << 16  # ~3 MB of short bytes at most


def numerals(start: int, end: int) -> Iterable[bytes]:
    """``b"%d" % i`` for ``start <= i < end``: made once per process for the first
    65,536 (formatting each was ~0.7k of the ~3.3k instructions per item that matching
    a long log's rows to its items cost)."""
    global _NUMERALS
    held = _NUMERALS
    if end > len(held) and len(held) < _NUMERALS_HELD:
        size = min(max(end, 2 * len(held), 1024), _NUMERALS_HELD)
        # a new list, swapped in whole: a reader on another thread keeps the one it took
        held = _NUMERALS = list(map(b"%d".__mod__, range(size)))
    if end <= len(held):
        return held[start:end]
    return chain(held[start:], map(b"%d".__mod__, range(max(start, len(held)), end)))


def log_field(key: str, branch: str, index: int) -> str:
    """Data field holding item ``index`` of branch ``branch`` of the log of ``key``."""
    return f"{log_stem(key, branch)}{index}"


class PutPlan:
    """What to store for one checkpoint: its record and the data fields it adds.

    The record's bytes are encoded when first asked for: savers that store bytes
    (Redis, SQL) ask, :class:`~checkpoint.MemorySaver` keeps the record itself.
    """

    __slots__ = ("_blob", "_dumps", "data", "plain", "record")

    def __init__(
        self, record: Record, data: dict[str, bytes], dumps: Dumps, plain: bool = False
    ) -> None:
        self.record = record
        self.data = data
        # the record's metadata and extra are text keys, atoms and flat lists of atoms
        self.plain = plain
        self._dumps = dumps
        self._blob: bytes | None = None

    @property
    def record_blob(self) -> bytes:
        """The record as stored bytes."""
        if self._blob is None:
            self._blob = self._dumps(self.record.to_plain())
        return self._blob

    @property
    def size(self) -> int:
        """Bytes of values this write stores (record plus data fields; keys not counted)."""
        return len(self.record_blob) + sum(len(v) for v in self.data.values())


# under graphagent's logger tree, by name only: this package never imports graphagent
_log = logging.getLogger("graphagent.checkpoint")


def logging_puts() -> bool:
    """Whether :func:`log_put` would log (DEBUG on ``graphagent.checkpoint``)."""
    return _log.isEnabledFor(logging.DEBUG)


def log_put(thread_id: str, plan: PutPlan) -> None:
    """Log a stored checkpoint at DEBUG (thread, step, bytes); never its values."""
    if _log.isEnabledFor(logging.DEBUG):
        record = plan.record
        _log.debug(
            "checkpoint write thread=%s step=%d bytes=%d fields=%d",
            thread_id,
            record.step,
            plan.size,
            len(plan.data),
            extra={
                "graphagent": {
                    "event": "checkpoint.write",
                    "thread": thread_id,
                    "step": record.step,
                    "checkpoint_id": record.id,
                    "bytes": plan.size,
                }
            },
        )


def plan_put(
    parent: Record | None, write: CheckpointWrite, *, on_head: bool, dumps: Dumps
) -> PutPlan:
    """Plan the storage of ``write`` on top of ``parent``.

    Args:
        parent: the parent's record (``None`` for a thread's first checkpoint).
        write: the step's changes.
        on_head: the parent is the thread's head, so the log branches it owns may be
            extended in place.
        dumps: the value encoder.
    """
    wid = write.id
    if parent is not None:
        vals = parent.vals.copy()
        logs = parent.logs  # copied before the first change: most steps change no log
        owned = parent.own if on_head else ()
    else:
        vals, logs, owned = {}, {}, ()
    logs_changed = False
    # whether the branches this line owns may have changed: a log started a branch, was
    # reset or became a plain value (an append to an owned branch changes nothing)
    own_changed = False
    started: list[str] | None = None  # branches this write starts
    data: dict[str, bytes] = {}
    sets: dict[str, Any] = {}
    for key, (kind, payload) in write.changes.items():
        if SEP in key:
            raise SerializationError(f"state key {key!r} contains {SEP!r}; rename the key")
        if kind == "set":
            if key in logs:
                if not logs_changed:
                    logs, logs_changed = dict(logs), True
                del logs[key]
                own_changed = True
            vals[key] = wid
            sets[key] = payload
            continue
        if kind == "append" and key in vals:
            raise SerializationError(
                f"key {key!r} was stored replaced and is now appended to; its strategy "
                "changed: start a new thread or write the whole list once (a reset)"
            )
        if not logs_changed:
            logs, logs_changed = dict(logs), True
        items = payload if type(payload) is list else list(payload)
        ranges = logs.get(key) if kind == "append" else None
        if kind != "append":
            vals.pop(key, None)
            own_changed = True
        if ranges and ranges[-1][0] in owned:
            branch, start, base = ranges[-1]
            ranges = ranges.copy()
            ranges[-1] = (branch, start, base + len(items))
        else:
            branch, base = wid, 0
            ranges = [*(ranges or ()), (branch, 0, len(items))]
            started = [branch] if started is None else [*started, branch]
            own_changed = True
        stem = log_stem(key, branch)
        for offset, item in enumerate(items, base):
            data[f"{stem}{offset}"] = dumps(item)
        logs[key] = ranges
    if sets:
        data[val_field(wid)] = dumps(sets)
    if own_changed:
        # the branches this line may extend: those it started that its logs still use
        used = {r[0] for ranges in logs.values() for r in ranges}
        own = tuple(sorted({*owned, *(started or ())} & used))
    else:
        own = owned
    metadata, plain = own_map(write.metadata)
    if write.extra:
        extra, plain_extra = own_map(write.extra)
        plain = plain and plain_extra
    else:
        extra = {}
    nxt = write.next
    record = Record(
        wid,
        write.parent_id,
        write.step,
        write.created_at,
        nxt if type(nxt) is tuple else tuple(nxt),
        metadata,
        extra,
        vals,
        logs,
        own,
    )
    return PutPlan(record, data, dumps, plain)


def plan_chain(
    parent: Record | None,
    writes: Sequence[CheckpointWrite],
    *,
    on_head: bool,
    dumps: Dumps,
) -> list[PutPlan]:
    """Plan a chain of writes (each the parent of the next), the first on top of
    ``parent``: each later one extends the branches its parent owns (it is on the head)."""
    if len(writes) == 1:  # a step (the commonest chain): no loop
        return [plan_put(parent, writes[0], on_head=on_head, dumps=dumps)]
    plans = []
    for write in writes:
        plan = plan_put(parent, write, on_head=on_head, dumps=dumps)
        plans.append(plan)
        parent, on_head = plan.record, True
    return plans


def conflict(
    thread_id: str,
    expected_head: str | None,
    current: str | None,
    *,
    store: str,
    gone: str = "deleted, or expired after its ttl",
    hint: str = "",
) -> CheckpointConflictError:
    """The error for a write whose expected head is not the thread's head; nothing was
    written.

    Args:
        thread_id: the thread.
        expected_head: the head the writer read.
        current: the head the thread has now (``None``: the thread is not there).
        store: where the thread lives, for the message (``"Redis"``).
        gone: how a thread can vanish from that store.
        hint: what else to do about a vanished thread, for the message.
    """
    if current is None and expected_head is not None:
        return CheckpointConflictError(
            f"thread {thread_id!r} is gone from {store} ({gone}) while this run expected "
            f"checkpoint {expected_head!r}; nothing was written. Start the thread again"
            f"{hint}"
        )
    return CheckpointConflictError(
        f"thread {thread_id!r} moved to checkpoint {current!r} while this run expected "
        f"{expected_head!r}; nothing was written. Reload the thread and run again, or "
        "serialise runs per thread"
    )


class BoundedCache(dict[K, V]):
    """A dict of what never changes once stored (decoded records, key names), bounded:
    one that would grow past ``limit`` entries starts again empty.

    A ``dict`` itself, so a look-up costs what a dict's does (this is on every step).
    """

    __slots__ = ("limit",)

    def __init__(self, limit: int = 4096) -> None:
        super().__init__()
        self.limit = limit

    def keep(self, key: K, value: V) -> V:
        """Hold ``value`` under ``key``; returns ``value``."""
        if len(self) >= self.limit and key not in self:
            self.clear()
        self[key] = value
        return value


def _versions(record: Record) -> list[str]:
    return list(dict.fromkeys(record.vals.values()))


def read_fields(record: Record) -> list[str]:
    """Every data field needed to rebuild ``record``'s values, in :func:`rebuild` order."""
    fields = [val_field(version) for version in _versions(record)]
    for key, ranges in record.logs.items():
        for branch, start, end in ranges:
            fields.extend(log_field(key, branch, i) for i in range(start, end))
    return fields


def rebuild(record: Record, blobs: Sequence[bytes | None], loads: Loads) -> dict[str, Any]:
    """The state at ``record`` from the blobs of :func:`read_fields` (same order)."""
    try:
        return _rebuild(record, blobs, loads)
    except SerializationError as exc:
        located(exc, checkpoint_id=record.id)
        raise


def _rebuild(record: Record, blobs: Sequence[bytes | None], loads: Loads) -> dict[str, Any]:
    values: dict[str, Any] = {}
    it = iter(blobs)
    sets = {version: loads(_present(next(it), "?")) for version in _versions(record)}
    for version, held in sets.items():
        if type(held) is not dict:
            raise damaged(
                record.id, f"the values it set (field {val_field(version)!r}) are not a map"
            )
    for key, version in record.vals.items():
        if key not in sets[version]:
            raise SerializationError(f"stored data for key {key!r} is missing")
        values[key] = sets[version][key]
    for key, ranges in record.logs.items():
        size = sum(end - start for _, start, end in ranges)
        values[key] = [loads(_present(next(it), key)) for _ in range(size)]
    return values


def _present(blob: bytes | None, key: str) -> bytes:
    if blob is None:
        raise SerializationError(
            f"stored data for key {key!r} is missing (the thread was pruned or expired "
            "while being read)"
        )
    return blob


def to_checkpoint(
    thread_id: str,
    record: Record,
    values: dict[str, Any],
    pending: Iterable[PendingWrite] = (),
) -> Checkpoint:
    """Assemble the public :class:`Checkpoint`."""
    return Checkpoint(
        thread_id=thread_id,
        id=record.id,
        parent_id=record.parent_id,
        step=record.step,
        values=values,
        next=record.next,
        # copies: records are cached and shared, and a caller may change what it reads
        metadata=own_map(record.metadata)[0],
        created_at=record.created_at,
        extra=own_map(record.extra)[0] if record.extra else {},
        pending_writes=tuple(pending),
    )


def encode_writes(writes: Sequence[PendingWrite], dumps: Dumps) -> bytes:
    """Encode one task's pending writes."""
    return dumps([[w.task, w.kind, w.value] for w in writes])


def decode_writes(blob: bytes, loads: Loads) -> list[PendingWrite]:
    """Decode what :func:`encode_writes` made.

    Raises:
        SerializationError: the bytes are not a list of (task, kind, value).
    """
    data = loads(blob)
    if type(data) is not list or not all(
        type(w) is list and len(w) == 3 and type(w[0]) is str and type(w[1]) is str for w in data
    ):
        raise SerializationError(
            "stored pending writes are damaged: they are not a list of (task, kind, value). "
            f"The store was changed behind the saver's back. {STORED_WAY_OUT}"
        )
    return [PendingWrite(task, kind, value) for task, kind, value in data]


def plan_prune(dropped: Sequence[Record], kept: Sequence[Record]) -> tuple[list[str], list[str]]:
    """Which record ids and data fields can go when ``dropped`` records are deleted.

    Values and log items still referenced by a kept record stay.
    """
    used_vals = {v for r in kept for v in r.vals.values()}
    used_logs: dict[tuple[str, str], int] = {}
    for r in kept:
        for key, ranges in r.logs.items():
            for branch, _, end in ranges:
                used_logs[(key, branch)] = max(end, used_logs.get((key, branch), 0))
    fields: set[str] = set()
    for r in dropped:
        for version in r.vals.values():
            if version not in used_vals:
                fields.add(val_field(version))
        for key, ranges in r.logs.items():
            for branch, start, end in ranges:
                keep_until = used_logs.get((key, branch), 0)
                fields.update(log_field(key, branch, i) for i in range(max(start, keep_until), end))
    return [r.id for r in dropped], sorted(fields)


def older_than(order: Sequence[str], before: str | None) -> list[str]:
    """The ids of ``order`` (a thread's ids, oldest first) written before ``before``.

    ``None``: all of them. An id the thread does not hold falls back to the ids' time
    order, the best a caller's foreign id allows.
    """
    if before is None:
        return list(order)
    for position, cid in enumerate(order):
        if cid == before:
            return list(order[:position])
    return [cid for cid in order if cid < before]


def group_writes(blobs: Mapping[str, bytes], loads: Loads) -> list[PendingWrite]:
    """Decode every task's pending writes of one checkpoint, in task order."""
    out: list[PendingWrite] = []
    for task in sorted(blobs):
        out.extend(decode_writes(blobs[task], loads))
    return out
