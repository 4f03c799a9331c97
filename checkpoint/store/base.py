"""``BaseStore`` (its public shapes, ``Item``, ``SearchItem`` and the four ops, live in ``_items``).

``BaseStore`` is the one place that checks input, embeds texts and decides what a search
returns; a backend only keeps items (see ``Backend`` below for the few methods it writes).
Every public method has its async twin on the same class; ``batch``/``abatch`` run several
ops in one go (one transaction on the SQL stores).
"""

from __future__ import annotations

import asyncio
import heapq
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from datetime import datetime, timedelta
from operator import mul
from typing import Any

from checkpoint.store import _core as core
from checkpoint.store._embed import Index, make_index
from checkpoint.store._items import (
    NOT_PROVIDED,
    Candidate,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchItem,
    SearchOp,
    _Listing,
    _Put,
    _Search,
)

__all__ = [
    "NOT_PROVIDED",
    "BaseStore",
    "GetOp",
    "Item",
    "ListNamespacesOp",
    "Op",
    "PutOp",
    "SearchItem",
    "SearchOp",
]


def _wall() -> float:
    """Now, in epoch seconds (one place to read the clock, so tests can move it)."""
    return time.time()


def _count(value: Any, what: str, least: int) -> int:
    if type(value) is not int or value < least:
        raise core.StoreError(f"{what} must be an int >= {least}; got {value!r}")
    return value


def _minutes(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, timedelta):
        value = value.total_seconds() / 60.0
    elif isinstance(value, datetime):
        # the moment it expires (a naive datetime is local time, as LangGraph reads it)
        value = (value.timestamp() - _wall()) / 60.0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise core.StoreError(
            f"{what} is in minutes and must be a number > 0 (or None); got {value!r}"
        )
    return float(value)


def _not_none(value: Any) -> Any:
    if value is None:
        raise core.StoreError(
            "put() needs a dict value; to remove an item call delete() (or batch a PutOp "
            "with value=None)"
        )
    return value


def _rank(
    candidates: Iterable[Candidate], query: Sequence[float], limit: int, offset: int
) -> list[SearchItem]:
    """The page of ``candidates`` by cosine score (best first), unscored ones after."""
    scored = []
    unscored = []
    for item, vectors in candidates:
        if vectors:
            item.score = max(sum(map(mul, query, v)) for v in vectors)
            scored.append(item)
        else:
            unscored.append(item)
    return _best_page(scored, unscored, limit, offset)


def _best_page(
    scored: list[SearchItem], unscored: list[SearchItem], limit: int, offset: int
) -> list[SearchItem]:
    """The page of items by score (best first; ties newest first), unscored ones after,
    newest first."""
    need = offset + limit
    best = heapq.nsmallest(need, scored, key=lambda i: (-(i.score or 0.0), -i._updated_key()))
    if len(best) < need:
        unscored.sort(key=lambda i: -i._updated_key())
        best += unscored[: need - len(best)]
    return best[offset:need]


