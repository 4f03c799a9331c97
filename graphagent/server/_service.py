"""The server's parts in one object: assistants, records, queue, events, store, auth."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from checkpoint import BaseStore
from checkpoint.base import CheckpointSaver
from graphagent.server._assistants import Assistants
from graphagent.server._docs import Docs, SqliteDocs
from graphagent.server._errors import ApiError
from graphagent.server._events import Events, LocalEvents
from graphagent.server._execute import Executor
from graphagent.server._queue import LocalQueue, Queue
from graphagent.server._records import Tenancy
from graphagent.server._runs import Runs
from graphagent.server._store import StoreApi
from graphagent.server._threads import Threads

__all__ = ["Auth", "Service"]

Auth = Callable[[Mapping[str, str]], Any]
"""``auth(headers) -> user id`` (sync or async); raises ``PermissionError`` to refuse."""

ANONYMOUS = ""


class Service:
    """Everything one server (or worker) process holds.

    Args:
        targets: the agents and compiled graphs to serve.
        saver: where threads are checkpointed.
        store: the long-term memory store the store endpoints read (``None``: none).
        docs: where thread and run records live (default: in memory).
        events: where runs' events go (default: this process).
        queue: a factory of the queue, given the executor (default: this process's).
        auth: who a request is from (``None``: everyone is one anonymous user).
        name: the server's name: two servers on one store keep their users apart.
    """

    def __init__(
        self,
        targets: Iterable[Any],
        saver: CheckpointSaver,
        *,
        store: BaseStore | None = None,
        docs: Docs | None = None,
        events: Events | None = None,
        queue: Callable[[Executor], Queue] | None = None,
        auth: Auth | None = None,
        name: str = "graphagent",
    ) -> None:
        self.saver = saver
        self.store = store
        self.assistants = Assistants(targets, saver)
        self.docs: Docs = docs if docs is not None else SqliteDocs(":memory:")
        self.events: Events = events if events is not None else LocalEvents()
        self.executor = Executor(self.assistants, self.docs, self.events)
        self.queue: Queue = (queue or LocalQueue)(self.executor)
        self.auth = auth
        self.tenancy = Tenancy(name, auth is not None)
        self.threads = Threads(self.docs, self.assistants, self.tenancy)
        self.runs = Runs(self.threads, self.queue, self.events)
        self.store_api = StoreApi(store, self.tenancy)

    async def user(self, headers: Mapping[str, str]) -> str:
        """Who sent a request: the auth function's answer, or 401/403."""
        if self.auth is None:
            return ANONYMOUS
        try:
            user = self.auth(headers)
            if inspect.isawaitable(user):
                user = await user
        except PermissionError as exc:
            signed = "authorization" in {k.lower() for k in headers}
            status = 403 if signed else 401
            raise ApiError(status, str(exc) or "not allowed") from None
        if not user:
            raise ApiError(401, "the auth function named no user")
        return str(user)

    async def start(self) -> None:
        """Start taking runs."""
        await self.queue.start()

    async def close(self) -> None:
        """Stop runs, close connections."""
        await self.queue.close()
        await self.events.close()
        await self.docs.close()
