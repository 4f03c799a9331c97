"""``RedisStore``: items on plain Redis 7 (no modules), Redis Cluster included.

Every key of one store shares the hash tag ``{<prefix>:%store}``, so a store lives in one
Cluster slot and every call is one atomic Lua script: a put or a get is one round trip.
(A thread id can never produce ``%store`` after the savers' escaping, so a store and a
saver may share a prefix.) Search walks the items newest first inside Redis and stops once
it has its page; semantic search reads the candidates' vectors and ranks them exactly here.
See docs/memory.md for where that stops scaling.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import redis
from typing_extensions import Self

from checkpoint.errors import CheckpointStorageError
from checkpoint.store import _core as core
from checkpoint.store import _redis_lua as lua
from checkpoint.store import _vectors
from checkpoint.store._items import Candidate, Item, SearchItem, _Put, _Search
from checkpoint.store._sqlstore import pack, unpack
from checkpoint.store.base import BaseStore

__all__ = ["RedisStore"]

_SEPARATORS = ":{}"
_PARTS = ("items", "created", "updated", "expires", "ttl", "vectors", "namespaces")


def _text(raw: bytes | str) -> str:
    return raw if isinstance(raw, str) else raw.decode()


def _blob(vectors: Sequence[tuple[str, list[float]]]) -> bytes:
    return b"".join(pack(vec) for _, vec in vectors)


def _has_empty(value: Any) -> bool:
    """Whether a list or dict is, or holds at any depth, an empty list or dict."""
    if type(value) is dict:
        return not value or any(_has_empty(v) for v in value.values())
    if type(value) is list:
        return not value or any(_has_empty(v) for v in value)
    return False


def _marked(value: Any) -> Any:
    """``value`` with each empty list as ``"\0"``, as the Lua reads stored values when a
    condition is flagged (a NUL never occurs in a stored or filter string)."""
    if type(value) is dict:
        return {k: _marked(v) for k, v in value.items()}
    if type(value) is list:
        return [_marked(v) for v in value] if value else "\0"
    return value


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except redis.RedisError as exc:
        raise CheckpointStorageError(f"Redis store failed: {exc}") from exc


class RedisStore(BaseStore):
    """Keep items in Redis, shared by every process that reaches it.

    Args:
        client: a ``redis.Redis`` or ``redis.RedisCluster`` (see :meth:`from_url`).
        prefix: the tenant's key prefix (no ``:``, ``{`` or ``}``); stores with different
            prefixes never see each other's items.
        index: ``{"embed": ..., "dims": N, "fields": [...]}`` for semantic search.
        ttl: ``{"default_ttl": minutes, "refresh_on_read": True}``.

    Example::

        store = RedisStore.from_url("redis://localhost:6379/0", prefix="myapp")
    """

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "graphagent",
        index: Mapping[str, Any] | None = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(index=index, ttl=ttl)
        if not prefix or any(c in prefix for c in _SEPARATORS):
            raise core.StoreError(
                f"invalid key prefix {prefix!r}: it must be non-empty and contain none of "
                f"{' '.join(_SEPARATORS)} (use '-' or '.' to separate tenants, e.g. 'myapp-eu')"
            )
        self.client = client
        self.prefix = prefix
        tag = f"{{{prefix}:%store}}"
        self.keys = [f"{tag}:{part}" for part in _PARTS]
        self._scripts = {
            name: client.register_script(getattr(lua, name))
            for name in ("PUT", "GET", "PAGE", "CANDIDATES", "TOUCH", "NAMESPACES", "SIZE")
        }

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "graphagent", **kw: Any) -> Self:
        """A store on a new client for ``url``."""
        return cls(redis.Redis.from_url(url), prefix=prefix, **kw)

    @classmethod
    def from_conn_string(cls, conn_string: str, **kw: Any) -> Self:
        """LangGraph's spelling of :meth:`from_url`."""
        return cls.from_url(conn_string, **kw)

    def close(self) -> None:
        """Close the client."""
        self.client.close()

    def _call(self, name: str, *args: Any) -> Any:
        with _mapped():
            return self._scripts[name](keys=self.keys, args=list(args))

    # ------------------------------------------------------------ backend

    def _get(self, namespace: tuple[str, ...], key: str, now: float, refresh: bool) -> Item | None:
        got = self._call("GET", core.encode_field(namespace, key), repr(now), int(refresh))
        if not got:
            return None
        value, created, updated = got
        return Item(
            namespace=namespace,
            key=key,
            value=core.loads(value, namespace, key),
            created_at=float(created),
            updated_at=float(updated),
        )

    def _put(self, op: _Put, now: float) -> bool:
        field = core.encode_field(op.namespace, op.key)
        code = core.encode_namespace(op.namespace)
        if op.value is None:
            return bool(self._call("PUT", field, code, "", repr(now), "", "", ""))
        ttl = "" if op.ttl is None else repr(op.ttl)
        expires = "" if op.ttl is None else repr(now + op.ttl * 60.0)
        blob = _blob(op.vectors) if op.vectors else ""
        return bool(
            self._call("PUT", field, code, core.dumps(op.value), repr(now), ttl, expires, blob)
        )

    @staticmethod
    def _conditions(search: _Search) -> str:
        """The conditions as the Lua reads them: ``[path, op, operand, kind, empties]``,
        a list or dict operand holding an empty one flagged and its empty lists marked
        (``_redis_lua``'s docstring says why)."""
        if not search.conditions:
            return ""
        out = []
        for c in search.conditions:
            if c.kind == "other" and _has_empty(c.operand):
                out.append([list(c.path), c.op, _marked(c.operand), c.kind, 1])
            else:
                out.append([list(c.path), c.op, c.operand, c.kind, 0])
        return json.dumps(out)

    @staticmethod
    def _found(field: bytes | str, value: bytes, created: bytes, updated: bytes) -> SearchItem:
        namespace, key = core.decode_field(_text(field))
        return SearchItem(
            namespace=namespace,
            key=key,
            value=core.loads(value, namespace, key),
            created_at=float(created),
            updated_at=float(updated),
        )

    def _page(self, search: _Search, now: float) -> list[SearchItem]:
        flat = self._call(
            "PAGE",
            core.encode_namespace(search.prefix),
            repr(now),
            search.offset,
            search.limit,
            self._conditions(search),
            int(search.refresh),  # restarted inside the script, in the same round trip
        )
        found = [self._found(*flat[i : i + 4]) for i in range(0, len(flat), 4)]
        for item in found:
            item._ttl = False
        return found

    def _candidates(self, search: _Search, now: float, vectors: bool) -> Iterable[Candidate]:
        flat = self._call(
            "CANDIDATES",
            core.encode_namespace(search.prefix),
            repr(now),
            self._conditions(search),
            int(vectors),
        )
        out = []
        dims = self.index.dims if self.index else 0
        for i in range(0, len(flat), 5):
            blob = flat[i + 4]
            found = unpack(blob) if blob else []
            split = [found[j : j + dims] for j in range(0, len(found), dims)] if dims else []
            out.append((self._found(*flat[i : i + 4]), split))
        return out

    def _ranked(self, search: _Search, now: float) -> list[SearchItem]:
        """One script returns the candidates with their float32 vectors, scored here in one
        pass (see ``_vectors``)."""
        query = search.query
        assert query is not None
        flat = self._call(
            "CANDIDATES",
            core.encode_namespace(search.prefix),
            repr(now),
            self._conditions(search),
            1,
        )
        # score the raw rows; decode (JSON, namespace) only the page's items
        starts = range(0, len(flat), 5)
        held = [i for i in starts if flat[i + 4]]
        dots = _vectors.best_dots(query, [bytes(flat[i + 4]) for i in held], len(query))
        ranked = sorted(
            zip(dots, (float(flat[i + 3]) for i in held), held, strict=True),
            key=lambda e: (-e[0], -e[1], e[2]),
        )
        need = search.offset + search.limit
        page: list[SearchItem] = []
        for score, _, i in ranked[:need]:
            item = self._found(*flat[i : i + 4])
            item.score = score
            page.append(item)
        if len(page) < need:
            bare = sorted((i for i in starts if not flat[i + 4]), key=lambda i: -float(flat[i + 3]))
            page += [self._found(*flat[i : i + 4]) for i in bare[: need - len(page)]]
        return page[search.offset :]

    def _refresh(self, items: Sequence[Item], now: float) -> None:
        self._call("TOUCH", repr(now), *(core.encode_field(i.namespace, i.key) for i in items))

    def _namespaces(self, now: float) -> Iterable[tuple[str, ...]]:
        return [core.decode_namespace(_text(c)) for c in self._call("NAMESPACES", repr(now))]

    def _size(self, now: float) -> int:
        return int(self._call("SIZE", repr(now)))

    def _clear(self) -> None:
        with _mapped():
            self.client.delete(*self.keys)
