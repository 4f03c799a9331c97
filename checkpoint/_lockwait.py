"""Waiting for a thread's run lock and holding it with a renewed lease (see
:mod:`checkpoint.locks` for why the lock exists and what a backend provides).
"""

from __future__ import annotations

import asyncio
import random
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress

from checkpoint.errors import ThreadLockedError
from checkpoint.locks import LockPolicy


def _delays(policy: LockPolicy, thread_id: str) -> Iterator[float]:
    """Sleeps between tries (5 ms doubling to 100 ms, jittered), until the deadline."""
    deadline = time.monotonic() + policy.timeout
    delay = 0.005
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise ThreadLockedError(
                f"thread {thread_id!r} is locked by another run; waited {policy.timeout:g} s "
                f"(lock_timeout). Try again later, or raise lock_timeout"
            )
        yield min(left, delay * (0.5 + random.random()))
        delay = min(delay * 2, 0.1)


def _took(take: Callable[[str], bool], release: Callable[[str], None], token: str) -> bool:
    """One try at the lock. A take that fails may still have landed (its reply lost on
    the way back), so the lock is given back before the error goes up: it must not stay
    taken for a whole lease by a run that is not running."""
    try:
        return take(token)
    except BaseException:
        with suppress(Exception):
            release(token)
        raise


async def _atook(
    take: Callable[[str], Awaitable[bool]], release: Callable[[str], Awaitable[None]], token: str
) -> bool:
    """Async :func:`_took`."""
    try:
        return await take(token)
    except BaseException:
        with suppress(Exception):
            await release(token)
        raise


@contextmanager
def hold(
    policy: LockPolicy,
    thread_id: str,
    take: Callable[[str], bool],
    renew: Callable[[str], bool],
    release: Callable[[str], None],
) -> Iterator[None]:
    """Hold the thread's lock for the ``with`` block (sync backends)."""
    token = secrets.token_hex(12)
    delays = _delays(policy, thread_id)
    while not _took(take, release, token):
        time.sleep(next(delays))
    stop = threading.Event()

    def keep_alive() -> None:
        while not stop.wait(policy.lease / 3):
            try:
                if not renew(token):
                    return  # lost: the head check still protects the thread
            except Exception:
                return  # the store is down; the run's own writes will report it

    watchdog = threading.Thread(target=keep_alive, name=f"lease:{thread_id}", daemon=True)
    watchdog.start()
    try:
        yield
    finally:
        stop.set()
        # a failed release is not worth masking the run's outcome: the lease expires anyway
        with suppress(Exception):
            release(token)


@asynccontextmanager
async def ahold(
    policy: LockPolicy,
    thread_id: str,
    take: Callable[[str], Awaitable[bool]],
    renew: Callable[[str], Awaitable[bool]],
    release: Callable[[str], Awaitable[None]],
) -> AsyncIterator[None]:
    """Hold the thread's lock for the ``async with`` block (async backends)."""
    token = secrets.token_hex(12)
    delays = _delays(policy, thread_id)
    while not await _atook(take, release, token):
        await asyncio.sleep(next(delays))

    async def keep_alive() -> None:
        while True:
            await asyncio.sleep(policy.lease / 3)
            try:
                if not await renew(token):
                    return
            except Exception:
                return

    watchdog = asyncio.ensure_future(keep_alive())
    try:
        yield
    finally:
        watchdog.cancel()
        with suppress(Exception):
            await release(token)
