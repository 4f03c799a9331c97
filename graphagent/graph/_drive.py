"""The drivers: they call nodes and perform a program's effects, in this thread
(:func:`drive`) or under an event loop (:func:`adrive`).

Both read one table (:data:`SAVER_CALLS`) for the saver's effects: each is written once,
over the saver's sync methods or, through :class:`AsyncCalls`, their async twins. Each
node is called through ``_call`` (one :data:`~graphagent.graph._effects.Outcome` each);
a step of several tasks on a durable saver stores each task's work as it finishes
(``_keep``). This is the engine's hot path: the shortcuts here are noted with what they
save.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import AsyncGenerator, Callable, Generator, Iterator
from typing import Any

from checkpoint.base import CheckpointSaver
from checkpoint.errors import CheckpointError
from graphagent._executor import run_each, submit
from graphagent._internal.mirror import mirror_error
from graphagent.config import RunnableConfig
from graphagent.graph._call import acall, call
from graphagent.graph._command import current_task
from graphagent.graph._effects import (
    Background,
    CacheGet,
    CacheSet,
    Emit,
    Execute,
    Failed,
    Lock,
    OpenLive,
    Outcome,
    Program,
    Task,
)
from graphagent.graph._keep import AsyncKeeper, Keeper, reporter
from graphagent.graph._nodes import NodeSpec
from graphagent.graph._race import arace, race, race_groups
from graphagent.graph._savercalls import SAVER_CALLS, AsyncCalls
from graphagent.graph._state import OverAllState

__all__ = ["DONE", "RESULT", "Event", "adrive", "drive", "result_of"]

Event = tuple[str, Any]
"""What a driver hands out: ``(stream mode, payload)``, and last ``(RESULT, value)``."""

RESULT = "\x00result"
"""The mode of a driver's last event: its payload is what the program returned."""

_TASK = current_task()
DONE = object()
"""What ``next(events, DONE)`` returns once a driver's events are used up."""

Executed = tuple[dict[str, Outcome], "BaseException | None"]
"""A step's outcomes (of the tasks that finished), and what stopped the step, if anything
did (``KeyboardInterrupt``, cancellation, the stream being closed)."""


Finish = Callable[[Task, Outcome], None]
"""What happens to a task's outcome as soon as the task ends (kept, reported)."""


def _finishing_call(
    finish: Finish, task: Task, state: OverAllState, config: RunnableConfig
) -> Outcome:
    """:func:`~graphagent.graph._call.call`, ``finish`` told its outcome at once."""
    outcome = call(task, state, config)
    finish(task, outcome)
    return outcome


def _finish(keeper: Keeper | None, report: Finish | None) -> Finish | None:
    """One ``finish`` for the keeper's store and the stream's report (either may be off)."""
    if keeper is None:
        return report
    if report is None:
        return lambda task, outcome: keeper.finished(task.key, outcome)

    def both(task: Task, outcome: Outcome) -> None:
        report(task, outcome)
        keeper.finished(task.key, outcome)

    return both


def execute(
    effect: Execute, saver: CheckpointSaver | None = None, put: Callable[[Any], None] | None = None
) -> Executed:
    """Run a step's tasks in this thread (one) or on the shared pool (several); with
    ``effect.keep``, each task's work is stored through ``saver`` as it finishes; with
    ``effect.report``, each one's update goes to the live channel ``put`` as it finishes."""
    tasks, state, config = effect.tasks, effect.state, effect.config
    if len(tasks) == 1:
        try:
            return {tasks[0].key: call(tasks[0], state, config)}, None
        except BaseException as exc:  # call returns every Exception as an outcome
            return {}, exc
    report = reporter(put) if effect.report and put is not None else None
    groups = race_groups(tasks)
    if groups is not None:  # the winner is known when the race ends: reported then
        raced = race(tasks, groups, lambda t: call(t, state, config))
        if report is not None:
            for task in tasks:
                if task.key in raced[0]:
                    report(task, raced[0][task.key])
        return raced
    keeper = None
    if effect.keep is not None and saver is not None:
        keeper = Keeper(effect.keep, saver.put_writes)
    finish = _finish(keeper, report)
    if finish is not None:
        calls = [functools.partial(_finishing_call, finish, t, state, config) for t in tasks]
    else:
        calls = [functools.partial(call, t, state, config) for t in tasks]
    pools = [t.spec.executor for t in tasks]
    outcomes, stop = run_each(calls, pools=pools if any(pools) else None)
    if stop is None and keeper is not None and keeper.error is not None:
        stop = keeper.error  # the saver failed: the run ends with its error
    return {t.key: o for t, o in zip(tasks, outcomes, strict=True) if o is not None}, stop


