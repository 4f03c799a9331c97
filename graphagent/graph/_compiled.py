"""``CompiledGraph``: the public face of a compiled graph.

It holds the :class:`~graphagent.graph._plan.Plan` that ``compile()`` froze, starts
programs (``_run``) and hands them to a driver (``_drive``); the thread API reads the saver
directly. Drawing lives in ``draw/``, which reads the plan.
"""

from __future__ import annotations

import contextlib
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any
from uuid import UUID

import networkx as nx

from checkpoint.base import Change, CheckpointSaver
from graphagent._internal.mirror import saver_errors
from graphagent.config import ConfigLike, RunnableConfig, ensure_config
from graphagent.errors import UserError
from graphagent.graph._command import current_task
from graphagent.graph._constants import is_private, public
from graphagent.graph._drive import RESULT, adrive, drive, result_of
from graphagent.graph._effects import OpenLive, Program
from graphagent.graph._inspect import snapshot_of
from graphagent.graph._maintain import Maintenance
from graphagent.graph._plan import Plan
from graphagent.graph._run import run_program
from graphagent.graph._runtime import coerce_context
from graphagent.graph._snapshot import StateHistory, StateSnapshot, listed_snapshots
from graphagent.graph._state import OverAllState, Schema
from graphagent.graph._substream import (
    SKIP,
    SUBGRAPH,
    Shown,
    Sink,
    aforward,
    forward,
    streamed,
)
from graphagent.graph._update import update_program
from graphagent.graph._watch import awatched, watched
from graphagent.graph.draw._formats import Drawing, draw, svg_bundle
from graphagent.graph.draw._overlay import run_overlay

__all__ = ["MODES", "CompiledGraph", "parse_modes"]

ThreadId = str | int | UUID | None
"""A thread id as callers may give it: text, or an ``int`` / ``UUID`` taken as its text."""

MODES = frozenset({"values", "updates", "custom", "debug", "messages"})
_LIVE = frozenset({"custom", "messages"})
_TASK = current_task()


def parse_modes(mode: str | Sequence[str]) -> tuple[frozenset[str], bool]:
    """The modes asked (a graph's or an entrypoint's), and whether events come as pairs."""
    modes = (mode,) if isinstance(mode, str) else tuple(mode)
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise UserError(
            f"unknown stream mode(s) {unknown or modes!r}; use one or a list of: "
            f"{', '.join(sorted(MODES))}"
        )
    return frozenset(modes), not isinstance(mode, str)


def _parent_has(parent: Schema, key: str, state: Mapping[str, Any] | None) -> bool:
    """Whether a parent graph takes ``key`` from a subgraph: a schema naming no keys takes
    all; else the keys it names, and for an open schema also those already in its state."""
    named = parent.strategies
    if not named or key in named:
        return True
    return not parent.closed and state is not None and key in state


async def _aresult_of(events: AsyncIterator[tuple[str, Any]]) -> Any:
    """Async :func:`~graphagent.graph._drive.result_of`."""
    result = None
    async for mode, payload in events:
        if mode is RESULT:
            result = payload
    return result


