"""One policy for running blocking calls concurrently: graph steps and tool calls.

- :func:`run_all` runs calls at once on a shared pool. The calling thread takes
  back (and runs itself) every call no worker has started yet, so a
  fan-out nested inside a fan-out (subgraph nodes with parallel nodes, tools that run
  agents) never waits for a pool slot: however deep the nesting, nothing deadlocks.
- :func:`call_with_timeout` runs one call in a thread of its own, started at once, so
  the timeout counts from the call's own start, never from a wait in a queue.
- :func:`submit` starts one call on the pool and hands back its future (durable tasks).
- :func:`in_thread` awaits one blocking call (a sync node or tool under ``ainvoke``) on
  the same pool, not on asyncio's default executor, which is sized from the core count
  (6 workers on 2 cores): sixteen conversations blocked in sync calls run at once.

Every call runs in a copy of the caller's context (``contextvars``), so the running
node's scope (what ``interrupt()`` reads) and tracing context follow it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import itertools
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

__all__ = [
    "DEFAULT_WORKERS",
    "call_with_timeout",
    "executor_of",
    "in_thread",
    "run_all",
    "run_each",
    "submit",
]

T = TypeVar("T")

DEFAULT_WORKERS = 16
"""Pool size when the caller names none."""

_PENDING: Any = object()
_POOLS: dict[int, concurrent.futures.ThreadPoolExecutor] = {}
_POOLS_LOCK = threading.Lock()


def _pool(workers: int) -> concurrent.futures.ThreadPoolExecutor:
    pool = _POOLS.get(workers)
    if pool is None:
        with _POOLS_LOCK:
            pool = _POOLS.get(workers)
            if pool is None:
                pool = concurrent.futures.ThreadPoolExecutor(
                    workers, thread_name_prefix="graphagent"
                )
                _POOLS[workers] = pool
    return pool


def executor_of(value: Any) -> concurrent.futures.Executor | None:
    """An executor choice as an executor: ``None`` (the shared pool), a number of workers
    (a shared pool of that size) or a ``concurrent.futures.Executor`` of the caller's.

    Raises:
        TypeError: ``value`` is none of those.
    """
    if value is None or isinstance(value, concurrent.futures.Executor):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return _pool(value)
    raise TypeError(
        f"executor={value!r}: pass a number of worker threads (e.g. 4) or a "
        "concurrent.futures.ThreadPoolExecutor"
    )


def _submit(
    calls: Sequence[Callable[[], T]],
    max_workers: int | None,
    pools: Sequence[concurrent.futures.Executor | None] | None = None,
) -> list[concurrent.futures.Future[T]]:
    default = _pool(max_workers or DEFAULT_WORKERS)
    if pools is None:
        return [default.submit(contextvars.copy_context().run, call) for call in calls]
    return [
        (pool or default).submit(contextvars.copy_context().run, call)
        for call, pool in zip(calls, pools, strict=True)
    ]


def _fill(
    calls: Sequence[Callable[[], T]],
    futures: list[concurrent.futures.Future[T]],
    results: list[Any],
) -> None:
    """Put each call's result in ``results``: this thread runs every call no worker has
    started yet, then waits for the others."""
    for index, (call, future) in enumerate(zip(calls, futures, strict=True)):
        if future.cancel():  # no worker took it yet: this thread runs it
            results[index] = contextvars.copy_context().run(call)
    for index, future in enumerate(futures):
        if results[index] is _PENDING:
            results[index] = future.result()


def _wait_running(futures: list[concurrent.futures.Future[Any]]) -> None:
    # a cancelled call never runs, and waiting for it would wait for a free worker
    concurrent.futures.wait([f for f in futures if not f.cancel()])


def run_all(calls: Sequence[Callable[[], T]], max_workers: int | None = None) -> list[T]:
    """Run ``calls`` concurrently and return their results in order.

    A call that raises makes ``run_all`` raise, after every started call has finished.
    """
    if not calls:
        return []
    futures = _submit(calls, max_workers)
    results: list[Any] = [_PENDING] * len(calls)
    try:
        _fill(calls, futures, results)
        return results
    finally:
        _wait_running(futures)  # on an error, the calls already running end first


def run_each(
    calls: Sequence[Callable[[], T]],
    max_workers: int | None = None,
    pools: Sequence[concurrent.futures.Executor | None] | None = None,
) -> tuple[list[T | None], BaseException | None]:
    """:func:`run_all` for calls that never raise an ``Exception``, keeping what finished
    when the run is stopped.

    A stop (``KeyboardInterrupt`` in this thread, a call raising it or another
    ``BaseException`` that is not an ``Exception``) waits for the calls already running,
    then returns the results with ``None`` for each call that did not finish, and the
    stop (``None`` when there was none) for the caller to re-raise.

    ``pools`` names, per call, the executor it is submitted to (``None``: the shared one).
    """
    if not calls:
        return [], None
    workers = max_workers or DEFAULT_WORKERS
    if pools is None and len(calls) > workers:
        return _pull_each(calls, workers)
    futures = _submit(calls, max_workers, pools)
    results: list[Any] = [_PENDING] * len(calls)
    try:
        _fill(calls, futures, results)
        return results, None
    except BaseException as stop:
        if isinstance(stop, Exception):
            raise
        _wait_running(futures)
        for index, future in enumerate(futures):
            if results[index] is _PENDING:
                finished = future.done() and not future.cancelled()
                ok = finished and future.exception() is None
                results[index] = future.result() if ok else None
        return results, stop
    finally:
        _wait_running(futures)


def _pull_each(
    calls: Sequence[Callable[[], T]], workers: int
) -> tuple[list[T | None], BaseException | None]:
    """:func:`run_each` for more calls than workers (a ``Send`` fan-out): ``workers - 1``
    pool threads and this one take the calls in turn from one counter, instead of one
    future per call. A future per call cost ~10 us a task (its lock and condition) in
    bench/send_fanout.py; this costs a counter step. As in :func:`run_all`, this thread
    runs whatever no worker took, so nested fan-outs never wait for a pool slot."""
    results: list[Any] = [None] * len(calls)
    taken = itertools.count()
    stopped: list[BaseException] = []
    size = len(calls)

    def take() -> None:
        while not stopped:
            index = next(taken)
            if index >= size:
                return
            try:
                results[index] = contextvars.copy_context().run(calls[index])
            except BaseException as exc:  # calls return their errors: this is a stop
                stopped.append(exc)
                return

    pool = _pool(workers)
    helpers = [pool.submit(contextvars.copy_context().run, take) for _ in range(workers - 1)]
    try:
        take()
    except BaseException as exc:  # Ctrl-C in this thread
        stopped.append(exc)
    finally:
        _wait_running(helpers)
    return results, (stopped[0] if stopped else None)


def submit(call: Callable[[], T]) -> concurrent.futures.Future[T]:
    """Start ``call`` on the shared pool, in a copy of the caller's context.

    A caller that waits for the result should first try ``future.cancel()``: when no
    worker has taken the call yet, it runs the call itself, so that calls waiting on calls
    (durable tasks starting tasks) never wait for a pool slot.
    """
    return _pool(DEFAULT_WORKERS).submit(contextvars.copy_context().run, call)


async def in_thread(call: Callable[[], T], pool: concurrent.futures.Executor | None = None) -> T:
    """Await ``call`` run on ``pool`` (the shared one unless given), in a copy of the
    caller's context."""
    loop = asyncio.get_running_loop()
    executor = pool or _pool(DEFAULT_WORKERS)
    return await loop.run_in_executor(executor, contextvars.copy_context().run, call)


def call_with_timeout(call: Callable[[], T], timeout: float | None) -> T:
    """Run ``call``; raise ``TimeoutError`` if it has not finished ``timeout`` s after it began.

    The call keeps its own thread, started now; on timeout that thread is left to end on
    its own (Python cannot stop a thread), and its result is dropped.
    """
    if timeout is None:
        return call()
    box: list[Any] = []
    context = contextvars.copy_context()

    def work() -> None:
        try:
            box.append((True, context.run(call)))
        except BaseException as exc:  # handed to the caller, who re-raises it as is
            box.append((False, exc))

    worker = threading.Thread(target=work, name="graphagent-timed", daemon=True)
    worker.start()
    worker.join(timeout)
    if not box:
        raise TimeoutError(f"the call did not finish within {timeout} s")
    ok, value = box[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
