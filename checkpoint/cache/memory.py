"""``MemoryCache``: a node-result cache in this process."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint.cache.base import BaseCache, FullKey, Namespace

__all__ = ["InMemoryCache", "MemoryCache"]


class MemoryCache(BaseCache):
    """Keep cached values in this process, shared by every thread and every run.

    Example::

        app = graph.compile(cache=MemoryCache())
    """

    def __init__(self, *, serde: Any = None) -> None:
        super().__init__(serde=serde)
        self._data: dict[Namespace, dict[str, tuple[bytes, float | None]]] = {}
        self._lock = threading.Lock()

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """The values stored (and not expired) under ``keys``."""
        found: dict[FullKey, bytes] = {}
        now = time.time()
        with self._lock:
            for ns, key in keys:
                entries = self._data.get(ns)
                entry = entries.get(key) if entries is not None else None
                if entry is None:
                    continue
                if entry[1] is not None and entry[1] <= now:
                    del entries[key]  # type: ignore[union-attr]
                    continue
                found[(ns, key)] = entry[0]
        return {k: self._loads(v) for k, v in found.items()}

    def set(self, pairs: Mapping[FullKey, tuple[Any, float | None]]) -> None:
        """Store each ``key -> (value, ttl)``."""
        now = time.time()
        encoded = {
            k: (self._dumps(k, v), None if ttl is None else now + ttl)
            for k, (v, ttl) in pairs.items()
        }
        with self._lock:
            for (ns, key), entry in encoded.items():
                self._data.setdefault(ns, {})[key] = entry

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Drop every value of ``namespaces`` (``None``: all)."""
        with self._lock:
            if namespaces is None:
                self._data.clear()
            else:
                for ns in namespaces:
                    self._data.pop(tuple(ns), None)

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """Async :meth:`get` (in this thread: it never waits on I/O)."""
        return self.get(keys)

    async def aset(self, pairs: Mapping[FullKey, tuple[Any, float | None]]) -> None:
        """Async :meth:`set`."""
        self.set(pairs)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Async :meth:`clear`."""
        self.clear(namespaces)


InMemoryCache = MemoryCache
"""LangGraph's name for :class:`MemoryCache`."""
