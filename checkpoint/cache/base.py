"""``BaseCache``: what every node-result cache does, sync and async."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint import serde as _serde
from checkpoint.errors import SerializationError

__all__ = ["BaseCache", "FullKey", "Namespace"]

Namespace = tuple[str, ...]
"""Who a cached value belongs to (the graph engine uses ``(graph, node)``)."""

FullKey = tuple[Namespace, str]
"""A cached value's address: its namespace and its key within it."""


class BaseCache(ABC):
    """A cache of values by ``(namespace, key)``, each with an optional time to live.

    Subclasses implement the sync methods; the async twins run them in a worker thread
    unless a subclass has native ones. Values go through :mod:`checkpoint.serde`, so a
    value read back is a copy, never the object that was stored.

    Args:
        serde: the serializer (``checkpoint.serde`` by default; a
            :class:`checkpoint.serde.Serde` with your types registered).
    """

    def __init__(self, *, serde: Any = None) -> None:
        self.serde = serde if serde is not None else _serde.default_serde

    @abstractmethod
    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """The values stored (and not expired) under ``keys``; missing ones are left out."""

    @abstractmethod
    def set(self, pairs: Mapping[FullKey, tuple[Any, float | None]]) -> None:
        """Store each ``key -> (value, ttl seconds or None for no expiry)``.

        Raises:
            SerializationError: a value ``checkpoint.serde`` cannot store.
        """

    @abstractmethod
    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Drop every value of ``namespaces`` (``None``: of every namespace)."""

    async def aget(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """Async :meth:`get`."""
        return await asyncio.to_thread(self.get, keys)

    async def aset(self, pairs: Mapping[FullKey, tuple[Any, float | None]]) -> None:
        """Async :meth:`set`."""
        await asyncio.to_thread(self.set, pairs)

    async def aclear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Async :meth:`clear`."""
        await asyncio.to_thread(self.clear, namespaces)

    def _dumps(self, key: FullKey, value: Any) -> bytes:
        try:
            return bytes(self.serde.dumps(value))
        except SerializationError as exc:
            raise SerializationError(
                f"cannot cache the value for {key!r}: {exc}; register its type with "
                "checkpoint.serde.register, or give the node no cache policy"
            ) from exc

    def _loads(self, data: bytes) -> Any:
        return self.serde.loads(data)
