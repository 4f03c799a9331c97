"""A checkpoint's record as stored: its bookkeeping, built and checked (see ``_layout``).

A record holds ids, step, next nodes, metadata and, per state key, *where* its value
lives (never the value). It is stored as a msgpack list led by :data:`LAYOUT`; decoding
checks every part of that shape, so bytes changed behind the saver's back are refused
with an error naming the checkpoint and what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from checkpoint._stored import STORED_WAY_OUT, located
from checkpoint.errors import SerializationError

__all__ = ["LAYOUT", "Record", "damaged", "decode_record", "own_map"]

Loads = Callable[[bytes], Any]
Range = tuple[str, int, int]
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
    if not isinstance(data, list) or len(data) != 11 or type(data[0]) is not int:
        raise damaged(cid, "it is not a checkpoint record")
    if data[0] != LAYOUT:
        raise SerializationError(
            f"this thread was stored with storage layout {data[0]}, and this version of "
            f"checkpoint reads layout {LAYOUT}; delete the thread (or read it with the version "
            "that wrote it)"
        )
    _, rid, parent, step, created, nxt, meta, extra, vals, logs, own = data
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
