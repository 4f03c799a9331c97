"""Serving over stdio until the client closes stdin or the user presses Ctrl-C.

The SDK's stdio server reads stdin in a worker thread and, once stdin ends, waits for
the calls still running: a client that went away leaves the process running its tools,
and Ctrl-C waits for a line that never comes. Here stdin is read by a daemon thread,
and its end, like SIGINT, cancels everything still running. A tool running in a thread
(sync code) cannot be cancelled: when one was in flight, the process exits at once
after stopping the MCP servers it started itself, instead of waiting for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator, Callable
from io import TextIOWrapper
from typing import Any, cast

import anyio
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from graphagent.mcp import _reaper

__all__ = ["Calls", "run_stdio"]


class Calls:
    """How many served calls are running (and were, when serving stopped)."""

    def __init__(self) -> None:
        self.running = 0
        self.cut_short = 0


class _Lines:
    """stdin's lines as an async iterator, read by a daemon thread.

    A daemon thread blocked in a read never holds up the process's exit, and the loop
    is never blocked on it.
    """

    def __init__(self, on_eof: Callable[[], None]) -> None:
        self.on_eof = on_eof
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read, args=(loop,), name="mcp-stdin", daemon=True).start()

    def _read(self, loop: asyncio.AbstractEventLoop) -> None:
        # raw reads of a descriptor of our own: a thread blocked in sys.stdin's buffered
        # reader holds its lock, and the interpreter aborts when it cannot take it at exit
        fd = os.dup(sys.stdin.fileno())
        pending = b""
        try:
            while chunk := os.read(fd, 1 << 16):
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    if line.strip():  # the SDK would take a blank line for bad JSON
                        self._put(loop, line.decode("utf-8", errors="replace"))
            if pending.strip():
                self._put(loop, pending.decode("utf-8", errors="replace"))
            self._put(loop, None)
        except (OSError, RuntimeError):  # stdin unreadable, or the loop is closed
            return
        finally:
            os.close(fd)

    def _put(self, loop: asyncio.AbstractEventLoop, line: str | None) -> None:
        loop.call_soon_threadsafe(self.queue.put_nowait, line)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while (line := await self.queue.get()) is not None:
            yield line
        self.on_eof()


async def _on_sigint(stop: Callable[[str], None]) -> None:
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async for _ in signals:
            stop("interrupt")
            return


async def _serve(server: Server[Any, Any], calls: Calls) -> str:
    protocol_out = anyio.wrap_file(TextIOWrapper(sys.stdout.buffer, encoding="utf-8"))
    why = ["eof"]
    # stdout carries the protocol: anything the served code prints goes to stderr instead
    saved, sys.stdout = sys.stdout, sys.stderr
    try:
        async with anyio.create_task_group() as group:

            def stop(reason: str) -> None:
                why[0] = reason
                calls.cut_short = calls.running
                group.cancel_scope.cancel()

            # signal handlers need the main thread, and a loop that takes them (not Windows)
            if threading.current_thread() is threading.main_thread() and os.name == "posix":
                group.start_soon(_on_sigint, stop)
            stdin = cast(Any, _Lines(lambda: stop("eof")))
            async with stdio_server(stdin=stdin, stdout=protocol_out) as (read, write):
                await server.run(read, write, server.create_initialization_options())
            group.cancel_scope.cancel()
    finally:
        sys.stdout = saved
    return why[0]


def _exit_now(code: int) -> None:
    """Leave without waiting for threads still running cancelled tools."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    _reaper.stop_all()
    logging.shutdown()
    os._exit(code)


def run_stdio(server: Server[Any, Any], calls: Calls) -> None:
    """Serve on stdin/stdout until the client closes stdin or SIGINT arrives.

    Raises:
        KeyboardInterrupt: SIGINT stopped the server (the usual meaning of Ctrl-C).
    """
    loop = asyncio.new_event_loop()
    try:
        why = loop.run_until_complete(_serve(server, calls))
        if calls.cut_short:
            _exit_now(130 if why == "interrupt" else 0)
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()
    if why == "interrupt":
        raise KeyboardInterrupt
