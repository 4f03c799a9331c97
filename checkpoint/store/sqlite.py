"""``SqliteStore``: items in a SQLite file (WAL mode), shared by every process that opens it.

Each batch is one transaction (``BEGIN IMMEDIATE`` when it writes), so a put lands whole
(value, timestamps and vectors) or not at all, and of two writers to one key the later
wins. With sqlite-vec loadable (``pip install sqlite-vec`` and a Python whose ``sqlite3``
can load extensions) semantic search ranks inside SQLite with ``vec_distance_cosine``;
otherwise it reads the candidates' vectors and ranks them exactly in Python.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from typing_extensions import Self

from checkpoint.errors import CheckpointStorageError
from checkpoint.store import _core as core
from checkpoint.store import base as _base
from checkpoint.store._items import Item, SearchItem, _Put, _Search, new_item
from checkpoint.store._sqlstore import SqlStore, pack

__all__ = ["SqliteStore"]

# items kept for repeated gets (values whose reads are dropped whenever anything commits)
CACHED_ITEMS = 4096
_NO_VERSION = (-1, -1)  # SqliteStore._seen when its cache has no version yet
# the C scanner core.loads uses, called by get directly
_scan: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]

_TYPES = {"num": "('integer', 'real')", "str": "('text')"}
_OPS = {"$eq": "=", "$ne": "=", "$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}


def _json_path(path: Sequence[str]) -> str:
    return "$" + "".join(f'."{part}"' for part in path)


def _bindable(operand: Any) -> Any:
    """An operand SQLite can bind: an int beyond 64 bits as the float SQLite reads such a
    stored number as (binding the int itself overflows)."""
    if type(operand) is int and not -(2**63) <= operand < 2**63:
        try:
            return float(operand)
        except OverflowError:
            return math.copysign(math.inf, operand)
    return operand


def _json_equal(stored: object, wanted: str) -> bool:
    """SQL ``ga_json_equal``: two JSON texts equal as JSON (``core.json_equal``).

    Never raises, whatever SQLite hands it: SQL's ``AND`` does not promise to skip this
    call when the ``json_type`` guard beside it is false, so ``stored`` may be the bare
    number, text or NULL that ``json_extract`` gives for a scalar (no match, then).
    """
    if not isinstance(stored, str):
        return False
    try:
        return core.json_equal(json.loads(stored), json.loads(wanted))
    except (ValueError, TypeError, RecursionError):
        return False


def _load_vec(conn: sqlite3.Connection) -> bool:
    """Load sqlite-vec into ``conn`` if this Python and the package allow it."""
    try:
        import sqlite_vec  # type: ignore[import-not-found, import-untyped, unused-ignore]
    except ImportError:
        return False
    try:
        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    except (AttributeError, sqlite3.Error):
        return False  # a sqlite3 built without extension loading
    return True


class SqliteStore(SqlStore):
    """Keep items in a SQLite file, durable with nothing to run beside the program.

    Args:
        path: the database file (created with its tables on first use) or ``":memory:"``.
        index: ``{"embed": ..., "dims": N, "fields": [...]}`` for semantic search.
        ttl: ``{"default_ttl": minutes, "refresh_on_read": True}``.
        timeout: seconds a writer waits for another process's transaction.

    Example::

        with SqliteStore("memory.sqlite") as store:
            store.put(("memories", "u42"), "tea", {"text": "likes green tea"})
    """

    def _window_sql(self, cols: str, where: str, page: str, window: str) -> str:
        """The page among rows updated at or after the W-th newest: a unary '+' keeps the
        planner off the primary key for the namespace range, so the query walks the
        ``(updated_at, ns, key)`` index backwards and stops at its page."""
        cutoff = (
            f"coalesce((SELECT updated_at FROM {self.table} ORDER BY updated_at DESC "
            f"LIMIT 1 OFFSET {window} - 1), 0)"
        )
        windowed = where.replace(" ns ", " +ns ")
        return f"SELECT {cols} FROM {self.table} WHERE updated_at >= {cutoff} AND {windowed} {page}"

    def __init__(
        self,
        path: str | os.PathLike[str] = ":memory:",
        *,
        index: Mapping[str, Any] | None = None,
        ttl: Mapping[str, Any] | None = None,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(index=index, ttl=ttl)
        self.path = str(path)
        try:
            self.conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            if self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.Error as exc:
            raise CheckpointStorageError(f"cannot open SQLite store {self.path!r}: {exc}") from exc
        self.conn.create_function("ga_json_equal", 2, _json_equal, deterministic=True)
        self.vec = _load_vec(self.conn)
        self._lock = threading.RLock()
        self._ready = False
        # (namespace, key) -> (value, flat, created, updated) of items without a TTL, valid
        # while _seen is what _changes() returns: see get
        self._cache: dict[tuple[tuple[str, ...], str], tuple[Any, bool, float, float]] = {}
        self._seen: tuple[int, int] = _NO_VERSION
        self._version = self.conn.cursor()
        self._get_sql = (
            f"SELECT value, created_at, updated_at, ttl_minutes FROM {self.table} "
            "WHERE ns = ? AND key = ? AND (expires_at IS NULL OR expires_at > ?)"
        )

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], **kw: Any) -> Self:
        """A store on the SQLite file at ``path``."""
        return cls(path, **kw)

    @classmethod
    def from_conn_string(cls, conn_string: str, **kw: Any) -> Self:
        """LangGraph's spelling of :meth:`from_path`."""
        return cls(conn_string, **kw)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    # ------------------------------------------------------------ statements

    def setup(self) -> None:
        """Create the tables and indexes if missing (idempotent, never required)."""
        with self._lock:
            self._ensure()

    def _ensure(self) -> None:
        if self._ready:
            return
        t, v = self.table, self.vectors
        for sql in (
            f"CREATE TABLE IF NOT EXISTS {t} (ns TEXT NOT NULL, key TEXT NOT NULL, "
            "value TEXT NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL, "
            "expires_at REAL, ttl_minutes REAL, PRIMARY KEY (ns, key)) WITHOUT ROWID",
            f"CREATE INDEX IF NOT EXISTS {t}_recent ON {t} (updated_at, ns, key)",
            f"CREATE INDEX IF NOT EXISTS {t}_expires ON {t} (expires_at) "
            "WHERE expires_at IS NOT NULL",
            f"CREATE TABLE IF NOT EXISTS {v} (ns TEXT NOT NULL, key TEXT NOT NULL, "
            "field TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (ns, key, field)) WITHOUT ROWID",
        ):
            self._rows(sql)
        self._ready = True

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        try:
            return self.conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise CheckpointStorageError(f"SQLite store failed: {exc}") from exc

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[None]:
        with self._lock:
            self._ensure()
            self._rows("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield
            except BaseException:
                self.conn.rollback()
                raise
            self._rows("COMMIT")

    def _tx(self) -> Any:
        return self._transaction(True)

    def _run(self, prepared: Sequence[Any]) -> list[Any]:
        if len(prepared) == 1 and not isinstance(prepared[0], _Put):
            # one read is one statement (a TTL refresh a second one, atomic on its own):
            # no transaction to begin and commit
            with self._lock:
                self._ensure()
                return [self._one(prepared[0], self._now())]
        with self._transaction(True):
            return [self._one(op, self._now()) for op in prepared]

    def _changes(self) -> tuple[int, int]:
        """What moves whenever anything commits: ``PRAGMA data_version`` (a commit by any
        other connection, in this process or another) and ``total_changes`` (a row this
        connection wrote, even in a transaction later rolled back)."""
        try:
            row = self._version.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error as exc:
            raise CheckpointStorageError(f"SQLite store failed: {exc}") from exc
        return row[0], self.conn.total_changes

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at ``namespace``/``key`` (a copy), or ``None``.

        A read of an item without a TTL is kept in memory (up to ``CACHED_ITEMS``), and a
        later get of it costs a ``PRAGMA data_version`` instead of the ``SELECT``; the whole
        cache is dropped as soon as any connection commits a change or this one writes,
        so a get never returns what another process has since replaced or deleted.
        """
        lock = self._lock  # acquire and release: `with` costs 1k instructions more
        lock.acquire()
        try:
            if not self._ready:
                self._ensure()
            cache = self._cache
            hit = None
            if cache:
                try:
                    hit = cache.get((namespace, key))
                except TypeError:  # an unhashable label: refused by the check below
                    hit = None
            if hit is not None:
                changes = self._changes()
                if changes == self._seen:  # found means valid: only checked input is cached
                    value, flat, created, updated = hit
                    value = value.copy() if flat else core.copy_value(value)
                    return new_item(namespace, key, value, created, updated)
                cache.clear()
                self._seen = changes  # taken before the SELECT below: it may cache
            elif self.conn.total_changes != self._seen[1]:
                # this connection wrote since the cache's version (a free check): drop it
                # now rather than at the next hit, with whatever is first read until then
                cache.clear()
                self._seen = _NO_VERSION
            return self._select(namespace, key, refresh_ttl)
        finally:
            lock.release()

    def _select(
        self, namespace: tuple[str, ...], key: str, refresh_ttl: bool | None
    ) -> Item | None:
        """get's read of the row (under the lock), caching an item without a TTL."""
        namespace, code = self._code(namespace)
        escaped = core.escape_key(key if type(key) is str and key else core.check_key(key))
        now = _base.time.time()  # type: ignore[attr-defined]  # (tests move base's clock)
        try:
            row = self._version.execute(self._get_sql, (code, escaped, now)).fetchone()
        except sqlite3.Error as exc:
            raise CheckpointStorageError(f"SQLite store failed: {exc}") from exc
        if row is None:
            return None
        raw, created, updated, ttl = row
        # the C scanner straight away (core.loads, inline); anything it does not take
        # whole as an object goes through core.loads, which names the problem
        try:
            value, end = _scan(raw, 0)
        except (StopIteration, ValueError, TypeError, RecursionError):
            end = -1
        if end != len(raw) or type(value) is not dict:
            value = core.loads(raw, namespace, key)
        if ttl is not None:
            refresh = self.refresh_on_read if refresh_ttl is None else refresh_ttl
            if refresh:  # restart the TTL: the second statement only such items need
                self._rows(
                    f"UPDATE {self.table} SET expires_at = ? + ttl_minutes * 60.0 "
                    "WHERE ns = ? AND key = ? AND ttl_minutes IS NOT NULL",
                    [now, code, escaped],
                )
        elif self._seen is _NO_VERSION:
            # The cache's version must be taken before any item it holds was read. A first
            # read skips the PRAGMA (the SELECT reads the newest rows anyway; a miss never
            # pays it); the first item found after the cache was dropped is not kept, and
            # the version taken now covers every item read after it.
            self._seen = self._changes()
        else:
            cache = self._cache
            if len(cache) >= CACHED_ITEMS:
                del cache[next(iter(cache))]  # the oldest entry
            # flat (no nested dict or list) read off the text: no '[' and no '{' after
            # the first; a bracket inside a string only costs the deep copy
            flat = type(raw) is str and "[" not in raw and raw.find("{", 1) < 0
            cache[(namespace, key)] = (value, flat, created, updated)
            value = value.copy() if flat else core.copy_value(value)
        return new_item(namespace, key, value, created, updated)

    def _one_get(self, namespace: tuple[str, ...], key: str, refresh: bool) -> Item | None:
        with self._lock:
            self._ensure()
            return self._get(namespace, key, self._now(), refresh)

    def _path_sql(self, cond: core.Condition) -> tuple[str, list[Any]]:
        path = _json_path(cond.path)
        kind, op = cond.kind, cond.op
        if kind == "null":
            sql = "coalesce(json_type(value, ?), 'null') = 'null'"
            params: list[Any] = [path]
        elif kind == "bool":
            sql = "coalesce(json_type(value, ?) = ?, 0)"
            params = [path, "true" if cond.operand else "false"]
        elif kind == "other":
            # a list or dict: compared whole, as JSON (key order and 1 vs 1.0 aside)
            sql = (
                "coalesce(json_type(value, ?) IN ('array', 'object') "
                "AND ga_json_equal(json_extract(value, ?), ?), 0)"
            )
            params = [path, path, core.dumps(cond.operand)]
        else:
            sql = (
                f"coalesce(json_type(value, ?) IN {_TYPES[kind]} "
                f"AND json_extract(value, ?) {_OPS[op]} ?, 0)"
            )
            params = [path, path, _bindable(cond.operand)]
        if op == "$ne":
            sql = f"NOT {sql}"
        return sql, params

    # ------------------------------------------------------------ items

    def _put(self, op: _Put, now: float) -> bool:
        self._sweep(now)
        ns, k = core.encode_namespace(op.namespace), core.escape_key(op.key)
        old = self._rows(f"SELECT expires_at FROM {self.table} WHERE ns = ? AND key = ?", [ns, k])
        existed = bool(old) and (old[0][0] is None or old[0][0] > now)
        if self.index is not None or op.vectors:
            self._rows(f"DELETE FROM {self.vectors} WHERE ns = ? AND key = ?", [ns, k])
        if op.value is None:
            self._rows(f"DELETE FROM {self.table} WHERE ns = ? AND key = ?", [ns, k])
            return existed
        self._rows(
            f"INSERT INTO {self.table} (ns, key, value, created_at, updated_at, expires_at, "
            "ttl_minutes) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (ns, key) DO UPDATE SET "
            "value = excluded.value, updated_at = excluded.updated_at, "
            "expires_at = excluded.expires_at, ttl_minutes = excluded.ttl_minutes, "
            f"created_at = CASE WHEN ? THEN {self.table}.created_at ELSE excluded.created_at END",
            [ns, k, core.dumps(op.value), now, now, self._expiry(op, now), op.ttl, existed],
        )
        if op.vectors:
            self.conn.executemany(
                f"INSERT INTO {self.vectors} (ns, key, field, vec) VALUES (?, ?, ?, ?)",
                [(ns, k, field, pack(vec)) for field, vec in op.vectors],
            )
        return existed

    def _ranked(self, search: _Search, now: float) -> list[SearchItem]:
        if not self.vec:
            return super()._ranked(search, now)
        assert search.query is not None
        where, params = self._where(search, now, "s.")
        rows = self._rows(
            # CASE: items without vectors (the LEFT JOIN's NULLs) never reach the function
            "SELECT s.ns, s.key, max(CASE WHEN v.vec IS NULL THEN NULL "
            "ELSE 1.0 - vec_distance_cosine(v.vec, ?) END) AS score "
            f"FROM {self.table} s LEFT JOIN {self.vectors} v ON v.ns = s.ns AND v.key = s.key "
            f"WHERE {where} GROUP BY s.ns, s.key "
            "ORDER BY score IS NULL, score DESC, max(s.updated_at) DESC, s.ns, s.key "
            "LIMIT ? OFFSET ?",
            [pack(search.query), *params, search.limit, search.offset],
        )
        return self._fetch_page([(ns, key, score) for ns, key, score in rows])
