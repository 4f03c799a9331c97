"""MCP (Model Context Protocol): use any MCP server's tools, and serve ours.

Needs the ``mcp`` extra (``pip install -e '.[mcp]'`` in a clone): the official MCP Python SDK.

- :class:`McpToolProvider` turns the tools of a server (run locally over stdio, or
  reached over streamable HTTP) into tools for any agent or ``ToolCallingManager``.
- :func:`serve` offers graphagent tools and agents to any MCP client, over stdio or
  streamable HTTP (also ``graphagent mcp serve module:object [--http HOST:PORT]``).

Guide: docs/mcp.md.
"""

from __future__ import annotations

try:
    import mcp as _sdk  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(
        "graphagent.mcp needs the MCP SDK: pip install 'mcp>=1.30,<2' (the mcp extra)"
    ) from exc

from graphagent.mcp._client import McpToolProvider
from graphagent.mcp._errors import McpServerError
from graphagent.mcp._names import prefixed_tool_name
from graphagent.mcp._server import Servable, build_server, http_app, serve
from graphagent.mcp._tool import McpToolCallback, MetaMapper

__all__ = [
    "McpServerError",
    "McpToolCallback",
    "McpToolProvider",
    "MetaMapper",
    "Servable",
    "build_server",
    "http_app",
    "prefixed_tool_name",
    "serve",
]
