"""Serving graphagent tools and agents over MCP, with the SDK's low-level server."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Literal
from urllib.parse import quote

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from graphagent._internal.results import split_output
from graphagent.agent import BaseAgent
from graphagent.errors import ToolDefinitionError, UserError
from graphagent.mcp._agent_tool import AgentTool
from graphagent.mcp._caller import Call, caller_of
from graphagent.mcp._stdio import Calls, run_stdio
from graphagent.messages import FilePart, ImagePart
from graphagent.observability import exception_summary
from graphagent.tools import (
    ToolCallback,
    ToolCallbackProvider,
    ToolContext,
    acall_tool,
    collect_tools,
)

__all__ = ["Servable", "build_server", "http_app", "serve"]

log = logging.getLogger("graphagent.mcp")
Servable = ToolCallback | BaseAgent | ToolCallbackProvider | Callable[..., Any]
Runner = Callable[[dict[str, Any], Call], Awaitable[types.CallToolResult]]
_LOCAL = ("127.0.0.1", "localhost", "::1")


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=error)


def _block(part: ImagePart | FilePart, n: int) -> types.ContentBlock:
    """A tool's image or file as an MCP content block (a URL part as a resource link)."""
    name = getattr(part, "name", None) or f"{part.kind}-{n}"
    if part.data is None:
        link = {"type": "resource_link", "uri": part.url, "name": name, "mimeType": part.mime_type}
        return types.ResourceLink.model_validate(link)
    if isinstance(part, ImagePart):
        return types.ImageContent(type="image", data=part.base64, mimeType=part.mime_type)
    blob = {"uri": f"attachment:///{quote(name)}", "mimeType": part.mime_type, "blob": part.base64}
    return types.EmbeddedResource(
        type="resource", resource=types.BlobResourceContents.model_validate(blob)
    )


def _result(output: Any) -> types.CallToolResult:
    """What a served tool returned as an MCP result: its text, then its images and files."""
    text, parts = split_output(output)
    if not parts:
        return _text(text)
    blocks: list[types.ContentBlock] = [types.TextContent(type="text", text=text)] if text else []
    blocks.extend(_block(p, n) for n, p in enumerate(parts, 1))
    return types.CallToolResult(content=blocks)


def _callback_runner(tool: ToolCallback) -> Runner:
    async def run(arguments: dict[str, Any], call: Call) -> types.CallToolResult:
        # the MCP request's _meta is the only context a served tool gets
        context = ToolContext(context={"mcp_meta": call.meta} if call.meta else None)
        return _result(await acall_tool(tool, json.dumps(arguments), context))

    return run


def _served(
    targets: Servable | Iterable[Servable], server: str
) -> dict[str, tuple[types.Tool, Runner]]:
    """The MCP tools for ``targets``, by name."""
    items: list[Any] = (
        list(targets)
        if isinstance(targets, Iterable) and not isinstance(targets, (str, Mapping))
        else [targets]
    )
    found: dict[str, tuple[types.Tool, Runner]] = {}

    def add(tool: types.Tool, run: Runner, what: str) -> None:
        if tool.name in found:
            raise ToolDefinitionError(
                f"two served tools are named {tool.name!r} (the second is {what}); rename one"
            )
        found[tool.name] = (tool, run)

    for item in items:
        if isinstance(item, BaseAgent):
            agent_tool = AgentTool(item, server)
            add(agent_tool.tool, agent_tool.run, f"agent {item.name!r}")
        elif isinstance(item, ToolCallbackProvider) and not isinstance(item, ToolCallback):
            for callback in item.tool_callbacks():
                add(_as_mcp_tool(callback), _callback_runner(callback), repr(callback))
        elif isinstance(item, ToolCallback) or callable(item) or hasattr(item, "definition"):
            # collect_tools makes a function a tool and refuses what is not one
            for callback in collect_tools(tools=[item]).values():
                add(_as_mcp_tool(callback), _callback_runner(callback), repr(callback))
        else:
            raise UserError(
                f"cannot serve {item!r} over MCP: pass tools (@tool functions, ToolCallbacks), "
                "agents, ToolCallbackProviders, or a list of them"
            )
    if not found:
        raise UserError("nothing to serve: pass at least one tool or agent")
    return found


def _as_mcp_tool(callback: ToolCallback) -> types.Tool:
    definition = callback.definition
    return types.Tool(
        name=definition.name,
        description=definition.description,
        inputSchema=dict(definition.input_schema),
    )


def build_server(
    targets: Servable | Iterable[Servable], *, name: str = "graphagent"
) -> Server[Any, Any]:
    """An MCP server (the SDK's low-level ``Server``) offering ``targets`` as tools.

    Tools keep their names and JSON schemas; an agent becomes ``ask_<agent>`` (see
    :func:`serve`). A tool that raises answers with ``isError`` and the reason.

    Raises:
        ToolDefinitionError: two served tools share a name.
        UserError: something in ``targets`` cannot be served.
    """
    return _build(targets, name, Calls())


