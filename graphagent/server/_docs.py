"""Where the server keeps its threads' and runs' records (the checkpoints stay in the saver).

A record is a JSON document of a ``kind`` (``"thread"`` or ``"run"``) under an id, with the
owner it belongs to and a parent (a run's thread). Three homes, one interface:
:class:`SqliteDocs` (one file, the default; ``":memory:"`` for tests), :class:`RedisDocs`
and :class:`PostgresDocs` (shared by every server and worker of a cluster).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["Docs", "SqliteDocs", "dumps"]


def dumps(doc: Any) -> str:
    """A record as compact JSON text."""
    return json.dumps(doc, separators=(",", ":"), default=str)


class Docs(Protocol):
    """The records' store: every method is a coroutine, each call one round trip."""

    async def get(self, kind: str, ident: str) -> dict[str, Any] | None:
        """The record, or ``None``."""

    async def get_many(self, kind: str, idents: Sequence[str]) -> list[dict[str, Any]]:
        """The records that exist of these ids, in their order."""

    async def put(self, kind: str, ident: str, doc: dict[str, Any]) -> None:
        """Create or replace a record (its ``_owner`` and ``_parent`` keys index it)."""

    async def delete(self, kind: str, ident: str) -> None:
        """Forget a record."""

    async def children(self, kind: str, parent: str) -> list[dict[str, Any]]:
        """The records of ``kind`` under ``parent``, oldest first."""

    async def owned(self, kind: str, owner: str) -> list[dict[str, Any]]:
        """The records of ``kind`` that ``owner`` owns, oldest first."""

    async def close(self) -> None:
        """Let go of connections."""


_SCHEMA = """
CREATE TABLE IF NOT EXISTS graphagent_server_docs (
    kind TEXT NOT NULL, id TEXT NOT NULL, owner TEXT NOT NULL, parent TEXT NOT NULL,
    seq INTEGER NOT NULL, doc TEXT NOT NULL, PRIMARY KEY (kind, id));
CREATE INDEX IF NOT EXISTS graphagent_server_docs_parent
    ON graphagent_server_docs (kind, parent, seq);
CREATE INDEX IF NOT EXISTS graphagent_server_docs_owner
    ON graphagent_server_docs (kind, owner, seq);
"""


class SqliteDocs:
    """Records in a SQLite file (the server's default) or in memory.

    Calls run on the event loop's thread: each is one indexed statement on a local file,
    which costs less than handing it to a worker thread would.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        if path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)
        row = self._db.execute("SELECT COALESCE(MAX(seq), 0) FROM graphagent_server_docs")
        self._seq = int(row.fetchone()[0])

    def _rows(self, sql: str, args: Sequence[Any]) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(sql, tuple(args)).fetchall()
        return [json.loads(r[0]) for r in rows]

    async def get(self, kind: str, ident: str) -> dict[str, Any] | None:
        found = self._rows(
            "SELECT doc FROM graphagent_server_docs WHERE kind = ? AND id = ?", (kind, ident)
        )
        return found[0] if found else None

    async def get_many(self, kind: str, idents: Sequence[str]) -> list[dict[str, Any]]:
        out = []
        for ident in idents:
            doc = await self.get(kind, ident)
            if doc is not None:
                out.append(doc)
        return out

    async def put(self, kind: str, ident: str, doc: dict[str, Any]) -> None:
        owner, parent = str(doc.get("_owner") or ""), str(doc.get("_parent") or "")
        with self._lock:
            self._seq += 1
            # seq keeps the first insert's order: an update does not move a record
            self._db.execute(
                "INSERT INTO graphagent_server_docs (kind, id, owner, parent, seq, doc) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (kind, id) DO UPDATE SET "
                "doc = excluded.doc, owner = excluded.owner, parent = excluded.parent",
                (kind, ident, owner, parent, self._seq, dumps(doc)),
            )

    async def delete(self, kind: str, ident: str) -> None:
        with self._lock:
            self._db.execute(
                "DELETE FROM graphagent_server_docs WHERE kind = ? AND id = ?", (kind, ident)
            )

    async def children(self, kind: str, parent: str) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT doc FROM graphagent_server_docs WHERE kind = ? AND parent = ? ORDER BY seq",
            (kind, parent),
        )

    async def owned(self, kind: str, owner: str) -> list[dict[str, Any]]:
        return self._rows(
            "SELECT doc FROM graphagent_server_docs WHERE kind = ? AND owner = ? ORDER BY seq",
            (kind, owner),
        )

    async def close(self) -> None:
        with self._lock:
            self._db.close()
