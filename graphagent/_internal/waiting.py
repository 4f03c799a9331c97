"""Waiting with a timeout without losing a cancel.

Not ``asyncio.wait_for``: on Python 3.11 (this package supports 3.10 and up) it returns
the result, swallowing the cancel, when the caller is cancelled in the same turn of the
loop as what it awaits completes (fixed in 3.12, where it is built on ``asyncio.timeout``,
which 3.10 lacks). A stopping worker's loop went round once more that way, and a stream
or a tool call went on after its run was cancelled. ``asyncio.wait`` never swallows a
cancel: both helpers here wait with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

__all__ = ["pause", "within"]

T = TypeVar("T")


async def pause(event: asyncio.Event, timeout: float) -> None:
    """Wait until ``event`` is set or ``timeout`` seconds passed."""
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter}, timeout=timeout)
    finally:
        waiter.cancel()


async def within(awaitable: Awaitable[T], timeout: float | None) -> T:
    """What ``awaitable`` gives, if it ends within ``timeout`` seconds (``None``: no limit).

    Raises:
        TimeoutError: it did not end in time; it was cancelled, and has ended.
        asyncio.CancelledError: the caller was cancelled (``awaitable`` is cancelled too
            and awaited), even as ``awaitable`` ended.
    """
    if timeout is None:
        return await awaitable
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except BaseException:
        await _stop(task)
        raise
    if not done:
        await _stop(task)
        raise TimeoutError(f"did not end within {timeout} s")
    return task.result()


async def _stop(task: asyncio.Future[Any]) -> None:
    """Cancel ``task`` and wait until it ended (its outcome is dropped), as
    ``asyncio.wait_for`` does: a tool's ``finally`` runs before its caller goes on."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled():
        task.exception()  # read, so an error it ended with is not logged as never retrieved
