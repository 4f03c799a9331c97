"""``create_app`` and ``serve``: the server put together from its parts."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from starlette.applications import Starlette

from checkpoint import BaseStore, MemorySaver, MemoryStore
from checkpoint.base import CheckpointSaver
from graphagent.server._app import build_app
from graphagent.server._docs import Docs, SqliteDocs
from graphagent.server._service import Auth, Service

__all__ = ["create_app", "serve"]


def _targets(targets: Any) -> list[Any]:
    if (
        isinstance(targets, Iterable)
        and not hasattr(targets, "graph")
        and not hasattr(targets, "plan")
    ):
        return list(targets)
    return [targets]


def create_app(
    targets: Any,
    *,
    saver: CheckpointSaver | None = None,
    store: BaseStore | None = None,
    docs: Docs | str | None = None,
    auth: Auth | None = None,
    name: str = "graphagent",
    service: Service | None = None,
) -> Starlette:
    """The ASGI app serving ``targets`` (an agent, a compiled graph, or a list of them).

    Args:
        targets: what to serve; each is an assistant named after its graph.
        saver: where threads are checkpointed (default: in memory).
        store: what the store endpoints read and write (default: in memory).
        docs: where thread and run records go: a SQLite path, or a records store
            (default: in memory).
        auth: ``auth(headers) -> user id`` (sync or async), raising ``PermissionError``
            to refuse; each user then sees only their own threads, runs and items.
        name: the server's name (users' threads of two servers on one store stay apart).
        service: a service built elsewhere (a Redis or PostgreSQL cluster's), used as is.

    Example::

        import uvicorn
        uvicorn.run(create_app(agent), port=2024)
    """
    if service is None:
        records = SqliteDocs(docs) if isinstance(docs, str) else docs
        service = Service(
            _targets(targets),
            saver if saver is not None else MemorySaver(),
            store=store if store is not None else MemoryStore(),
            docs=records,
            auth=auth,
            name=name,
        )
    return build_app(service)


def serve(
    targets: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 2024,
    log_level: str = "warning",
    **options: Any,
) -> None:
    """Serve ``targets`` until interrupted (the options are :func:`create_app`'s)."""
    import uvicorn

    app = create_app(targets, **options)
    uvicorn.run(app, host=host, port=port, log_level=log_level, lifespan="on")
