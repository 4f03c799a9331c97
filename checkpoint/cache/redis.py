"""``RedisCache``: a node-result cache on plain Redis (no modules), Cluster included.

A value is one string key with Redis's own expiry (``PX``). The keys of one namespace
share a hash tag, so one ``MGET`` reads them in a Cluster too; a set per namespace, and
one of namespaces, let :meth:`RedisCache.clear` find them without ``SCAN``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import redis
from typing_extensions import Self

from checkpoint.cache.base import BaseCache, FullKey, Namespace
from checkpoint.errors import CheckpointStorageError

__all__ = ["RedisCache"]

_SEPARATORS = ":{}"


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except redis.RedisError as exc:
        raise CheckpointStorageError(f"Redis cache failed: {exc}") from exc


class RedisCache(BaseCache):
    """Keep cached values in Redis, shared by every process that reaches it.

    Args:
        client: a ``redis.Redis`` or ``redis.RedisCluster`` (see :meth:`from_url`).
        prefix: the tenant's key prefix (no ``:``, ``{`` or ``}``).

    Example::

        app = graph.compile(cache=RedisCache.from_url("redis://localhost:6379/0"))
    """

    def __init__(self, client: Any, *, prefix: str = "graphagent", serde: Any = None) -> None:
        super().__init__(serde=serde)
        if not prefix or any(c in prefix for c in _SEPARATORS):
            raise ValueError(
                f"invalid key prefix {prefix!r}: it must be non-empty and contain none of "
                f"{' '.join(_SEPARATORS)} (use '-' or '.' to separate tenants)"
            )
        self.client = client
        self.prefix = prefix
        self._namespaces = f"{{{prefix}:%cache}}:namespaces"

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "graphagent", **kw: Any) -> Self:
        """A cache on a new client for ``url``."""
        return cls(redis.Redis.from_url(url), prefix=prefix, **kw)

    def close(self) -> None:
        """Close the client."""
        self.client.close()

    def _tag(self, ns: Namespace) -> str:
        # json keeps namespaces apart whatever they hold; '{' and '}' would end the tag
        text = json.dumps(list(ns), ensure_ascii=False).replace("{", "%7B").replace("}", "%7D")
        return f"{{{self.prefix}:%cache:{text}}}"

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """The values stored (and not expired) under ``keys``: one ``MGET`` per namespace."""
        by_ns: dict[Namespace, list[str]] = {}
        for ns, key in keys:
            by_ns.setdefault(tuple(ns), []).append(key)
        found: dict[FullKey, Any] = {}
        with _mapped():
            for ns, names in by_ns.items():
                tag = self._tag(ns)
                raw = self.client.mget([f"{tag}:k:{k}" for k in names])
                for key, data in zip(names, raw, strict=True):
                    if data is not None:
                        found[(ns, key)] = self._loads(bytes(data))
        return found

    def set(self, pairs: Mapping[FullKey, tuple[Any, float | None]]) -> None:
        """Store each ``key -> (value, ttl)``."""
        encoded = [
            (tuple(ns), key, self._dumps((ns, key), v), ttl)
            for (ns, key), (v, ttl) in pairs.items()
        ]
        with _mapped():
            for ns, key, data, ttl in encoded:
                tag = self._tag(ns)
                px = None if ttl is None else max(1, int(ttl * 1000))
                pipe = self.client.pipeline(transaction=False)
                pipe.set(f"{tag}:k:{key}", data, px=px)
                pipe.sadd(f"{tag}:keys", key)
                pipe.execute()
                self.client.sadd(self._namespaces, tag)

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Drop every value of ``namespaces`` (``None``: all of this prefix)."""
        with _mapped():
            if namespaces is None:
                tags = [
                    t.decode() if isinstance(t, bytes) else t
                    for t in self.client.smembers(self._namespaces)
                ]
            else:
                tags = [self._tag(tuple(ns)) for ns in namespaces]
            for tag in tags:
                names = self.client.smembers(f"{tag}:keys")
                doomed = [f"{tag}:k:{n.decode() if isinstance(n, bytes) else n}" for n in names]
                for start in range(0, len(doomed), 500):
                    self.client.delete(*doomed[start : start + 500])
                self.client.delete(f"{tag}:keys")
                self.client.srem(self._namespaces, tag)
