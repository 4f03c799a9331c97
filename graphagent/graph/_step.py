"""A run's bookkeeping without I/O: where it stands, and merge / route / write over it.

:class:`Position` is where a run stands (state values, step, what runs next, the
checkpoint it is on); the functions here move it given the compiled graph's
:class:`~graphagent.graph._plan.Plan`. This is the engine's hot path: the commonest cases
take shortcuts, each noted with what it saves.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from checkpoint.base import Change, Checkpoint, CheckpointWrite, new_checkpoint_id
from graphagent.config import RunnableConfig
from graphagent.errors import (
    GraphInterrupt,
    InvalidRouteError,
    InvalidUpdateError,
)
from graphagent.graph._command import Command, Interrupt, for_parent
from graphagent.graph._constants import END, is_private, public
from graphagent.graph._control import Overwrite, Send
from graphagent.graph._nodes import Branch
from graphagent.graph._plan import Plan
from graphagent.graph._state import OverAllState, as_input
from graphagent.graph._strategies import MISSING

__all__ = [
    "BREAKPOINT",
    "Position",
    "Result",
    "Step",
    "attach_node",
    "combine",
    "merge",
    "normalize",
    "route",
    "shown",
    "with_goto",
    "write",
]

Result = tuple[Mapping[str, Any] | None, tuple[str, ...] | None]
"""A node's finished work: its update and, from a ``Command``, where it goes next."""

BREAKPOINT = "__breakpoint__"
"""The task name of a pending write that marks a pause at a breakpoint."""

_OVERWRITE = "__overwrite__"


class Position:
    r"""Where a run stands: state values, step, what runs next, the checkpoint it is on.

    Attributes:
        values: the state values.
        step: the step of the last checkpoint (``-1`` before the input).
        next: the nodes due in the next step.
        barriers: joins waiting for more of their sources (join index -> sources done).
        checkpoint_id: the checkpoint the run is on (``None``: none yet).
        head: the thread's head as the run last read or wrote it (the expected head of
            its next write).
        done: work of the next step kept from before a pause: task -> ``[update, goto]``.
        skip_breakpoint: the next step runs past an ``interrupt_before`` breakpoint.
        sends: the sends due in the next step, in order: ``(node, arg)`` pairs.
        deferred: nodes whose conditional edges wait for the run to continue (a pause
            after them with ``interrupt_before_edge``): routed then, on the state as it is.
    """

    # a plain class with slots: a run reads these fields several times a step
    __slots__ = (
        "barriers",
        "checkpoint_id",
        "deferred",
        "done",
        "head",
        "next",
        "sends",
        "skip_breakpoint",
        "step",
        "values",
    )

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.step = -1
        self.next: tuple[str, ...] = ()
        self.barriers: dict[str, list[str]] = {}
        self.checkpoint_id: str | None = None
        self.head: str | None = None
        self.done: dict[str, Any] = {}
        self.skip_breakpoint = False
        self.sends: list[tuple[str, Any]] = []
        self.deferred: list[str] = []

    def restore(self, plan: Plan, thread: str | None, saved: Checkpoint) -> None:
        """Stand on stored checkpoint ``saved`` (its pending work is the caller's).

        Raises:
            SerializationError: the plan cannot continue a thread stored like this.
        """
        plan.check_stored(thread, saved.values)
        self.values = dict(saved.values)
        self.step = saved.step
        self.next = saved.next
        self.checkpoint_id = saved.id
        extra = saved.extra
        self.barriers = {k: list(v) for k, v in extra.get("barriers", {}).items()}
        self.deferred = list(extra.get("deferred", ()))
        sends = extra.get("sends")
        if sends:
            # the stored ``next`` names the Send's nodes too (for get_state); the nodes
            # due by their edges are kept apart
            self.sends = [(n, a) for n, a in sends]
            self.next = tuple(extra["pull"])

    def dump(self, done: dict[str, Any], skip: bool) -> dict[str, Any]:
        """A nested run's position as it is kept with its root's paused step."""
        return {
            "values": dict(self.values),
            "step": self.step,
            "next": list(self.next),
            "barriers": self.barriers,
            "done": done,
            "skip": skip,
            "sends": [[n, a] for n, a in self.sends],
            "deferred": list(self.deferred),
        }

    def load(self, position: Mapping[str, Any]) -> None:
        """Stand where :meth:`dump` left a nested run (its values are the caller's)."""
        self.step = position["step"]
        self.next = tuple(position["next"])
        self.barriers = {k: list(v) for k, v in position["barriers"].items()}
        self.done = dict(position["done"])
        self.skip_breakpoint = bool(position["skip"])
        self.sends = [(n, a) for n, a in position.get("sends", ())]
        self.deferred = list(position.get("deferred", ()))

    def deferred_route(self, plan: Plan, config: RunnableConfig) -> tuple[str, ...]:
        """:attr:`next` with the conditional edges a pause deferred taken now."""
        return deferred_route(plan, self, config)