class _LiveStep:
    """:func:`execute` in a thread of its own, so this one can hand out the events the
    nodes emit meanwhile (``queue`` gets them, then ``DONE``)."""

    __slots__ = ("box", "events")

    def __init__(
        self, effect: Execute, events: queue.SimpleQueue[Any], saver: CheckpointSaver | None
    ) -> None:
        self.events = events
        self.box: list[Executed] = []

        def work() -> None:
            try:
                self.box.append(execute(effect, saver, events.put))
            finally:
                events.put(DONE)

        ctx = contextvars.copy_context()
        threading.Thread(target=ctx.run, args=(work,), daemon=True).start()

    def wait(self) -> Executed:
        """What the step came to, once its thread is done (events left are dropped: a
        thread cannot be stopped, so a stopped run waits for its step here)."""
        while self.events.get() is not DONE:
            pass
        return self.box[0]


async def aexecute(
    effect: Execute, calls: AsyncCalls | None = None, put: Callable[[Any], None] | None = None
) -> Executed:
    """Run a step's tasks as tasks of the event loop; a failure cancels the others, and
    so does a cancellation of this one (after which the tasks that finished are kept).
    With ``effect.keep``, the work of the tasks that finished is stored through
    ``calls`` each time some finish, while the others run on; with ``effect.report``,
    their updates go to the live channel ``put``."""
    tasks, state, config = effect.tasks, effect.state, effect.config
    if len(tasks) == 1:
        try:
            return {tasks[0].key: await acall(tasks[0], state, config)}, None
        except BaseException as exc:  # acall returns every Exception as an outcome
            return {}, exc
    report = reporter(put) if effect.report and put is not None else None
    groups = race_groups(tasks)
    if groups is not None:  # the winner is known when the race ends: reported then
        raced = await arace(tasks, groups, lambda t: acall(t, state, config))
        if report is not None:
            for task in tasks:
                if task.key in raced[0]:
                    report(task, raced[0][task.key])
        return raced
    by_key = {t.key: t for t in tasks} if report is not None else {}
    keeper = None
    if effect.keep is not None and calls is not None:
        keeper = AsyncKeeper(effect.keep, calls.put_writes)
    running = {asyncio.ensure_future(acall(t, state, config)): t.key for t in tasks}
    outcomes: dict[str, Outcome] = {}
    pending = set(running)
    stop: BaseException | None = None
    try:
        while pending:
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in finished:
                outcomes[running[future]] = future.result()
                if report is not None:
                    report(by_key[running[future]], outcomes[running[future]])
            if keeper is not None:
                await keeper.finished([(running[f], outcomes[running[f]]) for f in finished])
            if any(type(outcomes[running[f]]) is Failed for f in finished):
                break  # a failure ends the step now: its siblings are cancelled
    except BaseException as exc:  # cancelled (or a node raised a BaseException)
        stop = exc
    finally:
        # a failure cancels the tasks still running, but a sync node's thread cannot be
        # stopped: it is waited for and its result kept (else a node that finished would
        # run again on resume); a stop (cancellation) waits for nothing
        threads = []
        if stop is None and pending:
            specs = {t.key: t.spec for t in tasks}
            threads = [f for f in pending if _threaded(specs[running[f]])]
        for future in pending:
            if future not in threads:
                future.cancel()
        if pending:
            await asyncio.wait(pending)
        # kept too: tasks that finished while the keeper's write was awaited, not yet seen
        for future in pending:
            if not future.cancelled() and future.exception() is None:
                outcomes.setdefault(running[future], future.result())
    if stop is not None:
        for future, name in running.items():
            if future.done() and not future.cancelled() and future.exception() is None:
                outcomes.setdefault(name, future.result())
    return outcomes, stop


def _threaded(spec: NodeSpec) -> bool:
    """Whether the node is a sync one (run in a worker thread under the event loop)."""
    return spec.afn is None and not spec.is_async


async def _await_step(task: asyncio.Future[Executed]) -> Executed:
    """The outcomes of a step task the caller just cancelled (its finished tasks kept)."""
    try:
        return await task
    except asyncio.CancelledError:  # cancelled before it began: nothing finished
        return {}, None


def _async_sink() -> tuple[asyncio.Queue[Any], Callable[[Any], None]]:
    """A queue for live events and a ``put`` that works from the loop or any thread."""
    loop = asyncio.get_running_loop()
    events: asyncio.Queue[Any] = asyncio.Queue()
    owner = threading.get_ident()

    def put(item: Any) -> None:
        if threading.get_ident() == owner:
            events.put_nowait(item)
        else:
            loop.call_soon_threadsafe(events.put_nowait, item)

    return events, put


# -- the drivers -------------------------------------------------------------------------


