"""What ``SqliteStore`` and ``PostgresStore`` share: the tables, filters as SQL, searches.

Items live in ``graphagent_store`` (namespace code, escaped key, JSON value, timestamps as
epoch seconds, expiry) and their vectors in ``graphagent_store_vectors`` (one float32 row
per embedded field). The namespace code (see ``_core.encode_namespace``) sorts bytewise, so
"every item under prefix P" is one index range scan. Filters compile to typed SQL: a number
is compared with numbers and a string with strings, exactly as the memory store does.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

from checkpoint.store import _core as core
from checkpoint.store import _vectors
from checkpoint.store._items import Candidate, GetOp, Item, SearchItem, _Put, _Search, new_item
from checkpoint.store.base import BaseStore

__all__ = ["SqlStore", "pack", "unpack"]

_new = object.__new__
SWEEP_EVERY = 60.0  # seconds between sweeps of expired rows, done by a write


def pack(vector: Sequence[float]) -> bytes:
    """A unit vector as the float32 bytes the vectors table holds."""
    return array("f", vector).tobytes()


def unpack(blob: bytes) -> list[float]:
    """Reverse :func:`pack`."""
    out = array("f")
    out.frombytes(bytes(blob))
    return out.tolist()


def prefix_range(prefix: Sequence[str]) -> tuple[str, str]:
    """The ``[low, high)`` range of namespace codes under ``prefix``: its code ends with
    '/', and '0' is the character after '/'."""
    low = core.encode_namespace(prefix)
    return low, low[:-1] + "0"


class SqlStore(BaseStore):
    """The SQL stores' shared logic; a dialect subclass runs statements."""

    P = "?"  # parameter marker
    table = "graphagent_store"
    vectors = "graphagent_store_vectors"

    #: how many checked namespaces :meth:`_code` keeps
    CODES_KEPT = 4096

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self._swept = 0.0
        # checked namespaces and their codes, so a get in a namespace read before skips
        # the namespace's check and encoding
        self._codes: dict[tuple[str, ...], str] = {}
        # and the other way, for the items a search reads
        self._names: dict[str, tuple[str, ...]] = {}

    def _code(self, namespace: Any) -> tuple[tuple[str, ...], str]:
        """``namespace`` checked (as given when it was checked before) and its column
        text; raises ``InvalidNamespaceError`` naming a bad one."""
        codes = self._codes
        try:
            code = codes.get(namespace) if type(namespace) is tuple else None
        except TypeError:  # an unhashable label: refused by the check below
            code = None
        if code is None:
            namespace = core.check_namespace(namespace)
            code = core.encode_namespace(namespace)
            if len(codes) >= self.CODES_KEPT:
                codes.clear()
            codes[namespace] = code
        return namespace, code

    # ------------------------------------------------------------ the dialect's part

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _path_sql(self, cond: core.Condition) -> tuple[str, list[Any]]:
        """SQL true when ``cond`` holds for column ``value``, with its parameters."""
        raise NotImplementedError

    # ------------------------------------------------------------ shared SQL

    def _where(self, search: _Search, now: float, alias: str = "") -> tuple[str, list[Any]]:
        a = alias
        P = self.P
        parts = [f"({a}expires_at IS NULL OR {a}expires_at > {P})"]
        params: list[Any] = [now]
        if search.prefix:
            low, high = prefix_range(search.prefix)
            parts.append(f" {a}ns >= {P} AND {a}ns < {P}")
            params += [low, high]
        for cond in search.conditions:
            sql, more = self._path_sql(cond)
            parts.append(sql.replace("value", f"{a}value"))
            params += more
        return " AND ".join(parts), params

    def _item(self, cls: type[Item], row: Sequence[Any]) -> Any:
        """An item from ``ns, key, value, created_at, updated_at[, ttl_minutes]``, built
        without ``__init__``'s keyword call (a page builds ten): the namespace decoded
        once per store (a page's rows mostly share a few), the key unescaped only when
        it holds an escape."""
        ns, key, value, created, updated = row[:5]
        names = self._names
        namespace = names.get(ns)
        if namespace is None:
            namespace = core.decode_namespace(ns)
            if len(names) >= self.CODES_KEPT:
                names.clear()
            names[ns] = namespace
        if "%" in key:
            key = core.unescape_key(key)
        item: Any = _new(cls)
        item.namespace = namespace
        item.key = key
        item.value = core.loads(value, namespace, key)
        item._created = created
        item._updated = updated
        item._ttl = len(row) > 5 and row[5] is not None
        if cls is SearchItem:
            item.score = None
        return item

    ORDER = "ORDER BY updated_at DESC, ns DESC, key DESC"

    #: write the window query's integers (window, limit, offset) into it: PostgreSQL
    #: plans a prepared statement once (a generic plan) only when that plan is as good as
    #: a custom one, and a ``LIMIT`` parameter made it plan every search again (0.15 ms of
    #: a 0.3 ms search on a quiet machine)
    INLINE_PAGE = False

    def _int(self, n: int, params: list[Any]) -> str:
        """``n`` in a statement: a parameter appended to ``params``, or (``INLINE_PAGE``)
        its digits (an ``int`` this class computed, never caller text)."""
        if self.INLINE_PAGE:
            return str(int(n))
        params.append(n)
        return self.P

    def _window_sql(self, cols: str, where: str, page: str, window: str) -> str:
        """The page among the ``window`` newest rows (SQL text: a parameter marker or
        digits): PostgreSQL reads them backwards along the ``(updated_at, ns, key)`` index
        whatever its statistics say."""
        return (
            f"SELECT {cols} FROM (SELECT * FROM {self.table} {self.ORDER} LIMIT {window}) w "
            f"WHERE {where} {page}"
        )

    def _page(self, search: _Search, now: float) -> list[SearchItem]:
        """Newest first. With a prefix or a filter, look among the newest rows first (those
        updated at or after the W-th newest, read backwards along the ``(updated_at, ns,
        key)`` index): the page is exact as soon as that window holds
        it, since every row outside is older. When the window comes up short (a rare
        filter, a small namespace of a big store) the query reads the whole prefix along
        the primary key instead."""
        where, params = self._where(search, now)
        cols = "ns, key, value, created_at, updated_at, ttl_minutes"
        if search.prefix or search.conditions:
            head: list[Any] = []
            size = self._int(max(256, 16 * (search.offset + search.limit)), head)
            tail: list[Any] = []
            page = (
                f"{self.ORDER} LIMIT {self._int(search.limit, tail)} "
                f"OFFSET {self._int(search.offset, tail)}"
            )
            rows = self._rows(self._window_sql(cols, where, page, size), head + params + tail)
            if len(rows) == search.limit:
                return [self._item(SearchItem, row) for row in rows]
        # planned for its parameters each time (a custom plan): a prefix can be narrow
        # (read along the primary key) or wide (along the recency index)
        P = self.P
        rows = self._rows(
            f"SELECT {cols} FROM {self.table} WHERE {where} {self.ORDER} LIMIT {P} OFFSET {P}",
            [*params, search.limit, search.offset],
        )
        return [self._item(SearchItem, row) for row in rows]

    def _candidates(self, search: _Search, now: float, vectors: bool) -> Iterable[Candidate]:
        where, params = self._where(search, now)
        rows = self._rows(
            f"SELECT ns, key, value, created_at, updated_at, ttl_minutes FROM {self.table} "
            f"WHERE {where} ORDER BY updated_at DESC, ns DESC, key DESC",
            params,
        )
        return [(self._item(SearchItem, row), ()) for row in rows]

    def _ranked(self, search: _Search, now: float) -> list[SearchItem]:
        """Exact scan: score every candidate's vectors here, then read the page's values."""
        query = search.query
        assert query is not None
        where, params = self._where(search, now, "s.")
        rows = self._rows(
            f"SELECT s.ns, s.key, s.updated_at, v.vec FROM {self.table} s "
            f"LEFT JOIN {self.vectors} v ON v.ns = s.ns AND v.key = s.key WHERE {where}",
            params,
        )
        if not rows:
            return []
        names, keys, updated, blobs = zip(*rows, strict=True)  # columns, in C
        held = [blob for blob in blobs if blob is not None]
        dots = iter(_vectors.best_dots(query, [bytes(b) for b in held], len(query)))
        scores = [None if blob is None else next(dots) for blob in blobs]
        ids = list(zip(names, keys, strict=True))
        if len(held) == len(rows) and len(set(ids)) == len(ids):
            # the usual case, one vector per item: nothing to merge
            entries: list[tuple[Any, ...]] = list(zip(scores, updated, ids, strict=True))
        else:
            best: dict[tuple[str, str], list[Any]] = {}
            for ident, score, stamp in zip(ids, scores, updated, strict=True):
                entry = best.get(ident)
                if entry is None:
                    best[ident] = [score, stamp, ident]
                elif score is not None and (entry[0] is None or score > entry[0]):
                    entry[0] = score
            entries = [tuple(entry) for entry in best.values()]
        need = search.offset + search.limit
        order = lambda e: (e[0] is None, -(e[0] or 0.0), -e[1], e[2])  # noqa: E731
        scored = [e for e in entries if e[0] is not None]
        if len(scored) > need:
            # the best `need` scores by a C-level key, then every entry tied with the last
            # of them, ordered in full (ties newest first)
            cut = heapq.nlargest(need, scored, key=itemgetter(0))[-1][0]
            scored = [e for e in scored if e[0] >= cut]
        top = sorted(scored, key=order)[:need]
        if len(top) < need:
            top += sorted((e for e in entries if e[0] is None), key=order)[: need - len(top)]
        page = top[search.offset :]
        return self._fetch_page([(ns, key, score) for score, _, (ns, key) in page])

    def _fetch_page(self, page: Sequence[tuple[str, str, float | None]]) -> list[SearchItem]:
        if not page:
            return []
        P = self.P
        pairs = ", ".join(f"({P}, {P})" for _ in page)
        params = [x for ns, key, _ in page for x in (ns, key)]
        rows = self._rows(
            f"SELECT ns, key, value, created_at, updated_at, ttl_minutes FROM {self.table} "
            f"WHERE (ns, key) IN (VALUES {pairs})",
            params,
        )
        by_id = {(row[0], row[1]): row for row in rows}
        out = []
        for ns, key, score in page:
            row = by_id.get((ns, key))
            if row is not None:
                found = self._item(SearchItem, row)
                found.score = score
                out.append(found)
        return out

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at ``namespace``/``key`` (a copy), or ``None``: one ``SELECT``, without
        the batch machinery."""
        namespace = core.check_namespace(namespace)
        core.check_key(key)
        refresh = self.refresh_on_read if refresh_ttl is None else bool(refresh_ttl)
        return self._one_get(namespace, key, refresh)

    def _one_get(self, namespace: tuple[str, ...], key: str, refresh: bool) -> Item | None:
        """Run one checked get as the dialect runs a lone read."""
        result: Item | None = self._run([GetOp(namespace, key, refresh)])[0]
        return result

    def _get(self, namespace: tuple[str, ...], key: str, now: float, refresh: bool) -> Item | None:
        row = self._get_row(namespace, key, now, refresh)
        if row is None:
            return None
        value, created, updated, _ = row
        return new_item(namespace, key, value, created, updated)

    def _get_row(
        self, namespace: tuple[str, ...], key: str, now: float, refresh: bool
    ) -> tuple[dict[str, Any], float, float, float | None] | None:
        """``(value, created_at, updated_at, ttl_minutes)`` of a live item, or ``None``."""
        ns, k, p = core.encode_namespace(namespace), core.escape_key(key), self.P
        rows = self._rows(
            f"SELECT value, created_at, updated_at, ttl_minutes FROM {self.table} "
            f"WHERE ns = {p} AND key = {p} AND (expires_at IS NULL OR expires_at > {p})",
            [ns, k, now],
        )
        if not rows:
            return None
        value, created, updated, ttl = rows[0]
        if refresh and ttl is not None:
            # a second round trip only for items that have a TTL to restart
            self._rows(
                f"UPDATE {self.table} SET expires_at = {p} + ttl_minutes * 60.0 "
                f"WHERE ns = {p} AND key = {p} AND ttl_minutes IS NOT NULL",
                [now, ns, k],
            )
        # the namespace and key asked for are the row's: nothing to decode
        return core.loads(value, namespace, key), created, updated, ttl

    def _refresh(self, items: Sequence[Item], now: float) -> None:
        P = self.P
        pairs = ", ".join(f"({P}, {P})" for _ in items)
        params = [
            x for i in items for x in (core.encode_namespace(i.namespace), core.escape_key(i.key))
        ]
        self._rows(
            f"UPDATE {self.table} SET expires_at = {P} + ttl_minutes * 60.0 "
            f"WHERE ttl_minutes IS NOT NULL AND (ns, key) IN (VALUES {pairs})",
            [now, *params],
        )

    def _namespaces(self, now: float) -> Iterable[tuple[str, ...]]:
        rows = self._rows(
            f"SELECT DISTINCT ns FROM {self.table} "
            f"WHERE expires_at IS NULL OR expires_at > {self.P}",
            [now],
        )
        return [core.decode_namespace(row[0]) for row in rows]

    def _size(self, now: float) -> int:
        rows = self._rows(
            f"SELECT count(*) FROM {self.table} WHERE expires_at IS NULL OR expires_at > {self.P}",
            [now],
        )
        return int(rows[0][0])

    def _clear(self) -> None:
        self._rows(f"DELETE FROM {self.vectors}")
        self._rows(f"DELETE FROM {self.table}")

    def _sweep(self, now: float) -> None:
        """Delete expired rows, at most once a minute per store object (no cron needed)."""
        if now - self._swept < SWEEP_EVERY:
            return
        self._swept = now
        P = self.P
        self._rows(
            f"DELETE FROM {self.vectors} WHERE (ns, key) IN (SELECT ns, key FROM {self.table} "
            f"WHERE expires_at IS NOT NULL AND expires_at <= {P})",
            [now],
        )
        self._rows(
            f"DELETE FROM {self.table} WHERE expires_at IS NOT NULL AND expires_at <= {P}", [now]
        )

    @staticmethod
    def _expiry(op: _Put, now: float) -> float | None:
        return now + op.ttl * 60.0 if op.ttl else None
