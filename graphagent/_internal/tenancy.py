"""Threads served to outside callers: each caller in a namespace of its own.

A surface that lets callers outside the application run an agent on a thread (MCP's
``ask_<agent>``; A2A and the HTTP server follow the same rule) must not let them name
the application's own threads, nor each other's. :class:`ThreadNamespace` is that rule:

- the thread ids a caller sees are issued by the server (random, 128 bits);
- the thread stored for them is ``<surface>:<server>:<owner digest>:<id>``, so no id a
  caller sends can name a thread outside its own namespace, whatever characters it holds;
- a caller may resume only a thread that exists in its namespace, i.e. one it started.

The *owner* is whatever the surface knows of the caller: an authenticated principal, or
else its transport session. Owners are hashed before they reach a thread id, so stored
ids (and ``graphagent threads list``) never show a principal's name or a session id.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from graphagent.errors import ThreadAccessError

__all__ = ["ThreadNamespace"]


class ThreadNamespace:
    """The threads one server hands out, kept apart by caller.

    Args:
        surface: what serves them (``"mcp"``, ``"a2a"``, ``"http"``).
        server: the server's name: two servers on one saver do not share threads.

    Example:
        >>> threads = ThreadNamespace("mcp", "support")
        >>> threads.stored("session:abc", "42")
        'mcp:support:a29d803b477eb420:42'
    """

    def __init__(self, surface: str, server: str) -> None:
        self.surface = surface
        self.server = server

    def new_thread(self) -> str:
        """A fresh thread id to hand to a caller."""
        return uuid.uuid4().hex

    def stored(self, owner: str, thread_id: str) -> str:
        """The saver's thread id for ``owner``'s thread ``thread_id``."""
        digest = hashlib.sha256(owner.encode()).hexdigest()[:16]
        return f"{self.surface}:{self.server}:{digest}:{thread_id}"

    async def aresume(self, graph: Any, owner: str, thread_id: str) -> str:
        """The stored id of ``owner``'s thread ``thread_id``, which must exist.

        Args:
            graph: the compiled graph (or agent graph) the thread belongs to.
            owner: the caller, as the surface knows it.
            thread_id: the id the caller sent.

        Raises:
            ThreadAccessError: no thread of that id was started by this caller here.
        """
        stored = self.stored(owner, thread_id)
        snapshot = await graph.aget_state({"thread_id": stored})
        if snapshot.checkpoint_id is None:
            raise self._refused(thread_id)
        return stored

    def resume(self, graph: Any, owner: str, thread_id: str) -> str:
        """Sync :meth:`aresume`."""
        stored = self.stored(owner, thread_id)
        if graph.get_state({"thread_id": stored}).checkpoint_id is None:
            raise self._refused(thread_id)
        return stored

    def _refused(self, thread_id: str) -> ThreadAccessError:
        shown = thread_id if len(thread_id) <= 80 else f"{thread_id[:80]}…"
        return ThreadAccessError(
            f"thread_id {shown!r} is not a conversation you started on {self.surface} server "
            f"{self.server!r}: a caller can continue only the threads it started (in the same "
            "session, or signed in as the same principal); leave thread_id out to start one"
        )
