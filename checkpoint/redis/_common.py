"""What the sync and async Redis savers share: the constructor, ``from_url`` and the one
place redis-py and socket errors become checkpoint errors."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

import redis
import redis.asyncio as aredis
from redis.exceptions import RedisError
from typing_extensions import Self

from checkpoint.errors import CheckpointStorageError
from checkpoint.locks import LockPolicy
from checkpoint.redis._programs import RedisLogic
from checkpoint.serde import Serde

__all__ = ["RedisBase", "storage_error"]

C = TypeVar("C", redis.Redis, aredis.Redis)


def storage_error(action: str, exc: Exception) -> CheckpointStorageError:
    """The ``CheckpointStorageError`` for a redis-py or socket error (the one boundary)."""
    if isinstance(exc, RedisError):
        made = CheckpointStorageError(f"Redis failed while {action}: {type(exc).__name__}: {exc}")
    else:
        made = CheckpointStorageError(f"Redis unreachable while {action}: {exc}")
    made.__cause__ = exc
    return made


class RedisBase(Generic[C]):
    """The constructor and :meth:`from_url` of the sync and the async Redis saver."""

    def __init__(
        self,
        client: C,
        *,
        prefix: str = "graphagent",
        ttl: float | None = None,
        keep_last: int | None = None,
        serde: Serde | None = None,
        lock_timeout: float | None = None,
        lock_lease: float = 30.0,
    ) -> None:
        self.client: C = client
        self.logic = RedisLogic(prefix=prefix, ttl=ttl, keep_last=keep_last, serde=serde)
        self.lock_policy = LockPolicy.optional(lock_timeout, lock_lease)

    @staticmethod
    def _connect(url: str, **options: Any) -> C:
        raise NotImplementedError

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        ttl: float | None = None,
        prefix: str = "graphagent",
        keep_last: int | None = None,
        serde: Serde | None = None,
        lock_timeout: float | None = None,
        lock_lease: float = 30.0,
        **client_options: Any,
    ) -> Self:
        """Connect to ``url`` (``redis://``, ``rediss://``, ``unix://``), lazily.

        A wrong URL fails on first use with a :class:`CheckpointStorageError`.
        ``client_options`` go to the redis client (``socket_timeout``, ...).
        """
        client = cls._connect(url, **client_options)
        return cls(
            client,
            prefix=prefix,
            ttl=ttl,
            keep_last=keep_last,
            serde=serde,
            lock_timeout=lock_timeout,
            lock_lease=lock_lease,
        )

    @property
    def prefix(self) -> str:
        """The key prefix."""
        return self.logic.prefix
