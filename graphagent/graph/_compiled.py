"""``CompiledGraph``: runs a validated graph; the sync and async drivers live here.

Both drivers interpret the same program (``_loop.run_program``); they differ only
in how they perform its effects: node calls, saver calls, handing out events.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import queue
import threading
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any

import networkx as nx

from checkpoint.base import Change, Checkpoint, CheckpointSaver
from checkpoint.errors import CheckpointError
from graphagent._executor import in_thread, run_all
from graphagent.config import ConfigLike, RunnableConfig, ensure_config
from graphagent.errors import (
    GraphBubbleUp,
    GraphInterrupt,
    SerializationError,
    UserError,
    mirror_error,
    saver_errors,
)
from graphagent.graph._command import current_task
from graphagent.graph._constants import is_private, public
from graphagent.graph._effects import (
    Done,
    Emit,
    Execute,
    Failed,
    Load,
    OpenLive,
    Outcome,
    Paused,
    Put,
    PutWrites,
    Task,
)
from graphagent.graph._loop import update_program
from graphagent.graph._run import run_program
from graphagent.graph._snapshot import StateHistory, StateSnapshot, listed_snapshots
from graphagent.graph._strategies import ReplaceStrategy
from graphagent.graph._validate import Topology
from graphagent.observability import _hooks as observe

if TYPE_CHECKING:
    from graphagent.graph._builder import StateGraph
    from graphagent.graph._draw import Drawing
    from graphagent.graph._state import OverAllState, Schema

__all__ = ["CompiledGraph", "StreamMode"]

StreamMode = str
MODES = frozenset({"values", "updates", "custom", "debug", "messages"})
_LIVE = frozenset({"custom", "messages"})
_TASK = current_task()
_DONE = object()


def _parse_modes(mode: str | Sequence[str]) -> tuple[frozenset[str], bool]:
    modes = (mode,) if isinstance(mode, str) else tuple(mode)
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise UserError(
            f"unknown stream mode(s) {unknown or modes!r}; use one or a list of: "
            f"{', '.join(sorted(MODES))}"
        )
    return frozenset(modes), not isinstance(mode, str)


class _Result:
    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value: Any = None


def _observed(watch: observe.Watch, outcome: Outcome) -> Outcome:
    """Tell a node's watch how the node ended; returns ``outcome``."""
    if type(outcome) is Failed:
        watch.failed(outcome.error)
    elif type(outcome) is Paused:
        watch.record(observe.INTERRUPTED)
    return outcome


def _call(task: Task, state: OverAllState, config: RunnableConfig, resolve: bool = True) -> Outcome:
    """Run one node in this thread; with ``resolve``, an awaitable it returns is run too."""
    if not observe.ACTIVE:
        return _call_node(task, state, config, resolve)
    watch = observe.node(task.spec.name, task.spec.kind, task.scope.path)
    with watch:
        return _observed(watch, _call_node(task, state, config, resolve))


def _call_node(task: Task, state: OverAllState, config: RunnableConfig, resolve: bool) -> Outcome:
    spec = task.spec
    token = _TASK.set(task.scope)
    try:
        ret = spec.fn(state, config) if spec.takes_config else spec.fn(state)
        # most nodes return a dict: skip the awaitable check's isinstance walk for them
        if resolve and ret.__class__ is not dict and inspect.isawaitable(ret):
            ret = asyncio.run(_awaited(ret))
        return Done(ret)
    except GraphInterrupt as signal:
        return Paused(signal)
    except RuntimeError as exc:
        if "running event loop" in str(exc):
            return Failed(
                UserError(f"node {spec.name!r} is async; call ainvoke()/astream() from async code")
            )
        return Failed(exc)
    except (Exception, GraphBubbleUp) as exc:
        return Failed(exc)
    finally:
        _TASK.reset(token)


async def _awaited(ret: Awaitable[Any]) -> Any:
    while inspect.isawaitable(ret):
        ret = await ret
    return ret


async def _acall(task: Task, state: OverAllState, config: RunnableConfig) -> Outcome:
    """Run one node under the event loop; sync nodes run in a worker thread."""
    if not observe.ACTIVE:
        return await _acall_node(task, state, config)
    watch = observe.node(task.spec.name, task.spec.kind, task.scope.path)
    with watch:
        return _observed(watch, await _acall_node(task, state, config))


