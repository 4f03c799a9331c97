"""``SqliteCache``: a node-result cache in a SQLite file, shared by the processes that
open it."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from typing_extensions import Self

from checkpoint.cache.base import BaseCache, FullKey, Namespace
from checkpoint.errors import CheckpointStorageError

__all__ = ["SqliteCache"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS graphagent_cache (
    ns TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    expires REAL,
    PRIMARY KEY (ns, key)
)
"""


def _ns(namespace: Namespace) -> str:
    return json.dumps(list(namespace), ensure_ascii=False)


class SqliteCache(BaseCache):
    """Keep cached values in a SQLite file (WAL mode); expired rows are dropped as read.

    Args:
        path: the database file (created with its table on first use) or ``":memory:"``.
        timeout: seconds a writer waits for another process's transaction.

    Example::

        app = graph.compile(cache=SqliteCache("cache.sqlite"))
    """

    def __init__(
        self, path: str | os.PathLike[str] = ":memory:", *, timeout: float = 30.0, serde: Any = None
    ) -> None:
        super().__init__(serde=serde)
        self.path = str(path)
        self._lock = threading.Lock()
        with self._mapped("open"):
            self.conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            if self.path != ":memory:":
                self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute(_SCHEMA)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], **kw: Any) -> Self:
        """A cache in the SQLite file at ``path``."""
        return cls(path, **kw)

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _mapped(self, what: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise CheckpointStorageError(
                f"SQLite cache {self.path!r}: {what} failed: {exc}"
            ) from exc

    def get(self, keys: Sequence[FullKey]) -> dict[FullKey, Any]:
        """The values stored (and not expired) under ``keys``."""
        if not keys:
            return {}
        now = time.time()
        found: dict[FullKey, Any] = {}
        with self._lock, self._mapped("get"):
            for ns, key in keys:
                row = self.conn.execute(
                    "SELECT value, expires FROM graphagent_cache WHERE ns = ? AND key = ?",
                    (_ns(ns), key),
                ).fetchone()
                if row is None:
                    continue
                if row[1] is not None and row[1] <= now:
                    self.conn.execute(
                        "DELETE FROM graphagent_cache WHERE ns = ? AND key = ? AND expires <= ?",
                        (_ns(ns), key, now),
                    )
                    continue
                found[(ns, key)] = bytes(row[0])
        return {k: self._loads(v) for k, v in found.items()}

    def set(self, pairs: Mapping[FullKey, tuple[Any, float | None]]) -> None:
        """Store each ``key -> (value, ttl)`` in one transaction."""
        now = time.time()
        rows = [
            (_ns(ns), key, self._dumps((ns, key), v), None if ttl is None else now + ttl)
            for (ns, key), (v, ttl) in pairs.items()
        ]
        if not rows:
            return
        with self._lock, self._mapped("set"):
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                self.conn.executemany(
                    "INSERT OR REPLACE INTO graphagent_cache (ns, key, value, expires) "
                    "VALUES (?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise
            self.conn.execute("COMMIT")

    def clear(self, namespaces: Sequence[Namespace] | None = None) -> None:
        """Drop every value of ``namespaces`` (``None``: all)."""
        with self._lock, self._mapped("clear"):
            if namespaces is None:
                self.conn.execute("DELETE FROM graphagent_cache")
            else:
                self.conn.executemany(
                    "DELETE FROM graphagent_cache WHERE ns = ?", [(_ns(n),) for n in namespaces]
                )
