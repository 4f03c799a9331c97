"""How the provider reaches a server: the SDK's stdio and streamable HTTP clients."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import IO, Any

import httpx
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, get_default_environment, stdio_client
from mcp.client.streamable_http import streamable_http_client

from graphagent.mcp import _reaper
from graphagent.mcp._errors import McpServerError

__all__ = ["Connect", "HttpTransport", "StdioTransport", "Streams"]

Streams = tuple[Any, Any]
Connect = Callable[[], AbstractAsyncContextManager[Streams]]
_GUARD = str(Path(__file__).with_name("_guard.py"))
_TAIL = 1500


class StdioTransport:
    """A local server started as a child process (under a guard) and spoken to over stdio.

    The server's stderr goes to a temporary file, so start-up failures and crashes
    can quote it.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str],
        env: Mapping[str, str] | None,
        cwd: str | os.PathLike[str] | None,
        label: str,
    ) -> None:
        self.command = command
        self.args = [str(a) for a in args]
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.label = label
        self.pid: int | None = None
        self._stderr: IO[str] | None = None
        self._pidfile = ""
        self._last_stderr = ""

    def _resolve(self) -> str:
        path = (self.env or {}).get("PATH") or get_default_environment().get("PATH")
        found = shutil.which(self.command, path=path)
        if found is None:
            raise McpServerError(
                f"cannot start MCP server {self.label!r}: command {self.command!r} is not "
                "on PATH; install it or pass its full path",
                server=self.label,
            )
        return found

    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr (empty if none)."""
        if self._stderr is not None and not self._stderr.closed:
            self._stderr.flush()
            self._stderr.seek(0)
            self._last_stderr = self._stderr.read()[-_TAIL:].strip()
        text = self._last_stderr
        return f"; its stderr ends with: {text}" if text else ""

    def started(self) -> None:
        """Learn the guard's pid (written before the server starts, so it is there now)."""
        try:
            self.pid = int(Path(self._pidfile).read_text(encoding="ascii"))
        except (OSError, ValueError):
            return
        _reaper.register(self.pid)

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Streams]:
        command = self._resolve()
        with tempfile.TemporaryDirectory(prefix="graphagent-mcp-") as tmp:
            pidfile = self._pidfile = str(Path(tmp) / "pid")
            params = StdioServerParameters(
                command=sys.executable,
                args=["-I", "-S", _GUARD, str(os.getpid()), pidfile, command, *self.args],
                env=self.env,
                cwd=None if self.cwd is None else Path(self.cwd),
            )
            with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
                self._stderr = errlog
                try:
                    async with stdio_client(params, errlog=errlog) as (read, write):
                        try:
                            yield read, write
                        finally:
                            if self.pid is not None:
                                _reaper.forget(self.pid)
                finally:
                    self.stderr_tail()  # keep the last words for error messages


class HttpTransport:
    """A remote server over streamable HTTP (or the older HTTP+SSE transport)."""

    def __init__(
        self, url: str, headers: Mapping[str, str] | None, label: str, *, sse: bool = False
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self.label = label
        self.sse = sse
        self.pid: int | None = None

    def stderr_tail(self) -> str:
        """Nothing: a remote server's stderr is not ours to read."""
        return ""

    def started(self) -> None:
        """Nothing to learn about a remote server."""

    @asynccontextmanager
    async def __call__(self) -> AsyncIterator[Streams]:
        if self.sse:
            async with sse_client(self.url, headers=self.headers) as (read, write):
                yield read, write
            return
        # the SDK's defaults: a long read timeout, since a server may hold a stream open
        timeout = httpx.Timeout(30.0, read=300.0)
        async with (
            httpx.AsyncClient(headers=self.headers, timeout=timeout) as client,
            streamable_http_client(self.url, http_client=client) as (read, write, _),
        ):
            yield read, write