class BaseStore:
    """Long-term memory shared across threads: items in namespaces, with search.

    Subclasses keep the items; this class checks input, embeds and pages. See
    ``MemoryStore``, ``SqliteStore``, ``PostgresStore`` and ``RedisStore``.

    Args:
        index: ``{"embed": ..., "dims": N, "fields": [...]}`` for semantic search.
        ttl: ``{"default_ttl": minutes, "refresh_on_read": True}``: items expire that many
            minutes after their last write (or read, with ``refresh_on_read``).
    """

    supports_ttl = True

    def __init__(
        self, *, index: Mapping[str, Any] | None = None, ttl: Mapping[str, Any] | None = None
    ) -> None:
        self.index: Index | None = make_index(index)
        ttl = dict(ttl or {})
        unknown = set(ttl) - {"default_ttl", "refresh_on_read", "sweep_interval_minutes"}
        if unknown:
            raise core.StoreError(
                f"unknown ttl option(s) {sorted(unknown)}: use 'default_ttl' (minutes) and "
                "'refresh_on_read'"
            )
        self.default_ttl = _minutes(ttl.get("default_ttl"), "ttl['default_ttl']")
        self.refresh_on_read = bool(ttl.get("refresh_on_read", True))
        self.ttl_config = ttl
        self._last_now = 0.0
        self._clock = threading.Lock()

    # ------------------------------------------------------------ the backend's part

    def _tx(self) -> AbstractContextManager[Any]:
        """Held around a batch (a lock, a transaction)."""
        return nullcontext()

    def _get(self, namespace: tuple[str, ...], key: str, now: float, refresh: bool) -> Item | None:
        raise NotImplementedError

    def _put(self, op: _Put, now: float) -> bool:
        raise NotImplementedError

    def _page(self, search: _Search, now: float) -> list[SearchItem]:
        """Live items under the prefix passing the filter, newest-updated first, one page."""
        raise NotImplementedError

    def _candidates(self, search: _Search, now: float, vectors: bool) -> Iterable[Candidate]:
        """Every live item under the prefix passing the filter (with its vectors if asked)."""
        raise NotImplementedError

    def _ranked(self, search: _Search, now: float) -> list[SearchItem]:
        assert search.query is not None
        return _rank(self._candidates(search, now, True), search.query, search.limit, search.offset)

    def _refresh(self, items: Sequence[Item], now: float) -> None:
        """Restart the TTL of ``items`` that have one (a search with refresh)."""
        raise NotImplementedError

    def _namespaces(self, now: float) -> Iterable[tuple[str, ...]]:
        raise NotImplementedError

    def _size(self, now: float) -> int:
        raise NotImplementedError

    def _clear(self) -> None:
        raise NotImplementedError

    def setup(self) -> None:
        """Create tables and indexes now (idempotent; stores also do it on first use)."""

    # ------------------------------------------------------------ checking ops

    def _now(self) -> float:
        # never backwards within a store, so "newest first" follows the order of puts
        with self._clock:
            now = max(_wall(), self._last_now + 1e-6)
            self._last_now = now
            return now

    def _check(self, op: Any) -> tuple[Any, list[str]]:
        """``op`` checked, and the texts it needs embedded (filled in by ``_embedded``)."""
        if isinstance(op, GetOp):
            refresh = self.refresh_on_read if op.refresh_ttl is None else bool(op.refresh_ttl)
            return GetOp(core.check_namespace(op.namespace), core.check_key(op.key), refresh), []
        if isinstance(op, PutOp):
            return self._check_put(op)
        if isinstance(op, SearchOp):
            return self._check_search(op)
        if isinstance(op, ListNamespacesOp):
            prefix = None if op.prefix is None else core.check_namespace(op.prefix, "prefix")
            suffix = None if op.suffix is None else core.check_namespace(op.suffix, "suffix")
            depth = None if op.max_depth is None else _count(op.max_depth, "max_depth", 1)
            return _Listing(
                prefix, suffix, depth, _count(op.limit, "limit", 0), _count(op.offset, "offset", 0)
            ), []
        raise core.StoreError(
            f"unknown store op {op!r}: use GetOp, PutOp, SearchOp or ListNamespacesOp"
        )

    def _check_put(self, op: PutOp) -> tuple[_Put, list[str]]:
        namespace = core.check_namespace(op.namespace)
        key = core.check_key(op.key)
        if op.value is None:
            return _Put(namespace, key, None, [], None), []
        value = core.own_value(op.value)
        ttl = self.default_ttl if op.ttl is NOT_PROVIDED else _minutes(op.ttl, "ttl")
        if op.index is None and self.index is None:
            return _Put(namespace, key, value, [], ttl), []  # the common case, nothing to embed
        fields: Sequence[str] = ()
        if op.index is False:
            fields = ()
        elif op.index is None or op.index is True:
            fields = self.index.fields if self.index else ()
        else:
            if isinstance(op.index, str) or not all(isinstance(f, str) for f in op.index):
                raise core.StoreError(
                    f"put index= takes False or a list of fields; got {op.index!r}"
                )
            if self.index is None:
                raise core.StoreError(
                    "put(index=[...]) needs a store made with index={'embed': ..., 'dims': N}"
                )
            fields = tuple(op.index)
        pairs = core.field_texts(value, fields) if fields else []
        return _Put(namespace, key, value, [(f, []) for f, _ in pairs], ttl), [t for _, t in pairs]

    def _check_search(self, op: SearchOp) -> tuple[_Search, list[str]]:
        prefix = core.check_prefix(op.namespace_prefix)
        conditions = core.compile_filter(op.filter)
        limit = _count(op.limit, "limit", 0)
        offset = _count(op.offset, "offset", 0)
        refresh = self.refresh_on_read if op.refresh_ttl is None else bool(op.refresh_ttl)
        query = op.query
        if query is not None and not isinstance(query, str):
            raise core.StoreError(f"query must be a string; got {type(query).__name__}")
        if not query:
            return _Search(prefix, conditions, limit, offset, None, None, refresh), []
        if self.index is None:
            return _Search(prefix, conditions, limit, offset, query.casefold(), None, refresh), []
        return _Search(prefix, conditions, limit, offset, None, [], refresh), [query]

    @staticmethod
    def _embedded(checked: Any, vectors: list[list[float]]) -> Any:
        if isinstance(checked, _Put):
            fields = [field for field, _ in checked.vectors]
            return checked._replace(vectors=list(zip(fields, vectors, strict=True)))
        return checked._replace(query=vectors[0])

    def _prepare(self, ops: Iterable[Op]) -> list[Any]:
        out = []
        for op in ops:
            checked, texts = self._check(op)
            if texts:
                assert self.index is not None
                checked = self._embedded(
                    checked, self.index.embed(texts, query=isinstance(checked, _Search))
                )
            out.append(checked)
        return out

    async def _aprepare(self, ops: Iterable[Op]) -> list[Any]:
        out = []
        for op in ops:
            checked, texts = self._check(op)
            if texts:
                assert self.index is not None
                vectors = await self.index.aembed(texts, query=isinstance(checked, _Search))
                checked = self._embedded(checked, vectors)
            out.append(checked)
        return out

    # ------------------------------------------------------------ running ops

    def _run(self, prepared: Sequence[Any]) -> list[Any]:
        with self._tx():
            return [self._one(op, self._now()) for op in prepared]

    async def _arun(self, prepared: Sequence[Any]) -> list[Any]:
        return await asyncio.to_thread(self._run, prepared)

    def _one(self, op: Any, now: float) -> Any:
        if isinstance(op, GetOp):
            return self._get(op.namespace, op.key, now, bool(op.refresh_ttl))
        if isinstance(op, _Put):
            return self._put(op, now)
        if isinstance(op, _Search):
            return self._search(op, now)
        return self._list(op, now)

    def _search(self, search: _Search, now: float) -> list[SearchItem]:
        if search.limit == 0:
            return []
        if search.query is not None:
            found = self._ranked(search, now)
        elif search.needle is not None:
            needle = search.needle
            hits = [
                item
                for item, _ in self._candidates(search, now, False)
                if core.text_matches(item.value, needle)
            ]
            hits.sort(key=lambda i: -i._updated_key())
            found = hits[search.offset : search.offset + search.limit]
        else:
            found = self._page(search, now)
        if search.refresh:
            expiring = [item for item in found if item._ttl]
            if expiring:
                self._refresh(expiring, now)
        return found

    def _list(self, op: _Listing, now: float) -> list[tuple[str, ...]]:
        seen = set()
        for namespace in self._namespaces(now):
            if core.namespace_matches(namespace, op.prefix, op.suffix):
                seen.add(namespace[: op.max_depth] if op.max_depth else namespace)
        return sorted(seen)[op.offset : op.offset + op.limit]

    # ------------------------------------------------------------ public API

    def batch(self, ops: Iterable[Op]) -> list[Any]:
        """Run ``ops`` in order; results line up with them (a put's is ``None``)."""
        prepared = self._prepare(ops)
        results = self._run(prepared)
        return [None if isinstance(p, _Put) else r for p, r in zip(prepared, results, strict=True)]

    async def abatch(self, ops: Iterable[Op]) -> list[Any]:
        """Async :meth:`batch`."""
        prepared = await self._aprepare(ops)
        results = await self._arun(prepared)
        return [None if isinstance(p, _Put) else r for p, r in zip(prepared, results, strict=True)]

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at ``namespace``/``key`` (a copy), or ``None``."""
        result: Item | None = self._run(self._prepare([GetOp(namespace, key, refresh_ttl)]))[0]
        return result

    async def aget(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """Async :meth:`get`."""
        result: Item | None = (await self.abatch([GetOp(namespace, key, refresh_ttl)]))[0]
        return result

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Any = None,
        *,
        ttl: Any = NOT_PROVIDED,
    ) -> None:
        """Store ``value`` (a dict) at ``namespace``/``key``, replacing what was there.

        Args:
            index: ``None`` embeds the store's index fields, ``False`` nothing, or a list
                of fields for this item.
            ttl: minutes until the item expires (``None``: never; left out: the store's
                ``default_ttl``).
        """
        self.batch([PutOp(namespace, key, _not_none(value), index, ttl)])

    async def aput(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Any = None,
        *,
        ttl: Any = NOT_PROVIDED,
    ) -> None:
        """Async :meth:`put`."""
        await self.abatch([PutOp(namespace, key, _not_none(value), index, ttl)])

    def delete(self, namespace: tuple[str, ...], key: str) -> bool:
        """Delete the item; whether it existed."""
        return bool(self._run(self._prepare([PutOp(namespace, key, None)]))[0])

    async def adelete(self, namespace: tuple[str, ...], key: str) -> bool:
        """Async :meth:`delete`."""
        prepared = await self._aprepare([PutOp(namespace, key, None)])
        return bool((await self._arun(prepared))[0])

    def search(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Items under ``namespace_prefix`` (``()``: all): by ``query`` when given (cosine
        score on an indexed store, else case-insensitive text match), else newest first."""
        op = SearchOp(namespace_prefix, filter, limit, offset, query, refresh_ttl)
        result: list[SearchItem] = self.batch([op])[0]
        return result

    async def asearch(
        self,
        namespace_prefix: tuple[str, ...],
        /,
        *,
        query: str | None = None,
        filter: dict[str, Any] | None = None,
        limit: int = 10,
        offset: int = 0,
        refresh_ttl: bool | None = None,
    ) -> list[SearchItem]:
        """Async :meth:`search`."""
        op = SearchOp(namespace_prefix, filter, limit, offset, query, refresh_ttl)
        result: list[SearchItem] = (await self.abatch([op]))[0]
        return result

    def list_namespaces(
        self,
        *,
        prefix: tuple[str, ...] | None = None,
        suffix: tuple[str, ...] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """Namespaces holding live items, sorted; "*" in prefix/suffix matches any label,
        ``max_depth`` cuts longer ones down (duplicates merged)."""
        op = ListNamespacesOp(prefix, suffix, max_depth, limit, offset)
        result: list[tuple[str, ...]] = self.batch([op])[0]
        return result

    async def alist_namespaces(
        self,
        *,
        prefix: tuple[str, ...] | None = None,
        suffix: tuple[str, ...] | None = None,
        max_depth: int | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[tuple[str, ...]]:
        """Async :meth:`list_namespaces`."""
        op = ListNamespacesOp(prefix, suffix, max_depth, limit, offset)
        result: list[tuple[str, ...]] = (await self.abatch([op]))[0]
        return result

    def __len__(self) -> int:
        """How many live items the store holds (Spring's ``size()``)."""
        with self._tx():
            return self._size(self._now())

    def clear(self) -> None:
        """Delete every item of this store (its prefix or schema only)."""
        with self._tx():
            self._clear()

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        await asyncio.to_thread(self.clear)

    def namespace(self, *namespace: str) -> Any:
        """A view of one namespace that renders as a table in Jupyter."""
        from checkpoint.store._view import NamespaceView

        return NamespaceView(self, core.check_namespace(namespace))

    def close(self) -> None:
        """Release connections (a no-op for stores that hold none)."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
