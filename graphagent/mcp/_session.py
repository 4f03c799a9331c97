"""One live MCP session on an event loop: start-up, calls, tool list, shutdown, faults."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any, Protocol, TypeVar

import anyio
from mcp import ClientSession, types
from mcp.shared.exceptions import McpError
from mcp.shared.session import RequestResponder
from pydantic import ValidationError

from graphagent.mcp._errors import McpServerError
from graphagent.observability import exception_summary

__all__ = ["LiveSession", "Transport"]

E = TypeVar("E", bound=BaseException)

log = logging.getLogger("graphagent.mcp")
_CLOSED = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream)
MAX_PAGES = 100
"""Most pages of tools a listing reads: a server paging for ever must not hang us."""
_SHORT = 500


def short(text: str) -> str:
    """A server's text cut for an error message (a server may send megabytes)."""
    if len(text) <= _SHORT:
        return text
    return f"{text[:_SHORT]}… ({len(text):,} characters)"


def _connection_closed(exc: McpError) -> bool:
    """The SDK's own "connection closed" error, not a server's error with the same code.

    The SDK reports a lost connection as code -32000, which JSON-RPC leaves to servers
    for their own errors (many use it): the message tells them apart.
    """
    return exc.error.code == types.CONNECTION_CLOSED and exc.error.message == "Connection closed"


def _invalid_result(exc: Exception) -> str:
    """What is wrong with a result the SDK refused to take."""
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        if not errors:
            return f"does not fit the MCP result shape ({short(str(exc))})"
        where = ".".join(str(p) for p in errors[0]["loc"]) or "result"
        return f"does not fit the MCP result shape ({where}: {errors[0]['msg']})"
    text = str(exc)
    if "did not return structured content" in text:
        return "has no structured content, though the tool declares an output schema"
    if text.startswith("Invalid structured content"):
        detail = text.partition(": ")[2].splitlines()[0] if ": " in text else ""
        return f"does not match the tool's output schema ({short(detail)})"
    if text.startswith("Invalid schema"):
        return f"cannot be checked: the tool's output schema is invalid ({short(text)})"
    return f"cannot be read ({type(exc).__name__}: {short(text)})"


class Transport(Protocol):
    """What a session needs from a transport (see ``_transports``)."""

    label: str
    pid: int | None

    def __call__(self) -> Any:
        """An async context manager yielding ``(read, write)`` streams."""
        ...

    def stderr_tail(self) -> str:
        """Text to append to error messages."""
        ...

    def started(self) -> None:
        """Called once the session is initialised."""
        ...


def _find(exc: BaseException, kind: type[E]) -> E | None:
    """``exc`` if it is a ``kind``, else the first ``kind`` in its (nested) exception groups."""
    if isinstance(exc, kind):
        return exc
    for inner in getattr(exc, "exceptions", None) or ():
        found = _find(inner, kind)
        if found is not None:
            return found
    return None


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(getattr(exc, "exceptions", None), tuple) and exc.exceptions:  # type: ignore[attr-defined]
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


async def _drain(source: Any, sink: Any) -> None:
    """Pass the transport's messages on, and keep reading after the session is gone.

    The SDK's stdio reader fails if a server still talks (a log line, a notification)
    once the session has stopped listening, and that failure makes the SDK SIGKILL the
    process instead of letting it exit; reading to the end avoids it.
    """
    async with source, sink:
        async for message in source:
            try:
                await sink.send(message)
            except _CLOSED:
                continue