class Step:
    """A super-step's outcomes, sorted out: what finished, what paused, what failed."""

    __slots__ = ("failure", "paused", "results")

    def __init__(self) -> None:
        # a plain class, not a dataclass: one is made every step, and default factories
        # cost a call each (~0.05 µs a step)
        self.results: dict[str, Result] = {}
        self.paused: dict[str, GraphInterrupt] = {}
        self.failure: tuple[str, BaseException] | None = None

    def dump_results(self) -> dict[str, list[Any]]:
        """The finished work, as kept in a position: node -> ``[update, goto]``."""
        return {n: [dict(u) if u is not None else None, g] for n, (u, g) in self.results.items()}

    @property
    def interrupts(self) -> tuple[Interrupt, ...]:
        """Every interrupt asked in the step, in task-path order (so resumes are stable)."""
        found = [i for s in self.paused.values() for i in s.values if isinstance(i, Interrupt)]
        return tuple(sorted(found, key=lambda i: (i.path, i.id)))


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


# -- merging -------------------------------------------------------------------------


def merge(
    plan: Plan, values: Mapping[str, Any], updates: list[tuple[str, Mapping[str, Any]]]
) -> tuple[dict[str, Any], dict[str, Change]]:
    """``values`` with ``(node, update)`` pairs (already in node order) merged through the
    strategies, as a new dict, and the change each key took."""
    schema = plan.schema
    strategies = schema.strategies
    values = dict(values)
    changes: dict[str, Change] = {}
    replaced: dict[str, str] = {}
    overwritten: dict[str, str] | None = None
    for node, update in updates:
        for key, new in update.items():
            # one test for the rare cases (~0.1k instructions a key, bench/graph_overhead.py)
            if (
                new.__class__ is Overwrite
                or overwritten is not None
                or (new.__class__ is dict and _OVERWRITE in new)
            ):
                overwritten, done = _overwrite(plan, values, changes, overwritten, node, key, new)
                if done:
                    continue
            strategy = strategies.get(key)
            if strategy is None:
                if schema.closed:
                    raise InvalidUpdateError(
                        f"node {node!r} wrote key {key!r}, which is not in the state schema "
                        f"{schema.name} (keys: {', '.join(sorted(strategies))}); add it to "
                        "the schema or fix the key"
                    )
                strategy = schema.fallback
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


def _overwrite(
    plan: Plan,
    values: dict[str, Any],
    changes: dict[str, Change],
    overwritten: dict[str, str] | None,
    node: str,
    key: str,
    new: Any,
) -> tuple[dict[str, str] | None, bool]:
    """An ``Overwrite`` (or its JSON form) set past the key's strategy; after one, the
    key's other writes in the step are dropped. Returns the overwritten keys and whether
    ``new`` was handled here (else it merges as usual)."""
    if new.__class__ is dict and _OVERWRITE in new and len(new) == 1:
        new = Overwrite(new[_OVERWRITE])  # its JSON form (LangGraph's too)
    if new.__class__ is not Overwrite:
        return overwritten, overwritten is not None and key in overwritten
    overwritten = {} if overwritten is None else overwritten
    if key in overwritten:
        raise InvalidUpdateError(
            f"nodes {overwritten[key]!r} and {node!r} both sent Overwrite(...) "
            f"for key {key!r} in the same step; only one may"
        )
    schema = plan.schema
    if schema.closed and key not in schema.strategies:
        raise InvalidUpdateError(
            f"node {node!r} wrote key {key!r}, which is not in the state schema "
            f"{schema.name} (keys: {', '.join(sorted(schema.strategies))})"
        )
    overwritten[key] = node
    values[key] = new.value
    changes[key] = Change("set", new.value)
    return overwritten, True


# -- routing -------------------------------------------------------------------------


