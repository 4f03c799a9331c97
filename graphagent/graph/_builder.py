"""``StateGraph``: the builder. ``compile()`` validates it and freezes a ``CompiledGraph``."""

from __future__ import annotations

import itertools
import typing
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from checkpoint.base import CheckpointSaver
from checkpoint.cache import BaseCache
from graphagent._executor import executor_of
from graphagent.errors import GraphValidationError
from graphagent.graph._annotations import (
    command_destinations,
    literal_destinations,
    returns_sends,
)
from graphagent.graph._compiled import CompiledGraph
from graphagent.graph._constants import END, RESERVED, START
from graphagent.graph._control import managed_keys
from graphagent.graph._inject import (
    injected,
    input_class,
    is_state_class,
    node_view,
    with_injected,
    with_view,
)
from graphagent.graph._listen import listener_observers
from graphagent.graph._nodes import Branch, Join, NodeSpec, accepts_config, is_async_callable
from graphagent.graph._plan import Plan, StoredCheck
from graphagent.graph._policies import CachePolicy, RetryPolicy
from graphagent.graph._saving import durability_of
from graphagent.graph._state import Schema, parse_schema
from graphagent.graph._validate import validate

__all__ = ["StateGraph"]


class StateGraph:
    """Build a graph of nodes over a shared state; ``compile()`` it to run it.

    Args:
        schema: the state's keys and how updates merge: a dict of key -> strategy
            (keys not named replace), or a TypedDict / pydantic model / dataclass whose
            fields use ``Annotated[T, strategy]``. ``None`` means every key replaces.
            (``state_schema=`` is the same, by LangGraph's name.)
        input_schema: a class naming the keys graph input may set; other input keys are
            dropped. Its keys join the state.
        output_schema: a class naming the keys a run returns (and ``"values"`` stream
            events show). Its keys join the state.
        context_schema: the type of the run's context object: ``invoke(...,
            context={...})`` turns a dict into it (a dataclass or pydantic model; a
            TypedDict is kept as the dict). Nodes read it as ``runtime.context``.
        default_strategy: how keys the schema does not name merge (Spring AI Alibaba's
            default key strategy; ``ReplaceStrategy()`` unless given). An open schema's
            only: a class schema refuses keys it does not name.

    Example:
        >>> from graphagent.graph import StateGraph, START, END, AppendStrategy
        >>> g = StateGraph({"log": AppendStrategy()})
        >>> g = g.add_node("a", lambda s: {"log": "a"}).add_node("b", lambda s: {"log": "b"})
        >>> app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile()
        >>> app.invoke({"log": []})["log"]
        ['a', 'b']
    """

    def __init__(
        self,
        schema: Any = None,
        *,
        state_schema: Any = None,
        input_schema: Any = None,
        output_schema: Any = None,
        context_schema: Any = None,
        default_strategy: Any = None,
    ) -> None:
        if schema is not None and state_schema is not None:
            raise GraphValidationError("pass the state schema once: schema or state_schema=")
        schema = state_schema if schema is None else schema
        self.schema = parse_schema(schema, default_strategy)
        self.state_class = schema if isinstance(schema, type) else None
        self.context_schema = context_schema
        if input_schema is not None:
            self.schema.input_keys = frozenset(self._join(input_schema).strategies)
        if output_schema is not None:
            self.schema.output_keys = frozenset(self._join(output_schema).strategies)
        self.managed = managed_keys(schema)  # RemainingSteps / IsLastStep keys
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: list[tuple[str, str]] = []
        self.joins: list[Join] = []
        self.races: dict[str, str] = {}
        self.branches: list[Branch] = []
        self.commands: list[tuple[str, str]] = []
        self._problems: list[str] = []

    def _join(self, cls: Any) -> Schema:
        """Take ``cls``'s keys into the state (an input, output or node schema)."""
        other = parse_schema(cls)
        self.schema.add(other)
        return other

    def _prepare(self, fn: Callable[..., Any]) -> tuple[Callable[..., Any], bool]:
        """A node function as the engine calls it, and whether it takes the config:
        ``store`` / ``runtime`` parameters injected, an annotated input class applied."""
        names = injected(fn)
        call = with_injected(fn, names) if names else fn
        takes_config = bool(names) or accepts_config(fn)
        cls = input_class(fn, self.state_class)
        if cls is None or (cls is self.state_class and not _builds(cls)):
            return call, takes_config
        narrow = cls is not self.state_class
        if narrow:
            self._join(cls)
        return with_view(call, node_view(cls, narrow), takes_config), True

    def _sub_builder(self, name: Any, builder: StateGraph) -> CompiledGraph | None:
        """An uncompiled graph given as a node: compiled here (its own schema and
        strategies, no saver of its own), or its problems added to this graph's."""
        try:
            return builder.compile(name=str(name))
        except GraphValidationError as exc:
            self._problems.append(f"node {name!r} (an uncompiled StateGraph): {exc}")
            return None

    def add_node(
        self,
        name: str | Callable[..., Any],
        fn: Callable[..., Any] | Any = None,
        *,
        kind: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        destinations: Sequence[str] = (),
        afn: Callable[..., Any] | None = None,
        retry: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache: CachePolicy | None = None,
        defer: bool = False,
        retry_policy: RetryPolicy | Sequence[RetryPolicy] | None = None,
        cache_policy: CachePolicy | None = None,
        executor: Any = None,
    ) -> StateGraph:
        """Add a node: ``fn(state)`` or ``fn(state, config)``, sync or async, or a compiled graph.

        ``add_node(fn)`` names the node after the function. The callable returns a
        partial update (dict), ``None``, or a :class:`Command`.

        Args:
            name: the node's name (or the function, named after itself).
            fn: the callable, a compiled graph to run as a subgraph, an uncompiled
                ``StateGraph`` (compiled here, run as a subgraph with its own
                strategies), or an agent (which runs as its graph, ``agent.graph``).
            kind: what the node is, for drawing (``"node"`` unless given).
            metadata: free-form details kept on the node.
            destinations: nodes this node may jump to with ``Command(goto=...)``;
                declared so that validation and drawing know those paths exist. A
                return annotation ``-> Command[Literal["b", "c"]]`` declares them too.
            afn: an async twin of ``fn`` (same arguments), used when the graph runs
                under ``ainvoke``/``astream``.
            retry: retry the node when it fails (:class:`RetryPolicy`, or a list: the
                first whose ``retry_on`` takes the error applies); overrides the graph's
                ``compile(retry=...)``. ``retry_policy=`` is LangGraph's name.
            cache: reuse the node's result for an equal input (:class:`CachePolicy`;
                needs ``compile(cache=...)``). ``cache_policy=`` is LangGraph's name.
            defer: run the node only once nothing else is due: the collect step after
                a fan-out whose branches take different numbers of steps.
            executor: where this node runs when it runs beside others in a step (and
                a sync node under ``ainvoke``): a number of worker threads (a shared pool
                of that size) or a ``concurrent.futures.ThreadPoolExecutor``. Default:
                the graph's (``compile(executor=...)``), else the shared 16-worker pool.
        """
        if fn is None and callable(name):
            fn, name = name, getattr(name, "__name__", "")
        fn = _agent_graph(fn)
        if isinstance(fn, StateGraph):
            fn = self._sub_builder(name, fn)
            if fn is None:
                return self
        if not isinstance(name, str) or not name:
            self._problems.append(f"node {name!r}: a node needs a non-empty string name")
            return self
        if name in RESERVED:
            self._problems.append(
                f"node {name!r}: the name is reserved for the graph's ends; rename the node"
            )
            return self
        if name in self.nodes:
            self._problems.append(
                f"node {name!r}: added twice; node names must be unique, rename one"
            )
            return self
        policies = self._policies(name, retry or retry_policy, cache or cache_policy, defer)
        declared = destinations or (command_destinations(fn) if callable(fn) else ())
        self.commands.extend((name, d) for d in declared)
        if isinstance(fn, CompiledGraph):
            self.nodes[name] = NodeSpec(
                name,
                fn.as_node_function(self.schema),
                is_async=False,
                takes_config=True,
                kind="subgraph",
                subgraph=fn.plan,
                metadata=metadata,
                afn=fn.as_async_node_function(self.schema),
                **policies,
                executor=self._executor(f"node {name!r}", executor),
            )
            return self
        if not callable(fn):
            self._problems.append(f"node {name!r}: {fn!r} is not callable; pass a function")
            return self
        is_async = is_async_callable(fn)
        call, takes_config = self._prepare(fn)
        if afn is not None:
            acall, atakes = self._prepare(afn)
            if atakes != takes_config:  # the engine calls both the same way
                afn = acall if atakes else with_view(afn, lambda s: s, False)
                call = call if takes_config else with_view(fn, lambda s: s, False)
                takes_config = True
            else:
                afn = acall
        self.nodes[name] = NodeSpec(
            name,
            call,
            is_async=is_async,
            takes_config=takes_config,
            kind=kind or "node",
            metadata=metadata,
            afn=afn,
            **policies,
            executor=self._executor(f"node {name!r}", executor),
        )
        return self

    def _policies(self, name: str, retry: Any, cache: Any, defer: Any) -> dict[str, Any]:
        """A node's retry and cache policies and its defer flag, checked."""
        if isinstance(retry, RetryPolicy):
            retry = (retry,)
        elif retry is not None:
            retry = tuple(retry) if isinstance(retry, (list, tuple)) else (retry,)
            if not retry or not all(isinstance(p, RetryPolicy) for p in retry):
                self._problems.append(
                    f"node {name!r}: retry= takes a RetryPolicy (or a list of them, the "
                    f"first whose retry_on takes an error applies), got {retry!r}"
                )
                retry = None
        if cache is not None and not isinstance(cache, CachePolicy):
            self._problems.append(f"node {name!r}: cache= takes a CachePolicy, got {cache!r}")
            cache = None
        return {"retry": retry, "cache": cache, "defer": bool(defer)}

    def add_sequence(
        self, nodes: Sequence[Callable[..., Any] | tuple[str, Callable[..., Any]]]
    ) -> StateGraph:
        """Add nodes that run one after the other, with an edge from each to the next.

        Each item is a function (the node is named after it) or a ``(name, fn)`` pair.
        Add the edge into the first and out of the last yourself.

        Example:
            >>> from graphagent.graph import StateGraph, START, END
            >>> def a(s): return {"x": s["x"] + 1}
            >>> def b(s): return {"x": s["x"] * 10}
            >>> g = StateGraph().add_sequence([a, ("times", b)])
            >>> g.add_edge(START, "a").add_edge("times", END).compile().invoke({"x": 1})
            {'x': 20}
        """
        if not nodes:
            self._problems.append("add_sequence: the sequence is empty; give it nodes")
            return self
        names: list[str] = []
        for item in nodes:
            if isinstance(item, tuple):
                name, fn = item
            else:
                name, fn = getattr(item, "__name__", ""), item
            self.add_node(name, fn)
            names.append(name)
        for a, b in itertools.pairwise(names):
            self.add_edge(a, b)
        return self

    def _executor(self, where: str, value: Any) -> Any:
        try:
            return executor_of(value)
        except TypeError as exc:
            self._problems.append(f"{where}: {exc}")
            return None

    def add_edge(
        self, source: str | Sequence[str], target: str, *, aggregation: str = "all_of"
    ) -> StateGraph:
        """Add an edge. A list of sources is a join: ``target`` waits for all of them.

        With ``aggregation="any_of"`` (Spring AI Alibaba's ``NodeAggregationStrategy``)
        the sources race instead: when several of them run in one step, the first to
        finish without failing wins, the others are dropped (cancelled under
        ``ainvoke``), and ``target`` runs next on the winner's update alone. A source
        that runs in a step of its own simply leads to ``target``.
        """
        if aggregation not in ("all_of", "any_of"):
            self._problems.append(
                f"edge to {target!r}: aggregation={aggregation!r}; use 'all_of' (wait for "
                "every source) or 'any_of' (the first to finish)"
            )
            return self
        if isinstance(source, str):
            self.edges.append((source, target))
            return self
        sources = tuple(dict.fromkeys(source))
        if not sources:
            self._problems.append(f"edge to {target!r}: the list of sources is empty")
        elif aggregation == "any_of":
            for name in sources:
                if self.races.get(name, target) != target:
                    self._problems.append(
                        f"node {name!r} races for both {self.races[name]!r} and {target!r}; "
                        "a node can race in one any_of join only"
                    )
                self.races[name] = target
                self.edges.append((name, target))
        elif len(sources) == 1:
            self.edges.append((sources[0], target))
        else:
            self.joins.append(Join(sources, target))
        return self

    def add_conditional_edges(
        self,
        source: str,
        router: Callable[..., Any],
        path_map: Mapping[Hashable, str] | Iterable[str] | None = None,
    ) -> StateGraph:
        """Route from ``source`` by ``router(state)`` (or ``router(state, config)``).

        The router is handed what a node is: the config as its second parameter or as a
        keyword-only ``config``, the store to a parameter named ``store``, the runtime to
        one named ``runtime``.

        The router returns a key of ``path_map``, a node name (when there is no map),
        ``END``, or a list of those to fan out; or :class:`Send` objects, one task each
        (a router annotated ``-> list[Send]`` has its edges drawn as fan-out edges; a
        path map lists the nodes it sends to, for validation and drawing). A list
        ``path_map`` means each name maps to itself. A router annotated
        ``-> Literal["b", "c"]`` needs no map: the annotation names its targets.
        """
        if is_async_callable(router):
            self._problems.append(
                f"conditional edges from {source!r}: the router must be a plain function; "
                "do async work in a node and route on its result"
            )
            return self
        mapping: Mapping[Any, str] | None
        if path_map is None:
            literal = literal_destinations(router)
            mapping = {name: name for name in literal} if literal else None
        elif isinstance(path_map, Mapping):
            mapping = dict(path_map)
        else:
            mapping = {name: name for name in path_map}
        fan_out = returns_sends(router)
        # the config, a store and a runtime reach a router as they reach a node
        names = injected(router)
        call = with_injected(router, names) if names else router
        takes_config = bool(names) or accepts_config(router)
        self.branches.append(Branch(source, call, takes_config, mapping, fan_out))
        return self

    def set_entry_point(self, node: str) -> StateGraph:
        """Same as ``add_edge(START, node)``."""
        return self.add_edge(START, node)

    def set_finish_point(self, node: str) -> StateGraph:
        """Same as ``add_edge(node, END)``."""
        return self.add_edge(node, END)

    def compile(
        self,
        saver: CheckpointSaver | None = None,
        *,
        interrupt_before: Sequence[str] | str = (),
        interrupt_after: Sequence[str] | str = (),
        interrupt_before_edge: bool = False,
        executor: Any = None,
        name: str = "graph",
        checkpointer: CheckpointSaver | bool | None = None,
        agent: Any = None,
        stored_check: StoredCheck | None = None,
        edge_notes: Mapping[str, str] | None = None,
        store: Any = None,
        cache: BaseCache | None = None,
        retry: RetryPolicy | None = None,
        durability: str = "sync",
        listeners: Sequence[Any] = (),
    ) -> CompiledGraph:
        """Validate the graph and freeze it into a runnable :class:`CompiledGraph`.

        Args:
            saver: where threads are checkpointed (``MemorySaver()``, ``RedisSaver``).
            interrupt_before: pause before these nodes run (``"*"`` for all).
            interrupt_after: pause after these nodes run (``"*"`` for all).
            interrupt_before_edge: a pause after a node comes before its conditional
                edges are taken: they are taken when the run continues, on the state as
                it is then (edit it with ``update_state`` to steer the route). Spring AI
                Alibaba's ``interruptBeforeEdge``.
            executor: where nodes that run beside others in a step run (and sync nodes
                under ``ainvoke``), unless a node names its own: a number of worker
                threads (a shared pool of that size) or a
                ``concurrent.futures.ThreadPoolExecutor``. Default: the shared 16-worker
                pool.
            name: the graph's name, used when drawing.
            checkpointer: LangGraph's name for ``saver``. ``False`` is the same as no
                saver: the graph never checkpoints a thread of its own (run inside a
                parent graph it still pauses and resumes with the parent's thread).
                ``True`` (a subgraph keeping its own state across calls) is refused.
            store: long-term memory shared across threads (``MemoryStore()``,
                ``RedisStore.from_url(...)``): a node parameter named ``store`` receives
                it, and ``config.store`` holds it (subgraphs use their parent's).
            agent: the agent whose graph this is: traces name its runs after it
                (``invoke_agent``). Agents pass themselves; leave it out otherwise.
            stored_check: called with a stored thread's values before a run continues
                the thread; returns why this graph cannot continue it (the run refuses,
                with that message) or ``None``. Agents use it to refuse old layouts.
            edge_notes: what conditional edges' labels mean, by label; drawings print
                the notes of the labels they show as a key (an agent explains ``again``).
            cache: where nodes with a :class:`CachePolicy` keep their results
                (``MemoryCache()``, ``SqliteCache(path)``, ``RedisCache.from_url(url)``);
                shared by every thread and run of the graph.
            retry: the :class:`RetryPolicy` of every node that has none of its own.
            durability: when runs store their steps: ``"sync"`` (each step as it
                commits, the default), ``"exit"`` (one checkpoint when the run ends,
                pauses or fails) or ``"async"`` (a step's write runs beside the next
                step; a failed write ends the run at the next write); a run may
                override it (``invoke(..., durability=)``).
            listeners: :class:`GraphLifecycleListener` objects told of every run's
                start, nodes (with their input and update), errors and end.

        Raises:
            GraphValidationError: every problem found, each naming the node and the fix;
                a saver that is not a :class:`~checkpoint.CheckpointSaver`.
        """
        pool = self._executor("compile(executor=...)", executor)
        problems = list(self._problems)
        if retry is not None and not isinstance(retry, RetryPolicy):
            problems.append(f"compile(retry=...) takes a RetryPolicy, got {retry!r}")
        if cache is not None and not isinstance(cache, BaseCache):
            problems.append(
                f"compile(cache=...) takes a cache (MemoryCache(), SqliteCache(path), "
                f"RedisCache...), got {type(cache).__name__}"
            )
        topology = validate(self, problems, interrupt_before, interrupt_after)
        if pool is not None or self.races:
            nodes = {n: _frozen_node(s, pool, self.races.get(n)) for n, s in topology.nodes.items()}
            topology = replace(topology, nodes=nodes)
            for source, target in self.races.items():  # drawn as what they are
                topology.digraph.edges[source, target]["label"] = "any of"
        if saver is not None and checkpointer is not None:
            raise GraphValidationError("pass either saver= or checkpointer=, not both")
        if isinstance(retry, RetryPolicy):
            nodes = topology.nodes
            for key, spec in nodes.items():
                if spec.retry is None:
                    nodes[key] = replace(spec, retry=(retry,))
        plan = Plan(
            name=name,
            schema=self.schema,
            topology=topology,
            saver=_saver(saver if saver is not None else checkpointer),
            interrupt_before=_names(interrupt_before, self.nodes),
            interrupt_after=_names(interrupt_after, self.nodes),
            stored_check=stored_check,
            agent=agent,
            edge_notes=MappingProxyType(dict(edge_notes or {})),
            store=store,
            cache=cache,
            durability=durability_of(durability),
            deferred=frozenset(n for n, spec in topology.nodes.items() if spec.defer),
            managed=MappingProxyType(dict(self.managed)),
            context_schema=self.context_schema,
            interrupt_before_edge=interrupt_before_edge,
            listeners=listener_observers(listeners, "compile(listeners=...)"),
        )
        return CompiledGraph(plan)


