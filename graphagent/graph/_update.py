"""``update_state`` as a program: write values into a thread as if a node returned them.

On the thread's graph (``config.checkpoint_ns`` empty) the values are merged into a new
checkpoint. Without ``as_node`` at a breakpoint they are written as the node that ran last,
whose edges are evaluated again (edit the answer, then let the graph route on it). On a
paused subgraph (``checkpoint_ns`` naming it) they are merged into the subgraph's own
position kept with the parent's paused step, and the parent gets a new checkpoint holding
the paused step with that position.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkpoint.base import Change, Checkpoint, PendingWrite
from graphagent.config import RunnableConfig
from graphagent.errors import InvalidRouteError, InvalidUpdateError, UserError
from graphagent.graph._command import path_key
from graphagent.graph._constants import END, START
from graphagent.graph._effects import Program, Put, PutWrites
from graphagent.graph._inspect import subgraph_plan
from graphagent.graph._namespace import ns_path
from graphagent.graph._plan import Plan
from graphagent.graph._run import load
from graphagent.graph._step import BREAKPOINT, Position, combine, merge, route, write

__all__ = ["update_program"]


def update_program(
    plan: Plan,
    config: RunnableConfig,
    values: Mapping[str, Any] | None,
    as_node: str | None,
) -> Program[str]:
    """Merge ``values`` as if ``as_node`` wrote them; returns the new checkpoint's id.

    On an older ``checkpoint_id`` this forks.
    """
    thread = config.thread_id
    if plan.saver is None or thread is None:
        raise UserError("update_state needs a saver and a thread_id in the config")
    if config.checkpoint_ns:
        return (yield from _update_subgraph(plan, config, thread, values, as_node))
    _check_node(plan, as_node, "")
    pos, saved = yield from load(plan, thread, config.checkpoint_id)
    passed = saved is not None and _at_breakpoint(plan, saved)
    if as_node is None and passed:
        assert saved is not None
        as_node = _last_node(saved)
    pos.values, changes = merge(plan, pos.values, [(as_node or "__update__", dict(values or {}))])
    pos.step += 1
    if as_node == END:
        pos.next = ()
    elif as_node is not None:
        if saved is not None:
            _rearm_joins(plan, pos, as_node, saved.next)
        pos.next = route(plan, pos, config, [as_node], {})
    checkpoint = write(pos, config, changes, "update", [as_node] if as_node else None)
    yield Put(thread, checkpoint, pos.head)
    if as_node is None and saved is not None and saved.pending_writes:
        # the step stays where it paused: finished work, questions, nested runs and a
        # passed breakpoint carry over, so invoke(None) or a resume continues it
        yield PutWrites(thread, checkpoint.id, tuple(saved.pending_writes))
    elif passed and pos.next:
        # the edit answers the breakpoint: invoke(None) runs on from it, past it
        yield PutWrites(thread, checkpoint.id, (PendingWrite(BREAKPOINT, "breakpoint", []),))
    return checkpoint.id


def _rearm_joins(plan: Plan, pos: Position, node: str, due: tuple[str, ...]) -> None:
    """A join that ``node`` completed, whose target has not run yet, stays complete: the
    update written as ``node`` routes on to that target again (as LangGraph's waiting
    edges do until their target consumes them)."""
    topo = plan.topology
    for index in topo.joins_by_source.get(node, ()):
        join = topo.joins[index]
        if join.target in due and str(index) not in pos.barriers:
            pos.barriers[str(index)] = [s for s in join.sources if s != node]


def _check_node(plan: Plan, as_node: str | None, where: str) -> None:
    nodes = plan.topology.nodes
    if as_node not in (None, START, END) and as_node not in nodes:
        raise InvalidRouteError(
            f"as_node={as_node!r} is not a node of {where or 'this graph'}; known nodes: "
            f"{', '.join(sorted(nodes))}"
        )


def _at_breakpoint(plan: Plan, saved: Checkpoint) -> bool:
    """Whether the thread stands at a breakpoint of its own graph: before an
    ``interrupt_before`` node, or after an ``interrupt_after`` node."""
    kinds = {w.kind for w in saved.pending_writes}
    if kinds:
        return kinds == {"breakpoint"}
    ran = saved.metadata.get("nodes") or ()
    return saved.metadata.get("source") == "loop" and any(n in plan.interrupt_after for n in ran)


def _last_node(saved: Checkpoint) -> str:
    """The node whose step wrote ``saved`` (``START`` for the input checkpoint).

    Raises:
        InvalidUpdateError: several nodes wrote it: which one the edit stands for is ambiguous.
    """
    ran = list(saved.metadata.get("nodes") or ())
    if not ran:
        return START
    if len(ran) > 1:
        raise InvalidUpdateError(
            f"update_state at this breakpoint is ambiguous: nodes {', '.join(map(repr, ran))} "
            "ran in the last step; pass as_node= naming the one the values stand for"
        )
    return str(ran[0])


def _update_subgraph(
    plan: Plan,
    config: RunnableConfig,
    thread: str,
    values: Mapping[str, Any] | None,
    as_node: str | None,
) -> Program[str]:
    """Merge ``values`` into the paused subgraph at ``config.checkpoint_ns``."""
    ns = config.checkpoint_ns
    path = ns_path(ns)
    sub = subgraph_plan(plan, path)
    if sub is None:
        raise UserError(
            f"checkpoint_ns {ns!r} does not name a subgraph added with "
            "add_node(name, compiled_graph); a graph run inside a node's own function "
            "cannot be updated by namespace"
        )
    _check_node(sub, as_node, f"subgraph {path[-1]!r}")
    parent, saved = yield from load(plan, thread, config.checkpoint_id)
    key = path_key(path)
    found = None
    if saved is not None:
        found = next(
            (w for w in saved.pending_writes if w.kind == "nested" and w.value[0] == key), None
        )
    if saved is None or found is None:
        raise UserError(
            f"thread {thread!r} has no subgraph paused at checkpoint_ns {ns!r}: a subgraph's "
            "own state is kept only while it is paused (see get_state(config, "
            "subgraphs=True).tasks)"
        )
    position = dict(found.value[1])
    if position.get("finished"):
        raise UserError(f"the subgraph at checkpoint_ns {ns!r} has finished; update its parent")
    position = _moved(sub, config, position, values, as_node)
    parent.step += 1
    checkpoint = write(parent, config, {}, "update", [key])
    yield Put(thread, checkpoint, parent.head)
    kept = tuple(
        PendingWrite(w.task, w.kind, [key, position]) if w is found else w
        for w in saved.pending_writes
    )
    yield PutWrites(thread, checkpoint.id, kept)
    return checkpoint.id


def _moved(
    sub: Plan,
    config: RunnableConfig,
    position: dict[str, Any],
    values: Mapping[str, Any] | None,
    as_node: str | None,
) -> dict[str, Any]:
    """A kept subgraph position with ``values`` merged (and, with ``as_node``, rerouted)."""
    pos = Position()
    pos.load(position)
    update: list[tuple[str, Mapping[str, Any]]] = [(as_node or "__update__", dict(values or {}))]
    merged, changes = merge(sub, position["values"], update)
    pos.values = merged
    net = {k: list(v) for k, v in position.get("net", {}).items()}
    for k, change in changes.items():
        prev = net.get(k)
        before = Change(prev[0], prev[1]) if prev is not None else None
        joined = combine(before, change, merged[k])
        net[k] = [joined.kind, joined.value]
    out = {**position, "values": merged, "net": net}
    if as_node == END:
        out["next"], out["done"] = [], {}
    elif as_node is not None:
        out["next"] = list(route(sub, pos, config, [as_node], {}))
        out["done"], out["skip"], out["barriers"] = {}, True, pos.barriers
    return out