class CompiledGraph(Maintenance):
    """A validated, immutable graph you can run, stream, inspect and draw.

    Made by :meth:`StateGraph.compile`. Every run method has an async twin.

    Attributes:
        plan: what ``compile()`` froze (the graph's shape, schema, breakpoints, saver).
        name: the graph's name.
        saver: where threads are checkpointed (``None``: runs are not saved).
        interrupt_before: nodes the run pauses before.
        interrupt_after: nodes the run pauses after.
    """

    __slots__ = ("plan",)

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    @property
    def name(self) -> str:
        """The graph's name."""
        return self.plan.name

    @property
    def saver(self) -> CheckpointSaver | None:
        """Where threads are checkpointed (``None``: runs are not saved)."""
        return self.plan.saver

    @property
    def interrupt_before(self) -> frozenset[str]:
        """Nodes the run pauses before."""
        return self.plan.interrupt_before

    @property
    def interrupt_after(self) -> frozenset[str]:
        """Nodes the run pauses after."""
        return self.plan.interrupt_after

    @property
    def store(self) -> Any:
        """The long-term memory store runs get in ``config.store`` (``None``: none)."""
        return self.plan.store

    @property
    def edge_notes(self) -> Mapping[str, str]:
        """What conditional edges' labels mean, by label: drawings print them as a key
        (an agent explains its ``again`` edge). Given to ``compile(edge_notes=...)``."""
        return self.plan.edge_notes

    @property
    def schema(self) -> Schema:
        """The state's keys and how updates merge."""
        return self.plan.schema

    def with_saver(self, saver: CheckpointSaver | None) -> CompiledGraph:
        """The same graph, checkpointing its threads into ``saver`` (this one is unchanged).

        Example::

            kept = app.with_saver(SqliteSaver.from_path("threads.sqlite"))
        """
        return CompiledGraph(self.plan.with_saver(saver))

    # -- programs --------------------------------------------------------------------

    def _program(
        self,
        input: Any,
        config: RunnableConfig,
        modes: frozenset[str],
        durability: str | None,
        subgraphs: bool = False,
    ) -> Program[dict[str, Any]]:
        """The run, with the live channel open first when a mode (or ``subgraphs``) needs one."""
        sink: Sink | None = None
        if modes & _LIVE or subgraphs:
            put = yield OpenLive()
            update: dict[str, Any] = {"writer": lambda p: put(("custom", p))}
            if "messages" in modes:
                update["emit"] = lambda mode, p: put((mode, p))
            config = config.model_copy(update=update)
            if subgraphs:
                sink = lambda ns, mode, p: put((SUBGRAPH, (ns, mode, p)))  # noqa: E731
        return (
            yield from run_program(
                self.plan, input, config, modes, durability=durability, sink=sink
            )
        )

    def _config(
        self, config: ConfigLike, thread_id: ThreadId = None, context: Any = None
    ) -> RunnableConfig:
        cfg = ensure_config(config, thread_id=thread_id)
        if context is not None:
            cfg = cfg.model_copy(
                update={"context": coerce_context(self.plan.context_schema, context)}
            )
        store = self.plan.store
        if store is not None and cfg.store is None:
            # a store the caller (or a parent graph) passed wins over the compiled one
            cfg = cfg.model_copy(update={"store": store})
        return cfg

    # -- public run API --------------------------------------------------------------

    def invoke(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        thread_id: ThreadId = None,
        progress: bool = False,
        durability: str | None = None,
        context: Any = None,
    ) -> dict[str, Any]:
        """Run the graph to the end (or to an interrupt) and return the final state.

        Args:
            input: a dict of state keys; ``None`` to continue a paused thread;
                ``Command(resume=answer)`` to answer an ``interrupt()``.
            config: a :class:`RunnableConfig` or a dict with its keys.
            thread_id: shortcut for ``config={"thread_id": ...}`` (an ``int`` or a
                ``UUID`` is taken as its text).
            context: the run's context object (a user id, a database handle): nodes
                read it as ``runtime.context``, never stored. A dict becomes the graph's
                ``context_schema`` type.
            progress: show the current node, tool and elapsed time while it runs (in
                Jupyter one output updated in place; in a terminal a status line).
            durability: ``"sync"``, ``"exit"`` or ``"async"`` for this run (default:
                the graph's ``compile(durability=)``); see docs/graphs.md, "Durability".

        Example::

            app.invoke({"count": 0}, {"thread_id": "t1"})
        """
        if progress:
            from graphagent.observability import progress as show

            with show():
                return self.invoke(
                    input, config, thread_id=thread_id, context=context, durability=durability
                )
        cfg = self._config(config, thread_id, context)
        if self._inside_run(cfg):
            return self.run_nested(input, cfg)[0]
        plan = self.plan
        program = run_program(plan, input, cfg, frozenset(), durability=durability)
        events = drive(program, plan.saver)
        return result_of(watched(events, plan, cfg, False, input))  # type: ignore[no-any-return]

    async def ainvoke(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        thread_id: ThreadId = None,
        progress: bool = False,
        durability: str | None = None,
        context: Any = None,
    ) -> dict[str, Any]:
        """Async :meth:`invoke`; async nodes and async savers are awaited natively."""
        if progress:
            from graphagent.observability import progress as show

            with show():
                return await self.ainvoke(
                    input, config, thread_id=thread_id, context=context, durability=durability
                )
        cfg = self._config(config, thread_id, context)
        if self._inside_run(cfg):
            return (await self.arun_nested(input, cfg))[0]
        plan = self.plan
        program = run_program(plan, input, cfg, frozenset(), durability=durability)
        events = adrive(program, plan.saver)
        return await _aresult_of(awatched(events, plan, cfg, False, input))  # type: ignore[no-any-return]

    def runs_nested(self, config: ConfigLike = None) -> bool:
        """Whether a run with ``config`` started here would run nested in the node of a
        running graph that calls it (same thread), as a subgraph does."""
        return self._inside_run(ensure_config(config))

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
        thread_id: ThreadId = None,
        stream_mode: str | Sequence[str] | None = None,
        durability: str | None = None,
        context: Any = None,
        subgraphs: bool = False,
    ) -> Iterator[Any]:
        """Run the graph, yielding events as they happen.

        Modes: ``"updates"`` (``{node: update}`` per node per step), ``"values"`` (the
        whole state after the input and after each step), ``"custom"`` (what nodes
        pass to ``config.writer``, as they write it), ``"messages"`` (model tokens, from
        agents), ``"debug"`` (tasks and checkpoints). A list of modes yields
        ``(mode, payload)`` pairs.

        ``subgraphs=True``: events of graphs run in nodes too, each as ``(namespace,
        [mode,] payload)`` (``()`` this graph, ``("node:task_id", ...)`` a subgraph).

        Example::

            for update in app.stream({"count": 0}):
                print(update)
        """
        modes, pairs = parse_modes(stream_mode or mode)
        cfg = self._config(config, thread_id, context)
        events = drive(self._program(input, cfg, modes, durability, subgraphs), self.plan.saver)
        show = Shown(modes, pairs, subgraphs)
        # closed with this stream: a consumer that stops early ends the run here
        with contextlib.closing(watched(events, self.plan, cfg, False, input)) as run:
            for m, payload in run:
                if (event := show(m, payload)) is not SKIP:
                    yield event

    async def astream(
        self,
        input: Any,
        config: ConfigLike = None,
        *,
        mode: str | Sequence[str] = "updates",
        thread_id: ThreadId = None,
        stream_mode: str | Sequence[str] | None = None,
        durability: str | None = None,
        context: Any = None,
        subgraphs: bool = False,
    ) -> AsyncGenerator[Any, None]:
        """Async :meth:`stream`."""
        modes, pairs = parse_modes(stream_mode or mode)
        cfg = self._config(config, thread_id, context)
        events = adrive(self._program(input, cfg, modes, durability, subgraphs), self.plan.saver)
        show = Shown(modes, pairs, subgraphs)
        # closed with this stream, not later by the garbage collector: aclose() returns
        # once the step it stopped is cancelled and what finished is stored
        async with contextlib.aclosing(awatched(events, self.plan, cfg, False, input)) as run:
            async for m, payload in run:
                if (event := show(m, payload)) is not SKIP:
                    yield event

    # -- as a node of another graph ----------------------------------------------------

    def run_nested(
        self, input: Mapping[str, Any], config: RunnableConfig
    ) -> tuple[dict[str, Any], dict[str, Change]]:
        """Run inside another graph's node: no checkpoints of its own, interrupts and
        errors pass up. Returns the final values and the changes the run made."""
        net: dict[str, Change] = {}
        plan = self.plan
        stream = streamed()
        modes = stream[1] if stream is not None else frozenset()
        events = drive(run_program(plan, input, config, modes, net=net), plan.saver)
        run = watched(events, plan, config, True, input)
        return (forward(run, stream[0]) if stream else result_of(run)), net

    async def arun_nested(
        self, input: Mapping[str, Any], config: RunnableConfig
    ) -> tuple[dict[str, Any], dict[str, Change]]:
        """Async :meth:`run_nested`."""
        net: dict[str, Change] = {}
        plan = self.plan
        stream = streamed()
        modes = stream[1] if stream is not None else frozenset()
        events = adrive(run_program(plan, input, config, modes, net=net), plan.saver)
        run = awatched(events, plan, config, True, input)
        return (await aforward(run, stream[0]) if stream else await _aresult_of(run)), net

    def as_node_function(
        self, parent: Schema | None = None
    ) -> Callable[[OverAllState, RunnableConfig], dict[str, Any]]:
        """This graph as a node function for a parent graph (used by ``add_node``)."""

        def run_subgraph(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
            values, net = self.run_nested(self._sub_input(state), config)
            return self.net_update(net, values, parent, state)

        return run_subgraph

    def as_async_node_function(
        self, parent: Schema | None = None
    ) -> Callable[[OverAllState, RunnableConfig], Awaitable[dict[str, Any]]]:
        """Async :meth:`as_node_function` (what ``ainvoke`` and ``astream`` run)."""

        async def arun_subgraph(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
            values, net = await self.arun_nested(self._sub_input(state), config)
            return self.net_update(net, values, parent, state)

        return arun_subgraph

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
            strategy = parent.strategies.get(key, parent.fallback) if parent is not None else None
            replaces = strategy is None or strategy.replaces
            update[key] = payload if kind == "append" and not replaces else values[key]
        return update

    # -- threads: state, history, updates -----------------------------------------------

    def _need_saver(self, what: str) -> CheckpointSaver:
        if self.plan.saver is None:
            raise UserError(f"{what} needs a saver: compile(saver=MemorySaver()) or RedisSaver")
        return self.plan.saver

    def _thread(self, config: ConfigLike, thread_id: ThreadId, what: str) -> RunnableConfig:
        cfg = self._config(config, thread_id)
        if cfg.thread_id is None:
            raise UserError(f"{what} needs a thread_id: pass config={{'thread_id': ...}}")
        return cfg

    def _stored(
        self, config: ConfigLike, thread_id: ThreadId, what: str
    ) -> tuple[CheckpointSaver, str, RunnableConfig]:
        """The saver, the thread id and the config for a thread API call, or a clear error."""
        saver = self._need_saver(what)
        cfg = self._thread(config, thread_id, what)
        assert cfg.thread_id is not None
        return saver, cfg.thread_id, cfg

    def get_state(
        self, config: ConfigLike = None, *, thread_id: ThreadId = None, subgraphs: bool = False
    ) -> StateSnapshot:
        """The thread's latest state (or the one at ``config.checkpoint_id``); with
        ``checkpoint_ns``, the subgraph's paused there. ``subgraphs``: each task of a paused
        subgraph carries its own snapshot in ``tasks[i].state`` (nested ones too)."""
        saver, thread, cfg = self._stored(config, thread_id, "get_state")
        with saver_errors():
            cp = saver.get(thread, cfg.checkpoint_id)
        return snapshot_of(cp, cfg, self, subgraphs)

    async def aget_state(
        self, config: ConfigLike = None, *, thread_id: ThreadId = None, subgraphs: bool = False
    ) -> StateSnapshot:
        """Async :meth:`get_state`."""
        saver, thread, cfg = self._stored(config, thread_id, "get_state")
        with saver_errors():
            cp = await saver.aget(thread, cfg.checkpoint_id)
        return snapshot_of(cp, cfg, self, subgraphs)

    def get_state_history(
        self,
        config: ConfigLike = None,
        *,
        limit: int | None = None,
        before: str | None = None,
        thread_id: ThreadId = None,
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
        thread_id: ThreadId = None,
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
        thread's next nodes become that node's successors; without it, at a breakpoint
        the node that ran last is meant (its edges evaluated again). With
        ``checkpoint_ns`` (a task's ``state.config``), the values go into that paused
        subgraph's own state.

        Returns:
            a config pointing at the new checkpoint.
        """
        saver = self._need_saver("update_state")
        cfg = self._thread(config, None, "update_state")
        checkpoint_id = result_of(drive(update_program(self.plan, cfg, values, as_node), saver))
        return cfg.model_copy(update={"checkpoint_id": checkpoint_id})

    async def aupdate_state(
        self,
        config: ConfigLike,
        values: Mapping[str, Any] | None,
        as_node: str | None = None,
    ) -> RunnableConfig:
        """Async :meth:`update_state`."""
        saver = self._need_saver("update_state")
        cfg = self._thread(config, None, "update_state")
        program = update_program(self.plan, cfg, values, as_node)
        checkpoint_id = await _aresult_of(adrive(program, saver))
        return cfg.model_copy(update={"checkpoint_id": checkpoint_id})

    def delete_thread(self, config: ConfigLike = None, *, thread_id: ThreadId = None) -> None:
        """Forget everything saved for the thread."""
        saver, thread, _ = self._stored(config, thread_id, "delete_thread")
        with saver_errors():
            saver.delete_thread(thread)

    async def adelete_thread(
        self, config: ConfigLike = None, *, thread_id: ThreadId = None
    ) -> None:
        """Async :meth:`delete_thread`."""
        saver, thread, _ = self._stored(config, thread_id, "delete_thread")
        with saver_errors():
            await saver.adelete_thread(thread)

    # -- looking at it -------------------------------------------------------------------

    @property
    def graph(self) -> nx.DiGraph[str]:
        """A copy of the topology (node attr ``kind``; edge attrs ``conditional``, ``label``)."""
        return self.plan.topology.digraph.copy()

    @property
    def nodes(self) -> tuple[str, ...]:
        """The node names, in the order they were added."""
        return tuple(self.plan.topology.nodes)

    def draw(
        self,
        fmt: str = "svg",
        *,
        thread_id: ThreadId = None,
        config: ConfigLike = None,
    ) -> Drawing:
        """The graph as ``"svg"``, ``"mermaid"``, ``"dot"``, ``"plantuml"`` or ``"ascii"`` text
        (offline).

        With ``thread_id`` (or a ``config`` naming a thread, and optionally a
        ``checkpoint_id``), the SVG shows that thread's run: the path taken, with counts on
        edges taken more than once, the current and next nodes, and a pause waiting for an
        answer. The result is a ``str`` that Jupyter shows in its format.
        """
        if thread_id is None and config is None:
            return draw(self.plan, fmt)
        cfg = self._stored(config, thread_id, "draw")[2]
        overlay = run_overlay(
            self.plan.topology.digraph, self.get_state(cfg), self.get_state_history(cfg)
        )
        return draw(self.plan, fmt, overlay)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        # SVG only: JupyterLab ranks text/vnd.mermaid above SVG, so offering Mermaid here
        # made every graph render through Mermaid; draw("mermaid") opts in to it
        return svg_bundle(draw(self.plan, "svg"), repr(self))

    def __repr__(self) -> str:
        saver = type(self.saver).__name__ if self.saver is not None else "no saver"
        return f"<CompiledGraph {self.name!r}: {len(self.plan.topology.nodes)} nodes, {saver}>"
