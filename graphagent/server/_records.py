"""Thread and run records: how they are made, who owns them, and how they look on the wire.

A record's keys that start with ``_`` are the server's own (the owner, the saver's thread
id, the run's request) and are never sent to a client.
"""

from __future__ import annotations

import datetime as _dt
import uuid
from typing import Any

from graphagent._internal.tenancy import ThreadNamespace

__all__ = [
    "ACTIVE",
    "Tenancy",
    "new_run",
    "new_thread",
    "now",
    "public",
]

ACTIVE = frozenset({"pending", "running"})
"""Run statuses that make a thread busy."""


def now() -> str:
    """The time, as the wire carries it (ISO 8601, UTC)."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


def public(doc: dict[str, Any]) -> dict[str, Any]:
    """A record as a client sees it (without the server's ``_`` keys)."""
    return {k: v for k, v in doc.items() if not k.startswith("_")}


class Tenancy:
    """Whose a thread is: each signed-in user has threads of their own.

    Without auth every caller is the same anonymous user and a thread is stored under
    the id the client sees. With auth, the record and the checkpoints of user U's thread
    T are kept under ``http:<server>:<digest of U>:T``: no id another user sends can name
    it, so it is a 404 for them on every endpoint.
    """

    def __init__(self, server: str, auth: bool) -> None:
        self.auth = auth
        self._names = ThreadNamespace("http", server)

    def key(self, owner: str, thread_id: str) -> str:
        """The stored id (record and checkpoints) of ``owner``'s thread ``thread_id``."""
        return self._names.stored(owner, thread_id) if self.auth else thread_id

    def label(self, owner: str) -> str:
        """The namespace label that keeps ``owner``'s store items apart."""
        return self._names.stored(owner, "store").rsplit(":", 1)[0]


def new_thread(
    thread_id: str, key: str, owner: str, metadata: dict[str, Any] | None
) -> dict[str, Any]:
    """A fresh idle thread record."""
    stamp = now()
    return {
        "thread_id": thread_id,
        "created_at": stamp,
        "updated_at": stamp,
        "state_updated_at": stamp,
        "metadata": dict(metadata or {}),
        "status": "idle",
        "values": None,
        "interrupts": {},
        "_owner": owner,
        "_key": key,
    }


def new_run(
    thread: dict[str, Any], assistant_id: str, body: dict[str, Any], *, temporary: bool
) -> dict[str, Any]:
    """A pending run record for ``thread`` with the request ``body``."""
    stamp = now()
    return {
        "run_id": str(uuid.uuid4()),
        "thread_id": thread["thread_id"],
        "assistant_id": assistant_id,
        "created_at": stamp,
        "updated_at": stamp,
        "status": "pending",
        "metadata": dict(body.get("metadata") or {}),
        "multitask_strategy": body.get("multitask_strategy") or "enqueue",
        "kwargs": {
            k: body.get(k)
            for k in ("input", "command", "config", "context", "stream_mode", "checkpoint_id")
        },
        "_owner": thread["_owner"],
        "_parent": thread["_key"],
        "_temporary": temporary,
        "_resumable": bool(body.get("stream_resumable")),
    }
