"""Name a shared store in a few words, so that test subprocesses open the same saver.

A store is ``(kind, target, name)``: ``("redis", url, prefix)``, ``("cluster", url,
prefix)``, ``("sqlite", path, "")`` or ``("postgres", url, schema)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from checkpoint import PostgresSaver, RedisSaver, SqliteSaver
from checkpoint.base import CheckpointSaver


@dataclass(frozen=True)
class Store:
    """A durable store the tests share between processes."""

    kind: str
    target: str
    name: str = ""

    def argv(self) -> list[str]:
        """The store as three command-line arguments."""
        return [self.kind, self.target, self.name]

    def open(self, **options: Any) -> CheckpointSaver:
        """A new saver on the store (the caller closes it)."""
        if self.kind == "sqlite":
            return SqliteSaver(self.target, **options)
        if self.kind == "postgres":
            return PostgresSaver.from_url(self.target, schema=self.name, **options)
        if self.kind == "cluster":
            return RedisSaver(redis.RedisCluster.from_url(self.target), prefix=self.name, **options)
        return RedisSaver.from_url(self.target, prefix=self.name, **options)


def close(saver: CheckpointSaver) -> None:
    """Close whatever saver :meth:`Store.open` made."""
    closer = getattr(saver, "close", None)
    if closer is not None:
        closer()
    client = getattr(saver, "client", None)
    if isinstance(client, redis.RedisCluster):
        # close() leaves the connection of a script load to a node open
        client.disconnect_connection_pools()