def _settled(writing: concurrent.futures.Future[Any] | None) -> None:
    """Wait for a Background write the run no longer reports on (it stops for another
    reason, which is what it raises)."""
    if writing is not None:
        concurrent.futures.wait([writing])


async def _asettled(writing: asyncio.Future[Any] | None) -> None:
    """Async :func:`_settled`."""
    if writing is not None:
        await asyncio.wait([writing])
        if not writing.cancelled():
            writing.exception()  # retrieved: no "never retrieved" warning


def _stopped(effect: Execute, outcomes: dict[str, Outcome], stop: BaseException) -> None:
    """Every task of the step that did not finish ends as ``Failed(stop)``."""
    for task in effect.tasks:
        outcomes.setdefault(task.key, Failed(stop))


def _unwind(
    program: Program[Any],
    effect: Execute,
    outcomes: dict[str, Outcome],
    stop: BaseException,
    saver: CheckpointSaver | None,
) -> None:
    """End ``program`` after ``stop`` cut its step short: it is handed what finished (the
    rest failed with ``stop``), stores it (its saver effects are performed, its events
    dropped), and goes no further; then ``stop`` is raised."""
    _stopped(effect, outcomes, stop)
    send: Any = outcomes
    try:
        while True:
            effect_ = program.send(send)
            kind = type(effect_)
            if kind is Emit:
                send = None
            elif kind in SAVER_CALLS:
                send = SAVER_CALLS[kind](saver, effect_)  # type: ignore[arg-type]
            else:
                break  # the next step: the run stops here
    except StopIteration:
        pass
    except BaseException as exc:
        if exc is stop:
            raise
        raise stop from exc
    raise stop


async def _aunwind(
    program: Program[Any],
    effect: Execute,
    outcomes: dict[str, Outcome],
    stop: BaseException,
    calls: AsyncCalls | None,
) -> None:
    """Async :func:`_unwind`."""
    _stopped(effect, outcomes, stop)
    send: Any = outcomes
    try:
        while True:
            effect_ = program.send(send)
            kind = type(effect_)
            if kind is Emit:
                send = None
            elif kind in SAVER_CALLS:
                send = await SAVER_CALLS[kind](calls, effect_)  # type: ignore[arg-type]
            else:
                break
    except StopIteration:
        pass
    except BaseException as exc:
        if exc is stop:
            raise
        raise stop from exc
    raise stop


def drive(program: Program[Any], saver: CheckpointSaver | None) -> Generator[Event, None, None]:
    """Perform ``program``'s effects in this thread, handing out its events as they come;
    the last is ``(RESULT, what the program returned)``.

    Closing the iterator early ends the program properly (its ``finally`` blocks run) and
    lets go of the thread's run lock.

    Raises:
        GraphAgentError: what the program raised; a saver's ``CheckpointError`` as the
            matching ``GraphAgentError`` (the one saver boundary of a run).
    """
    live: queue.SimpleQueue[Any] | None = None
    held: contextlib.ExitStack | None = None  # the thread's run lock, from first read to end
    writing: concurrent.futures.Future[Any] | None = None  # a Background write under way
    send: Any = None
    try:
        while True:
            effect = program.send(send)
            kind = type(effect)
            if kind is Execute:  # every step: checked first
                step: Execute = effect  # type: ignore[assignment]
                if step.keep is not None and writing is not None:
                    done, writing = writing, None  # the checkpoint the step keeps work on
                    done.result()
                if live is None:
                    outcomes, stop = execute(step, saver)
                else:
                    worker = _LiveStep(step, live, saver)
                    try:
                        while (item := live.get()) is not DONE:
                            yield item
                    except BaseException as exc:  # closed, or Ctrl-C, while the step ran
                        _settled(writing)
                        writing = None
                        _unwind(program, step, worker.wait()[0], exc, saver)
                    outcomes, stop = worker.box[0]
                if stop is not None:
                    _settled(writing)
                    writing = None
                    _unwind(program, step, outcomes, stop, saver)
                send = outcomes
            elif kind is Emit:
                yield effect.mode, effect.payload  # type: ignore[union-attr]
                send = None
            elif kind is Lock:
                assert saver is not None
                if saver.lock_policy is not None and held is None:
                    held = contextlib.ExitStack()
                    held.enter_context(saver.lock(effect.thread_id))  # type: ignore[union-attr]
                send = None
            elif kind is OpenLive:
                live = queue.SimpleQueue()
                send = live.put
            elif kind is CacheGet:
                send = effect.cache.get(effect.keys)  # type: ignore[union-attr]
            elif kind is CacheSet:
                send = effect.cache.set(effect.pairs)  # type: ignore[union-attr]
            else:
                if writing is not None:  # the step before's write first: its error ends the run
                    done, writing = writing, None
                    done.result()
                if kind is Background:
                    inner = effect.effect  # type: ignore[union-attr]
                    writing = submit(functools.partial(SAVER_CALLS[type(inner)], saver, inner))  # type: ignore[arg-type]
                    send = None
                else:
                    send = SAVER_CALLS[kind](saver, effect)  # type: ignore[arg-type]
    except StopIteration as stop:
        result = stop.value
        try:
            if writing is not None:  # the run ends once its last write is stored
                done, writing = writing, None
                done.result()
        except CheckpointError as exc:
            raise mirror_error(exc) from exc
    except CheckpointError as exc:
        raise mirror_error(exc) from exc
    finally:
        _settled(writing)
        program.close()
        if held is not None:
            held.close()
    yield RESULT, result


