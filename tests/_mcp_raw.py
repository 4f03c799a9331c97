"""A hand-written MCP server that breaks the rules on purpose, over stdio or HTTP.

No SDK on the server side, so it can send what the SDK would refuse to: results that
fail validation, a 5 MB JSON-RPC error, a tool list that pages for ever, tool names
that only differ in characters a model cannot take. ``python _mcp_raw.py MODE`` serves
stdio; :func:`http_app` serves the same over streamable HTTP (JSON responses), and
:func:`sse_app` over the older HTTP+SSE transport (the SDK's transport carries our raw
messages, unchecked).

Modes: ``faulty`` (bad results), ``pages`` (tools/list pages for ever from the second
listing on), ``endless`` (from the first), ``slow`` (from the first, 0.2 s a page),
``names`` (tools whose names collide once made model-safe; each answers its own name).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from mcp import types
from mcp.server.sse import SseServerTransport
from mcp.shared.message import SessionMessage
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.types import Receive, Scope, Send

NAMES = ["查询", "搜索", "검색", "a.b", "a b", "a_b", "x/y"]
HUGE = 5 * 1024 * 1024
GARBLED = "ssn 078-05-1120 of the customer"


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "description": "A raw tool.", "inputSchema": {"type": "object"}}


class Listing:
    """How many tools/list requests began a listing (a request without a cursor)."""

    def __init__(self) -> None:
        self.listings = 0


def _tools(mode: str, cursor: str | None, seen: Listing) -> dict[str, Any]:
    if cursor is None:
        seen.listings += 1
    if mode == "slow":
        time.sleep(0.2)
    if mode in ("endless", "slow") or (mode == "pages" and seen.listings > 1):
        page = int(cursor or "0")
        return {"tools": [_tool(f"t{page}")], "nextCursor": str(page + 1)}
    if mode == "pages":
        return {"tools": [_tool("t0")]}
    if mode == "names":
        return {"tools": [_tool(n) for n in NAMES]}
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    return {
        "tools": [
            _tool("bad_shape"),
            {**_tool("bad_structured"), "outputSchema": schema},
            {**_tool("no_structured"), "outputSchema": schema},
            _tool("huge_error"),
            _tool("garbled"),
            _tool("fine"),
        ]
    }


def _call(mode: str, name: str, ident: Any) -> dict[str, Any]:
    if mode == "names":
        text = f"I am {name}"
        return {"jsonrpc": "2.0", "id": ident, "result": {"content": [_text(text)]}}
    result: dict[str, Any]
    if name == "bad_shape":
        result = {"content": "not a list of blocks"}
    elif name == "bad_structured":
        result = {"content": [_text("{}")], "structuredContent": {"n": "seven"}}
    elif name == "no_structured":
        result = {"content": [_text("no structure")]}
    elif name == "garbled":
        # a line that is JSON but not JSON-RPC, quoting data, before the real answer
        sys.stdout.write(json.dumps({"not": "json-rpc", "data": GARBLED}) + "\n")
        result = {"content": [_text("fine")]}
    elif name == "huge_error":
        error = {"code": -32000, "message": "x" * HUGE}
        return {"jsonrpc": "2.0", "id": ident, "error": error}
    else:
        result = {"content": [_text("fine")]}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


def answer(mode: str, message: dict[str, Any], seen: Listing) -> dict[str, Any] | None:
    """The reply to one JSON-RPC message (``None`` for notifications)."""
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None
    params = message.get("params") or {}
    if method == "initialize":
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": f"raw-{mode}", "version": "0"},
        }
        return {"jsonrpc": "2.0", "id": ident, "result": result}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": ident, "result": _tools(mode, params.get("cursor"), seen)}
    if method == "tools/call":
        return _call(mode, params["name"], ident)
    return {"jsonrpc": "2.0", "id": ident, "result": {}}


def http_app(mode: str) -> Starlette:
    """The same server over streamable HTTP, answering each POST with JSON."""
    seen = Listing()

    async def endpoint(request: Request) -> Response:
        if request.method != "POST":
            return Response(status_code=405)
        reply = answer(mode, json.loads(await request.body()), seen)
        if reply is None:
            return Response(status_code=202)
        return JSONResponse(reply, headers={"mcp-session-id": "raw"})

    return Starlette(routes=[Route("/mcp", endpoint, methods=["GET", "POST", "DELETE"])])


def sse_app(mode: str) -> Starlette:
    """The same server over HTTP+SSE (``/sse``, messages posted to ``/messages/``)."""
    seen = Listing()
    transport = SseServerTransport("/messages/")

    async def events(scope: Scope, receive: Receive, send: Send) -> None:
        async with transport.connect_sse(scope, receive, send) as (read, write), read, write:
            async for message in read:
                if isinstance(message, Exception):
                    continue
                raw = message.message.model_dump(by_alias=True, exclude_none=True)
                reply = answer(mode, raw, seen)
                if reply is not None:
                    await write.send(SessionMessage(types.JSONRPCMessage.model_validate(reply)))

    class _Events:
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            await events(scope, receive, send)

    return Starlette(
        routes=[
            Route("/sse", endpoint=_Events()),
            Mount("/messages/", app=transport.handle_post_message),
        ]
    )


def main(mode: str) -> None:
    """Serve ``mode`` on stdin/stdout, one JSON message per line."""
    seen = Listing()
    for line in sys.stdin:
        reply = answer(mode, json.loads(line), seen)
        if reply is not None:
            sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1])