def _saver(value: Any) -> CheckpointSaver | None:
    """The saver ``compile()`` was given, or a clear error for what cannot be one."""
    if value is None or value is False:
        return None
    if value is True:
        raise GraphValidationError(
            "compile(checkpointer=True) asks for a subgraph that keeps its own state across "
            "calls on the parent's thread, which graphagent does not have: compile it with "
            "a saver of its own and call it on a thread of its own inside the node "
            "(sub.invoke(input, {'thread_id': ...})), or keep that state in the parent's keys"
        )
    if not isinstance(value, CheckpointSaver):
        raise GraphValidationError(
            f"compile(saver=...) takes a CheckpointSaver (MemorySaver(), SqliteSaver(...), "
            f"RedisSaver...), got {type(value).__name__}"
        )
    return value


def _frozen_node(spec: NodeSpec, pool: Any, race: str | None) -> NodeSpec:
    """A node as ``compile()`` freezes it: the graph's executor unless it has its own,
    and the ``any_of`` join it races for."""
    if (spec.executor is not None or pool is None) and race is None:
        return spec
    return replace(spec, executor=spec.executor or pool, race=race)


def _builds(cls: type) -> bool:
    """Whether a node annotated with ``cls`` is handed an instance of it (a pydantic
    model or a dataclass) rather than the state mapping."""
    return is_state_class(cls) and not typing.is_typeddict(cls)


def _agent_graph(fn: Any) -> Any:
    """An agent given as a node stands for its graph (``agent.graph``)."""
    graph = getattr(fn, "graph", None)
    if not callable(fn) and isinstance(graph, CompiledGraph):
        return graph
    return fn


def _names(spec: Sequence[str] | str, nodes: Mapping[str, NodeSpec]) -> frozenset[str]:
    if spec == "*":
        return frozenset(nodes)
    return frozenset([spec] if isinstance(spec, str) else spec)