def route(
    plan: Plan,
    position: Position,
    config: RunnableConfig,
    ran: list[str],
    gotos: dict[str, tuple[str, ...]],
    managed: Mapping[str, Any] | None = None,
) -> tuple[str, ...]:
    """The nodes due after ``ran`` finished (state already merged); joins that ``ran``
    completes are released from ``position.barriers``; sends made go to
    ``position.sends``. Routers read ``managed`` keys (the step's managed values) too.
    Past an ``interrupt_after`` node of a plan with ``interrupt_before_edge`` the
    conditional edges wait (``position.deferred`` names their sources;
    :meth:`Position.deferred_route`)."""
    topo = plan.topology
    edges, branches, joins_by_source = topo.edges, topo.branches, topo.joins_by_source
    barriers = position.barriers
    if position.sends:
        position.sends = []  # the step that ran them is over
    targets: list[Any] = []
    state: OverAllState | None = None  # built for the first router only
    defer = plan.interrupt_before_edge and not plan.interrupt_after.isdisjoint(ran)
    for node in ran:
        goto = gotos.get(node) if gotos else None
        if goto is not None:
            targets.extend(goto)
        else:
            targets.extend(edges.get(node, ()))
            if defer and node in branches:
                position.deferred.append(node)
                continue
            for branch in branches.get(node, ()):
                if state is None:
                    values = {**position.values, **managed} if managed else position.values
                    state = OverAllState(values, plan.schema.empties)
                targets.extend(_branch(branch, state, config))
        for index in joins_by_source.get(node, ()):
            join = topo.joins[index]
            seen = barriers.setdefault(str(index), [])
            if node not in seen:
                seen.append(node)
            if len(seen) == len(join.sources):
                del barriers[str(index)]
                targets.append(join.target)
    nodes = topo.nodes
    if len(targets) == 1:  # the commonest case, one edge on: no set, no sort (0.2-0.3 µs
        # a step, of ~5 µs per node-step in bench/graph_overhead.py)
        target = targets[0]
        if target.__class__ is str and target in nodes:
            return (target,)
    due: set[str] = set()
    for target in targets:
        if target.__class__ is Send:
            position.sends.append(_sent(target, nodes, ran))
            continue
        if target == END:
            continue
        if target not in nodes:
            raise InvalidRouteError(
                f"routing after {', '.join(ran)!s} named {target!r}, which is not a node; "
                f"known nodes: {', '.join(sorted(nodes))}"
            )
        due.add(target)
    return tuple(sorted(due))


def _sent(send: Send, nodes: Mapping[str, Any], ran: list[str]) -> tuple[str, Any]:
    if send.node not in nodes:
        raise InvalidRouteError(
            f"routing after {', '.join(ran)!s} sent to {send.node!r}, which is not a node; "
            f"known nodes: {', '.join(sorted(nodes))}"
        )
    return send.node, send.arg


def deferred_route(plan: Plan, position: Position, config: RunnableConfig) -> tuple[str, ...]:
    """``position.next`` with the conditional edges a pause deferred taken now, on the
    state as it stands (edited by ``update_state`` meanwhile, say)."""
    if not position.deferred:
        return position.next
    sources, position.deferred = position.deferred, []
    state = OverAllState(position.values, plan.schema.empties)
    nodes = plan.topology.nodes
    due = set(position.next)
    for source in sources:
        for branch in plan.topology.branches[source]:
            for target in _branch(branch, state, config):
                if target != END and target not in nodes:
                    raise InvalidRouteError(
                        f"routing after {source} named {target!r}, which is not a node; "
                        f"known nodes: {', '.join(sorted(nodes))}"
                    )
                due.add(target)
    due.discard(END)
    return tuple(sorted(due))


def _branch(branch: Branch, state: OverAllState, config: RunnableConfig) -> list[Any]:
    try:
        picked = branch.router(state, config) if branch.takes_config else branch.router(state)
    except Exception as exc:
        raise attach_node(exc, branch.source) from None
    keys = list(picked) if isinstance(picked, (list, tuple, set, frozenset)) else [picked]
    if branch.path_map is None:
        return [k if k.__class__ is Send else str(k) for k in keys]
    out: list[Any] = []
    for key in keys:
        if key.__class__ is Send:  # a Send names its node: no path map to translate
            out.append(key)
        elif key in branch.path_map:
            out.append(branch.path_map[key])
        elif key == END:
            out.append(END)
        else:
            raise InvalidRouteError(
                f"the router after node {branch.source!r} returned {key!r}, which is not in "
                f"its path map (keys: {', '.join(map(repr, branch.path_map))})"
            )
    return out


