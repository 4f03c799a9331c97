"""``McpToolProvider``: the tools of an MCP server as graphagent tools."""

from __future__ import annotations

import asyncio
import inspect
import os
import threading
from collections.abc import Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from mcp import types

from graphagent.errors import UserError
from graphagent.mcp import _reaper
from graphagent.mcp._loop import LoopThread, run_async, run_sync
from graphagent.mcp._names import unique_tool_names
from graphagent.mcp._results import result_text
from graphagent.mcp._session import LiveSession, Transport
from graphagent.mcp._tool import McpToolCallback, MetaMapper
from graphagent.mcp._transports import HttpTransport, StdioTransport
from graphagent.tools import ToolCallback, ToolOutput

__all__ = ["McpToolProvider"]

T = TypeVar("T")


class McpToolProvider:
    """The tools of one MCP server, as a :class:`~graphagent.tools.ToolCallbackProvider`.

    Make one with :meth:`stdio` (a local server run as a child process) or :meth:`http`
    (streamable HTTP), and open it: ``with`` runs the session on its own loop thread
    (for sync agents; async agents can use it too), ``async with`` runs it on the
    current loop. Calls from parallel tool calls run concurrently.

    Args:
        transport: how to reach the server (use the constructors).
        name: the server's name in tool prefixes and errors (default: the name the
            server gives, or the command).
        prefix: name tools ``<server>_<tool>`` (Spring AI's ``prefixedToolName``),
            always within ``[a-zA-Z0-9_-]{1,64}``.
        timeout: seconds each call may take (``None``: no limit).
        startup_timeout: seconds to start and initialise the server.
        meta: maps a call's :class:`ToolContext` to the request's ``_meta``; without it
            nothing of the context, config or metadata is sent.
        ping_interval: while calls are in flight, the server is pinged this often (s);
            one that stops answering fails them (a dead HTTP server gives no other sign).

    Example:
        >>> provider = McpToolProvider.stdio("npx", ["@modelcontextprotocol/server-everything"])
        >>> provider.label
        'npx'
    """

    def __init__(
        self,
        transport: Transport,
        *,
        name: str | None = None,
        prefix: bool = True,
        timeout: float | None = 60.0,
        startup_timeout: float = 30.0,
        meta: MetaMapper | None = None,
        ping_interval: float = 5.0,
    ) -> None:
        self.name = name
        self.prefix = prefix
        self.timeout = timeout
        self.meta = meta
        self._live = LiveSession(
            transport,
            startup_timeout=startup_timeout,
            on_tools=self._set,
            named=bool(name),
            ping_interval=ping_interval,
        )
        self._thread: LoopThread | None = None
        self._tools: dict[str, McpToolCallback] = {}
        self._lock = threading.Lock()

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        *,
        name: str | None = None,
        prefix: bool = True,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = 60.0,
        startup_timeout: float = 30.0,
        meta: MetaMapper | None = None,
        ping_interval: float = 5.0,
    ) -> McpToolProvider:
        """A server run as a child process, spoken to over stdin/stdout.

        ``env`` is added to the SDK's safe default environment (``PATH``, ``HOME``, ...),
        not to this process's whole environment. The server is stopped on close, at
        interpreter exit, when this process gets SIGTERM, and (Linux) when it dies.
        """
        label = name or os.path.basename(command)
        return cls._over(StdioTransport(command, args, env, cwd, label), locals())

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        prefix: bool = True,
        timeout: float | None = 60.0,
        startup_timeout: float = 30.0,
        meta: MetaMapper | None = None,
        ping_interval: float = 5.0,
    ) -> McpToolProvider:
        """A server at ``url`` (streamable HTTP, e.g. ``http://host:8000/mcp``).

        ``headers`` go with every request (e.g. ``{"Authorization": "Bearer ..."}``).
        """
        return cls._over(HttpTransport(url, headers, name or url), locals())

    @classmethod
    def sse(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        prefix: bool = True,
        timeout: float | None = 60.0,
        startup_timeout: float = 30.0,
        meta: MetaMapper | None = None,
        ping_interval: float = 5.0,
    ) -> McpToolProvider:
        """A server on the older HTTP+SSE transport (e.g. ``http://host:8000/sse``).

        For servers that have not moved to streamable HTTP yet; otherwise as :meth:`http`.
        """
        return cls._over(HttpTransport(url, headers, name or url, sse=True), locals())

    @classmethod
    def _over(cls, transport: Transport, given: Mapping[str, Any]) -> McpToolProvider:
        """A provider on ``transport`` with the options a constructor was given (its
        ``locals()``): each of ``__init__``'s keyword options, under the same name."""
        return cls(transport, **{option: given[option] for option in _OPTIONS})

    # -- state -----------------------------------------------------------------------------

    @property
    def label(self) -> str:
        """The server's name in messages."""
        return self._live.label

    @property
    def server_name(self) -> str:
        """The name the server gave when it started (empty before)."""
        return self._live.server_name

    @property
    def pid(self) -> int | None:
        """The process id of a local server's guard (its process group), else ``None``."""
        return self._live.transport.pid

    def _set(self, tools: list[types.Tool]) -> None:
        server = self.name or self.label
        names = unique_tool_names(server, [t.name for t in tools], prefix=self.prefix)
        pairs = zip(names, tools, strict=True)
        made = {name: McpToolCallback(self, tool, name) for name, tool in pairs}
        with self._lock:
            self._tools = made

    @property
    def tool_names(self) -> dict[str, str]:
        """The name each tool is given to models -> the server's own name for it."""
        with self._lock:
            return {name: tool.tool.name for name, tool in self._tools.items()}

    def tool_callbacks(self) -> Sequence[ToolCallback]:
        """The server's tools, as last listed (``tools/list_changed`` refreshes them).

        Raises:
            UserError: the provider is not open.
        """
        if self._live.loop is None:
            raise UserError(
                f"MCP provider {self.label!r} is not open; use it as `with provider:` "
                "(or `async with`), or call provider.open()"
            )
        with self._lock:
            return list(self._tools.values())

    # -- running coroutines on the session's loop ------------------------------------------

    def _run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        return run_sync(self._live.loop, coro, self.label)

    async def _run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        return await run_async(self._live.loop, coro, self.label)

    async def _call(
        self, tool: McpToolCallback, arguments: dict[str, Any], meta: dict[str, Any] | None
    ) -> ToolOutput:
        result = await self._live.call_tool(
            tool.tool.name, arguments, timeout=self.timeout, meta=meta
        )
        return result_text(result, tool=tool.definition.name, server=self.label)

    # -- opening and closing -----------------------------------------------------------------

    def open(self) -> McpToolProvider:
        """Start the server on a loop thread of its own; returns self.

        Raises:
            McpServerError: the server did not start (the message says why).
        """
        if self._live.loop is not None:
            raise UserError(f"MCP provider {self.label!r} is already open")
        _reaper.install()
        self._thread = LoopThread(f"graphagent-mcp-{self.label}")
        try:
            self._thread.run(self._live.start())
        except BaseException:
            self._thread.run(self._live.close())
            self._thread.stop()
            self._thread = None
            self._live.loop = None
            raise
        return self

    def close(self) -> None:
        """Stop the session and the server; safe to call twice."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.run(self._live.close())
            thread.stop()
        self._live.loop = None

    async def aopen(self) -> McpToolProvider:
        """Start the server on the running loop; returns self."""
        if self._live.loop is not None:
            raise UserError(f"MCP provider {self.label!r} is already open")
        _reaper.install()
        try:
            await self._live.start()
        except BaseException:
            await self._live.close()
            self._live.loop = None
            raise
        return self

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        if self._thread is not None:
            await asyncio.to_thread(self.close)
            return
        await self._live.close()
        self._live.loop = None

    def refresh(self) -> None:
        """List the server's tools again (``tools/list_changed`` does this by itself)."""
        self._run_sync(self._live.refresh())

    async def arefresh(self) -> None:
        """Async :meth:`refresh`."""
        await self._run_async(self._live.refresh())

    def __enter__(self) -> McpToolProvider:
        return self.open()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    async def __aenter__(self) -> McpToolProvider:
        return await self.aopen()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        state = "open" if self._live.loop is not None else "closed"
        return f"<McpToolProvider {self.label!r} ({state}, {len(self._tools)} tools)>"


# __init__'s keyword options: what every constructor hands on (see McpToolProvider._over)
_OPTIONS = tuple(
    p.name
    for p in inspect.signature(McpToolProvider.__init__).parameters.values()
    if p.kind is p.KEYWORD_ONLY
)
