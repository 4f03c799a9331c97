"""The run program: decides what runs, merges updates, checkpoints. No I/O.

``run_program`` is a generator that yields effects (``_effects``) and receives
their results; ``CompiledGraph`` drives it synchronously or asynchronously.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

from checkpoint.base import Checkpoint, CheckpointWrite, PendingWrite, new_checkpoint_id
from graphagent.config import RunnableConfig
from graphagent.errors import (
    EmptyInputError,
    GraphInterrupt,
    GraphRecursionError,
    InvalidRouteError,
    InvalidUpdateError,
    UserError,
)
from graphagent.graph._command import Command, Interrupt, TaskScope
from graphagent.graph._constants import END, INTERRUPT, START
from graphagent.graph._effects import Emit, Execute, Load, Put, PutWrites, Task
from graphagent.graph._nodes import Branch
from graphagent.graph._state import OverAllState, as_input
from graphagent.graph._strategies import MISSING, Change

if TYPE_CHECKING:
    from graphagent.graph._compiled import CompiledGraph

__all__ = ["Loop", "attach_node", "run_program"]

Program = Generator[Any, Any, dict[str, Any]]
_BREAKPOINT = "__breakpoint__"


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


def _combine(prev: Change | None, new: Change, merged: Any) -> Change:
    if prev is None or new[0] == "set":
        return new
    if new[0] == "append" and prev[0] == "append":
        return ("append", [*prev[1], *new[1]])
    return ("reset", list(merged))


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
                if getattr(strategy, "replaces", False):
                    if key in replaced:
                        raise InvalidUpdateError(
                            f"nodes {replaced[key]!r} and {node!r} both replaced key {key!r} in "
                            "the same step; give the key a merging strategy (e.g. "
                            "AppendStrategy()) or write it from one node only"
                        )
                    replaced[key] = node
                    values[key] = new
                    changes[key] = ("set", new)
                    continue
                old = values.get(key, MISSING)
                try:
                    merge_change = getattr(strategy, "merge_change", None)
                    if merge_change is not None:
                        merged, change = merge_change(old, new)
                    else:
                        merged = strategy.merge(old, new)
                        change = ("set", merged)
                except (TypeError, ValueError) as exc:
                    raise InvalidUpdateError(
                        f"node {node!r}: cannot merge the update of key {key!r} with "
                        f"{strategy!r}: {exc}"
                    ) from exc
                values[key] = merged
                changes[key] = _combine(changes.get(key), change, merged)
        return values, changes

    # -- routing -------------------------------------------------------------------

    def route(self, ran: list[str], gotos: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
        """The nodes due after ``ran`` finished (state already merged)."""
        topo = self.graph.topology
        targets: list[str] = []
        state = OverAllState(self.values, self.graph.schema.empties)
        for node in ran:
            goto = gotos.get(node)
            if goto is not None:
                targets.extend(goto)
            else:
                targets.extend(topo.edges.get(node, ()))
                for branch in topo.branches.get(node, ()):
                    targets.extend(self._branch(branch, state))
            for index in topo.joins_by_source.get(node, ()):
                join = topo.joins[index]
                seen = self.barriers.setdefault(str(index), [])
                if node not in seen:
                    seen.append(node)
                if len(seen) == len(join.sources):
                    del self.barriers[str(index)]
                    targets.append(join.target)
        nodes = topo.nodes
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
        self,
        changes: dict[str, Change],
        source: str,
        ran: list[str] | None = None,
        breakpoint_seen: bool = False,
    ) -> CheckpointWrite:
        """The checkpoint for the current position, as a write on top of the last one.

        ``ran`` (the nodes whose step this closes) goes into the metadata as ``nodes``, so a
        history timeline can say who wrote each checkpoint.
        """
        meta = dict(self.config.metadata)
        meta.update(source=source, step=self.step)
        if ran:
            meta["nodes"] = ran
        extra: dict[str, Any] = {"barriers": self.barriers} if self.barriers else {}
        if breakpoint_seen:
            extra["breakpoint_seen"] = True
        return CheckpointWrite(
            id=new_checkpoint_id(),
            parent_id=self.checkpoint_id,
            step=self.step,
            changes=changes,
            next=self.next,
            metadata=meta,
            created_at=time.time(),
            extra=extra,
        )


def _normalize(node: str, ret: Any) -> tuple[Mapping[str, Any] | None, tuple[str, ...] | None]:
    if ret is None:
        return None, None
    if isinstance(ret, Mapping):
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


def _load_pending(loop: Loop, saved: Checkpoint) -> list[Interrupt]:
    interrupts: list[Interrupt] = []
    for w in saved.pending_writes:
        if w.kind == "update":
            loop.done[w.task] = w.value
        elif w.kind == "resume":
            loop.resume[w.task] = list(w.value)
        elif w.kind == "interrupt":
            interrupts.append(Interrupt(*w.value))
        elif w.kind == "breakpoint":
            loop.skip_breakpoint = True
    return interrupts


def _apply_resume(loop: Loop, interrupts: list[Interrupt], answer: Any, thread: str) -> None:
    if not interrupts:
        raise EmptyInputError(
            f"thread {thread!r} has no pending interrupt to resume; send new input instead"
        )
    if len(interrupts) == 1 and not (
        isinstance(answer, Mapping) and set(answer) <= {i.id for i in interrupts} and answer
    ):
        answers = {interrupts[0].id: answer}
    elif isinstance(answer, Mapping):
        answers = dict(answer)
        missing = [i.id for i in interrupts if i.id not in answers]
        if missing:
            raise UserError(
                f"thread {thread!r} has {len(interrupts)} pending interrupts; "
                f"Command(resume=...) must answer each by id, missing: {', '.join(missing)}"
            )
    else:
        raise UserError(
            f"thread {thread!r} has {len(interrupts)} pending interrupts; resume with "
            "Command(resume={interrupt_id: answer, ...}) (ids in get_state(config).interrupts)"
        )
    for i in interrupts:
        loop.resume.setdefault(i.node, []).append(answers[i.id])


def run_program(
    graph: CompiledGraph,
    input: Any,
    config: RunnableConfig,
    modes: frozenset[str],
    *,
    net: dict[str, Change] | None = None,
) -> Program:
    """The whole run as a generator of effects; returns the final state values.

    Args:
        graph: the compiled graph.
        input: a dict of state keys, ``None`` (continue), or ``Command(resume=...)``.
        config: the run's config.
        modes: stream modes to emit (empty for ``invoke``).
        net: when given, the run is a subgraph inside a node: it does not checkpoint,
            lets interrupts and errors through, and collects every change it made
            (beyond its input) into this dict.
    """
    loop = Loop(graph, config)
    nested = net is not None
    loop.net = net
    thread = None if nested else config.thread_id
    saver = graph.saver if thread is not None else None
    if saver is None and (graph.interrupt_before or graph.interrupt_after):
        raise UserError(
            "interrupt_before/interrupt_after need a saver and a thread_id: "
            "compile(saver=MemorySaver()) and pass config={'thread_id': ...}"
        )

    saved: Checkpoint | None = None
    if saver is not None:
        assert thread is not None
        saved, loop.head = yield Load(thread, config.checkpoint_id)

    interrupts: list[Interrupt] = []
    if saved is not None:
        loop.values = dict(saved.values)
        loop.step = saved.step
        loop.checkpoint_id = saved.id
        loop.barriers = {k: list(v) for k, v in saved.extra.get("barriers", {}).items()}

    if isinstance(input, Command) and input.resume is not None:
        if saved is None:
            raise EmptyInputError(
                f"nothing to resume: thread {thread!r} has no checkpoint; "
                "start it with an input first"
            )
        assert thread is not None
        loop.next = saved.next
        interrupts = _load_pending(loop, saved)
        if interrupts or not loop.skip_breakpoint:
            _apply_resume(loop, interrupts, input.resume, thread)
        loop.skip_breakpoint = True
        if input.update is not None and saver is not None:
            # the update lands first, in a checkpoint of its own, so the resumed node sees it
            loop.values, changes = loop.merge([("__resume__", dict(input.update))])
            loop.step += 1
            write = loop.write(changes, "update")
            yield Put(thread, write, loop.head)
            loop.checkpoint_id = loop.head = write.id
            if saved.pending_writes:
                yield PutWrites(thread, write.id, tuple(saved.pending_writes))
    elif input is None:
        if saved is None:
            raise EmptyInputError(
                "invoke(None) continues a saved thread, but there is none: pass an input dict, "
                "or a config with the thread_id of an existing thread"
            )
        loop.next = saved.next
        _load_pending(loop, saved)
        if saved.extra.get("breakpoint_seen"):
            loop.skip_breakpoint = True
    else:
        if isinstance(input, Command):
            raise UserError("a Command as input must carry resume=...; to update, use update_state")
        input = as_input(input)
        updates: list[tuple[str, Mapping[str, Any]]] = [("__input__", input)]
        if saved is None and graph.schema.defaults:
            defaults = {k: v for k, v in graph.schema.defaults.items() if k not in input}
            updates.insert(0, ("__defaults__", defaults))
        loop.values, changes = loop.merge(updates)
        loop.step += 1
        loop.barriers = {}
        loop.next = loop.route([START], {})
        if saver is not None:
            assert thread is not None
            write = loop.write(changes, "input")
            yield Put(thread, write, loop.head)
            loop.checkpoint_id = loop.head = write.id
    if "values" in modes:
        yield Emit("values", dict(loop.values))

    limit = config.recursion_limit
    steps_run = 0
    node_config = config
    while loop.next:
        if steps_run >= limit:
            raise GraphRecursionError(
                f"the run took {limit} super-steps without reaching END (next: "
                f"{', '.join(loop.next)}); raise config recursion_limit if the loop is "
                "intended, or add a condition that routes to END"
            )
        if saver is not None and graph.interrupt_before and not loop.skip_breakpoint:
            hit = [n for n in loop.next if n in graph.interrupt_before]
            if hit:
                assert thread is not None and loop.checkpoint_id is not None
                yield PutWrites(
                    thread,
                    loop.checkpoint_id,
                    (PendingWrite(_BREAKPOINT, "breakpoint", hit),),
                )
                return loop.values
        loop.skip_breakpoint = False

        tasks = tuple(
            Task(graph.topology.nodes[n], TaskScope(n, list(loop.resume.get(n, ()))))
            if loop.resume
            else Task(graph.topology.nodes[n], TaskScope(n))
            for n in loop.next
            if n not in loop.done
        )
        if "debug" in modes:
            for t in tasks:
                yield Emit("debug", {"type": "task", "step": loop.step + 1, "node": t.spec.name})
        outcome = yield Execute(tasks, OverAllState(loop.values, graph.schema.empties), node_config)

        failures: list[tuple[str, BaseException]] = []
        new_interrupts: list[tuple[str, tuple[Any, ...]]] = []
        results: dict[str, tuple[Mapping[str, Any] | None, tuple[str, ...] | None]] = {}
        for node in sorted(outcome):
            kind, value = outcome[node]
            if kind == "ok":
                results[node] = _normalize(node, value)
            elif isinstance(value, GraphInterrupt):
                new_interrupts.append((node, value.values))
            else:
                failures.append((node, value))
        for node, stored in loop.done.items():
            if node in loop.next:
                update, goto = stored
                results[node] = (update, None if goto is None else tuple(goto))

        if failures or new_interrupts:
            if nested:
                if failures:
                    node, exc = failures[0]
                    raise attach_node(exc, node)
                raise GraphInterrupt(new_interrupts[0][1])
            if new_interrupts and saver is None:
                raise UserError(
                    f"node {new_interrupts[0][0]!r} called interrupt(), which needs a saver and "
                    "a thread_id: compile(saver=MemorySaver()) and pass "
                    "config={'thread_id': ...}"
                )
            if saver is not None and loop.checkpoint_id is not None:
                assert thread is not None
                pending: list[PendingWrite] = [
                    PendingWrite(node, "update", [dict(u) if u is not None else None, g])
                    for node, (u, g) in results.items()
                    if node not in loop.done
                ]
                for node, values in new_interrupts:
                    scope = next(t.scope for t in tasks if t.spec.name == node)
                    pending.append(PendingWrite(node, "resume", list(scope.resume)))
                    for intr in values:
                        if isinstance(intr, Interrupt):
                            pending.append(
                                PendingWrite(node, "interrupt", [intr.value, intr.id, intr.node])
                            )
                if pending:
                    yield PutWrites(thread, loop.checkpoint_id, tuple(pending))
            if failures:
                node, exc = failures[0]
                raise attach_node(exc, node)
            asked = tuple(i for _, vals in new_interrupts for i in vals)
            for mode in ("updates", "values"):
                if mode in modes:
                    yield Emit(mode, {INTERRUPT: asked})
            return {**loop.values, INTERRUPT: asked}

        ran = sorted(results)
        updates = [(n, u) for n, (u, _) in sorted(results.items()) if u]
        gotos = {n: g for n, (_, g) in results.items() if g is not None}
        loop.values, changes = loop.merge(updates)
        if loop.net is not None:
            for key, change in changes.items():
                loop.net[key] = _combine(loop.net.get(key), change, loop.values[key])
        loop.step += 1
        steps_run += 1
        loop.done = {}
        loop.resume = {}
        loop.next = loop.route(ran, gotos)
        if saver is not None:
            assert thread is not None
            write = loop.write(changes, "loop", ran)
            yield Put(thread, write, loop.head)
            loop.checkpoint_id = loop.head = write.id
        if "updates" in modes:
            for node in ran:
                yield Emit("updates", {node: results[node][0]})
        if "values" in modes:
            yield Emit("values", dict(loop.values))
        if "debug" in modes:
            yield Emit(
                "debug",
                {
                    "type": "checkpoint",
                    "step": loop.step,
                    "checkpoint_id": loop.checkpoint_id,
                    "next": loop.next,
                    "values": dict(loop.values),
                },
            )
        if (
            saver is not None
            and graph.interrupt_after
            and any(n in graph.interrupt_after for n in ran)
        ):
            return loop.values
    return loop.values


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
    # a thread paused at a breakpoint stays past it: invoke(None) runs the paused nodes
    seen = (
        as_node is None
        and saved is not None
        and (
            bool(saved.extra.get("breakpoint_seen"))
            or any(w.kind == "breakpoint" for w in saved.pending_writes)
        )
    )
    write = loop.write(changes, "update", [as_node] if as_node else None, seen)
    yield Put(thread, write, loop.head)
    return write.id