# -- node results and checkpoints ----------------------------------------------------


def normalize(node: str, ret: Any) -> Result:
    """What a node returned, as its update and its goto.

    Raises:
        InvalidUpdateError: the node returned something that is not an update.
    """
    if ret is None:
        return None, None
    # a dict, the commonest, is checked first: isinstance(ret, Mapping) alone is an ABC
    # check (~0.09 µs a node)
    if type(ret) is dict or isinstance(ret, Mapping):
        return ret, None
    if isinstance(ret, Command):
        goto = ret.goto
        gotos = (
            None if goto is None else ((goto,) if isinstance(goto, (str, Send)) else tuple(goto))
        )
        update = ret.update
        if update is not None and not isinstance(update, Mapping):
            update = _as_update(node, update, "Command(update=...)")
        if ret.graph is not None:
            for_parent(node, ret)
        return update, gotos
    update = _as_update(node, ret, None)
    if update is not None:
        return update, None
    raise InvalidUpdateError(
        f"node {node!r} returned {type(ret).__name__} {ret!r:.60}; a node returns a dict of "
        "state keys to update, None, or a Command"
    )


def _as_update(node: str, value: Any, where: str | None) -> Mapping[str, Any] | None:
    """A pydantic model (its fields that were set) or a dataclass (its fields) a node
    returned, as an update; ``None`` for anything else, or an error inside a Command."""
    try:
        return as_input(value)
    except InvalidUpdateError:
        if where is None:
            return None
        raise InvalidUpdateError(
            f"node {node!r} returned {where} with {type(value).__name__} {value!r:.60}; an "
            "update is a dict of state keys (or a pydantic model / dataclass of the state)"
        ) from None


def write(
    position: Position,
    config: RunnableConfig,
    changes: dict[str, Change],
    source: str,
    ran: list[str] | None = None,
    tasks: Mapping[str, int] | None = None,
) -> CheckpointWrite:
    """The checkpoint for ``position``, as a write on top of the one it is on.

    ``ran`` (the nodes whose step this closes) goes into the metadata as ``nodes``, so a
    history timeline can say who wrote each checkpoint; ``tasks``, how many tasks each
    ran in a step with sends (the run overlay counts a fan-out's edge by them).
    """
    meta = {**config.metadata, "source": source, "step": position.step}
    if ran:
        meta["nodes"] = ran
    if tasks:
        meta["tasks"] = dict(tasks)
    extra = _extra(position)
    due = position.next
    if position.sends:
        extra["sends"] = [[n, a] for n, a in position.sends]
        extra["pull"] = list(due)
        due = tuple(sorted({*due, *(n for n, _ in position.sends)}))
    return CheckpointWrite(
        new_checkpoint_id(),
        position.checkpoint_id,
        position.step,
        changes,
        due,
        meta,
        time.time(),
        extra,
    )


def _extra(position: Position) -> dict[str, Any]:
    """What a checkpoint keeps of the position besides values and next: joins waiting,
    conditional edges deferred."""
    extra: dict[str, Any] = {}
    if position.barriers:
        extra["barriers"] = position.barriers
    if position.deferred:
        extra["deferred"] = list(position.deferred)
    return extra


def shown(update: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A node's update as stream events show it: without private keys."""
    if update is None or not any(is_private(k) for k in update):
        return update
    return public(update)


def with_goto(plan: Plan, position: Position, goto: Any) -> tuple[str, ...]:
    r"""What is due next with a ``Command(goto=...)`` input's nodes added (its sends
    join ``position.sends``).

    Raises:
        InvalidRouteError: ``goto`` names a node the plan does not have.
    """
    targets = [goto] if isinstance(goto, (str, Send)) else list(goto)
    nodes = plan.topology.nodes
    due = position.next
    for send in [t for t in targets if t.__class__ is Send]:
        position.sends.append(_sent(send, nodes, ["the input"]))
    names: list[str] = [t for t in targets if isinstance(t, str)]
    unknown = [t for t in names if t != END and t not in nodes]
    if unknown:
        raise InvalidRouteError(
            f"Command(goto=...) names {', '.join(map(repr, unknown))}, not a node of this "
            f"graph; known nodes: {', '.join(sorted(nodes))}"
        )
    return tuple(sorted({*due, *(t for t in names if t != END)}))
