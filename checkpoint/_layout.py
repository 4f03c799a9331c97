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
from dataclasses import dataclass
from typing import Any

from checkpoint.base import Checkpoint, CheckpointWrite, PendingWrite
from checkpoint.errors import STORED_WAY_OUT, SerializationError, located

__all__ = [
    "FREE_CLAIM",
    "PutPlan",
    "log_put",
    "log_stem",
    "logging_puts",
    "Record",
    "check_claim",
    "claimed",
    "damaged",
    "decode_record",
    "decode_writes",
    "encode_writes",
    "older_than",
    "plan_put",
    "plan_prune",
    "read_fields",
    "rebuild",
]

Dumps = Callable[[Any], bytes]
Loads = Callable[[bytes], Any]
Range = tuple[str, int, int]
SEP = "|"
LAYOUT = 2
"""Version of the stored record layout (1: one value field per key; 2: per checkpoint)."""


@dataclass(slots=True)
class Record:
    """A checkpoint's bookkeeping as stored (values live in data fields).

    Never changed once built (records are cached and shared); not ``frozen`` because a
    frozen dataclass pays a ``object.__setattr__`` call per field, and one is built
    every step.
    """

    id: str
    parent_id: str | None
    step: int
    created_at: float
    next: tuple[str, ...]
    metadata: dict[str, Any]
    extra: dict[str, Any]
    vals: dict[str, str]
    logs: dict[str, list[Range]]
    own: tuple[str, ...] = ()

    def to_plain(self) -> list[Any]:
        """The record as plain msgpack-able data."""
        return [
            LAYOUT,
            self.id,
            self.parent_id,
            self.step,
            self.created_at,
            list(self.next),
            self.metadata,
            self.extra,
            self.vals,
            {k: [list(r) for r in ranges] for k, ranges in self.logs.items()},
            list(self.own),
        ]


_ATOMS = frozenset({str, int, float, bool, type(None)})
_MAX_DEPTH = 100  # as the serde's (checkpoint.serde.MAX_DEPTH)


def _own(value: Any, depth: int = 0) -> Any:
    """``value`` with its dicts, lists and tuples copied (the rest by reference: atoms
    are immutable, and anything else is checked by encoding it)."""
    cls = type(value)
    if cls in _ATOMS:
        return value
    if depth > _MAX_DEPTH:
        raise SerializationError(
            f"cannot store metadata nested more than {_MAX_DEPTH} levels deep, or that "
            "contains itself: flatten it"
        )
    if cls is dict:
        return {k: _own(v, depth + 1) for k, v in value.items()}
    if cls is list:
        return [_own(v, depth + 1) for v in value]
    if cls is tuple:
        return tuple(_own(v, depth + 1) for v in value)
    return value


def own_map(part: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """A copy of a write's metadata or extra that later changes to the caller's objects
    cannot reach (records are cached and shared by reads), and whether it is plain: text
    keys, atoms and flat lists of atoms, storable as they are without encoding to check.
    """
    out = dict(part)
    plain = True
    for key, value in out.items():
        if type(key) is not str:
            plain = False
        cls = type(value)
        if cls in _ATOMS:
            continue
        if cls is list:
            for item in value:
                if type(item) not in _ATOMS:
                    break
            else:
                out[key] = value.copy()
                continue
        out[key] = _own(value)
        plain = False
    return out, plain


def decode_record(blob: bytes, loads: Loads, cid: str | None = None) -> Record:
    """Decode a record stored by :func:`plan_put`, checking every part of its shape.

    Args:
        blob: the stored bytes.
        loads: the value decoder.
        cid: the id it is stored under, when known (a record under another id is damaged).

    Raises:
        SerializationError: the bytes are not a record of this layout (damaged, tampered
            with, or written by another version), naming what is wrong and what to do.
    """
    try:
        data = loads(blob)
    except SerializationError as exc:
        located(exc, checkpoint_id=cid)
        raise
    if isinstance(data, list) and data and type(data[0]) is int and data[0] > LAYOUT:
        # a rolling deploy: the newer half of the workers wrote it, and it is healthy
        raise located(
            SerializationError(
                f"this checkpoint was written by a newer graphagent (layout {data[0]}): "
                f"upgrade graphagent on this worker to read it (this version reads layout "
                f"{LAYOUT}). The thread is healthy: keep it"
            ),
            checkpoint_id=cid,
        )
    if not isinstance(data, list) or len(data) not in (10, 11) or type(data[0]) is not int:
        raise damaged(cid, "it is not a checkpoint record")
    if data[0] != LAYOUT:
        raise SerializationError(
            f"this thread was stored with storage layout {data[0]}, and this version of "
            f"checkpoint reads layout {LAYOUT}; delete the thread (or read it with the version "
            "that wrote it)"
        )
    _, rid, parent, step, created, nxt, meta, extra, vals, logs = data[:10]
    # records written before branch ownership own nothing: appending on top of one
    # starts a new branch, which is always safe
    own = data[10] if len(data) == 11 else []
    problem = _shape_problem(rid, parent, step, created, nxt, meta, extra, vals, logs, own)
    if problem is None and cid is not None and rid != cid:
        problem = f"it is stored under id {cid!r} but names itself {rid!r}"
    if problem is not None:
        raise damaged(cid if cid is not None else rid, problem)
    return Record(
        id=rid,
        parent_id=parent,
        step=step,
        created_at=float(created),
        next=tuple(nxt),
        metadata=meta,
        extra=extra,
        vals=vals,
        logs={k: [(b, s, e) for b, s, e in ranges] for k, ranges in logs.items()},
        own=tuple(own),
    )


def _is_int(value: Any) -> bool:
    return type(value) is int


def _strs(values: Any) -> bool:
    return isinstance(values, list) and all(type(v) is str for v in values)


def _shape_problem(
    rid: Any,
    parent: Any,
    step: Any,
    created: Any,
    nxt: Any,
    meta: Any,
    extra: Any,
    vals: Any,
    logs: Any,
    own: Any,
) -> str | None:
    """What is wrong with a decoded record's parts (``None``: nothing)."""
    if type(rid) is not str or not (parent is None or type(parent) is str):
        return "its id or its parent's id is not text"
    if not _is_int(step) or type(created) not in (int, float):
        return "its step or creation time is not a number"
    if not _strs(nxt) or not _strs(own):
        return "its next nodes or its branches are not lists of names"
    if type(meta) is not dict or type(extra) is not dict:
        return "its metadata is not a map"
    if type(vals) is not dict or not all(
        type(k) is str and type(v) is str for k, v in vals.items()
    ):
        return "its map of values is not names to checkpoint ids"
    if type(logs) is not dict:
        return "its map of lists is not a map"
    for key, ranges in logs.items():
        if type(key) is not str or type(ranges) is not list:
            return "its map of lists is not names to ranges"
        for r in ranges:
            if type(r) is not list or len(r) != 3 or type(r[0]) is not str:
                return f"a range of list {key!r} is not (branch, start, end)"
            if not (_is_int(r[1]) and _is_int(r[2]) and 0 <= r[1] <= r[2]):
                return f"a range of list {key!r} is not 0 <= start <= end: {r[1:]!r}"
    return None


def damaged(cid: str | None, problem: str) -> SerializationError:
    """The error for a stored record (or its data) that cannot be what this library wrote."""
    which = f"checkpoint {cid!r}" if cid is not None else "a checkpoint"
    return located(
        SerializationError(
            f"the stored record of {which} is damaged: {problem}. The store was changed "
            f"behind the saver's back (or its bytes were corrupted). {STORED_WAY_OUT}"
        ),
        checkpoint_id=cid,
    )


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
