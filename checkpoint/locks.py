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

from dataclasses import dataclass

__all__ = ["LockPolicy"]


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
