"""Checkpoint persistence for graphagent: savers, records and the msgpack serde.

This package never imports ``graphagent``; any program can read stored threads
with it alone.
"""

from __future__ import annotations

from checkpoint import serde
from checkpoint._cache import ReadCache
from checkpoint.base import (
    Change,
    Checkpoint,
    CheckpointHistory,
    CheckpointSaver,
    CheckpointWrite,
    PendingWrite,
    new_checkpoint_id,
)
from checkpoint.cache import BaseCache, InMemoryCache, MemoryCache, RedisCache, SqliteCache
from checkpoint.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStorageError,
    SerializationError,
    ThreadLockedError,
)
from checkpoint.memory import MemorySaver
from checkpoint.postgres import AsyncPostgresSaver, PostgresSaver
from checkpoint.redis import AsyncRedisSaver, RedisSaver
from checkpoint.sqlite import AsyncSqliteSaver, SqliteSaver
from checkpoint.store import (
    BaseStore,
    GetOp,
    InMemoryStore,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MemoryStore,
    PostgresStore,
    PutOp,
    RedisStore,
    SearchItem,
    SearchOp,
    SqliteStore,
    StoreError,
)

__all__ = [
    "AsyncPostgresSaver",
    "AsyncRedisSaver",
    "AsyncSqliteSaver",
    "BaseCache",
    "BaseStore",
    "Change",
    "Checkpoint",
    "CheckpointConflictError",
    "CheckpointError",
    "CheckpointHistory",
    "CheckpointNotFoundError",
    "CheckpointSaver",
    "CheckpointStorageError",
    "CheckpointWrite",
    "GetOp",
    "InMemoryCache",
    "InMemoryStore",
    "InvalidNamespaceError",
    "Item",
    "ListNamespacesOp",
    "MemoryCache",
    "MemorySaver",
    "MemoryStore",
    "PendingWrite",
    "PostgresSaver",
    "PostgresStore",
    "PutOp",
    "ReadCache",
    "RedisCache",
    "RedisSaver",
    "RedisStore",
    "SearchItem",
    "SearchOp",
    "SerializationError",
    "SqliteCache",
    "SqliteSaver",
    "SqliteStore",
    "StoreError",
    "ThreadLockedError",
    "new_checkpoint_id",
    "serde",
]
