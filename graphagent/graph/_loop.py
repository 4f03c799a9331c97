"""A run's bookkeeping without I/O: merging updates, routing, checkpoint writes.

:class:`Loop` holds the state values, the step and what runs next; ``_run.Run`` moves
it from step to step, and ``update_program`` uses it for ``update_state``.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from checkpoint.base import Change, CheckpointWrite, new_checkpoint_id
from graphagent.config import RunnableConfig
from graphagent.errors import (
    InvalidRouteError,
    InvalidUpdateError,
    UserError,
)
from graphagent.graph._command import Command
from graphagent.graph._constants import END, START
from graphagent.graph._effects import Load, Put, PutWrites
from graphagent.graph._nodes import Branch
from graphagent.graph._state import OverAllState
from graphagent.graph._strategies import MISSING

if TYPE_CHECKING:
    from graphagent.graph._compiled import CompiledGraph

__all__ = ["Loop", "attach_node", "combine", "normalize", "update_program"]


def attach_node(exc: BaseException, node: str) -> BaseException:
    """Record on ``exc`` which node raised it (``exc.graphagent_node`` and a note)."""
    if getattr(exc, "graphagent_node", None) is None:
        try:
            exc.graphagent_node = node  # type: ignore[attr-defined]
        except AttributeError:  # pragma: no cover - exceptions with __slots__
            return exc
        if hasattr(exc, "add_note"):
            exc.add_note(f"(raised in graph node {node!r})")
    return exc


def combine(prev: Change | None, new: Change, merged: Any) -> Change:
    """One change for a key written twice in a step (or over a nested run)."""
    if prev is None or new.kind == "set":
        return new
    if new.kind == "append" and prev.kind == "append":
        return Change("append", [*prev.value, *new.value])
    return Change("reset", list(merged))


class Loop:
    """One run's mutable bookkeeping (state values, step, what runs next)."""

    __slots__ = (
        "barriers",
        "checkpoint_id",
        "config",
        "done",
        "graph",
        "head",
        "net",
        "next",
        "resume",
        "skip_breakpoint",
        "step",
        "values",
    )

    def __init__(self, graph: CompiledGraph, config: RunnableConfig) -> None:
        self.graph = graph
        self.config = config
        self.values: dict[str, Any] = {}
        self.step = -1
        self.next: tuple[str, ...] = ()
        self.barriers: dict[str, list[str]] = {}
        self.checkpoint_id: str | None = None
        self.head: str | None = None
        self.resume: dict[str, list[Any]] = {}
        self.done: dict[str, Any] = {}
        self.skip_breakpoint = False
        self.net: dict[str, Change] | None = None

    # -- merging -------------------------------------------------------------------

    def merge(
        self, updates: list[tuple[str, Mapping[str, Any]]]
    ) -> tuple[dict[str, Any], dict[str, Change]]:
        """Apply ``(node, update)`` pairs (already in node order) through the strategies."""
        schema = self.graph.schema
        strategies = schema.strategies
        values = dict(self.values)
        changes: dict[str, Change] = {}
        replaced: dict[str, str] = {}
        for node, update in updates:
            for key, new in update.items():
                strategy = strategies.get(key)
                if strategy is None:
                    if schema.closed:
                        raise InvalidUpdateError(
                            f"node {node!r} wrote key {key!r}, which is not in the state schema "
                            f"{schema.name} (keys: {', '.join(sorted(strategies))}); add it to "
                            "the schema or fix the key"
                        )
                    strategy = self.graph.replace
                if strategy.replaces:
                    if key in replaced:
                        raise InvalidUpdateError(
                            f"nodes {replaced[key]!r} and {node!r} both replaced key {key!r} in "
                            "the same step; give the key a merging strategy (e.g. "
                            "AppendStrategy()) or write it from one node only"
                        )
                    replaced[key] = node
                    values[key] = new
                    changes[key] = Change("set", new)
                    continue
                old = values.get(key, MISSING)
                try:
                    merged, change = strategy.merge_change(old, new)
                except (TypeError, ValueError) as exc:
                    raise InvalidUpdateError(
                        f"node {node!r}: cannot merge the update of key {key!r} with "
                        f"{strategy!r}: {exc}"
                    ) from exc
                values[key] = merged
                prev = changes.get(key)
                changes[key] = change if prev is None else combine(prev, change, merged)
        return values, changes

    # -- routing -------------------------------------------------------------------

    def route(self, ran: list[str], gotos: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
        """The nodes due after ``ran`` finished (state already merged)."""
        topo = self.graph.topology
        edges, branches, joins_by_source = topo.edges, topo.branches, topo.joins_by_source
        targets: list[str] = []
        state: OverAllState | None = None  # built for the first router only
        for node in ran:
            goto = gotos.get(node) if gotos else None
            if goto is not None:
                targets.extend(goto)
            else:
                targets.extend(edges.get(node, ()))
                for branch in branches.get(node, ()):
                    if state is None:
                        state = OverAllState(self.values, self.graph.schema.empties)
                    targets.extend(self._branch(branch, state))
            for index in joins_by_source.get(node, ()):
                join = topo.joins[index]
                seen = self.barriers.setdefault(str(index), [])
                if node not in seen:
                    seen.append(node)
                if len(seen) == len(join.sources):
                    del self.barriers[str(index)]
                    targets.append(join.target)
        nodes = topo.nodes
        if len(targets) == 1:  # the commonest case: one edge on
            target = targets[0]
            if target in nodes:
                return (target,)
        due: set[str] = set()
        for target in targets:
            if target == END:
                continue
            if target not in nodes:
                raise InvalidRouteError(
                    f"routing after {', '.join(ran)!s} named {target!r}, which is not a node; "
                    f"known nodes: {', '.join(sorted(nodes))}"
                )
            due.add(target)
        return tuple(sorted(due))

    def _branch(self, branch: Branch, state: OverAllState) -> list[str]:
        try:
            if branch.takes_config:
                picked = branch.router(state, self.config)
            else:
                picked = branch.router(state)
        except Exception as exc:
            raise attach_node(exc, branch.source) from None
        keys = list(picked) if isinstance(picked, (list, tuple, set, frozenset)) else [picked]
        if branch.path_map is None:
            return [str(k) for k in keys]
        out = []
        for key in keys:
            if key in branch.path_map:
                out.append(branch.path_map[key])
            elif key == END:
                out.append(END)
            else:
                raise InvalidRouteError(
                    f"the router after node {branch.source!r} returned {key!r}, which is not in "
                    f"its path map (keys: {', '.join(map(repr, branch.path_map))})"
                )
        return out

    # -- checkpoints ----------------------------------------------------------------

    def write(
        self, changes: dict[str, Change], source: str, ran: list[str] | None = None
    ) -> CheckpointWrite:
        """The checkpoint for the current position, as a write on top of the last one.

        ``ran`` (the nodes whose step this closes) goes into the metadata as ``nodes``, so a
        history timeline can say who wrote each checkpoint.
        """
        meta = {**self.config.metadata, "source": source, "step": self.step}
        if ran:
            meta["nodes"] = ran
        return CheckpointWrite(
            new_checkpoint_id(),
            self.checkpoint_id,
            self.step,
            changes,
            self.next,
            meta,
            time.time(),
            {"barriers": self.barriers} if self.barriers else {},
        )


def normalize(node: str, ret: Any) -> tuple[Mapping[str, Any] | None, tuple[str, ...] | None]:
    if ret is None:
        return None, None
    if type(ret) is dict or isinstance(ret, Mapping):
        return ret, None
    if isinstance(ret, Command):
        goto = ret.goto
        gotos = None if goto is None else ((goto,) if isinstance(goto, str) else tuple(goto))
        if ret.update is not None and not isinstance(ret.update, Mapping):
            raise InvalidUpdateError(
                f"node {node!r} returned Command(update={ret.update!r:.60}); update must be a dict"
            )
        return ret.update, gotos
    dump = getattr(ret, "model_dump", None)
    if dump is not None:
        return ret.model_dump(exclude_unset=True), None
    raise InvalidUpdateError(
        f"node {node!r} returned {type(ret).__name__} {ret!r:.60}; a node returns a dict of "
        "state keys to update, None, or a Command"
    )


def update_program(
    graph: CompiledGraph,
    config: RunnableConfig,
    values: Mapping[str, Any] | None,
    as_node: str | None,
) -> Generator[Any, Any, str]:
    """``update_state`` as a program: merge ``values`` as if ``as_node`` wrote them.

    Returns the new checkpoint's id. On an older ``checkpoint_id`` this forks.
    """
    thread = config.thread_id
    if graph.saver is None or thread is None:
        raise UserError("update_state needs a saver and a thread_id in the config")
    if as_node not in (None, START, END) and as_node not in graph.topology.nodes:
        raise InvalidRouteError(
            f"as_node={as_node!r} is not a node of this graph; known nodes: "
            f"{', '.join(sorted(graph.topology.nodes))}"
        )
    saved, head = yield Load(thread, config.checkpoint_id)
    loop = Loop(graph, config)
    loop.head = head
    if saved is not None:
        graph.check_stored(thread, saved)
        loop.values = dict(saved.values)
        loop.step = saved.step
        loop.checkpoint_id = saved.id
        loop.barriers = {k: list(v) for k, v in saved.extra.get("barriers", {}).items()}
        loop.next = saved.next
    loop.values, changes = loop.merge([(as_node or "__update__", dict(values or {}))])
    loop.step += 1
    if as_node == END:
        loop.next = ()
    elif as_node is not None:
        loop.next = loop.route([as_node], {})
    write = loop.write(changes, "update", [as_node] if as_node else None)
    yield Put(thread, write, loop.head)
    if as_node is None and saved is not None and saved.pending_writes:
        # the step stays where it paused: finished work, questions, nested runs and a
        # passed breakpoint carry over, so invoke(None) or a resume continues it
        yield PutWrites(thread, write.id, tuple(saved.pending_writes))
    return write.id
