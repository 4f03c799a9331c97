"""The cursor a PostgreSQL saver runs one statement on: binary, tuples, kept per
connection and statement.

A new psycopg cursor costs more client time than sending a small statement: it copies
the connection's adapters and starts with an empty transformer, which then looks up a
dumper for every parameter (and every array element) and a loader for every column
again (~90k instructions of a warm turn's ~1.5M, per statement). A cursor that runs the
same statement text again keeps its transformer, so a pooled connection keeps one
cursor per statement it ran lately.

Parameters and results are binary: ``bytea`` values and arrays travel as they are,
without the text format's escaping (psycopg dumps a text array with a regular
expression per element) and unescaping. A list of ``bytes`` or of ``str`` (the arrays of
a turn's read and write) is packed here, by C iterators, instead of by psycopg's list
dumper, which looks up and calls a dumper per element.
"""

from __future__ import annotations

import functools
import struct
import weakref
from collections.abc import Sequence
from typing import Any

__all__ = ["cursor_for", "let_go", "packed"]

KEPT = 16  # statements a connection keeps a cursor for (a turn runs two)
ROWS_KEPT = 64  # a cursor that fetched more is dropped: it would hold those rows

# connection -> statement text -> its cursor; a connection's cursors go with it
_cursors: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


_BYTEA, _TEXT = 17, 25
_HEAD = struct.Struct("!iiIii")  # dimensions, has nulls, element type, length, lower bound
_LENGTH = struct.Struct("!i")


class _Array(bytes):
    """An array parameter in PostgreSQL's binary array format."""

    oid: int


class _ByteaArray(_Array):
    oid = 1001


class _TextArray(_Array):
    oid = 1009


def _pack(items: Sequence[bytes], elem: int) -> bytes:
    lengths = map(_LENGTH.pack, map(len, items))
    body = b"".join(map(b"".join, zip(lengths, items, strict=True)))
    return _HEAD.pack(1, 0, elem, len(items), 1) + body


def packed(params: Sequence[Any]) -> Sequence[Any]:
    """``params`` with each non-empty list of ``bytes`` (or of ``str``) packed as a
    ``bytea[]`` (``text[]``) parameter; other values (an empty list: its type is the
    statement's cast) are psycopg's to dump."""
    out: list[Any] | None = None
    for n, value in enumerate(params):
        if type(value) is not list or not value:
            continue
        kinds = set(map(type, value))
        if kinds == {bytes}:
            array: bytes = _ByteaArray(_pack(value, _BYTEA))
        elif kinds == {str}:
            array = _TextArray(_pack([v.encode() for v in value], _TEXT))
        else:
            continue
        if out is None:
            out = list(params)
        out[n] = array
    return params if out is None else out


@functools.cache
def _dumpers() -> tuple[tuple[type, type], ...]:
    """psycopg dumpers of the packed arrays: they are sent as they are (made on first
    use: psycopg is imported only by a saver that runs)."""
    from psycopg.adapt import Dumper
    from psycopg.pq import Format

    made: list[tuple[type, type]] = []
    for kind in (_ByteaArray, _TextArray):

        class Packed(Dumper):
            format = Format.BINARY
            oid = kind.oid

            def dump(self, obj: _Array) -> bytes:
                return obj  # already packed

        made.append((kind, Packed))
    return tuple(made)


def cursor_for(conn: Any, sql: str) -> Any:
    """A binary, tuple-row cursor of ``conn`` for ``sql``: the one it ran ``sql`` on last
    time, if kept."""
    kept = _cursors.get(conn)
    if kept is None:
        kept = _cursors[conn] = {}
    cur = kept.get(sql)
    if cur is None:
        from psycopg.rows import tuple_row

        if len(kept) >= KEPT:
            kept.clear()
        # tuples whatever row factory the pool's connections were given
        cur = kept[sql] = conn.cursor(binary=True, row_factory=tuple_row)
        for kind, dumper in _dumpers():
            cur.adapters.register_dumper(kind, dumper)
    return cur


def let_go(conn: Any, sql: str, rows: int) -> None:
    """Drop the cursor of ``sql`` after it fetched ``rows`` rows, if that is more than a
    kept cursor should hold until its next run."""
    if rows > ROWS_KEPT:
        kept = _cursors.get(conn)
        if kept is not None:
            kept.pop(sql, None)
