"""``MemoryStore``: items in this process's memory, for tests, notebooks and one-process apps.

Each namespace keeps its items in put order (an update moves the item to the end), so a
search without a query walks newest first and stops once it has its page: a filtered
search costs the items it looks at, not the whole store. Expired items are skipped on every
read and swept from a heap of deadlines as later writes come in.
"""

from __future__ import annotations

import heapq
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from operator import mul
from typing import Any

from checkpoint.store import _core as core
from checkpoint.store import _vectors
from checkpoint.store import base as _base
from checkpoint.store._items import (
    NOT_PROVIDED,
    Candidate,
    Item,
    PutOp,
    SearchItem,
    _Put,
    _Search,
)
from checkpoint.store.base import BaseStore

__all__ = ["InMemoryStore", "MemoryStore"]


_CONTAINERS = frozenset({dict, list})
_new = object.__new__
_NO_VECTORS: list[list[float]] = []  # shared by records without vectors, never changed


class _Rec:
    __slots__ = ("blob", "created", "expires", "flat", "ttl", "updated", "value", "vectors")

    def __init__(
        self,
        value: dict[str, Any],
        created: float,
        updated: float,
        ttl: float | None,
        vectors: list[list[float]],
    ) -> None:
        self.value = value
        # no nested dict or list: a read's copy is one C-level dict.copy()
        self.flat = _CONTAINERS.isdisjoint(map(type, value.values()))
        self.created = created
        self.updated = updated
        self.ttl = ttl
        self.expires = updated + ttl * 60.0 if ttl else None
        self.vectors = vectors
        # with NumPy, searches score float32 bytes (see _vectors); without, the lists
        self.blob = _vectors.pack(vectors) if vectors and _vectors.HAVE_NUMPY else b""

    def packed(self) -> bytes:
        """The vectors as float32 bytes (made now if the put did not make them)."""
        self.blob = _vectors.pack(self.vectors)
        return self.blob

    def copy(self) -> dict[str, Any]:
        """A copy of the value for a reader."""
        return self.value.copy() if self.flat else core.copy_value(self.value)


