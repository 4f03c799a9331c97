"""Riding out an outage of a cluster's Redis or PostgreSQL: the one retry policy of every
long-lived reader and loop of a cluster.

A reader (a run's event stream, a thread's stream) or a loop (the queue's consumer, the
lease renewal, the cancel listener) that meets a connection error or a timeout
(:func:`transient`) waits and tries again, from where it was: the readers keep the id of
the last event they delivered, so a client gets every event once. The waits grow from
0.05 s to 2 s. A reader gives up once its store has failed for ``limit_ms`` without a
success between (:class:`~checkpoint.CheckpointStorageError`, naming what failed and for
how long); a loop of an executor never gives up (a worker that stopped taking runs but
lived on would look healthy and do nothing): past ``limit_ms`` it logs an error, then
goes on trying every 2 s. :class:`Renewal` paces a lease's renewals by the same waits,
within the lease.

Only the waits are here; a failing call is the caller's to make again (``Backoff.call``
for one call that may simply be repeated).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import redis.exceptions

from checkpoint import CheckpointStorageError

__all__ = ["OUTAGE_MS", "Backoff", "Renewal", "transient"]

log = logging.getLogger("graphagent.server")

T = TypeVar("T")

OUTAGE_MS = 30_000
"""How long (ms) a cluster's reader waits for its Redis or PostgreSQL to answer again
before it gives up (a Redis failover or a PostgreSQL restart takes seconds)."""

_FIRST, _MOST = 0.05, 2.0  # seconds: the first wait, and the longest


def transient(exc: BaseException) -> bool:
    """Whether ``exc`` says the store is down, unreachable or busy for now (trying again
    later may work), rather than that the call itself is wrong."""
    if isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)):
        return True  # (LOADING, a restarted Redis reading its data, is a ConnectionError)
    if isinstance(exc, redis.exceptions.ResponseError):
        return str(exc).startswith("BUSY")  # another client's script runs past its limit
    psycopg = sys.modules.get("psycopg")  # never imported: not one of its errors
    if psycopg is not None and isinstance(exc, psycopg.OperationalError):
        return True  # the connection lost, the server shutting down, the pool's timeout
    return isinstance(exc, (OSError, asyncio.TimeoutError))


class Backoff:
    """The retries of one reader or loop, across one outage at a time.

    Args:
        what: what is failing, for the log and the error (``"reading run r1's events"``).
        limit_ms: how long failures may last without a success between.
        give_up: whether to raise once they lasted ``limit_ms`` (a reader), or to log an
            error then and go on trying (a loop of an executor).
    """

    def __init__(self, what: str, limit_ms: int = OUTAGE_MS, *, give_up: bool = True) -> None:
        self.what = what
        self.limit = limit_ms / 1000
        self.give_up = give_up
        self._since: float | None = None  # when the failures began (monotonic)
        self._wait = _FIRST
        self._told = False  # the error past the limit was logged (a loop's)

    async def failed(self, exc: BaseException) -> None:
        """Wait before the next try after ``exc`` (see :meth:`delay`)."""
        await asyncio.sleep(self.delay(exc))  # a cancel ends the wait at once

    def delay(self, exc: BaseException) -> float:
        """Count ``exc`` as a failure; how long to wait before the next try.

        Raises:
            CheckpointStorageError: failures have lasted ``limit_ms`` (``give_up``).
        """
        now = time.monotonic()
        if self._since is None:
            self._since = now
            # an error that is not the store being down is a bug: its traceback is logged
            log.warning(
                "%s failed (%s); trying again",
                self.what,
                _named(exc),
                exc_info=None if transient(exc) else exc,
            )
        lasted = now - self._since
        if lasted >= self.limit:
            if self.give_up:
                raise CheckpointStorageError(
                    f"{self.what}: the cluster's store failed for {lasted:.1f} s "
                    f"(the limit is {self.limit:g} s): {_named(exc)}"
                ) from exc
            if not self._told:
                self._told = True
                log.error(
                    "%s has failed for %.1f s (%s); trying on", self.what, lasted, _named(exc)
                )
        wait = min(self._wait, self.limit - lasted) if self.give_up else self._wait
        self._wait = min(self._wait * 2, _MOST)
        return max(wait, 0.0)

    @property
    def failing(self) -> bool:
        """Whether the last try failed (an outage is under way)."""
        return self._since is not None

    def succeeded(self) -> None:
        """A call went through: the outage, if any, is over."""
        if self._since is not None:
            lasted = time.monotonic() - self._since
            log.warning("%s works again after %.1f s", self.what, lasted)
        self._since, self._wait, self._told = None, _FIRST, False

    async def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """``await make()``, made again after each transient failure (see
        :meth:`failed`); other errors are raised at once."""
        while True:
            try:
                result = await make()
            except Exception as exc:
                if not transient(exc):
                    raise
                await self.failed(exc)
                continue
            self.succeeded()
            return result


def _named(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Renewal:
    """When an executor renews a thread's lease: every third of the lease, and after a
    failed renewal sooner (growing waits), for as long as the lease may still hold.

    Args:
        what: what renews, for the log (``"renewing the lease of run 'r1'"``).
        lease_ms: how long the lease lasts unrenewed.
    """

    def __init__(self, what: str, lease_ms: int) -> None:
        self.lease = lease_ms / 1000
        self.wait = self.lease / 3
        """Seconds to wait before the next renewal."""
        self._backoff = Backoff(what, lease_ms, give_up=False)
        self._sent = self._held = time.monotonic()  # (the lease was taken just before)

    @property
    def failing(self) -> bool:
        """Whether the last renewal failed."""
        return self._backoff.failing

    def sending(self) -> None:
        """A renewal is sent now: if it succeeds, the lease holds from about now."""
        self._sent = time.monotonic()

    def succeeded(self) -> None:
        """The lease was renewed."""
        self._held = self._sent
        self.wait = self.lease / 3
        self._backoff.succeeded()

    def failed(self, exc: BaseException) -> bool:
        """Count a failed renewal; whether the lease may still hold (then :attr:`wait` is
        how soon to try again). Once a whole lease went by unrenewed, another executor may
        hold it: the run must stop here."""
        left = self._held + self.lease - time.monotonic()
        if left <= 0:
            log.warning(
                "%s failed for a whole lease (%.1f s): %s",
                self._backoff.what,
                self.lease,
                _named(exc),
            )
            return False
        self.wait = min(self._backoff.delay(exc), left / 2)
        return True
