"""Per-node policies: retry a failing node (:class:`RetryPolicy`), reuse a node's result
for the same input (:class:`CachePolicy`)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from checkpoint import serde
from graphagent.errors import GraphAgentError, ModelTimeoutError

__all__ = [
    "CachePolicy",
    "RetryPolicy",
    "cache_namespace",
    "default_cache_key",
    "default_retry_on",
]


def default_retry_on(exc: Exception) -> bool:
    """Whether a node failing with ``exc`` is retried when a policy names no ``retry_on``.

    Retried: connection errors, timeouts of a model call, HTTP 5xx answers
    (``httpx.HTTPStatusError``, ``ModelHTTPError`` and other errors carrying a
    ``status_code`` of 500-599), and errors of unknown kind. Not retried: the mistakes a
    retry cannot fix (``ValueError``, ``TypeError``, ``LookupError``, ``ArithmeticError``,
    ``NameError``, ``ImportError``, ``RuntimeError``, other ``OSError`` kinds) and
    graphagent's other errors (a wrong update, a recursion limit...).

    Example:
        >>> default_retry_on(ConnectionError("reset")), default_retry_on(KeyError("x"))
        (True, False)
    """
    if isinstance(exc, (ConnectionError, ModelTimeoutError)):
        return True
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if status is None:
        status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return 500 <= status < 600
    return not isinstance(
        exc,
        (
            GraphAgentError,
            ValueError,
            TypeError,
            ArithmeticError,
            ImportError,
            LookupError,
            NameError,
            SyntaxError,
            RuntimeError,
            ReferenceError,
            StopIteration,
            StopAsyncIteration,
            OSError,
        ),
    )


RetryOn = type[BaseException] | Sequence[type[BaseException]] | Callable[[Exception], bool]


@dataclass(frozen=True)
class RetryPolicy:
    """Run a failing node again, after a growing pause.

    Give one to a node (``add_node(..., retry=RetryPolicy())``) or to every node of a
    graph (``compile(retry=...)``). Attempts of one task happen inside its step: only
    its last attempt's result is checkpointed, and an ``interrupt()`` is never retried.
    Each attempt is logged (``graphagent.graph``), has its own node span (attribute
    ``graphagent.node.attempt``), and each retry is a ``"task_retry"`` debug event.

    Attributes:
        initial_interval: seconds before the first retry.
        backoff_factor: what each pause is multiplied by for the next.
        max_interval: the longest pause, in seconds.
        max_attempts: attempts in all, the first included (``1``: no retry).
        jitter: add a random part of up to one interval to each pause, so that many
            failing tasks do not retry in lockstep.
        retry_on: the exception classes to retry, or a predicate on the exception
            (default :func:`default_retry_on`).

    Example:
        >>> policy = RetryPolicy(max_attempts=5, initial_interval=0.1, jitter=False)
        >>> [policy.interval(n) for n in (1, 2, 3)]
        [0.1, 0.2, 0.4]
    """

    initial_interval: float = 0.5
    backoff_factor: float = 2.0
    max_interval: float = 128.0
    max_attempts: int = 3
    jitter: bool = True
    retry_on: RetryOn = default_retry_on

    def __post_init__(self) -> None:
        problems = []
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            problems.append(f"max_attempts must be an int, got {self.max_attempts!r}")
        elif self.max_attempts < 1:
            problems.append(f"max_attempts must be at least 1, got {self.max_attempts}")
        for name in ("initial_interval", "backoff_factor", "max_interval"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                problems.append(f"{name} must be a number >= 0, got {value!r}")
        on = self.retry_on
        classes = (on,) if isinstance(on, type) else on if isinstance(on, Sequence) else None
        if classes is not None:
            if not all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
                problems.append(f"retry_on must be exception classes or a predicate, got {on!r}")
        elif not callable(on):
            problems.append(f"retry_on must be exception classes or a predicate, got {on!r}")
        if problems:
            raise ValueError("RetryPolicy: " + "; ".join(problems))

    def retries(self, exc: BaseException) -> bool:
        """Whether a failure with ``exc`` is retried (attempts left aside)."""
        if not isinstance(exc, Exception):
            return False  # Ctrl-C, cancellation, a closed stream: never retried
        on = self.retry_on
        if isinstance(on, type):
            return isinstance(exc, on)
        if isinstance(on, Sequence):
            return isinstance(exc, tuple(on))
        return bool(on(exc))

    def interval(self, attempt: int) -> float:
        """The pause, in seconds, after failed attempt number ``attempt`` (from 1)."""
        base = self.initial_interval * self.backoff_factor ** (attempt - 1)
        pause = min(self.max_interval, base)
        if self.jitter:
            pause = min(self.max_interval, pause + random.uniform(0, pause))
        return float(pause)


def default_cache_key(*args: Any, **kwargs: Any) -> str:
    """A key for a node's input: a hash of its msgpack form (``checkpoint.serde``).

    A value serde cannot store is hashed by its ``repr``.

    Example:
        >>> default_cache_key({"x": 1}) == default_cache_key({"x": 1})
        True
    """
    value = [list(args), kwargs] if kwargs else list(args)
    value = [dict(a) if isinstance(a, Mapping) else a for a in value]
    try:
        data = bytes(serde.dumps(value))
    except Exception:  # any value serde refuses: its repr is still a key
        data = repr(value).encode()
    return hashlib.blake2b(data, digest_size=16).hexdigest()


@dataclass(frozen=True)
class CachePolicy:
    """Reuse a node's result when it is called again with the same input.

    Give one to a node (``add_node(..., cache=CachePolicy(ttl=60))``) and a cache to the
    graph (``compile(cache=MemoryCache())``, or ``SqliteCache``, ``RedisCache``). A hit
    is shared across threads and runs: the node is not called, its stored result is
    merged as if it had returned it. Without a cache on the graph the policy does
    nothing. ``CompiledGraph.clear_cache()`` forgets the results.

    Attributes:
        key_func: the node's input -> a key (``str``); inputs with equal keys share a
            result. Default: :func:`default_cache_key` (a hash of the whole input).
        ttl: seconds a result is kept, or ``None`` for as long as the cache keeps it.

    Example:
        >>> CachePolicy(ttl=60).ttl
        60
    """

    key_func: Callable[..., Any] = default_cache_key
    ttl: float | None = None

    def __post_init__(self) -> None:
        if not callable(self.key_func):
            raise ValueError(f"CachePolicy: key_func must be callable, got {self.key_func!r}")
        ttl = self.ttl
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl <= 0
        ):
            raise ValueError(
                f"CachePolicy: ttl must be a positive number of seconds or None, got {ttl!r}"
            )

    def key(self, value: Any) -> str:
        """The cache key of a node input ``value``."""
        key = self.key_func(value)
        if isinstance(key, str):
            return key
        if isinstance(key, bytes):
            return key.hex()
        return default_cache_key(key)


def cache_namespace(node: str, fn: Any) -> tuple[str, ...]:
    """Where a node's cached results live: its name and its function's, so two graphs
    share results only for the same function under the same node name."""
    ident = f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', type(fn).__name__)}"
    return ("graphagent", node, ident)
