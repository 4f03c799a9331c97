"""``StateGraph``: the builder. ``compile()`` validates it and freezes a ``CompiledGraph``."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from checkpoint.base import CheckpointSaver
from checkpoint.cache import BaseCache
from graphagent.errors import GraphValidationError
from graphagent.graph._annotations import (
    command_destinations,
    literal_destinations,
    returns_sends,
)
from graphagent.graph._compiled import CompiledGraph
from graphagent.graph._constants import END, RESERVED, START
from graphagent.graph._control import managed_keys
from graphagent.graph._listen import listener_observers
from graphagent.graph._nodes import (
    Branch,
    Join,
    NodeSpec,
    accepts_config,
    is_async_callable,
    wants_store,
    with_store,
)
from graphagent.graph._plan import Plan, StoredCheck
from graphagent.graph._policies import CachePolicy, RetryPolicy
from graphagent.graph._saving import durability_of
from graphagent.graph._state import parse_schema
from graphagent.graph._validate import validate

__all__ = ["StateGraph"]


class StateGraph:
    """Build a graph of nodes over a shared state; ``compile()`` it to run it.

    Args:
        schema: the state's keys and how updates merge: a dict of key -> strategy
            (keys not named replace), or a TypedDict / pydantic model whose fields use
            ``Annotated[T, strategy]``. ``None`` means every key replaces.

    Example:
        >>> from graphagent.graph import StateGraph, START, END, AppendStrategy
        >>> g = StateGraph({"log": AppendStrategy()})
        >>> g = g.add_node("a", lambda s: {"log": "a"}).add_node("b", lambda s: {"log": "b"})
        >>> app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile()
        >>> app.invoke({"log": []})["log"]
        ['a', 'b']
    """

    def __init__(self, schema: Any = None) -> None:
        self.schema = parse_schema(schema)
        self.managed = managed_keys(schema)  # RemainingSteps / IsLastStep keys
        self.nodes: dict[str, NodeSpec] = {}
        self.edges: list[tuple[str, str]] = []
        self.joins: list[Join] = []
        self.branches: list[Branch] = []
        self.commands: list[tuple[str, str]] = []
        self._problems: list[str] = []

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
    ) -> StateGraph:
        """Add a node: ``fn(state)`` or ``fn(state, config)``, sync or async, or a compiled graph.

        ``add_node(fn)`` names the node after the function. The callable returns a
        partial update (dict), ``None``, or a :class:`Command`.

        Args:
            name: the node's name (or the function, named after itself).
            fn: the callable, a compiled graph to run as a subgraph, or an agent
                (which runs as its graph, ``agent.graph``).
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
        """
        if fn is None and callable(name):
            fn, name = name, getattr(name, "__name__", "")
        fn = _agent_graph(fn)
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
            )
            return self
        if not callable(fn):
            self._problems.append(f"node {name!r}: {fn!r} is not callable; pass a function")
            return self
        if wants_store(fn):
            fn = with_store(fn)
            afn = with_store(afn) if afn is not None and wants_store(afn) else afn
        self.nodes[name] = NodeSpec(
            name,
            fn,
            is_async=is_async_callable(fn),
            takes_config=accepts_config(fn) or wants_store(fn),
            kind=kind or "node",
            metadata=metadata,
            afn=afn,
            **policies,
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

    def add_edge(self, source: str | Sequence[str], target: str) -> StateGraph:
        """Add an edge. A list of sources is a join: ``target`` waits for all of them."""
        if isinstance(source, str):
            self.edges.append((source, target))
        else:
            sources = tuple(dict.fromkeys(source))
            if not sources:
                self._problems.append(f"edge to {target!r}: the list of sources is empty")
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
        self.branches.append(Branch(source, router, accepts_config(router), mapping, fan_out))
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
        problems = list(self._problems)
        if retry is not None and not isinstance(retry, RetryPolicy):
            problems.append(f"compile(retry=...) takes a RetryPolicy, got {retry!r}")
        if cache is not None and not isinstance(cache, BaseCache):
            problems.append(
                f"compile(cache=...) takes a cache (MemoryCache(), SqliteCache(path), "
                f"RedisCache...), got {type(cache).__name__}"
            )
        topology = validate(self, problems, interrupt_before, interrupt_after)
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
