"""Reading a thread to stand on it (:func:`load`), and ``update_state`` /
``bulk_update_state`` as programs: writes to a thread made as if nodes had returned them.
No I/O here: the drivers (``_drive``) perform the effects.

On the thread's graph (``config.checkpoint_ns`` empty) ``update_state`` merges the values
into a new checkpoint. Without ``as_node`` at a breakpoint they are written as the node
that ran last, whose edges are evaluated again (edit the answer, then let the graph route
on it). On a paused subgraph (``checkpoint_ns`` naming it) they are merged into the
subgraph's own position kept with the parent's paused step, and the parent gets a new
checkpoint holding the paused step with that position.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint.base import Change, Checkpoint, PendingWrite
from graphagent.config import RunnableConfig
from graphagent.errors import InvalidRouteError, InvalidUpdateError, UserError
from graphagent.graph._command import path_key
from graphagent.graph._constants import END, START
from graphagent.graph._effects import Get, Head, Lock, Program, Put, PutWrites
from graphagent.graph._namespace import ns_path
from graphagent.graph._plan import Plan
from graphagent.graph._step import BREAKPOINT, Position, combine, merge, route, write

__all__ = ["StateUpdate", "bulk_update_program", "load", "subgraph_plan", "update_program"]

StateUpdate = tuple[Mapping[str, Any] | None, str | None]
"""One write of a super-step given to ``bulk_update_state``: ``(values, as_node)``."""


def load(
    plan: Plan, thread: str, checkpoint_id: str | None
) -> Program[tuple[Position, Checkpoint | None]]:
    """Take the thread's run lock, read the checkpoint and stand on it.

    Returns the position (with the thread's head as the expected head of the next
    write) and the checkpoint read (``None``: a new thread; the position is the start).
    """
    yield Lock(thread)
    saved = yield Get(thread, checkpoint_id)
    position = Position()
    if saved is None:
        return position, None
    position.restore(plan, thread, saved)
    # the head is the checkpoint read, unless that was an older one (a replay or fork)
    position.head = saved.id if checkpoint_id is None else (yield Head(thread))
    return position, saved


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
    values = plan.schema.read_update(values, "update_state")
    pos, saved = yield from load(plan, thread, config.checkpoint_id)
    passed = saved is not None and _at_breakpoint(plan, saved)
    if as_node is None and passed:
        assert saved is not None
        as_node = _last_node(saved)
    pos.values, changes = merge(plan, pos.values, [(as_node or "__update__", dict(values or {}))])
    pos.step += 1
    if as_node == END:
        pos.next, pos.sends = (), []
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


def bulk_update_program(
    plan: Plan, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
) -> Program[str]:
    """``update_state`` (one super-step of one write) and ``bulk_update_state`` as a
    program: each super-step's writes merge as if their ``as_node`` had returned them in
    one step, and make one checkpoint. Returns the last checkpoint's id. On an older
    ``checkpoint_id`` this forks.
    """
    thread = config.thread_id
    if plan.saver is None or thread is None:
        raise UserError("update_state needs a saver and a thread_id in the config")
    if not supersteps or any(not updates for updates in supersteps):
        raise UserError(
            "bulk_update_state takes a list of super-steps, each a non-empty list of "
            "(values, as_node) updates"
        )
    nodes = plan.topology.nodes
    for updates in supersteps:
        for _, as_node in updates:
            if as_node not in (None, START, END) and as_node not in nodes:
                raise InvalidRouteError(
                    f"as_node={as_node!r} is not a node of this graph; known nodes: "
                    f"{', '.join(sorted(nodes))}"
                )
    checked = [
        [(plan.schema.read_update(v, "bulk_update_state"), a) for v, a in updates]
        for updates in supersteps
    ]
    pos, saved = yield from load(plan, thread, config.checkpoint_id)
    checkpoint_id = ""
    for updates in checked:
        # one super-step's writes merge as one step's: two replacing one key are refused
        writes: list[tuple[str, Mapping[str, Any]]] = [(a or "__update__", v) for v, a in updates]
        pos.values, changes = merge(plan, pos.values, writes)
        pos.step += 1
        writers = [a for _, a in updates if a is not None]
        if writers and all(a == END for a in writers):
            pos.next, pos.sends = (), []
        elif writers:
            pos.next = route(plan, pos, config, [a for a in writers if a != END], {})
        checkpoint = write(pos, config, changes, "update", writers or None)
        yield Put(thread, checkpoint, pos.head)
        pos.checkpoint_id = pos.head = checkpoint_id = checkpoint.id
    untargeted = len(supersteps) == 1 and not any(a for _, a in supersteps[0])
    if untargeted and saved is not None and saved.pending_writes:
        # the step stays where it paused: finished work, questions, nested runs and a
        # passed breakpoint carry over, so invoke(None) or a resume continues it
        yield PutWrites(thread, checkpoint_id, tuple(saved.pending_writes))
    return checkpoint_id


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
    checked = sub.schema.read_update(values, "update_state")
    update: list[tuple[str, Mapping[str, Any]]] = [(as_node or "__update__", checked)]
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


def subgraph_plan(plan: Plan | None, path: tuple[str, ...]) -> Plan | None:
    """The plan of the subgraph added as node ``path[-1]``, walking down from ``plan``
    (``None`` when a node on the way runs its graph inside its own function)."""
    for name in path:
        if plan is None:
            return None
        spec = plan.topology.nodes.get(name)
        plan = spec.subgraph if spec is not None else None
    return plan