async def _acall_node(task: Task, state: OverAllState, config: RunnableConfig) -> Outcome:
    spec = task.spec
    if spec.subgraph is not None:
        return await _in_scope(task, spec.subgraph._anode(state, config, spec.metadata))
    if spec.afn is not None:
        fn = spec.afn
    elif spec.is_async:
        fn = spec.fn
    else:
        outcome = await in_thread(functools.partial(_call_node, task, state, config, False))
        if type(outcome) is Done and inspect.isawaitable(outcome.value):
            return await _in_scope(task, outcome.value)
        return outcome
    # the call and the await of what it returns in one frame, with the node's scope set
    # throughout (for ``interrupt()``): no coroutine of ours between the node and the loop
    token = _TASK.set(task.scope)
    try:
        ret = fn(state, config) if spec.takes_config else fn(state)
        while ret.__class__ is not dict and inspect.isawaitable(ret):
            ret = await ret
        return Done(ret)
    except GraphInterrupt as signal:
        return Paused(signal)
    except (Exception, GraphBubbleUp) as exc:
        return Failed(exc)
    finally:
        _TASK.reset(token)


async def _in_scope(task: Task, ret: Any) -> Outcome:
    """Await what a node returned, with the node's scope set (for ``interrupt()``)."""
    token = _TASK.set(task.scope)
    try:
        return Done(await _awaited(ret))
    except GraphInterrupt as signal:
        return Paused(signal)
    except (Exception, GraphBubbleUp) as exc:
        return Failed(exc)
    finally:
        _TASK.reset(token)


def _observed_run(events: Iterator[Any], watch: observe.Watch) -> Iterator[Any]:
    """``events``, with the run's watch entered while the run works (not while the caller
    handles an event), so node spans nest under the run in this and the engine's threads."""
    with watch:
        try:
            while True:
                with watch.entered():
                    item = next(events, _DONE)
                if item is _DONE:
                    return
                yield item
        finally:
            events.close()  # type: ignore[attr-defined]


async def _aobserved_run(events: AsyncIterator[Any], watch: observe.Watch) -> AsyncIterator[Any]:
    """Async :func:`_observed_run`: entered around each step of ``events`` in this task."""
    with watch:
        try:
            while True:
                with watch.entered():
                    try:
                        item = await events.__anext__()
                    except StopAsyncIteration:
                        return
                yield item
        finally:
            await events.aclose()  # type: ignore[attr-defined]


def _parent_has(parent: Schema, key: str, state: Mapping[str, Any] | None) -> bool:
    """Whether a parent graph takes ``key`` from a subgraph: a schema naming no keys takes
    all; else the keys it names, and for an open schema also those already in its state."""
    named = parent.strategies
    if not named or key in named:
        return True
    return not parent.closed and state is not None and key in state


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


