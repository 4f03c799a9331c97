"""``a2a_app``: an agent as an A2A server (ASGI), built from the SDK's own parts."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import AsyncIterator
from typing import Any

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from starlette.applications import Starlette

from checkpoint import MemorySaver
from graphagent._internal.tenancy import ThreadNamespace
from graphagent.a2a._card import agent_card
from graphagent.a2a._executor import AgentExecutorFor
from graphagent.agent import BaseAgent
from graphagent.errors import UserError

__all__ = ["a2a_app", "serve"]


def _servable(agent: Any) -> BaseAgent:
    if not isinstance(agent, BaseAgent):
        raise UserError(
            f"a2a serves an agent (ReactAgent, SequentialAgent, ...), not "
            f"{type(agent).__name__}: for a tool, wrap it in a ReactAgent"
        )
    served: BaseAgent = agent
    if served.graph.saver is None:
        # a copy: the caller's agent object keeps running without a saver
        served = copy.copy(served)
        served.graph = served.graph.with_saver(MemorySaver())
    return served


def a2a_app(
    agent: BaseAgent,
    url: str,
    *,
    version: str = "1.0.0",
    description: str | None = None,
    name: str | None = None,
    task_store: TaskStore | None = None,
) -> Starlette:
    """An ASGI app that serves ``agent`` over A2A, as the official ``a2a-sdk`` does:
    JSON-RPC at ``/``, HTTP+JSON (REST: ``/message:send``, ``/message:stream``,
    ``/tasks/{id}``, ...) beside it, and the card at ``/.well-known/agent-card.json``
    naming both (JSON-RPC first). gRPC is not served (see docs/a2a.md).

    Each A2A context is a thread of the agent (see docs/a2a.md): a caller continues a
    conversation by sending its ``contextId`` again, and reaches only contexts of its
    own (the authenticated user's, or the anonymous callers' when there is no
    authentication). An agent without a saver gets an in-memory one here.

    Args:
        agent: the agent to serve.
        url: where callers reach this app (named in the card).
        version: the agent's version, as the card tells it.
        description: the card's description (default: the agent's).
        name: the server's name in stored thread ids (default: the agent's name): two
            servers on one saver keep their threads apart by it.
        task_store: where the SDK keeps tasks (default: in memory). A server that
            restarts and must resume tasks paused for a human needs a lasting one
            (the SDK's ``DatabaseTaskStore``); which task asked is kept by the saver.

    Example:
        >>> from graphagent.agent import ReactAgent
        >>> from graphagent.models import FakeChatModel
        >>> app = a2a_app(ReactAgent(name="echo", model=FakeChatModel(["hi"])), "http://127.0.0.1:9999")
        >>> sorted(r.path for r in app.routes)[:4]
        ['/', '/.well-known/agent-card.json', '/extendedAgentCard', '/message:send']
    """
    served = _servable(agent)
    card = agent_card(served, url, version=version, description=description)
    executor = AgentExecutorFor(served, ThreadNamespace("a2a", name or served.name))
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=task_store or InMemoryTaskStore(), agent_card=card
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:  # the tasks still running are stopped, not left behind
            await handler.aclose()

    # REST last: its routes end in a catch-all mount for tenant-prefixed paths
    routes = [
        *create_agent_card_routes(card),
        *create_jsonrpc_routes(handler, rpc_url="/"),
        *create_rest_routes(handler),
    ]
    return Starlette(routes=routes, lifespan=lifespan)


def serve(
    agent: BaseAgent,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    url: str | None = None,
    **options: Any,
) -> None:
    """Serve ``agent`` over A2A at ``http://host:port`` until stopped (uvicorn).

    Args:
        agent: the agent to serve.
        host: the interface to listen on (only this machine by default).
        port: the port.
        url: the URL the card names (default ``http://host:port``).
        **options: passed to :func:`a2a_app`.
    """
    import uvicorn

    app = a2a_app(agent, url or f"http://{host}:{port}", **options)
    uvicorn.run(app, host=host, port=port, log_level="warning")
