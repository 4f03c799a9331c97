"""``@task``: a function whose calls return futures, and whose results a run keeps.

Called inside an entrypoint (or a node of a graph), each call is numbered, runs
concurrently with the caller (a worker thread for sync code, an event-loop task for async
code) and, once finished, is kept by the run (``_journal``): a resumed run gets the kept
result back at once instead of running the call again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
from collections.abc import Callable, Generator, Sequence
from typing import Any, Generic, TypeVar, overload

from graphagent._executor import in_thread, submit
from graphagent._internal.callables import is_async_callable
from graphagent.errors import UserError
from graphagent.graph._command import current_task
from graphagent.graph._func._journal import RUN, Call, Journal, next_call, writes_of
from graphagent.graph._func._policies import (
    MISS,
    Cached,
    arun_attempts,
    namespace,
    policies,
    run_attempts,
)
from graphagent.graph._policies import CachePolicy, RetryPolicy

__all__ = ["Task", "TaskFuture", "task"]

T = TypeVar("T")
_SCOPE = current_task()
_INJECTED = ("config", "writer", "store")


class TaskFuture(Generic[T]):
    """The result of a task call started from sync code: ``.result()`` waits for it.

    It can be awaited too. A result that is waited for before any worker took the call
    is computed in the waiting thread (tasks that wait on tasks never wait for a slot).
    """

    __slots__ = ("_call", "_future")

    def __init__(self, future: concurrent.futures.Future[T], call: Callable[[], T] | None) -> None:
        self._future = future
        self._call = call

    @staticmethod
    def done_with(value: T) -> TaskFuture[T]:
        """A future that already holds ``value`` (a replayed call)."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        future.set_result(value)
        return TaskFuture(future, None)

    def result(self, timeout: float | None = None) -> T:
        """The task's return value (its exception, or ``interrupt()``, is raised here)."""
        call, self._call = self._call, None
        if call is not None and self._future.cancel():
            # no worker had taken it: run it here, in this thread, and keep how it ended
            here: concurrent.futures.Future[T] = concurrent.futures.Future()
            try:
                here.set_result(call())
            except BaseException as exc:  # an interrupt too: raised below, as from a worker
                here.set_exception(exc)
            self._future = here
        return self._future.result(timeout)

    def done(self) -> bool:
        """Whether the call has finished."""
        return self._future.done()

    def error(self) -> BaseException | None:
        """What the finished call raised (``None``: it returned, or has not finished)."""
        future = self._future
        if not future.done() or future.cancelled():
            return None
        return future.exception()

    def cancel(self) -> bool:
        """Cancel the call if it has not started; whether it was cancelled."""
        self._call = None
        return self._future.cancel()

    def wait(self) -> None:
        """Wait for the call to end, however it ends (errors are the caller's to read)."""
        with contextlib.suppress(BaseException):  # the caller reads it from result()
            self.result()

    def __await__(self) -> Generator[Any, None, T]:
        return asyncio.wrap_future(self._future).__await__()

    def __repr__(self) -> str:
        return f"<TaskFuture {'done' if self.done() else 'running'}>"