def _build(targets: Servable | Iterable[Servable], name: str, calls: Calls) -> Server[Any, Any]:
    tools = _served(targets, name)
    server: Server[Any, Any] = Server(name)

    async def list_tools() -> list[types.Tool]:
        return [tool for tool, _ in tools.values()]

    async def call_tool(tool_name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        entry = tools.get(tool_name)
        if entry is None:
            return _text(f"unknown tool {tool_name!r}; call one of {sorted(tools)}", error=True)
        context = server.request_context
        meta = context.meta.model_dump(exclude_none=True) if context.meta is not None else None
        calls.running += 1
        try:
            return await entry[1](arguments, Call(meta or None, caller_of(context)))
        except Exception as exc:
            # the caller gets the text (it is the answer to its call); the log gets the
            # type alone unless content is captured: the text can quote the caller's data
            log.info("served tool %r failed: %s", tool_name, exception_summary(exc))
            return _text(f"tool {tool_name!r} failed: {type(exc).__name__}: {exc}", error=True)
        finally:
            calls.running -= 1

    server.list_tools()(list_tools)  # type: ignore[no-untyped-call]
    server.call_tool()(call_tool)
    return server


class _QuietDisconnects(logging.Filter):
    """Drops the SDK's error traceback for a client that went away, and only that.

    The SDK logs ``Error in standalone SSE writer`` with an 11-line traceback each time a
    client closes its session (its event stream is closed under the writer); a closed
    or broken stream means just that the other side left.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, (anyio.ClosedResourceError, anyio.BrokenResourceError))


_QUIET = _QuietDisconnects()


class _Endpoint:
    """The session manager as a plain ASGI app (Starlette wraps bare functions as views)."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)


def http_app(
    targets: Servable | Iterable[Servable],
    *,
    name: str = "graphagent",
    path: str = "/mcp",
    host: str = "127.0.0.1",
    stateless: bool = False,
    json_response: bool = False,
) -> Starlette:
    """An ASGI app serving ``targets`` over streamable HTTP at ``path``.

    Run it with any ASGI server (``uvicorn``), or mount it in your own app. Bound to a
    loopback ``host``, requests must name a loopback host too (DNS rebinding defence,
    as the SDK's FastMCP does).
    """
    security = (
        TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
        if host in _LOCAL
        else None
    )
    logging.getLogger("mcp.server.streamable_http").addFilter(_QUIET)  # once: same object
    manager = StreamableHTTPSessionManager(
        app=build_server(targets, name=name),
        json_response=json_response,
        stateless=stateless,
        security_settings=security,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> Any:
        async with manager.run():
            yield

    return Starlette(routes=[Route(path, endpoint=_Endpoint(manager))], lifespan=lifespan)


def serve(
    targets: Servable | Iterable[Servable],
    *,
    name: str = "graphagent",
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
) -> None:
    """Serve tools and agents over MCP until stopped (Ctrl-C, or the client closes stdio).

    Over stdio, the client closing stdin or Ctrl-C (SIGINT) cancels the calls still
    running and ends serving (Ctrl-C raises ``KeyboardInterrupt``). A call running sync
    code in a thread cannot be cancelled: then the process exits at once, after stopping
    the MCP servers it started, rather than wait for it.

    Every ``ToolCallback`` (``@tool`` function) becomes an MCP tool with its schema. An
    agent becomes one tool, ``ask_<agent>``, taking ``message`` and an optional
    ``thread_id``: the answer carries the thread id, so any MCP client (Claude Desktop,
    Spring AI, other frameworks) can keep the conversation going. A run that pauses for
    a human answers with the question and how to resume it.

    Args:
        targets: a tool, an agent, a provider, or a list of them.
        name: the server's name, shown to clients.
        transport: ``"stdio"`` (the client starts this process) or ``"http"``
            (streamable HTTP at ``http://host:port/path``).
        host: where to listen (``http`` only).
        port: the port (``http`` only).
        path: the endpoint's path (``http`` only).

    Example:
        >>> from graphagent.tools import tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two numbers.'''
        ...     return a + b
        >>> server = build_server([add], name="math")   # serve([add], name="math") runs it
        >>> server.name
        'math'
    """
    if transport == "stdio":
        calls = Calls()
        run_stdio(_build(targets, name, calls), calls)
    elif transport == "http":
        import uvicorn

        app = http_app(targets, name=name, path=path, host=host)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    else:
        raise UserError(f"transport must be 'stdio' or 'http', got {transport!r}")
