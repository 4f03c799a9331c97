"""Helpers for the MCP tests: processes, a FastMCP server over HTTP in this process."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from _mcp_servers import NodeMissing, node_servers
from mcp.server.fastmcp import Context, FastMCP


def process_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) for every process."""
    table: dict[int, tuple[int, str, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        table[int(entry.name)] = (int(fields[1]), fields[0], cmdline)
    return table


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``."""
    table = process_table()
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, (pp, _, _) in table.items() if pp == parent]
        found.extend(kids)
        frontier.extend(kids)
    return found


def alive(pid: int) -> bool:
    """Running, or a zombie nobody reaped (both count as left over)."""
    return os.path.exists(f"/proc/{pid}")


def wait_until(check: Callable[[], bool], seconds: float = 15.0) -> bool:
    """Poll ``check`` until true or ``seconds`` pass (bounded waiting, not a timing test)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


@pytest.fixture(scope="session")
def servers() -> dict[str, list[str]]:
    """The npm servers' command lines (installed once); fails loudly without node/npm."""
    try:
        return node_servers()
    except NodeMissing as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Every test leaves no server or guard running, and no unreaped child of ours."""
    marks = ("mcp-node", "_guard.py")
    me = os.getpid()

    def ours() -> set[int]:
        return {
            pid
            for pid, (parent, state, cmd) in process_table().items()
            if any(m in cmd for m in marks) or (parent == me and state == "Z")
        }

    before = ours()
    yield
    assert wait_until(lambda: not (ours() - before)), (
        f"left over: {[process_table().get(p) for p in ours() - before]}"
    )


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    """Something accepts connections on the loopback port."""
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def fastmcp_server() -> FastMCP:
    """A FastMCP server with tools that show concurrency, meta, headers and list changes."""
    server = FastMCP("py-tools")
    arrived: list[str] = []
    both = threading.Event()

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool(structured_output=False)
    async def meet(who: str) -> str:
        """Wait (up to 10 s) until another call of meet is running too."""
        import anyio

        arrived.append(who)
        if len(arrived) % 2 == 0:
            both.set()
        with anyio.move_on_after(10):
            while not both.is_set():
                await anyio.sleep(0.01)
        return f"{who}: together" if both.is_set() else f"{who}: alone"

    @server.tool(structured_output=False)
    def show_meta(ctx: Context[Any, Any, Any]) -> str:
        """Say which _meta and Authorization header the request carried."""
        meta = ctx.request_context.meta
        extra = meta.model_dump(exclude_none=True, exclude={"progressToken"}) if meta else None
        request = ctx.request_context.request
        auth = request.headers.get("authorization") if request is not None else None
        return f"meta={extra} auth={auth}"

    @server.tool(structured_output=False)
    async def add_tool(name: str, ctx: Context[Any, Any, Any]) -> str:
        """Add a tool called ``name`` and tell the client the list changed."""

        def extra() -> str:
            return f"I am {name}"

        server.add_tool(extra, name=name, description=f"The {name} tool.", structured_output=False)
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @server.tool()
    def fail(reason: str) -> str:
        """Always fails."""
        raise ValueError(reason)

    return server


@contextmanager
def serve_http(app: Any) -> Iterator[str]:
    """Run an ASGI app with uvicorn on a free port in a thread; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws="none")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        if not wait_until(lambda: server.started, 15):
            raise RuntimeError("uvicorn did not start")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(15)
