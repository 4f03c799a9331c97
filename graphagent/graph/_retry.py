"""Retrying a failing node under its :class:`~graphagent.graph.RetryPolicy`.

Attempts happen inside the node's task, so nothing is checkpointed between them; each
is logged on ``graphagent.graph`` and kept on the task for the step's ``task_retry``
debug events; the caller watches each attempt as its own node span.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from graphagent.config import RunnableConfig
from graphagent.graph._effects import Failed, Outcome, Task
from graphagent.graph._state import OverAllState

__all__ = ["AsyncAttempt", "Attempt", "aretrying", "retry_after", "retrying"]

_log = logging.getLogger("graphagent.graph")

Attempt = Callable[[Task, OverAllState, RunnableConfig, int], Outcome]
"""One attempt of a task: ``(task, state, config, attempt number) -> outcome``."""

AsyncAttempt = Callable[[Task, OverAllState, RunnableConfig, int], Awaitable[Outcome]]
"""Async :data:`Attempt`."""


def retry_after(task: Task, outcome: Outcome, attempt: int) -> float | None:
    """The pause before the next attempt of ``task``, or ``None`` when ``outcome`` stands
    (it is no failure, no policy retries it, or no attempt is left). A pause
    (``interrupt()``) is never retried: it is an outcome, not a failure. Of several
    policies, the first whose ``retry_on`` takes the error decides."""
    if type(outcome) is not Failed:
        return None
    error = outcome.error
    policy = next((p for p in task.spec.retry if p.retries(error)), None)
    if policy is None or attempt >= policy.max_attempts:
        return None
    pause: float = policy.interval(attempt)
    retries = getattr(task, "retries", None)
    if retries is None:
        task.retries = retries = []
    retries.append(error)
    _log.warning(
        "node %r (task %s) attempt %d of %d failed with %s: %s; retrying in %.3fs",
        task.spec.name,
        "/".join(task.scope.path),
        attempt,
        policy.max_attempts,
        type(error).__name__,
        error,
        pause,
    )
    # a rerun starts the node afresh: its interrupt() calls, nested runs and durable tasks
    # count from 0, so a task its failed attempt finished is replayed, and a resume later
    # numbers the calls as this attempt did
    scope = task.scope
    scope.calls = scope.runs = scope.subtasks = 0
    return pause


def retrying(
    attempt_fn: Attempt, task: Task, state: OverAllState, config: RunnableConfig
) -> Outcome:
    """Attempts of ``task`` by ``attempt_fn`` until one stands (see :func:`retry_after`)."""
    attempt = 1
    while True:
        outcome = attempt_fn(task, state, config, attempt)
        pause = retry_after(task, outcome, attempt)
        if pause is None:
            return outcome
        time.sleep(pause)
        attempt += 1


async def aretrying(
    attempt_fn: AsyncAttempt, task: Task, state: OverAllState, config: RunnableConfig
) -> Outcome:
    """Async :func:`retrying`."""
    attempt = 1
    while True:
        outcome = await attempt_fn(task, state, config, attempt)
        pause = retry_after(task, outcome, attempt)
        if pause is None:
            return outcome
        await asyncio.sleep(pause)
        attempt += 1
