"""Running the session's coroutines from wherever the caller is: sync code or any loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from graphagent.errors import UserError
from graphagent.mcp._errors import McpServerError

__all__ = ["LoopThread", "run_async", "run_sync"]

T = TypeVar("T")


class LoopThread:
    """An event loop on a daemon thread, for providers used from sync code."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


def _closed(coro: Coroutine[Any, Any, Any], label: str) -> McpServerError:
    coro.close()
    return McpServerError(f"MCP server {label!r} is not open", server=label)


def run_sync(loop: asyncio.AbstractEventLoop | None, coro: Coroutine[Any, Any, T], label: str) -> T:
    """Run ``coro`` on the session's ``loop`` and wait for it from sync code.

    Raises:
        McpServerError: the provider is not open.
        UserError: called on the session's own loop (it would wait for itself).
    """
    if loop is None:
        raise _closed(coro, label)
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        coro.close()
        raise UserError(
            f"MCP provider {label!r} was opened with `async with` on this loop: call its "
            "tools with acall/ainvoke, or open it with `with` for sync use"
        )
    return asyncio.run_coroutine_threadsafe(coro, loop).result()


async def run_async(
    loop: asyncio.AbstractEventLoop | None, coro: Coroutine[Any, Any, T], label: str
) -> T:
    """Await ``coro`` on the session's ``loop``, from this loop or another one.

    Raises:
        McpServerError: the provider is not open.
    """
    if loop is None:
        raise _closed(coro, label)
    if loop is asyncio.get_running_loop():
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))
