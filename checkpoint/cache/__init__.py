"""Node-result caches beside the savers: in memory, in a SQLite file, on Redis.

A cache maps ``(namespace, key)`` pairs to values that expire after a time to live.
The graph engine keeps a cached node's result in one (``compile(cache=...)``), so a node
with a ``CachePolicy`` called again with the same input, on any thread, is not run.
Values are stored with :mod:`checkpoint.serde` (msgpack, no pickle).

Example:
    >>> from checkpoint.cache import MemoryCache
    >>> cache = MemoryCache()
    >>> cache.set({(("graph", "node"), "k1"): ({"x": 1}, None)})
    >>> cache.get([(("graph", "node"), "k1"), (("graph", "node"), "k2")])
    {(('graph', 'node'), 'k1'): {'x': 1}}
"""

from __future__ import annotations

from checkpoint.cache.base import BaseCache, FullKey, Namespace
from checkpoint.cache.memory import InMemoryCache, MemoryCache
from checkpoint.cache.redis import RedisCache
from checkpoint.cache.sqlite import SqliteCache

__all__ = [
    "BaseCache",
    "FullKey",
    "InMemoryCache",
    "MemoryCache",
    "Namespace",
    "RedisCache",
    "SqliteCache",
]
