"""``StateGraph``: the builder. ``compile()`` validates it and freezes a ``CompiledGraph``."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from checkpoint.base import CheckpointSaver
from graphagent.errors import GraphValidationError
from graphagent.graph._annotations import command_destinations, literal_destinations
from graphagent.graph._compiled import CompiledGraph
from graphagent.graph._constants import END, RESERVED, START
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
        )
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
        ``END``, or a list of those to fan out. A list ``path_map`` means each name maps
        to itself. A router annotated ``-> Literal["b", "c"]`` needs no map: the
        annotation names its targets.
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
        self.branches.append(Branch(source, router, accepts_config(router), mapping))
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
            listeners: :class:`GraphLifecycleListener` objects told of every run's
                start, nodes (with their input and update), errors and end.

        Raises:
            GraphValidationError: every problem found, each naming the node and the fix;
                a saver that is not a :class:`~checkpoint.CheckpointSaver`.
        """
        topology = validate(self, self._problems, interrupt_before, interrupt_after)
        if saver is not None and checkpointer is not None:
            raise GraphValidationError("pass either saver= or checkpointer=, not both")
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