async def adrive(
    program: Program[Any], saver: CheckpointSaver | None
) -> AsyncGenerator[Event, None]:
    """:func:`drive` under the event loop: async nodes and the saver's async methods are
    awaited, sync nodes run in worker threads."""
    calls = AsyncCalls(saver) if saver is not None else None
    live: asyncio.Queue[Any] | None = None
    live_put: Callable[[Any], None] | None = None  # how events reach it from any thread
    held: contextlib.AsyncExitStack | None = None
    writing: asyncio.Future[Any] | None = None  # a Background write under way
    send: Any = None
    try:
        while True:
            effect = program.send(send)
            kind = type(effect)
            if kind is Execute:
                # hand the loop to the other runs once per super-step: a run whose
                # steps never suspend (in-memory saver, async nodes) would otherwise
                # hold the loop for its whole turn, and a run waiting on a worker
                # thread would wait behind every other run's turn (the p99 step)
                await asyncio.sleep(0)
                astep: Execute = effect  # type: ignore[assignment]
                if astep.keep is not None and writing is not None:
                    adone, writing = writing, None  # the checkpoint the step keeps work on
                    await adone
                if live is None:
                    outcomes, stop = await aexecute(astep, calls)
                else:
                    task = asyncio.ensure_future(aexecute(astep, calls, live_put))
                    getter: asyncio.Future[Any] | None = None
                    try:
                        while True:
                            getter = asyncio.ensure_future(live.get())
                            await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                            if not getter.done():
                                break
                            yield getter.result()
                        while not live.empty():
                            yield live.get_nowait()
                    except BaseException as exc:  # closed, or cancelled, while the step ran
                        task.cancel()
                        await _asettled(writing)
                        writing = None
                        await _aunwind(program, astep, (await _await_step(task))[0], exc, calls)
                    finally:
                        if getter is not None:
                            getter.cancel()
                    outcomes, stop = task.result()
                if stop is not None:
                    await _asettled(writing)
                    writing = None
                    await _aunwind(program, astep, outcomes, stop, calls)
                send = outcomes
            elif kind is Emit:
                yield effect.mode, effect.payload  # type: ignore[union-attr]
                send = None
            elif kind is Lock:
                assert saver is not None
                if saver.lock_policy is not None and held is None:
                    held = contextlib.AsyncExitStack()
                    await held.enter_async_context(saver.alock(effect.thread_id))  # type: ignore[union-attr]
                send = None
            elif kind is OpenLive:
                live, send = _async_sink()
                live_put = send
            elif kind is CacheGet:
                send = await effect.cache.aget(effect.keys)  # type: ignore[union-attr]
            elif kind is CacheSet:
                send = await effect.cache.aset(effect.pairs)  # type: ignore[union-attr]
            else:
                if writing is not None:  # the step before's write first: its error ends the run
                    adone, writing = writing, None
                    await adone
                if kind is Background:
                    inner = effect.effect  # type: ignore[union-attr]
                    writing = asyncio.ensure_future(SAVER_CALLS[type(inner)](calls, inner))  # type: ignore[arg-type]
                    send = None
                else:
                    send = await SAVER_CALLS[kind](calls, effect)  # type: ignore[arg-type]
    except StopIteration as stop:
        result = stop.value
        try:
            if writing is not None:  # the run ends once its last write is stored
                adone, writing = writing, None
                await adone
        except CheckpointError as exc:
            raise mirror_error(exc) from exc
    except CheckpointError as exc:
        raise mirror_error(exc) from exc
    finally:
        await _asettled(writing)
        program.close()
        if held is not None:
            await held.aclose()
    yield RESULT, result


def result_of(events: Iterator[Event]) -> Any:
    """Drive ``events`` to their end (so every ``finally`` of the run has run when this
    returns); what the program returned."""
    result = None
    for mode, payload in events:
        if mode is RESULT:
            result = payload
    return result
