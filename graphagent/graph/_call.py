"""Calling one node: in this thread or under the event loop, watched when someone
observes the run, retried by its retry policy; what it raised mapped to one
:data:`~graphagent.graph._effects.Outcome` (:func:`_outcome_of`). The drivers' hot path:
the shortcuts here are noted with what they save.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable
from typing import Any

from graphagent._executor import in_thread
from graphagent._internal import observe
from graphagent.config import RunnableConfig
from graphagent.errors import GraphBubbleUp, GraphInterrupt, UserError
from graphagent.graph._command import ParentCommand, current_task
from graphagent.graph._effects import Done, Failed, Outcome, Paused, Task
from graphagent.graph._push import with_pushed
from graphagent.graph._retry import aretrying, retrying
from graphagent.graph._state import OverAllState

__all__ = ["acall", "call"]

_TASK = current_task()


def _outcome_of(task: Task, exc: BaseException, resolving: bool = False) -> Outcome:
    """What a node that raised ``exc`` came to: a pause, or a failure.

    ``resolving``: the sync driver ran what the node returned with ``asyncio.run``, which
    refuses under a running event loop; that is an async node called from ``invoke``.
    """
    if isinstance(exc, GraphInterrupt):
        return Paused(exc)
    if isinstance(exc, ParentCommand):
        # from a graph run inside the node, a plain command: the node's result; from the
        # node's own code (a tool), still Command.PARENT: as if the node returned it, so
        # its graph hands it up in turn
        return Done(exc.command)
    if resolving and isinstance(exc, RuntimeError) and "running event loop" in str(exc):
        name = task.spec.name
        error = UserError(f"node {name!r} is async; call ainvoke()/astream() from async code")
        return Failed(error)
    return Failed(exc)


def _call_node(task: Task, state: OverAllState, config: RunnableConfig, resolve: bool) -> Outcome:
    """Run one node in this thread; with ``resolve``, an awaitable it returns is run too."""
    spec = task.spec
    if task.input is not None:  # a Send's task: called with its own input
        state = task.input[0]
    token = _TASK.set(task.scope)
    try:
        ret = spec.fn(state, config) if spec.takes_config else spec.fn(state)
        # most nodes return a dict: skip the awaitable check's isinstance walk for them
        # (~0.2 µs a node, of ~5 µs per node-step in bench/graph_overhead.py)
        if resolve and ret.__class__ is not dict and inspect.isawaitable(ret):
            ret = asyncio.run(_awaited(ret))
        if task.scope.pushed:  # push_message() in the node
            ret = with_pushed(ret, task.scope.pushed)
        return Done(ret)
    except (Exception, GraphBubbleUp) as exc:
        return _outcome_of(task, exc, resolve)
    finally:
        _TASK.reset(token)


async def _awaited(ret: Awaitable[Any]) -> Any:
    while inspect.isawaitable(ret):
        ret = await ret
    return ret


async def _acall_node(task: Task, state: OverAllState, config: RunnableConfig) -> Outcome:
    """Run one node under the event loop; a sync node runs in a worker thread."""
    spec = task.spec
    fn = spec.afn if spec.afn is not None else spec.fn if spec.is_async else None
    if task.input is not None and fn is not None:
        state = task.input[0]
    ret: Any = None
    if fn is None:
        call = functools.partial(_call_node, task, state, config, False)
        outcome = await in_thread(call, spec.executor)
        if type(outcome) is not Done or not inspect.isawaitable(outcome.value):
            return outcome
        ret = outcome.value  # a sync callable that returned an awaitable: await it here
    # the call and the await of what it returns in one frame, with the node's scope set
    # throughout (for ``interrupt()``): no coroutine of ours between the node and the loop
    token = _TASK.set(task.scope)
    try:
        if fn is not None:
            ret = fn(state, config) if spec.takes_config else fn(state)
        while ret.__class__ is not dict and inspect.isawaitable(ret):
            ret = await ret
        if task.scope.pushed:
            ret = with_pushed(ret, task.scope.pushed)
        return Done(ret)
    except (Exception, GraphBubbleUp) as exc:
        return _outcome_of(task, exc)
    finally:
        _TASK.reset(token)


def _observed(watch: observe.Watch, outcome: Outcome) -> Outcome:
    """Tell a node's watch how the node ended; returns ``outcome``."""
    if type(outcome) is Done:
        watch.record(outcome.value)
    elif type(outcome) is Failed:
        watch.failed(outcome.error)
    elif type(outcome) is Paused:
        watch.record(observe.INTERRUPTED)
    return outcome


def call(task: Task, state: OverAllState, config: RunnableConfig) -> Outcome:
    """:func:`_call_node`, watched when someone observes the run, retried by the node's
    retry policy."""
    if task.spec.retry is not None:
        return retrying(_attempt, task, state, config)
    if not observe.ACTIVE:
        return _call_node(task, state, config, True)
    return _attempt(task, state, config, 1)


def _watch(task: Task, state: OverAllState, config: RunnableConfig, attempt: int) -> Any:
    """The watch of one attempt of a node (told the node's own input: a Send's arg)."""
    given = state if task.input is None else task.input[0]
    return observe.node(task.spec.name, task.spec.kind, task.scope.path, given, config, attempt)


def _attempt(task: Task, state: OverAllState, config: RunnableConfig, attempt: int) -> Outcome:
    """One watched attempt of a node."""
    watch = _watch(task, state, config, attempt)
    with watch:
        return _observed(watch, _call_node(task, state, config, True))


async def acall(task: Task, state: OverAllState, config: RunnableConfig) -> Outcome:
    """:func:`_acall_node`, watched when someone observes the run, retried by the node's
    retry policy."""
    if task.spec.retry is not None:
        return await aretrying(_aattempt, task, state, config)
    if not observe.ACTIVE:
        return await _acall_node(task, state, config)
    return await _aattempt(task, state, config, 1)


async def _aattempt(
    task: Task, state: OverAllState, config: RunnableConfig, attempt: int
) -> Outcome:
    """Async :func:`_attempt`."""
    watch = _watch(task, state, config, attempt)
    with watch:
        return _observed(watch, await _acall_node(task, state, config))