class CompiledGraph:
    """A validated, immutable graph you can run, stream, inspect and draw.

    Made by :meth:`StateGraph.compile`. Every run method has an async twin.

    Attributes:
        name: the graph's name.
        saver: where threads are checkpointed (``None``: runs are not saved).
        interrupt_before: nodes the run pauses before.
        interrupt_after: nodes the run pauses after.
    """

    def __init__(
        self,
        builder: StateGraph,
        topology: Topology,
        *,
        saver: CheckpointSaver | None,
        interrupt_before: frozenset[str],
        interrupt_after: frozenset[str],
        name: str,
        store: Any = None,
    ) -> None:
        self.schema: Schema = builder.schema
        self.store = store
        """The long-term memory store runs get in ``config.store`` (``None``: none)."""
        self.topology = topology
        self.saver = saver
        self.interrupt_before = interrupt_before
        self.interrupt_after = interrupt_after
        self.name = name
        self.replace = ReplaceStrategy()
        self.agent: Any = None
        """The agent whose graph this is (set by the agent; traces name it)."""
        self.edge_notes: dict[str, str] = {}
        """What conditional edges' labels mean, by label: drawings print them as a key
        (an agent explains its ``again`` edge)."""
        # why a stored thread cannot continue (a layout this graph no longer reads), or None
        self.stored_layout_problem: Callable[[Mapping[str, Any]], str | None] | None = None

    def check_stored(self, thread: str | None, saved: Checkpoint) -> None:
        """Refuse a stored thread this graph cannot continue, naming what to do.

        Raises:
            SerializationError: ``stored_layout_problem`` found a problem with its values.
        """
        check = self.stored_layout_problem
        if check is not None:
            problem = check(saved.values)
            if problem is not None:
                raise SerializationError(f"thread {thread!r}: {problem}")

    # -- observing runs ----------------------------------------------------------------

    def _watched(self, events: Iterator[Any], config: RunnableConfig, nested: bool) -> Any:
        if not observe.ACTIVE:
            return events
        watch = observe.run(self.name, config.thread_id, nested=nested, agent=self.agent)
        return events if watch is observe.IDLE else _observed_run(events, watch)

    def _awatched(self, events: AsyncIterator[Any], config: RunnableConfig, nested: bool) -> Any:
        if not observe.ACTIVE:
            return events
        watch = observe.run(self.name, config.thread_id, nested=nested, agent=self.agent)
        return events if watch is observe.IDLE else _aobserved_run(events, watch)

    # -- the sync driver ------------------------------------------------------------

    def _drive(
        self, program: Generator[Any, Any, Any], modes: frozenset[str], result: _Result
    ) -> Iterator[tuple[str, Any]]:
        saver = self.saver
        live: queue.SimpleQueue[Any] | None = None
        send: Any = None
        # the thread's run lock (when the saver has one) is held from the first load to the end
        held: contextlib.ExitStack | None = None
        try:
            while True:
                effect = program.send(send)
                send = None
                kind = type(effect)
                if kind is Execute:
                    if live is not None:
                        send = yield from self._execute_live(effect, live)
                    else:
                        send = self._execute(effect)
                elif kind is Emit:
                    yield effect.mode, effect.payload
                elif kind is Put:
                    assert saver is not None
                    if effect.before:
                        saver.put_many(
                            effect.thread_id,
                            (*effect.before, effect.write),
                            expected_head=effect.expected_head,
                        )
                    else:
                        saver.put(
                            effect.thread_id, effect.write, expected_head=effect.expected_head
                        )
                elif kind is Load:
                    assert saver is not None
                    if saver.lock_policy is not None and held is None:
                        held = contextlib.ExitStack()
                        held.enter_context(saver.lock(effect.thread_id))
                    send = self._load(saver, effect)
                elif kind is PutWrites:
                    assert saver is not None
                    saver.put_writes(effect.thread_id, effect.checkpoint_id, effect.writes)
                elif kind is OpenLive:
                    live = queue.SimpleQueue()
                    send = live.put
        except StopIteration as stop:
            result.value = stop.value
        except CheckpointError as exc:
            # the one saver boundary of a run: checkpoint errors become GraphAgentErrors
            raise mirror_error(exc) from exc
        finally:
            # a consumer that stops early (or an error) still ends the program properly
            program.close()
            if held is not None:
                held.close()

    @staticmethod
    def _load(saver: CheckpointSaver, effect: Load) -> tuple[Any, str | None]:
        cp = saver.get(effect.thread_id, effect.checkpoint_id)
        if effect.checkpoint_id is None or cp is None:
            return cp, cp.id if cp is not None else None
        return cp, saver.head(effect.thread_id)

    @staticmethod
    def _execute(effect: Execute) -> dict[str, Outcome]:
        tasks, state, config = effect.tasks, effect.state, effect.config
        if len(tasks) == 1:
            return {tasks[0].spec.name: _call(tasks[0], state, config)}
        calls = [functools.partial(_call, t, state, config) for t in tasks]
        outcomes = run_all(calls)
        return {t.spec.name: o for t, o in zip(tasks, outcomes, strict=True)}

    def _execute_live(
        self, effect: Execute, events: queue.SimpleQueue[Any]
    ) -> Generator[tuple[str, Any], None, dict[str, Outcome]]:
        box: list[dict[str, Outcome]] = []

        def work() -> None:
            try:
                box.append(self._execute(effect))
            finally:
                events.put(_DONE)

        ctx = contextvars.copy_context()
        threading.Thread(target=ctx.run, args=(work,), daemon=True).start()
        while True:
            item = events.get()
            if item is _DONE:
                break
            yield item
        return box[0]

    # -- the async driver -----------------------------------------------------------

    async def _adrive(
        self, program: Generator[Any, Any, Any], modes: frozenset[str], result: _Result
    ) -> AsyncIterator[tuple[str, Any]]:
        saver = self.saver
        live: asyncio.Queue[Any] | None = None
        send: Any = None
        held, locked = contextlib.AsyncExitStack(), False
        try:
            while True:
                effect = program.send(send)
                send = None
                kind = type(effect)
                if kind is Execute:
                    # hand the loop to the other runs once per super-step: a run whose
                    # steps never suspend (in-memory saver, async nodes) would otherwise
                    # hold the loop for its whole turn, and a run waiting on a worker
                    # thread would wait behind every other run's turn (the p99 step)
                    await asyncio.sleep(0)
                    if live is None:
                        send = await self._aexecute(effect)
                        continue
                    step = asyncio.ensure_future(self._aexecute(effect))
                    while True:
                        getter = asyncio.ensure_future(live.get())
                        await asyncio.wait({getter, step}, return_when=asyncio.FIRST_COMPLETED)
                        if getter.done():
                            yield getter.result()
                            continue
                        getter.cancel()
                        while not live.empty():
                            yield live.get_nowait()
                        break
                    send = step.result()
                elif kind is Emit:
                    yield effect.mode, effect.payload
                elif kind is Put:
                    assert saver is not None
                    if effect.before:
                        await saver.aput_many(
                            effect.thread_id,
                            (*effect.before, effect.write),
                            expected_head=effect.expected_head,
                        )
                    else:
                        await saver.aput(
                            effect.thread_id, effect.write, expected_head=effect.expected_head
                        )
                elif kind is Load:
                    assert saver is not None
                    if saver.lock_policy is not None and not locked:
                        await held.enter_async_context(saver.alock(effect.thread_id))
                        locked = True
                    cp = await saver.aget(effect.thread_id, effect.checkpoint_id)
                    if effect.checkpoint_id is None or cp is None:
                        send = (cp, cp.id if cp is not None else None)
                    else:
                        send = (cp, await saver.ahead(effect.thread_id))
                elif kind is PutWrites:
                    assert saver is not None
                    await saver.aput_writes(effect.thread_id, effect.checkpoint_id, effect.writes)
                elif kind is OpenLive:
                    live, send = _async_sink()
        except StopIteration as stop:
            result.value = stop.value
        except CheckpointError as exc:
            # the one saver boundary of a run: checkpoint errors become GraphAgentErrors
            raise mirror_error(exc) from exc
        finally:
            program.close()
            await held.aclose()

    @staticmethod
    async def _aexecute(effect: Execute) -> dict[str, Outcome]:
        tasks, state, config = effect.tasks, effect.state, effect.config
        if len(tasks) == 1:
            task = tasks[0]
            if not observe.ACTIVE:
                return {task.spec.name: await _acall_node(task, state, config)}
            return {task.spec.name: await _acall(task, state, config)}
        running = {asyncio.ensure_future(_acall(t, state, config)): t.spec.name for t in tasks}
        outcomes: dict[str, Outcome] = {}
        pending = set(running)
        try:
            while pending:
                finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for future in finished:
                    outcomes[running[future]] = future.result()
                if any(type(outcomes[running[f]]) is Failed for f in finished):
                    break  # a failure ends the step now: its siblings are cancelled
        finally:
            for future in pending:
                future.cancel()
            if pending:
                await asyncio.wait(pending)
        return outcomes

    # -- programs --------------------------------------------------------------------

    def _program(
        self, input: Any, config: RunnableConfig, modes: frozenset[str]
    ) -> Generator[Any, Any, Any]:
        if modes & _LIVE:
            put = yield OpenLive()
            update: dict[str, Any] = {"writer": lambda p: put(("custom", p))}
            if "messages" in modes:
                update["emit"] = lambda mode, p: put((mode, p))
            config = config.model_copy(update=update)
        return (yield from run_program(self, input, config, modes))

    def _config(self, config: ConfigLike, thread_id: str | None = None) -> RunnableConfig:
        cfg = ensure_config(config, thread_id=thread_id)
        if self.store is not None and cfg.store is None:
            # a store the caller (or a parent graph) passed wins over the compiled one
            cfg = cfg.model_copy(update={"store": self.store})
        return cfg

    # -- public run API --------------------------------------------------------------

    def invoke(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        thread_id: str | None = None,
        progress: bool = False,
    ) -> dict[str, Any]:
        """Run the graph to the end (or to an interrupt) and return the final state.

        Args:
            input: a dict of state keys; ``None`` to continue a paused thread;
                ``Command(resume=answer)`` to answer an ``interrupt()``.
            config: a :class:`RunnableConfig` or a dict with its keys.
            thread_id: shortcut for ``config={"thread_id": ...}``.
            progress: show the current node, tool and elapsed time while it runs (in
                Jupyter one output updated in place; in a terminal a status line).

        Example::

            app.invoke({"count": 0}, {"thread_id": "t1"})
        """
        if progress:
            from graphagent.observability import progress as show

            with show():
                return self.invoke(input, config, thread_id=thread_id)
        cfg = self._config(config, thread_id)
        if self._inside_run(cfg):
            return self.run_nested(input, cfg)[0]
        result = _Result()
        events = self._drive(run_program(self, input, cfg, frozenset()), frozenset(), result)
        for _ in self._watched(events, cfg, False):
            pass
        return result.value  # type: ignore[no-any-return]

    async def ainvoke(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        thread_id: str | None = None,
        progress: bool = False,
    ) -> dict[str, Any]:
        """Async :meth:`invoke`; async nodes and async savers are awaited natively."""
        if progress:
            from graphagent.observability import progress as show

            with show():
                return await self.ainvoke(input, config, thread_id=thread_id)
        cfg = self._config(config, thread_id)
        if self._inside_run(cfg):
            return (await self.arun_nested(input, cfg))[0]
        result = _Result()
        events = self._adrive(run_program(self, input, cfg, frozenset()), frozenset(), result)
        async for _ in self._awatched(events, cfg, False):
            pass
        return result.value  # type: ignore[no-any-return]

    @staticmethod
    def _inside_run(config: RunnableConfig) -> bool:
        """Whether this call comes from a node of a running graph, on that run's thread.

        Then the graph runs nested in that node, as a subgraph does: it inherits the
        run's thread and saver, so its interrupts pause the run and resume in place.
        A config naming another thread starts an independent run instead.
        """
        scope = _TASK.get()
        if scope is None or scope.ctx is None:
            return False
        return config.thread_id is None or config.thread_id == scope.ctx.thread

    def stream(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        mode: str | Sequence[str] = "updates",
        thread_id: str | None = None,
        stream_mode: str | Sequence[str] | None = None,
    ) -> Iterator[Any]:
        """Run the graph, yielding events as they happen.

        Modes: ``"updates"`` (``{node: update}`` per node per step), ``"values"`` (the
        whole state after the input and after each step), ``"custom"`` (what nodes
        pass to ``config.writer``, as they write it), ``"messages"`` (model tokens, from
        agents), ``"debug"`` (tasks and checkpoints). A list of modes yields
        ``(mode, payload)`` pairs.

        Example::

            for update in app.stream({"count": 0}):
                print(update)
        """
        modes, pairs = _parse_modes(stream_mode or mode)
        cfg = self._config(config, thread_id)
        result = _Result()
        events = self._drive(self._program(input, cfg, modes), modes, result)
        for m, payload in self._watched(events, cfg, False):
            if m in modes:
                yield (m, payload) if pairs else payload

    async def astream(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        mode: str | Sequence[str] = "updates",
        thread_id: str | None = None,
        stream_mode: str | Sequence[str] | None = None,
    ) -> AsyncIterator[Any]:
        """Async :meth:`stream`."""
        modes, pairs = _parse_modes(stream_mode or mode)
        cfg = self._config(config, thread_id)
        result = _Result()
        events = self._adrive(self._program(input, cfg, modes), modes, result)
        async for m, payload in self._awatched(events, cfg, False):
            if m in modes:
                yield (m, payload) if pairs else payload

    # -- as a node of another graph ----------------------------------------------------

    def run_nested(
        self, input: Mapping[str, Any], config: RunnableConfig
    ) -> tuple[dict[str, Any], dict[str, Change]]:
        """Run inside another graph's node: no checkpoints of its own, interrupts and
        errors pass up. Returns the final values and the changes the run made."""
        net: dict[str, Change] = {}
        result = _Result()
        program = run_program(self, input, config, frozenset(), net=net)
        for _ in self._watched(self._drive(program, frozenset(), result), config, True):
            pass
        return result.value, net

    async def arun_nested(
        self, input: Mapping[str, Any], config: RunnableConfig
    ) -> tuple[dict[str, Any], dict[str, Change]]:
        """Async :meth:`run_nested`."""
        net: dict[str, Change] = {}
        result = _Result()
        program = run_program(self, input, config, frozenset(), net=net)
        async for _ in self._awatched(self._adrive(program, frozenset(), result), config, True):
            pass
        return result.value, net

    def as_node_function(
        self, parent: Schema | None = None
    ) -> Callable[[OverAllState, RunnableConfig], dict[str, Any]]:
        """This graph as a node function for a parent graph (used by ``add_node``)."""

        def run_subgraph(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
            values, net = self.run_nested(self._sub_input(state), config)
            return self.net_update(net, values, parent, state)

        return run_subgraph

    async def _anode(
        self, state: OverAllState, config: RunnableConfig, metadata: Mapping[str, Any] | None
    ) -> dict[str, Any]:
        values, net = await self.arun_nested(self._sub_input(state), config)
        parent = metadata.get("parent_schema") if metadata else None
        return self.net_update(net, values, parent, state)

    def _sub_input(self, state: OverAllState) -> dict[str, Any]:
        # the parent's private keys are its own: the subgraph starts without them
        if self.schema.closed:
            return {
                k: v for k, v in state.items() if k in self.schema.strategies and not is_private(k)
            }
        return public(state)

    @staticmethod
    def net_update(
        net: dict[str, Change],
        values: dict[str, Any],
        parent: Schema | None,
        state: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A nested run's changes as one update for the parent graph.

        Keys the parent does not have stay in the subgraph: a parent schema that names
        keys gets only those (an open one also those already in its ``state``). Private
        keys (``__`` prefix) always stay.
        """
        # Appended items go up as items, so the parent's strategy appends them once;
        # a parent key that replaces gets the subgraph's final value instead.
        update: dict[str, Any] = {}
        for key, (kind, payload) in net.items():
            if is_private(key):
                continue  # private to the subgraph
            if parent is not None and not _parent_has(parent, key, state):
                continue  # the subgraph's own key: it stays in the subgraph
            strategy = parent.strategies.get(key) if parent is not None else None
            replaces = strategy is None or strategy.replaces
            update[key] = payload if kind == "append" and not replaces else values[key]
        return update

    # -- threads: state, history, updates -----------------------------------------------

    def _need_saver(self, what: str) -> CheckpointSaver:
        if self.saver is None:
            raise UserError(f"{what} needs a saver: compile(saver=MemorySaver()) or RedisSaver")
        return self.saver

    def _thread(self, config: ConfigLike, thread_id: str | None, what: str) -> RunnableConfig:
        cfg = self._config(config, thread_id)
        if cfg.thread_id is None:
            raise UserError(f"{what} needs a thread_id: pass config={{'thread_id': ...}}")
        return cfg

    def _stored(
        self, config: ConfigLike, thread_id: str | None, what: str
    ) -> tuple[CheckpointSaver, str, RunnableConfig]:
        """The saver, the thread id and the config for a thread API call, or a clear error."""
        saver = self._need_saver(what)
        cfg = self._thread(config, thread_id, what)
        assert cfg.thread_id is not None
        return saver, cfg.thread_id, cfg

    def get_state(
        self, config: ConfigLike = None, *, thread_id: str | None = None
    ) -> StateSnapshot:
        """The thread's latest state (or the one at ``config.checkpoint_id``)."""
        saver, thread, cfg = self._stored(config, thread_id, "get_state")
        with saver_errors():
            cp = saver.get(thread, cfg.checkpoint_id)
        return StateSnapshot.from_checkpoint(cp, cfg, self)

    async def aget_state(
        self, config: ConfigLike = None, *, thread_id: str | None = None
    ) -> StateSnapshot:
        """Async :meth:`get_state`."""
        saver, thread, cfg = self._stored(config, thread_id, "get_state")
        with saver_errors():
            cp = await saver.aget(thread, cfg.checkpoint_id)
        return StateSnapshot.from_checkpoint(cp, cfg, self)

    def get_state_history(
        self,
        config: ConfigLike = None,
        *,
        limit: int | None = None,
        before: str | None = None,
        thread_id: str | None = None,
    ) -> StateHistory:
        """The thread's checkpoints, newest first (``before``: only older than that id).

        The result is a list; in Jupyter it shows as a timeline.
        """
        saver, thread, cfg = self._stored(config, thread_id, "get_state_history")
        with saver_errors():
            listed = saver.history(thread, limit=limit, before=before)
        return StateHistory(listed_snapshots(listed, cfg, self))

    async def aget_state_history(
        self,
        config: ConfigLike = None,
        *,
        limit: int | None = None,
        before: str | None = None,
        thread_id: str | None = None,
    ) -> StateHistory:
        """Async :meth:`get_state_history`."""
        saver, thread, cfg = self._stored(config, thread_id, "get_state_history")
        with saver_errors():
            listed = await saver.ahistory(thread, limit=limit, before=before)
        return StateHistory(listed_snapshots(listed, cfg, self))

    def update_state(
        self,
        config: ConfigLike,
        values: Mapping[str, Any] | None,
        as_node: str | None = None,
    ) -> RunnableConfig:
        """Write ``values`` into the thread as if ``as_node`` had returned them.

        On the latest checkpoint this continues the thread; on an older
        ``checkpoint_id`` it forks a new branch from there. With ``as_node``, the
        thread's next nodes become that node's successors.

        Returns:
            a config pointing at the new checkpoint.
        """
        self._need_saver("update_state")
        cfg = self._thread(config, None, "update_state")
        result = _Result()
        for _ in self._drive(update_program(self, cfg, values, as_node), frozenset(), result):
            pass
        return cfg.model_copy(update={"checkpoint_id": result.value})

    async def aupdate_state(
        self,
        config: ConfigLike,
        values: Mapping[str, Any] | None,
        as_node: str | None = None,
    ) -> RunnableConfig:
        """Async :meth:`update_state`."""
        self._need_saver("update_state")
        cfg = self._thread(config, None, "update_state")
        result = _Result()
        async for _ in self._adrive(
            update_program(self, cfg, values, as_node), frozenset(), result
        ):
            pass
        return cfg.model_copy(update={"checkpoint_id": result.value})

    def delete_thread(self, config: ConfigLike = None, *, thread_id: str | None = None) -> None:
        """Forget everything saved for the thread."""
        saver, thread, _ = self._stored(config, thread_id, "delete_thread")
        with saver_errors():
            saver.delete_thread(thread)

    async def adelete_thread(
        self, config: ConfigLike = None, *, thread_id: str | None = None
    ) -> None:
        """Async :meth:`delete_thread`."""
        saver, thread, _ = self._stored(config, thread_id, "delete_thread")
        with saver_errors():
            await saver.adelete_thread(thread)

    # -- looking at it -------------------------------------------------------------------

    @property
    def graph(self) -> nx.DiGraph[str]:
        """A copy of the topology (node attr ``kind``; edge attrs ``conditional``, ``label``)."""
        return self.topology.digraph.copy()

    @property
    def nodes(self) -> tuple[str, ...]:
        """The node names, in the order they were added."""
        return tuple(self.topology.nodes)

    def draw(
        self,
        fmt: str = "svg",
        *,
        thread_id: str | None = None,
        config: ConfigLike = None,
    ) -> Drawing:
        """The graph as ``"svg"``, ``"mermaid"``, ``"dot"`` or ``"ascii"`` text (offline).

        With ``thread_id`` (or a ``config`` naming a thread, and optionally a
        ``checkpoint_id``), the SVG shows that thread's run: the path taken, with counts on
        edges taken more than once, the current and next nodes, and a pause waiting for an
        answer. The result is a ``str`` that Jupyter shows in its format.
        """
        from graphagent.graph._draw import draw
        from graphagent.graph._overlay import thread_overlay

        if thread_id is None and config is None:
            return draw(self, fmt)
        return draw(self, fmt, thread_overlay(self, self._stored(config, thread_id, "draw")[2]))

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        # SVG only: JupyterLab ranks text/vnd.mermaid above SVG, so offering Mermaid here
        # made every graph render through Mermaid; draw("mermaid") opts in to it
        from graphagent.graph._draw import draw, svg_bundle

        return svg_bundle(draw(self, "svg"), repr(self))

    def __repr__(self) -> str:
        saver = type(self.saver).__name__ if self.saver is not None else "no saver"
        return f"<CompiledGraph {self.name!r}: {len(self.topology.nodes)} nodes, {saver}>"
