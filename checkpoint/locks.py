"""The opt-in per-thread run lock: wait for the lock, hold it with a lease, give it back.

Optimistic concurrency (the head check in ``put``) is always on: of two runs racing on a
thread, one step wins and the other gets ``CheckpointConflictError``. Some deployments
prefer that the second run waits instead; a saver made with ``lock_timeout=`` takes this
lock around every run. The lock has a lease so that a crashed worker cannot hold a thread
forever; a live run renews the lease in the background (every third of it). If a lease is
lost anyway (a process paused longer than the lease), the head check still refuses the
stale writer, so the lock is a courtesy for throughput, never the guard of correctness.

The backend is three callables (try to take, renew, release), so Redis and memory share
the waiting, the backoff and the renewal. A take must count the lock as taken when it
already holds the taker's token (a retried take whose first reply was lost), and a take
that raises is followed by a release of that token (it may have landed).
"""

from __future__ import annotations

import asyncio
import random
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from dataclasses import dataclass

from checkpoint.errors import ThreadLockedError

__all__ = ["LockPolicy", "ahold", "hold"]


@dataclass(frozen=True)
class LockPolicy:
    """How long to wait for a thread's lock, and how long one holder's lease lasts.

    Attributes:
        timeout: seconds to wait for the lock before ``ThreadLockedError``.
        lease: seconds the lock lives without renewal (a crashed holder frees it then).
    """

    timeout: float
    lease: float = 30.0

    @classmethod
    def optional(cls, timeout: float | None, lease: float) -> LockPolicy | None:
        """The policy for a saver's ``lock_timeout=``/``lock_lease=`` (``None``: no lock)."""
        return None if timeout is None else cls(timeout, lease)

    def __post_init__(self) -> None:
        if self.timeout < 0 or self.lease <= 0:
            raise ValueError(
                f"lock_timeout must be >= 0 and lock_lease > 0 (got {self.timeout}, {self.lease})"
            )


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
