"""An entrypoint's function as the one node of its graph.

The graph's state has four keys: ``input`` (what the run was given, kept so that a resumed
run calls the function with it again), ``value`` (what the function returned), ``saved``
(what the next run on the thread gets as ``previous``) and ``tasks`` (per task name, how
many calls ran and how many were replayed in the run that wrote the checkpoint).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from graphagent._executor import in_thread
from graphagent.config import RunnableConfig
from graphagent.errors import GraphInterrupt, UserError
from graphagent.graph._func._journal import RUN, Journal
from graphagent.graph._func._settle import asettle, asked, settle
from graphagent.graph._state import OverAllState

__all__ = ["INJECTED", "Final", "Runner", "signature_of"]

V = TypeVar("V")
S = TypeVar("S")

INJECTED = ("previous", "config", "writer", "store")
"""Parameters an entrypoint's function gets from the run, by name."""


@dataclass(frozen=True)
class Final(Generic[V, S]):
    """What an entrypoint returns when what the caller gets differs from what the thread
    keeps: ``value`` is returned, ``save`` is the next run's ``previous``.

    Example:
        >>> entrypoint_final = Final(value=2, save=["a", "b"])
        >>> entrypoint_final.value, entrypoint_final.save
        (2, ['a', 'b'])
    """

    value: V
    save: S


def signature_of(fn: Callable[..., Any], name: str) -> tuple[str, ...]:
    """The run-given parameters ``fn`` takes, after checking it can be an entrypoint.

    Raises:
        UserError: a generator, no input parameter, or a parameter without a default that
            the run does not pass.
    """
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        raise UserError(
            f"entrypoint {name!r} is a generator function; an entrypoint returns one value "
            "(stream partial results from its tasks with a `writer` parameter instead)"
        )
    params = list(inspect.signature(fn).parameters.values())
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if not params or params[0].kind not in positional:
        raise UserError(
            f"entrypoint {name!r} needs its input as its first parameter: "
            "def workflow(inputs, *, previous=None): ..."
        )
    wants = []
    for p in params[1:]:
        if p.name in INJECTED and p.kind is not inspect.Parameter.POSITIONAL_ONLY:
            wants.append(p.name)
        elif p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise UserError(
                f"entrypoint {name!r}: parameter {p.name!r} has no default, and a run passes "
                f"only the input and, by name, {', '.join(INJECTED)}; give it a default"
            )
    return tuple(wants)


class Runner:
    """Calls an entrypoint's function as a node (sync and async), keeping its tasks."""

    __slots__ = ("cache", "fn", "is_async", "name", "seen", "wants")

    def __init__(
        self, fn: Callable[..., Any], name: str, wants: tuple[str, ...], cache: Any = None
    ) -> None:
        self.fn = fn
        self.name = name
        self.wants = wants
        self.cache = cache
        self.is_async = inspect.iscoroutinefunction(fn)
        self.seen: dict[str, Any] = {}  # the tasks called so far, by name (drawings, caches)

    def _kwargs(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        given: dict[str, Any] = {}
        for name in self.wants:
            if name == "previous":
                given[name] = state.get("saved")
            elif name == "config":
                given[name] = config
            else:
                given[name] = config.writer if name == "writer" else config.store
        return given

    def _update(self, out: Any, journal: Journal) -> dict[str, Any]:
        if isinstance(out, Final):
            value, saved = out.value, out.save
        else:
            value = saved = out
        self.seen.update(journal.tasks)
        return {"value": value, "saved": saved, "tasks": dict(journal.counts)}

    def __call__(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        """The node under ``invoke``/``stream``."""
        journal = Journal(config, cache=self.cache)
        token = RUN.set(journal)
        try:
            return self._body(state, config, journal)
        finally:
            RUN.reset(token)

    def _body(
        self, state: OverAllState, config: RunnableConfig, journal: Journal
    ) -> dict[str, Any]:
        kwargs = self._kwargs(state, config)
        stopped = True
        try:
            try:
                out = self.fn(state["input"], **kwargs)
                if inspect.isawaitable(out):
                    out = _run_coroutine(out, self.name)
                stopped = False
            finally:
                settle(journal, stopped)
        except GraphInterrupt as signal:
            raise asked(signal, journal) from None
        return self._update(out, journal)

    async def arun(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        """The node under ``ainvoke``/``astream`` (a sync function runs in a worker thread)."""
        journal = Journal(config, loop=asyncio.get_running_loop(), cache=self.cache)
        token = RUN.set(journal)
        try:
            if not self.is_async:
                return await in_thread(functools.partial(self._body, state, config, journal))
            try:
                try:
                    out = await self.fn(state["input"], **self._kwargs(state, config))
                finally:
                    await asettle(journal)
            except GraphInterrupt as signal:
                raise asked(signal, journal) from None
            return self._update(out, journal)
        finally:
            RUN.reset(token)


def _run_coroutine(coro: Any, name: str) -> Any:
    """An async entrypoint's coroutine, run to its end from ``invoke``."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_awaited(coro))
    coro.close()
    raise UserError(f"entrypoint {name!r} is async; call ainvoke()/astream() from async code")


async def _awaited(value: Any) -> Any:
    while inspect.isawaitable(value):
        value = await value
    return value