class LiveSession:
    """Runs ``ClientSession`` in one task of the loop it was started on.

    The SDK's transports are anyio task groups, which must be entered and left by the
    same task; so one long-lived task owns the session and callers send it requests.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        startup_timeout: float,
        on_tools: Callable[[list[types.Tool]], None],
        named: bool = False,
        ping_interval: float = 5.0,
    ) -> None:
        self.transport = transport
        self.named = named
        self.startup_timeout = startup_timeout
        self.on_tools = on_tools
        self.server_name = ""
        self.loop: asyncio.AbstractEventLoop | None = None
        self._session: ClientSession | None = None
        self._closing: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._dead: str | None = None
        self._refreshing: set[asyncio.Task[None]] = set()
        self._inflight: set[asyncio.Future[str]] = set()
        self.ping_interval = ping_interval

    @property
    def label(self) -> str:
        """The server's name in messages."""
        return self.transport.label

    def _error(self, text: str, tool: str | None = None) -> McpServerError:
        return McpServerError(
            f"MCP server {self.label!r} {text}{self.transport.stderr_tail()}",
            server=self.label,
            tool=tool,
        )

    # -- lifecycle (run on the session's loop) ---------------------------------------------

    async def start(self) -> None:
        """Connect, initialise and list the tools; raises :class:`McpServerError` on failure."""
        self.loop = asyncio.get_running_loop()
        self._closing = asyncio.Event()
        ready: asyncio.Future[None] = self.loop.create_future()
        self._task = asyncio.create_task(self._run(ready), name=f"mcp:{self.label}")
        await ready

    async def _connect(self, stack: AsyncExitStack) -> ClientSession:
        relays = await stack.enter_async_context(anyio.create_task_group())
        read, write = await stack.enter_async_context(self.transport())
        inbox, session_read = anyio.create_memory_object_stream[Any](0)
        relays.start_soon(_drain, read, inbox)
        session = await stack.enter_async_context(
            ClientSession(session_read, write, message_handler=self._on_message)
        )
        with anyio.fail_after(self.startup_timeout):
            info = await session.initialize()
            self.transport.started()
            self.server_name = info.serverInfo.name
            if not self.named and self.server_name:
                self.transport.label = self.server_name  # better than the command
            self._session = session
            await self._list_tools()
        return session

    async def _run(self, ready: asyncio.Future[None]) -> None:
        assert self._closing is not None
        try:
            async with AsyncExitStack() as stack:
                session = await self._connect(stack)
                watch = await stack.enter_async_context(anyio.create_task_group())
                watch.start_soon(self._watch, session)
                ready.set_result(None)
                await self._closing.wait()
                watch.cancel_scope.cancel()
        except McpServerError as exc:
            self._fail(ready, exc)
        except TimeoutError:
            self._fail(ready, self._error(f"did not start within {self.startup_timeout} s"))
        except Exception as exc:
            # a transport torn down in a hurry adds its own errors to the group: what
            # failed first is ours (McpServerError) or the deadline, wherever it sits
            leaf = _leaf(exc)
            ours = _find(exc, McpServerError)
            if ours is not None:
                self._fail(ready, ours)
            elif _find(exc, TimeoutError) is not None and not ready.done():
                self._fail(ready, self._error(f"did not start within {self.startup_timeout} s"))
            elif isinstance(leaf, McpError) and _connection_closed(leaf):
                what = "exited during start-up" if not ready.done() else "closed the connection"
                self._fail(ready, self._error(what))
            else:
                detail = f"{type(leaf).__name__}: {leaf}"
                what = "failed to start" if not ready.done() else "stopped"
                self._fail(ready, self._error(f"{what} ({detail})"))
        finally:
            self._session = None
            self._abort_calls(self._dead or "closed")
            for task in self._refreshing:
                task.cancel()

    def _fail(self, ready: asyncio.Future[None], error: McpServerError) -> None:
        self._dead = str(error)
        if not ready.done():
            ready.set_exception(error)
        else:
            log.warning("%s", error)

    async def close(self) -> None:
        """Shut the session down (the SDK closes stdin, then terminates the server)."""
        if self._closing is not None:
            self._closing.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        self._dead = self._dead or f"MCP server {self.label!r} is closed"

    # -- tools -----------------------------------------------------------------------------

    async def _list_tools(self) -> None:
        assert self._session is not None
        tools: list[types.Tool] = []
        cursor: str | None = None
        cursors: set[str] = set()
        for _ in range(MAX_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await self._session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.nextCursor
            if not cursor:
                self.on_tools(tools)
                return
            if cursor in cursors:
                raise self._error(f"sent a tool list that loops (cursor {short(cursor)!r} again)")
            cursors.add(cursor)
        raise self._error(
            f"sent more than {MAX_PAGES} pages of tools ({len(tools)} tools so far) and "
            "kept paging: stopped listing; fix the server's tools/list paging"
        )

    async def refresh(self) -> None:
        """List the server's tools again, within ``startup_timeout`` seconds.

        Raises:
            McpServerError: the server refused, paged for ever, answered too slowly or
                sent a list that cannot be read; the tools listed before stay.
        """
        self._check()
        try:
            with anyio.fail_after(self.startup_timeout):
                await self._list_tools()
        except McpServerError:
            raise
        except McpError as exc:
            raise self._error(f"refused tools/list: {short(exc.error.message)}") from exc
        except TimeoutError as exc:
            raise self._error(
                f"did not finish listing its tools within {self.startup_timeout} s"
            ) from exc
        except Exception as exc:
            raise self._error(f"sent a tool list that {_invalid_result(exc)}") from exc

    async def _on_message(
        self,
        message: RequestResponder[types.ServerRequest, types.ClientResult]
        | types.ServerNotification
        | Exception,
    ) -> None:
        if isinstance(message, Exception):
            # the parse error quotes what the server sent (a tool's data): its type only,
            # unless content is captured
            log.warning(
                "MCP server %r sent something unreadable: %s",
                self.label,
                exception_summary(message),
            )
        elif isinstance(message, types.ServerNotification) and isinstance(
            message.root, types.ToolListChangedNotification
        ):
            # not awaited here: this handler runs inside the session's receive loop,
            # which must keep running to deliver the tools/list answer
            task = asyncio.create_task(self._refresh_quietly())
            self._refreshing.add(task)
            task.add_done_callback(self._refreshing.discard)

    async def _refresh_quietly(self) -> None:
        try:
            await self.refresh()
        except McpServerError as exc:
            if self._session is not None:  # a closed session has no list to refresh
                log.warning("could not refresh the tool list: %s", exc)

    # -- calls -----------------------------------------------------------------------------

    def _check(self) -> ClientSession:
        if self._session is None:
            raise McpServerError(
                self._dead or f"MCP server {self.label!r} is not running", server=self.label
            )
        return self._session

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        timeout: float | None,
        meta: dict[str, Any] | None,
    ) -> types.CallToolResult:
        """Call a server tool; faults become :class:`McpServerError` naming the server."""
        session = self._check()
        wait = timedelta(seconds=timeout) if timeout is not None else None
        assert self.loop is not None
        abort: asyncio.Future[str] = self.loop.create_future()
        call = asyncio.ensure_future(
            session.call_tool(name, arguments, read_timeout_seconds=wait, meta=meta)
        )
        self._inflight.add(abort)
        try:
            racing: set[asyncio.Future[Any]] = {call, abort}
            await asyncio.wait(racing, return_when=asyncio.FIRST_COMPLETED)
            if not call.done():
                raise self._error(f"{abort.result()} while running tool {name!r}", name)
            return call.result()
        except McpError as exc:
            raise self._call_error(name, exc, timeout) from exc
        except _CLOSED as exc:
            raise self._exited(name) from exc
        except McpServerError:
            raise
        except Exception as exc:
            # the SDK raises pydantic's ValidationError or a bare RuntimeError for a
            # result it cannot take: the caller gets one error type, naming the tool
            raise self._error(
                f"answered tool {name!r} with a result that {_invalid_result(exc)}", name
            ) from exc
        finally:
            self._inflight.discard(abort)
            call.cancel()
            abort.cancel()

    def _abort_calls(self, reason: str) -> None:
        """Fail every call in flight: the SDK would leave them waiting for good."""
        for abort in list(self._inflight):
            if not abort.done():
                abort.set_result(reason.removeprefix(f"MCP server {self.label!r} "))

    async def _watch(self, session: ClientSession) -> None:
        """While calls are in flight, ping the server; one that stops answering fails them.

        Over HTTP, a server that dies mid-call just ends its event stream, which the SDK
        takes quietly: without this the call would wait for its timeout, or forever.
        """
        while True:
            await anyio.sleep(self.ping_interval)
            if not self._inflight:
                continue
            try:
                with anyio.fail_after(self.ping_interval):
                    await session.send_ping()
            except Exception as exc:
                leaf = _leaf(exc)
                self._abort_calls(f"stopped answering ({type(leaf).__name__}: {leaf})")

    def _call_error(self, name: str, exc: McpError, timeout: float | None) -> McpServerError:
        if exc.error.code == 408:  # the SDK's own read timeout
            return self._error(f"did not answer tool {name!r} within {timeout} s", name)
        if _connection_closed(exc):
            return self._exited(name)
        return self._error(f"refused tool {name!r}: {short(exc.error.message)}", name)

    def _exited(self, name: str) -> McpServerError:
        error = self._error(f"exited while running tool {name!r}", name)
        self._dead = str(error)
        self._session = None
        if self._closing is not None:
            self._closing.set()  # let the runner task leave the transport and reap the server
        return error