class Task(Generic[T]):
    """A function turned into a durable task by :func:`task`.

    Calling it returns a future (:class:`TaskFuture` from sync code, an ``asyncio`` future
    from async code) and runs the function concurrently. Inside an entrypoint, a finished
    call's result is kept by the run, and a resumed run gets it back without running the
    call again.

    Attributes:
        name: the task's name (stream updates and drawings show it).
        fn: the function.
        retry: the policies a failed call is retried under (the first whose
            ``retry_on`` takes the error decides); empty: not retried.
        cache: reuse a result for the same arguments from the entrypoint's cache
            (``entrypoint(cache=...)``), or ``None``.
        cache_namespace: where its cached results live in a cache.
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        *,
        retry: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache: CachePolicy | None = None,
    ) -> None:
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise UserError(
                f"@task {name or _name_of(fn)!r} is a generator function; a task returns one "
                "result: return a list instead of yielding items"
            )
        self.fn = fn
        self.name = name or _name_of(fn)
        if not self.name or "|" in self.name:
            raise UserError(
                f"@task name {self.name!r}: a task needs a non-empty name without '|'; "
                "pass task(fn, name='...')"
            )
        if cache is not None and not isinstance(cache, CachePolicy):
            raise TypeError(f"cache= takes a CachePolicy, got {cache!r}")
        self.retry = policies(retry)
        self.cache = cache
        self.is_async = is_async_callable(fn)
        self._wants = _wanted(fn)
        self._slots = _positions(fn, self._wants)
        self.cache_namespace = namespace(self.name, fn)
        functools.update_wrapper(self, fn)

    def clear_cache(self, cache: Any) -> None:
        """Forget this task's results in ``cache`` (a ``checkpoint.cache`` cache)."""
        cache.clear([self.cache_namespace])

    async def aclear_cache(self, cache: Any) -> None:
        """Async :meth:`clear_cache`."""
        await cache.aclear([self.cache_namespace])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        scope = _SCOPE.get()
        journal = RUN.get()
        if scope is None:
            return self._unrecorded(args, kwargs, journal)
        call = next_call(scope, self.name)
        in_loop = _running_loop() is not None
        if call.replayed:
            if journal is not None:
                journal.count(self, replayed=True)
            if in_loop:
                done = asyncio.get_running_loop().create_future()
                done.set_result(call.found)
                return done
            return TaskFuture.done_with(call.found)
        kwargs = self._inject(kwargs, journal, len(args))
        if in_loop:
            future = asyncio.ensure_future(self._arun(call, journal, args, kwargs))
            if journal is not None:
                journal.started.append(future)
            return future
        work = functools.partial(self._run, call, journal, args, kwargs)
        made: TaskFuture[Any] = TaskFuture(submit(work), work)
        if journal is not None:
            journal.started.append(made)
        return made

    # -- running one call ----------------------------------------------------------------

    def _run(
        self, call: Call, journal: Journal | None, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run the call in this thread (from the cache, or with its retries), then keep
        its result."""
        cached = self._cached(journal, args, kwargs)
        value = MISS if cached is None else cached.get()
        if value is MISS:
            once = functools.partial(self._once, call, args, kwargs)
            value = run_attempts(once, self.retry, self.name, call.fresh)
            if cached is not None:
                cached.put(value)
        write = call.keep(value)
        if write is not None:
            writes_of(journal, call).store(write, journal.loop if journal is not None else None)
        self._finished(journal, value)
        return value

    async def _arun(
        self, call: Call, journal: Journal | None, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run the call under the event loop (a sync function in a worker thread)."""
        cached = self._cached(journal, args, kwargs)
        value = MISS if cached is None else await cached.aget()
        if value is MISS:
            once = functools.partial(self._aonce, call, args, kwargs)
            value = await arun_attempts(once, self.retry, self.name, call.fresh)
            if cached is not None:
                await cached.aput(value)
        write = call.keep(value)
        if write is not None:
            await writes_of(journal, call).astore(write)
        self._finished(journal, value)
        return value

    def _cached(
        self, journal: Journal | None, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Cached | None:
        cache = journal.cache if journal is not None else None
        if self.cache is None or cache is None:
            return None
        return Cached(cache, self.cache, self.cache_namespace, args, kwargs)

    def _once(self, call: Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One attempt, in this thread, with the call's scope set."""
        token = _SCOPE.set(call.scope)
        try:
            value = self.fn(*args, **kwargs)
            if self.is_async or inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
            return value
        finally:
            _SCOPE.reset(token)

    async def _aonce(self, call: Call, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One attempt under the event loop."""
        if not self.is_async:
            return await in_thread(functools.partial(self._once, call, args, kwargs))
        token = _SCOPE.set(call.scope)
        try:
            return await _awaited(self.fn(*args, **kwargs))
        finally:
            _SCOPE.reset(token)

    def _finished(self, journal: Journal | None, value: Any) -> None:
        if journal is not None:
            journal.count(self, replayed=False)
            journal.report(self.name, value)

    def _unrecorded(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], journal: Journal | None
    ) -> Any:
        """A call outside any run: it runs, and nothing keeps its result."""
        kwargs = self._inject(kwargs, journal, len(args))
        if _running_loop() is not None:
            if self.is_async:
                return asyncio.ensure_future(_awaited(self.fn(*args, **kwargs)))
            return asyncio.ensure_future(in_thread(functools.partial(self.fn, *args, **kwargs)))
        work = functools.partial(self._plain, args, kwargs)
        return TaskFuture(submit(work), work)

    def _plain(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        value = self.fn(*args, **kwargs)
        if inspect.isawaitable(value):
            value = asyncio.run(_awaited(value))
        return value

    def _inject(
        self, kwargs: dict[str, Any], journal: Journal | None, nargs: int = 0
    ) -> dict[str, Any]:
        """Add the run's ``config``, ``writer`` and ``store`` for parameters of those
        names the caller did not pass (by keyword, or among its ``nargs`` positional
        arguments)."""
        if not self._wants:
            return kwargs
        config = journal.config if journal is not None else None
        given = dict(kwargs)
        for name in self._wants:
            if name in given or self._slots.get(name, nargs) < nargs:
                continue
            if name == "config":
                given[name] = config
            elif name == "writer":
                given[name] = config.writer if config is not None else None
            else:
                given[name] = config.store if config is not None else None
        return given

    def __repr__(self) -> str:
        return f"<Task {self.name!r}>"


async def _awaited(value: Any) -> Any:
    while inspect.isawaitable(value):
        value = await value
    return value


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _name_of(fn: Any) -> str:
    """A callable's name: a function's, a method's, a ``partial``'s function, a class's."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    name = getattr(fn, "__name__", None)
    return str(name if name is not None else type(fn).__name__)


def _wanted(fn: Callable[..., Any]) -> tuple[str, ...]:
    """The injectable parameters (``config``, ``writer``, ``store``) ``fn`` takes by name."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ()
    return tuple(
        n
        for n in _INJECTED
        if n in params and params[n].kind not in (params[n].POSITIONAL_ONLY, params[n].VAR_KEYWORD)
    )


def _positions(fn: Callable[..., Any], names: tuple[str, ...]) -> dict[str, int]:
    """Where each of ``names`` sits among ``fn``'s positional parameters."""
    if not names:
        return {}
    params = list(inspect.signature(fn).parameters.values())
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return {name: positional.index(name) for name in names if name in positional}


@overload
def task(
    fn: Callable[..., T],
    *,
    name: str | None = None,
    retry: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache: CachePolicy | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy | None = None,
) -> Task[T]: ...


@overload
def task(
    fn: None = None,
    *,
    name: str | None = None,
    retry: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache: CachePolicy | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy | None = None,
) -> Callable[[Callable[..., T]], Task[T]]: ...


def task(
    fn: Callable[..., T] | None = None,
    *,
    name: str | None = None,
    retry: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache: CachePolicy | None = None,
    retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
    cache_policy: CachePolicy | None = None,
) -> Task[T] | Callable[[Callable[..., T]], Task[T]]:
    """Make ``fn`` a durable task: calling it returns a future, and inside an entrypoint
    a finished call's result is kept, so a resumed run does not run it again.

    Use it bare (``@task``), with options (``@task(name="fetch", retry=RetryPolicy())``)
    or on any callable (``task(obj.method, name="m")``). A parameter named ``config``,
    ``writer`` or ``store`` receives the run's, unless the caller passes it.

    Args:
        fn: the function (left out when options are given: ``@task(...)``).
        name: what streams and drawings call it (the function's name unless given).
        retry: retry a failed call under these policies (``RetryPolicy``, or a list:
            the first whose ``retry_on`` takes the error decides).
        cache: reuse a result for the same arguments, across runs and threads, from the
            entrypoint's cache (``entrypoint(cache=MemoryCache())``).
        retry_policy: LangGraph's name for ``retry``.
        cache_policy: LangGraph's name for ``cache``.

    Example:
        >>> @task
        ... def double(x: int) -> int:
        ...     return 2 * x
        >>> double(21).result()
        42
    """
    if retry is not None and retry_policy is not None:
        raise UserError("pass either retry= or retry_policy=, not both")
    if cache is not None and cache_policy is not None:
        raise UserError("pass either cache= or cache_policy=, not both")
    retry = retry if retry is not None else retry_policy
    cache = cache if cache is not None else cache_policy

    def make(f: Callable[..., T]) -> Task[T]:
        return Task(f, name, retry=retry, cache=cache)

    return make if fn is None else make(fn)
