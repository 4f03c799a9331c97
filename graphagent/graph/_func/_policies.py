"""A task call under its policies: retried after a failure (``RetryPolicy``), and its
result reused for the same arguments from the entrypoint's cache (``CachePolicy``).

The policies are the graph engine's (``graphagent.graph``), so a task and a node retry and
cache alike; attempts happen inside the call, so only the last attempt's result is kept.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from graphagent.graph._policies import CachePolicy, RetryPolicy, default_cache_key

__all__ = ["MISS", "Cached", "arun_attempts", "namespace", "policies", "run_attempts"]

_log = logging.getLogger("graphagent.func")

MISS: Any = object()
"""What :meth:`Cached.get` returns when the cache holds no result."""


def policies(retry: RetryPolicy | Sequence[RetryPolicy] | None) -> tuple[RetryPolicy, ...]:
    """``retry=`` as a tuple of policies (the first whose ``retry_on`` takes an error
    decides), checked.

    Raises:
        TypeError: something other than ``RetryPolicy`` objects.
    """
    found = () if retry is None else (retry,) if isinstance(retry, RetryPolicy) else tuple(retry)
    if not all(isinstance(p, RetryPolicy) for p in found):
        raise TypeError(f"retry= takes a RetryPolicy or a list of them, got {retry!r}")
    return found


def _pause(
    retry: tuple[RetryPolicy, ...], name: str, exc: BaseException, attempt: int
) -> float | None:
    """The pause before the next attempt, or ``None`` when ``exc`` stands."""
    policy = next((p for p in retry if p.retries(exc)), None)
    if policy is None or attempt >= policy.max_attempts:
        return None
    pause = policy.interval(attempt)
    _log.warning(
        "task %r attempt %d of %d failed with %s: %s; retrying in %.3fs",
        name,
        attempt,
        policy.max_attempts,
        type(exc).__name__,
        exc,
        pause,
    )
    return pause


def run_attempts(
    once: Callable[[], Any], retry: tuple[RetryPolicy, ...], name: str, fresh: Callable[[], None]
) -> Any:
    """``once()`` until it returns or its error is not retried; ``fresh()`` before each
    retry (the call's ``interrupt()`` and task counters start again)."""
    attempt = 1
    while True:
        try:
            return once()
        except Exception as exc:
            pause = _pause(retry, name, exc, attempt) if retry else None
            if pause is None:
                raise
        fresh()
        time.sleep(pause)
        attempt += 1


async def arun_attempts(
    once: Callable[[], Awaitable[Any]],
    retry: tuple[RetryPolicy, ...],
    name: str,
    fresh: Callable[[], None],
) -> Any:
    """Async :func:`run_attempts`."""
    attempt = 1
    while True:
        try:
            return await once()
        except Exception as exc:
            pause = _pause(retry, name, exc, attempt) if retry else None
            if pause is None:
                raise
        fresh()
        await asyncio.sleep(pause)
        attempt += 1


def namespace(name: str, fn: Any) -> tuple[str, ...]:
    """Where a task's cached results live: its name and its function's, so that two tasks
    share results only for the same function under the same name."""
    target = getattr(fn, "func", fn)  # a functools.partial names its function
    qualname = getattr(target, "__qualname__", type(target).__name__)
    ident = f"{getattr(target, '__module__', '')}.{qualname}"
    return ("graphagent.func", name, ident)


class Cached:
    """One call's address in a cache: its task's namespace and its arguments' key."""

    __slots__ = ("cache", "key", "ttl")

    def __init__(
        self,
        cache: Any,
        policy: CachePolicy,
        space: tuple[str, ...],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> None:
        self.cache = cache
        key = policy.key_func(*args, **kwargs)
        if not isinstance(key, str):
            key = key.hex() if isinstance(key, bytes) else default_cache_key(key)
        self.key = (space, key)
        self.ttl = policy.ttl

    def get(self) -> Any:
        """The cached result, or :data:`MISS`."""
        return self.cache.get([self.key]).get(self.key, MISS)

    async def aget(self) -> Any:
        """Async :meth:`get`."""
        return (await self.cache.aget([self.key])).get(self.key, MISS)

    def put(self, value: Any) -> None:
        """Cache ``value`` for the policy's time to live."""
        self.cache.set({self.key: (value, self.ttl)})

    async def aput(self, value: Any) -> None:
        """Async :meth:`put`."""
        await self.cache.aset({self.key: (value, self.ttl)})
