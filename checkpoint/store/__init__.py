"""Long-term memory: items in namespaces, shared across threads, with search.

``MemoryStore`` (alias ``InMemoryStore``), ``SqliteStore``, ``PostgresStore`` and
``RedisStore`` share one behaviour (see ``docs/memory.md``): ``put``/``get``/``delete``/
``search``/``list_namespaces``/``batch`` and their ``a*`` twins, TTL in minutes, and
semantic search with ``index={"embed": ..., "dims": N, "fields": [...]}``.
"""

from __future__ import annotations

from checkpoint.store._core import InvalidNamespaceError, StoreError
from checkpoint.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchItem,
    SearchOp,
)
from checkpoint.store.memory import InMemoryStore, MemoryStore
from checkpoint.store.postgres import PostgresStore
from checkpoint.store.redis import RedisStore
from checkpoint.store.sqlite import SqliteStore

__all__ = [
    "NOT_PROVIDED",
    "BaseStore",
    "GetOp",
    "InMemoryStore",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MemoryStore",
    "Op",
    "PostgresStore",
    "PutOp",
    "RedisStore",
    "SearchItem",
    "SearchOp",
    "SqliteStore",
    "StoreError",
]
