"""Serve agents and graphs over HTTP: the Agent Protocol, as LangGraph's client speaks it.

Needs the ``server`` extra (Starlette, uvicorn, sse-starlette).

- :func:`create_app` makes the ASGI app for agents and compiled graphs: assistants,
  threads, runs (background, wait, SSE streams, join, cancel, multitask strategies),
  the store, an OpenAPI page at ``/docs`` and the studio at ``/``.
- :func:`serve` runs it under uvicorn (``graphagent serve module:agent --port P``).
- :func:`redis_service`, :func:`postgres_service` and :func:`run_worker`: servers and
  workers on any number of machines sharing threads, runs, the queue and the event
  streams in Redis or PostgreSQL (``graphagent serve ... --redis URL`` /
  ``--postgres URL``, ``graphagent worker ... --redis URL`` / ``--postgres URL``).

The official ``langgraph-sdk`` client drives it unchanged::

    from langgraph_sdk import get_client
    client = get_client(url="http://127.0.0.1:2024")
    thread = await client.threads.create()
    await client.runs.wait(thread["thread_id"], "assistant", input={"messages": [...]})

Guide: docs/server.md.
"""

from __future__ import annotations

try:
    import sse_starlette as _sse  # noqa: F401
    import starlette as _starlette  # noqa: F401
    import uvicorn as _uvicorn  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "graphagent.server needs Starlette, uvicorn and sse-starlette: "
        "pip install starlette uvicorn sse-starlette (the server extra)"
    ) from exc

from graphagent.server._assistants import Assistant, assistant_uuid
from graphagent.server._cluster import redis_service, run_worker
from graphagent.server._errors import ApiError
from graphagent.server._local import InlineSqliteSaver, sqlite_options
from graphagent.server._postgres_queue import postgres_service
from graphagent.server._serve import create_app, serve
from graphagent.server._service import Service

__all__ = [
    "ApiError",
    "Assistant",
    "InlineSqliteSaver",
    "Service",
    "assistant_uuid",
    "create_app",
    "postgres_service",
    "redis_service",
    "run_worker",
    "serve",
    "sqlite_options",
]
