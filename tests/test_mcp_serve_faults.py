"""Our MCP server under faults: what it logs, how it stops (issue 30 items 3 and 11,
issue 23 item 12), over stdio and streamable HTTP."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import pytest
from _mcp_helpers import no_leftover_processes, serve_http
from _mcp_served import served
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from graphagent.mcp import build_server, http_app
from graphagent.observability import capture_content

__all__ = ["no_leftover_processes"]  # fixture, used by name

SECRET = "acct 99-1234 belongs to Ann"


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


@pytest.fixture
def our_url() -> Iterator[str]:
    """Our server over streamable HTTP on a free port, in this process (its logs too)."""
    with serve_http(http_app(served, name="ours")) as base:
        yield f"{base}/mcp"


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    """The SDK's client over streamable HTTP."""
    async with (
        streamable_http_client(url) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def memory_session() -> AsyncIterator[ClientSession]:
    """The SDK's client on our server through in-memory streams (the stdio code path)."""
    async with create_connected_server_and_client_session(build_server(served)) as session:
        yield session


async def test_http_failed_tool_text_is_not_logged(
    our_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """HTTP: a served tool's exception text reaches the caller, never the INFO log."""
    caplog.set_level(logging.DEBUG, logger="graphagent")
    async with http_session(our_url) as session:
        failed = await session.call_tool("explode", {"reason": SECRET})
    assert failed.isError and SECRET in _text(failed)
    logged = [r.getMessage() for r in caplog.records if r.name == "graphagent.mcp"]
    assert any("RuntimeError" in m for m in logged), logged
    assert SECRET not in caplog.text


async def test_stdio_failed_tool_text_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    """stdio's server loop: the same rule (the type is logged, the text is not)."""
    caplog.set_level(logging.DEBUG, logger="graphagent")
    async with memory_session() as session:
        failed = await session.call_tool("explode", {"reason": SECRET})
    assert failed.isError
    assert "RuntimeError" in caplog.text
    assert SECRET not in caplog.text


async def test_failed_tool_text_is_logged_with_content_capture(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """capture_content(True), the user's opt-in for message text, logs the text too."""
    caplog.set_level(logging.INFO, logger="graphagent")
    capture_content(True)
    try:
        async with memory_session() as session:
            await session.call_tool("explode", {"reason": SECRET})
    finally:
        capture_content(False)
    assert SECRET in caplog.text
