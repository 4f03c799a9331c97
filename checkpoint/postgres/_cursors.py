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
expression per element) and unescaping.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["cursor_for", "let_go"]

KEPT = 16  # statements a connection keeps a cursor for (a turn runs two)
ROWS_KEPT = 64  # a cursor that fetched more is dropped: it would hold those rows

# connection -> statement text -> its cursor; a connection's cursors go with it
_cursors: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


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
    return cur


def let_go(conn: Any, sql: str, rows: int) -> None:
    """Drop the cursor of ``sql`` after it fetched ``rows`` rows, if that is more than a
    kept cursor should hold until its next run."""
    if rows > ROWS_KEPT:
        kept = _cursors.get(conn)
        if kept is not None:
            kept.pop(sql, None)