class MemoryStore(BaseStore):
    """Keep items in memory (lost when the process ends). ``InMemoryStore`` is its alias.

    Args:
        index: ``{"embed": ..., "dims": N, "fields": [...]}`` for semantic search.
        ttl: ``{"default_ttl": minutes, "refresh_on_read": True}``.

    Example::

        store = MemoryStore()
        store.put(("memories", "u42"), "tea", {"text": "likes green tea"})
        store.search(("memories", "u42"), query="tea")
    """

    def __init__(
        self, *, index: Mapping[str, Any] | None = None, ttl: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(index=index, ttl=ttl)
        self._data: dict[tuple[str, ...], dict[str, _Rec]] = {}
        # every item in put order, so a search over many namespaces walks newest first
        # without merging one walk per namespace
        self._order: dict[tuple[tuple[str, ...], str], _Rec] = {}
        self._deadlines: list[tuple[float, tuple[str, ...], str]] = []
        self._lock = threading.RLock()
        # puts with nothing to embed and no expiry take the inline path
        self._plain = self.index is None and self.default_ttl is None

    def _tx(self) -> AbstractContextManager[Any]:
        return self._lock

    async def _arun(self, prepared: Sequence[Any]) -> list[Any]:
        return self._run(prepared)  # no I/O: a thread would only add cost

    async def aclear(self) -> None:
        """Async :meth:`clear`."""
        self.clear()

    def _now(self) -> float:
        # always called under self._lock, so the base class's clock lock is not needed
        now = max(_base._wall(), self._last_now + 1e-6)
        self._last_now = now
        return now

    # the two hottest calls skip the batch machinery; they keep its checks and results

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """The item at ``namespace``/``key`` (a copy), or ``None``."""
        # Found means valid: only checked namespaces and keys are ever stored, so a hit
        # needs no type checks (input equal to a stored key is as good as it). A lookup
        # needs no lock (the GIL makes it atomic; a put replaces a record whole, never
        # edits its value; a miss while a put moves the key is looked up again below,
        # under the lock); only a TTL restart takes the lock
        # Two lookups, namespace then key, not one keyed by a new (namespace, key) tuple:
        # building, hashing and freeing that tuple cost more than the second lookup
        # (callgrind: 1.6k against 1.2k instructions)
        held: dict[str, _Rec] | None
        try:
            held = self._data[namespace]
            rec = held.get(key)
        except (KeyError, TypeError):  # a namespace not held, or an unhashable label or key
            held = rec = None
        if rec is not None and rec.expires is None:
            # Item built inline: a call to a constructor was a third of this path
            item = _new(Item)
            item.namespace = namespace
            item.key = key
            item.value = rec.value.copy() if rec.flat else core.copy_value(rec.value)
            item._created = rec.created
            item._updated = rec.updated
            item._ttl = True
            return item
        if held is None:  # a held namespace was checked when it was first put
            namespace = core.check_namespace(namespace)
        core.check_key(key)
        with self._lock:
            items = self._data.get(namespace)
            rec = items.get(key) if items else None
            if rec is None:
                return None
            if rec.expires is not None:
                now = self._now()
                if rec.expires <= now:
                    return None
                if self.refresh_on_read if refresh_ttl is None else refresh_ttl:
                    self._restart(namespace, key, rec, now)
            return Item(
                namespace=namespace,
                key=key,
                value=rec.copy(),
                created_at=rec.created,
                updated_at=rec.updated,
            )

    def put(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        index: Any = None,
        *,
        ttl: Any = NOT_PROVIDED,
    ) -> None:
        """Store ``value`` (a dict) at ``namespace``/``key`` (see :meth:`BaseStore.put`)."""
        if type(value) is dict and self._plain and index is None and ttl is NOT_PROVIDED:
            # the usual put: a namespace already held (so already checked), a value of
            # flat atoms; checked and stored inline (the general path below costs 3x)
            try:
                held = type(namespace) is tuple and namespace in self._data
            except TypeError:  # an unhashable label: refused by the general path
                held = False
            if held and type(key) is str and key:
                value = value.copy()  # the private copy, checked below (not the caller's)
                for k, v in value.items():
                    if type(k) is not str or not k.isascii() or "\x00" in k:
                        break  # the general check names a bad key
                    t = type(v)
                    if t is str:
                        if v.isascii() and "\x00" not in v:
                            continue
                        break  # the general check names a NUL or a lone surrogate
                    if t is int or t is bool or v is None or (t is float and v - v == 0.0):
                        continue
                    break  # a container, inf or NaN, another type: the general checks
                else:
                    # _put's work for this case, inline; acquire and release rather than
                    # `with` (which looks up two special methods and binds them: 1.1k of
                    # ~15k instructions per put)
                    lock = self._lock
                    lock.acquire()
                    try:
                        now = _base.time.time()  # type: ignore[attr-defined]  # _now, inline (tests move base's clock)
                        least = self._last_now + 1e-6
                        if now < least:
                            now = least
                        self._last_now = now
                        if self._deadlines and self._deadlines[0][0] <= now:
                            self._sweep(now, 16)
                        items = self._data.get(namespace)
                        if items is None:  # emptied since the check above
                            items = self._data[namespace] = {}
                        ident = (namespace, key)
                        old = items.pop(key, None)
                        rec = _new(_Rec)  # every slot set here: no __init__ call
                        if old is None:
                            rec.created = now
                        else:
                            del self._order[ident]
                            live = old.expires is None or old.expires > now
                            rec.created = old.created if live else now
                        rec.value = value
                        rec.updated = now
                        rec.flat = True
                        rec.ttl = rec.expires = None
                        rec.vectors = _NO_VECTORS
                        rec.blob = b""
                        items[key] = self._order[ident] = rec
                    finally:
                        lock.release()
                    return
        if value is None or self.index is not None:
            super().put(namespace, key, value, index, ttl=ttl)
            return
        op, _ = self._check_put(PutOp(namespace, key, value, index, ttl))
        with self._lock:
            self._put(op, self._now())

    # ------------------------------------------------------------ expiry

    def _sweep(self, now: float, budget: int | None) -> None:
        heap = self._deadlines
        while heap and heap[0][0] <= now and budget != 0:
            deadline, namespace, key = heapq.heappop(heap)
            if budget is not None:
                budget -= 1
            items = self._data.get(namespace)
            rec = items.get(key) if items else None
            if rec is not None and rec.expires == deadline:
                del items[key]  # type: ignore[union-attr]
                del self._order[(namespace, key)]
                if not items:
                    del self._data[namespace]

    def _live(self, rec: _Rec | None, now: float) -> bool:
        return rec is not None and (rec.expires is None or rec.expires > now)

    def _restart(self, namespace: tuple[str, ...], key: str, rec: _Rec, now: float) -> None:
        if rec.ttl:
            rec.expires = now + rec.ttl * 60.0
            heapq.heappush(self._deadlines, (rec.expires, namespace, key))

    # ------------------------------------------------------------ backend

    def _get(self, namespace: tuple[str, ...], key: str, now: float, refresh: bool) -> Item | None:
        items = self._data.get(namespace)
        rec = items.get(key) if items else None
        if rec is None or not self._live(rec, now):
            return None
        if refresh:
            self._restart(namespace, key, rec, now)
        return Item(
            namespace=namespace,
            key=key,
            value=rec.copy(),
            created_at=rec.created,
            updated_at=rec.updated,
        )

    def _put(self, op: _Put, now: float) -> bool:
        self._sweep(now, 16)
        items = self._data.get(op.namespace)
        old = items.pop(op.key, None) if items else None
        if old is not None:
            del self._order[(op.namespace, op.key)]
        existed = self._live(old, now)
        if op.value is None:
            if items is not None and not items:
                del self._data[op.namespace]
            return existed
        if items is None:
            items = self._data[op.namespace] = {}
        created = old.created if old is not None and existed else now
        rec = _Rec(op.value, created, now, op.ttl, [v for _, v in op.vectors])
        items[op.key] = rec
        self._order[(op.namespace, op.key)] = rec
        if rec.expires is not None:
            heapq.heappush(self._deadlines, (rec.expires, op.namespace, op.key))
        return existed

    def _spaces(self, prefix: tuple[str, ...]) -> list[tuple[str, ...]]:
        if not prefix:
            return list(self._data)
        n = len(prefix)
        if n == 1:
            first = prefix[0]
            return [ns for ns in self._data if ns[0] == first]
        return [ns for ns in self._data if ns[:n] == prefix]

    def _newest(self, search: _Search, now: float) -> Iterator[tuple[tuple[str, ...], str, _Rec]]:
        spaces = self._spaces(search.prefix)
        match = core.predicate(search.conditions)

        def walk(namespace: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str, _Rec]]:
            items = self._data[namespace]
            for key in reversed(items):
                rec = items[key]
                if rec.expires is not None and rec.expires <= now:
                    continue
                if match is None or match(rec.value):
                    yield namespace, key, rec

        if len(spaces) == 1:
            return walk(spaces[0])
        held = sum(len(self._data[ns]) for ns in spaces)
        if held * 4 < len(self._order):
            # a few namespaces of a big store: merge their own newest-first walks
            return heapq.merge(*(walk(ns) for ns in spaces), key=lambda t: -t[2].updated)
        return self._walk_all(search.prefix, match, now)

    def _walk_all(
        self,
        prefix: tuple[str, ...],
        match: Callable[[Mapping[str, Any]], bool] | None,
        now: float,
    ) -> Iterator[tuple[tuple[str, ...], str, _Rec]]:
        n = len(prefix)
        order = self._order
        for ident in reversed(order):
            namespace = ident[0]
            if n and namespace[:n] != prefix:
                continue
            rec = order[ident]
            if rec.expires is not None and rec.expires <= now:
                continue
            if match is None or match(rec.value):
                yield namespace, ident[1], rec

    def _all_newest(self, search: _Search, now: float) -> list[tuple[tuple[str, ...], str, _Rec]]:
        """Every live match, newest first, as one list (what a ranking scores): list
        comprehensions over the dicts, not a generator step per item."""
        match = core.predicate(search.conditions)
        spaces = self._spaces(search.prefix)
        if len(spaces) == 1:
            namespace = spaces[0]
            return [
                (namespace, key, rec)
                for key, rec in reversed(self._data[namespace].items())
                if (rec.expires is None or rec.expires > now)
                and (match is None or match(rec.value))
            ]
        if sum(len(self._data[ns]) for ns in spaces) * 4 < len(self._order):
            # a few namespaces of a big store: theirs only, then one sort
            hits = [
                (namespace, key, rec)
                for namespace in spaces
                for key, rec in self._data[namespace].items()
                if (rec.expires is None or rec.expires > now)
                and (match is None or match(rec.value))
            ]
            hits.sort(key=lambda hit: -hit[2].updated)
            return hits
        n, prefix = len(search.prefix), search.prefix
        return [
            (ident[0], ident[1], rec)
            for ident, rec in reversed(self._order.items())
            if (not n or ident[0][:n] == prefix)
            and (rec.expires is None or rec.expires > now)
            and (match is None or match(rec.value))
        ]

    @staticmethod
    def _found(namespace: tuple[str, ...], key: str, rec: _Rec) -> SearchItem:
        found = SearchItem(
            namespace=namespace,
            key=key,
            value=rec.copy(),
            created_at=rec.created,
            updated_at=rec.updated,
        )
        found._ttl = rec.ttl is not None
        return found

    def _page(self, search: _Search, now: float) -> list[SearchItem]:
        out = []
        skip, want = search.offset, search.limit
        for namespace, key, rec in self._newest(search, now):
            if skip:
                skip -= 1
                continue
            out.append(self._found(namespace, key, rec))
            if len(out) == want:
                break
        return out

    def _candidates(self, search: _Search, now: float, vectors: bool) -> Iterable[Candidate]:
        for namespace, key, rec in self._newest(search, now):
            yield self._found(namespace, key, rec), rec.vectors

    def _ranked(self, search: _Search, now: float) -> list[SearchItem]:
        # score in one comprehension, then copy only the page's values
        query = search.query
        assert query is not None
        hits = self._all_newest(search, now)
        scores: list[float | None]
        if _vectors.HAVE_NUMPY:
            held = [i for i, hit in enumerate(hits) if hit[2].vectors]
            blobs = [hits[i][2].blob or hits[i][2].packed() for i in held]
            dots = _vectors.best_dots(query, blobs, len(query))
            scores = [None] * len(hits)
            for i, score in zip(held, dots, strict=True):
                scores[i] = score
        else:
            scores = [
                (
                    sum(map(mul, query, vs[0]))
                    if len(vs) == 1
                    else max(sum(map(mul, query, v)) for v in vs)
                )
                if (vs := rec.vectors)
                else None
                for _, _, rec in hits
            ]
        scored = [i for i, score in enumerate(scores) if score is not None]
        ranking: list[float] = [score or 0.0 for score in scores]
        need = search.offset + search.limit
        # ties keep newest first: nlargest is stable on equal keys, and hits are newest first
        best = heapq.nlargest(need, scored, key=ranking.__getitem__)
        if len(best) < need:
            best += [i for i, score in enumerate(scores) if score is None][: need - len(best)]
        page = []
        for i in best[search.offset :]:
            namespace, key, rec = hits[i]
            found = self._found(namespace, key, rec)
            found.score = scores[i]
            page.append(found)
        return page

    def _refresh(self, items: Sequence[Item], now: float) -> None:
        for item in items:
            rec = self._data.get(item.namespace, {}).get(item.key)
            if rec is not None:
                self._restart(item.namespace, item.key, rec, now)

    def _namespaces(self, now: float) -> Iterable[tuple[str, ...]]:
        self._sweep(now, None)
        return [ns for ns, items in self._data.items() if items]

    def _size(self, now: float) -> int:
        self._sweep(now, None)
        return sum(len(items) for items in self._data.values())

    def _clear(self) -> None:
        self._data.clear()
        self._order.clear()
        self._deadlines.clear()


InMemoryStore = MemoryStore
