"""An event loop on a thread of its own, where a remote agent's client lives.

The SDK's client is async and its connections belong to the loop that opened them, so
every call (from sync code, or from any caller's loop) runs on this one loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

T = TypeVar("T")


class LoopThread:
    """A daemon thread running one event loop until :meth:`stop`."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and wait for it here (sync code)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    async def arun(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop and await it from the caller's loop."""
        if asyncio.get_running_loop() is self.loop:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))

    def stop(self, grace: float = 5.0) -> None:
        """Cancel what still runs on the loop (waiting up to ``grace`` s for it to end),
        then stop the loop and wait for its thread."""
        if self.loop.is_closed():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(_drain(), self.loop).result(grace)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


async def _drain() -> None:
    """Cancel every other task of this loop and wait for them to end."""
    here = asyncio.current_task()
    tasks = [t for t in asyncio.all_tasks() if t is not here]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
