"""One run of a graph as a small state machine: start, next tasks, commit, suspend.

``run_program`` is a generator that yields effects (``_effects``) and receives their
results; ``_drive`` performs them, synchronously or asynchronously. No I/O here.
(``_update.update_program`` is ``update_state`` the same way.)

A run is either a *root* (it loads and checkpoints its thread) or *nested* (a compiled
graph run inside a node of another run). A nested run checkpoints nothing: when it
pauses it leaves its position in the shared :class:`RunContext`, and the root stores that
with the paused step, so a resume continues the nested run where it stood.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from checkpoint.base import Change, Checkpoint, CheckpointWrite, PendingWrite
from graphagent.config import RunnableConfig
from graphagent.errors import (
    EmptyInputError,
    GraphRecursionError,
    UserError,
)
from graphagent.graph._command import (
    Command,
    Interrupt,
    RunContext,
    TaskScope,
    current_task,
    path_key,
)
from graphagent.graph._constants import START, public
from graphagent.graph._debug import announce, checkpoint_event, step_events, written_messages
from graphagent.graph._effects import (
    Background,
    Done,
    Emit,
    Execute,
    Keep,
    Outcome,
    Program,
    Task,
)
from graphagent.graph._pause import (
    ERROR_TASK,
    answers_by_path,
    parent_changes,
    take_pending,
)
from graphagent.graph._plan import Plan
from graphagent.graph._saving import durability_of
from graphagent.graph._state import OverAllState, as_input
from graphagent.graph._step import (
    Position,
    Step,
    combine,
    merge,
    normalize,
    route,
    shown,
    with_goto,
    write,
)
from graphagent.graph._stopping import Stopping
from graphagent.graph._substream import Sink, nested_config, nested_opening, share_streams
from graphagent.graph._tasks import (
    cache_lookup,
    cache_store,
    collect_all,
    make_tasks,
    managed_values,
    retried,
    sort_outcome,
    task_counts,
)
from graphagent.graph._update import load

__all__ = ["Run", "load", "run_program"]

_TASK = current_task()


def run_program(
    plan: Plan,
    input: Any,
    config: RunnableConfig,
    modes: frozenset[str],
    *,
    net: dict[str, Change] | None = None,
    durability: str | None = None,
    sink: Sink | None = None,
) -> Program[dict[str, Any]]:
    """The whole run as a generator of effects; returns the final state values.

    Args:
        plan: the compiled graph's plan.
        input: a dict of state keys, ``None`` (continue), or ``Command(resume=...)``.
        config: the run's config.
        modes: stream modes to emit (empty for ``invoke``).
        net: when given, the run is nested inside a node: it does not checkpoint, lets
            errors through, pauses by raising ``GraphInterrupt``, and collects every
            change it made (beyond its input) into this dict.
        durability: ``"sync"`` (each step stored as it commits), ``"exit"`` (stored
            once, when the run ends, pauses or fails) or ``"async"`` (each step's write
            beside the next step);
            ``None``: the plan's.
        sink: a root run streaming with ``subgraphs=True``: where nested runs send
            their events.
    """
    run = Run(plan, config, modes, net, durability, sink)
    # a subgraph's plan may carry its parent's cache; its config, writers to the stream
    # under its namespace (stream(..., subgraphs=True))
    plan, config = run.plan, run.config
    if net is None and modes:
        share_streams(run.ctx, sink, modes, config)
    yield from run.start(input)
    if plan.input_first:
        yield from run.flush()
    while True:
        tasks = run.next_tasks()
        if tasks is None:
            if run.breakpoint:
                yield from run.stop_before()
            yield from run.flush()
            return run.finish()
        if "debug" in modes:
            yield from announce(run.pos, tasks, run.ctx.anchor, run.base)
        keep: Keep | None = None
        if len(tasks) > 1 and run.several:  # each task's work kept, or reported, as it ends
            keep = yield from run.several_tasks()
        if run.plain_state:  # no managed keys, no cache: the short way, every step
            state = OverAllState(run.pos.values, plan.schema.empties)
            step = run.collect((yield Execute(tasks, state, config, keep, run.reporting)))
        else:
            values = run.pos.values
            if plan.managed:
                values = managed_values(plan, values, config.recursion_limit - run.steps_run)
            state = OverAllState(values, plan.schema.empties)
            hits: dict[str, Any] = {}
            if plan.cache is not None:
                tasks, hits, wanted = yield from cache_lookup(plan, tasks, state)
            executed = (yield Execute(tasks, state, config, keep, run.reporting)) if tasks else {}
            step = run.collect(executed, hits)
        if "debug" in modes:
            yield from retried(run.pos, tasks)
        if step.paused or step.failure is not None:
            return (yield from run.suspend(step))
        if plan.cache is not None:
            yield from cache_store(plan, step.results, wanted)
        yield from run.commit(step)
        if run.pauses_after(step):
            return (yield from run.stop_after())


def _caches(plan: Plan) -> bool:
    """Whether a node of ``plan`` has a cache policy."""
    return any(spec.cache is not None for spec in plan.topology.nodes.values())


class Run(Stopping):
    """One run: its identity (plan, config, thread, nested or not), its position, and the
    transitions between positions."""

    __slots__ = (
        "at_breakpoint",
        "base",
        "breakpoint",
        "cached",
        "config",
        "ctx",
        "failed_before",
        "keeps",
        "key",
        "modes",
        "nested",
        "net",
        "pending",
        "plain",
        "plain_state",
        "plan",
        "pos",
        "reported",
        "reporting",
        "reports",
        "saves",
        "sent",
        "several",
        "start_input",
        "steps_run",
        "waiting",
    )

    def __init__(
        self,
        plan: Plan,
        config: RunnableConfig,
        modes: frozenset[str],
        net: dict[str, Change] | None,
        durability: str | None = None,
        sink: Sink | None = None,
    ) -> None:
        self.plan = plan
        self.config = config
        self.modes = modes
        self.pos = Position()
        self.net = net
        self.nested = net is not None
        self.pending: list[Interrupt] = []
        self.at_breakpoint = False
        self.failed_before = False
        self.breakpoint: list[str] = []
        self.steps_run = 0
        self.waiting: tuple[str, ...] = ()  # deferred nodes due, held for a later step
        self.cached: frozenset[str] = frozenset()  # this step's tasks answered by the cache
        self.sent: dict[str, str] | None = None  # this step's send task keys -> nodes
        self.start_input: dict[str, Any] = {}
        # the run's input checkpoint (and work to keep with it), stored with the first step
        self.unsaved: tuple[CheckpointWrite, tuple[PendingWrite, ...]] | None = None
        # durability="exit": the steps committed since the last write ([] holds none)
        mode = durability_of(durability or plan.durability)
        self.held: list[Any] | None = [] if mode == "exit" else None
        self.background = mode == "async"  # a step's write runs beside the next step
        self.plain = mode == "sync"
        self.plain_state = not plan.managed and plan.cache is None
        # a step of several tasks stores each one's work as it finishes (not under exit)
        self.keeps = False
        # stream(..., subgraphs=True): a step of several tasks hands out each one's update
        # as it finishes (beside the subgraphs' events), not when the step commits
        self.reports = self.reporting = False
        self.reported: frozenset[str] = frozenset()
        ctx: RunContext | None = None
        if self.nested:
            # a nested run shares its root's context (its thread among it) and saves nothing
            scope = _TASK.get()
            ctx = scope.ctx if scope is not None else None
            self.base = scope.nested_path() if scope is not None else ()
            self.saves = False
        else:
            self.base = ()
            self.saves = plan.saver is not None and config.thread_id is not None
            self.keeps = (
                self.saves and self.held is None and plan.saver.outlives_process  # type: ignore[union-attr]
            )
            self.reports = "updates" in modes and sink is not None
        self.several = self.keeps or self.reports
        self.ctx = ctx or RunContext(config.thread_id, self.saves, plan.saver, config)
        if not self.nested:
            self.ctx.cache = plan.cache
        elif plan.cache is None and self.ctx.cache is not None and _caches(plan):
            # a subgraph with cached nodes and no cache of its own uses its parent's
            self.plan = replace(plan, cache=self.ctx.cache)
            self.plain_state = False
        self.key = path_key(self.base)
        if self.nested and self.ctx.stream is not None:
            self.config = nested_config(self.ctx, self.base, config)
        if (plan.interrupt_before or plan.interrupt_after) and not self.ctx.persistent:
            where = "its parent graph needs" if self.nested else "need"
            raise UserError(
                f"interrupt_before/interrupt_after {where} a saver and a thread_id: "
                "compile(saver=MemorySaver()) and pass config={'thread_id': ...}"
            )

    # -- start -------------------------------------------------------------------------

    def start(self, input: Any) -> Program[None]:
        """Take the run to its first position: fresh input, a resume, or a continue."""
        if self.nested:
            position = self.ctx.resume_position(self.key)
            if position is not None:
                self._restore(position, input)
            else:
                self._merge_input(input, None)
                self.start_input = dict(input)
            yield from nested_opening(self.ctx, self.base, self.modes, self.pos.values)
            return
        saved: Checkpoint | None = None
        if self.saves:
            thread = self.ctx.thread
            assert thread is not None
            self.pos, saved = yield from load(self.plan, thread, self.config.checkpoint_id)
        if isinstance(input, Command) and input.resume is not None:
            self._resume(saved, input)
        elif isinstance(input, Command) and (input.goto is not None or input.update is not None):
            self._redirect(saved, input)
        elif input is None:
            self._continue(saved)
        else:
            changes = self._merge_input(input, saved)
            if self.saves:
                self._defer(write(self.pos, self.config, changes, "input"))
                if "debug" in self.modes and self.unsaved is not None:
                    yield Emit(
                        "debug", checkpoint_event(self.unsaved[0], self.pos.values, self.config)
                    )
            if not changes:
                return  # an input that writes nothing shows no new state
        if "values" in self.modes:
            yield Emit("values", self.plan.schema.output(self.pos.values))

    def _merge_input(self, input: Any, saved: Checkpoint | None) -> dict[str, Change]:
        if isinstance(input, Command):
            raise UserError(
                "a Command as input needs resume=, goto= or update= (it was empty); "
                "to continue a paused thread pass None"
            )
        pos, plan = self.pos, self.plan
        input = plan.schema.read_input(input)
        updates: list[tuple[str, Mapping[str, Any]]] = [("__input__", input)]
        if saved is None and plan.schema.defaults:
            defaults = {k: v for k, v in plan.schema.defaults.items() if k not in input}
            updates.insert(0, ("__defaults__", defaults))
        pos.values, changes = merge(plan, pos.values, updates)
        pos.step += 1
        pos.barriers = {}
        pos.next = route(plan, pos, self.config, [START], {})
        return changes

    def _continue(self, saved: Checkpoint | None) -> None:
        if saved is None:
            raise EmptyInputError(
                "invoke(None) continues a saved thread, but there is none: pass an input dict, "
                "or a config with the thread_id of an existing thread"
            )
        self._load_pending(saved)

    def _resume(self, saved: Checkpoint | None, command: Command) -> None:
        if saved is None:
            raise EmptyInputError(
                f"nothing to resume: thread {self.thread!r} has no checkpoint; "
                "start it with an input first"
            )
        self._load_pending(saved)
        if self.pending or not self.at_breakpoint:
            self._answer(command.resume)
        self.pos.skip_breakpoint = True
        self._apply_command(saved, command)

    def _redirect(self, saved: Checkpoint | None, command: Command) -> None:
        """``Command(goto=..., update=...)`` as input: continue the thread (past a
        breakpoint) with the update applied and the goto nodes added to what runs next."""
        if saved is not None:
            self._load_pending(saved)
        self.pos.skip_breakpoint = True
        self._apply_command(saved, command)

    def _apply_command(self, saved: Checkpoint | None, command: Command) -> None:
        """A Command input's update and goto land first, in a checkpoint of their own, so
        the next step sees them and a pause in it resumes with them."""
        pos = self.pos
        if command.update is None and command.goto is None:
            return
        changes: dict[str, Change] = {}
        if command.update is not None:
            pos.values, changes = merge(
                self.plan, pos.values, [("__resume__", as_input(command.update))]
            )
        if command.goto is not None:
            pos.next = with_goto(self.plan, pos, command.goto)
        pos.step += 1
        if self.saves:
            keep = tuple(saved.pending_writes) if saved is not None else ()
            self._defer(write(pos, self.config, changes, "update"), keep)

    def _load_pending(self, saved: Checkpoint) -> None:
        self.pending, self.at_breakpoint = take_pending(saved, self.pos, self.ctx)
        self.failed_before = any(w.task == ERROR_TASK for w in saved.pending_writes)
        self.pos.next = self.pos.deferred_route(self.plan, self.config)

    def _answer(self, answer: Any) -> None:
        """Hand ``Command(resume=answer)`` to the pending interrupts, by task path."""
        for key, given in answers_by_path(self.pending, answer, self.thread):
            self.ctx.add_answer(key, given)

    def _restore(self, position: Mapping[str, Any], input: Mapping[str, Any]) -> None:
        """Continue a nested run from the position it left when it paused (or finished)."""
        pos = self.pos
        pos.values = dict(position["values"])
        net = {key: Change(kind, payload) for key, (kind, payload) in position["net"].items()}
        if self.net is not None:
            self.net.update(net)
        self.start_input = dict(input)
        if position.get("finished"):
            return  # it ended inside a task that paused later: its result stands
        pos.values = parent_changes(self.plan, pos.values, position["input"], input, net)
        pos.load(position)
        pos.next = pos.deferred_route(self.plan, self.config)

    def finish(self) -> dict[str, Any]:
        """The run reached its end. A nested run leaves its result in the shared context
        too: should its task pause later, the task's rerun gets the result, not a rerun."""
        values = self.pos.values
        if self.nested:
            self.ctx.suspend(
                self.key, {"finished": True, "values": dict(values), "net": self._net_dump()}
            )
        return public(values) if self.nested else self.plan.schema.output(values)

    # -- each step ---------------------------------------------------------------------

    def next_tasks(self) -> tuple[Task, ...] | None:
        """The tasks of the next step, or ``None`` when the run ends or pauses before it
        (then :attr:`breakpoint` names the ``interrupt_before`` nodes it reached).

        A plain function, not a generator: it runs every step, and effects are only
        needed at a breakpoint (:meth:`stop_before`) or for debug events (:meth:`announce`).
        """
        pos = self.pos
        if not pos.next and not pos.sends:
            return None
        limit = self.config.recursion_limit
        if self.steps_run >= limit:
            raise GraphRecursionError(
                f"the run took {limit} super-steps without reaching END (next: "
                f"{', '.join(pos.next)}); raise config recursion_limit if the loop is "
                "intended, or add a condition that routes to END"
            )
        before = self.plan.interrupt_before
        if before and not pos.skip_breakpoint:
            due = (*pos.next, *(n for n, _ in pos.sends)) if pos.sends else pos.next
            hit = sorted({n for n in due if n in before})
            if hit:
                self.breakpoint = hit
                return None
        pos.skip_breakpoint = False
        return self._tasks()

    def _tasks(self) -> tuple[Task, ...]:
        pos, ctx, base, plan = self.pos, self.ctx, self.base, self.plan
        if not self.nested:
            ctx.anchor = pos.checkpoint_id  # what this step's interrupt ids are made from
            # durable sub-tasks store their results at once on a stored checkpoint only
            ctx.kept_on = pos.checkpoint_id if self.unsaved is None and not self.held else None
        if pos.sends or plan.deferred:
            tasks, self.waiting, self.sent = make_tasks(plan, pos, ctx, base)
            return tuple(tasks)
        # the commonest case, nodes due by their edges only: no call, no sends table
        # (~1.5k instructions a node-step, bench/graph_overhead.py)
        if self.sent is not None:
            self.sent = None
        nodes, done, answers = plan.topology.nodes, pos.done, ctx.answers
        found = []
        for n in pos.next:
            if n in done:
                continue
            path = (*base, n)
            resume = answers.get(path_key(path), ()) if answers else ()
            found.append(Task(nodes[n], TaskScope(path, resume, ctx), n))
        return tuple(found)

    def several_tasks(self) -> Program[Keep | None]:
        """For a step of several tasks: whether each one's update is reported as it
        finishes (:attr:`reporting`), and where each one's work is kept as it finishes
        (``_keep``), if it is. A held-back input is stored first, so that work has a
        stored checkpoint to be kept on (a crash mid-step then resumes it)."""
        self.reporting = self.reports
        if not self.keeps:
            return None
        if self.unsaved is not None:
            yield from self.flush()
            self.ctx.kept_on = self.pos.checkpoint_id
        thread, checkpoint = self.ctx.thread, self.pos.checkpoint_id
        assert thread is not None and checkpoint is not None
        return Keep(thread, checkpoint)

    def collect(
        self, outcomes: Mapping[str, Outcome], hits: Mapping[str, Any] | None = None
    ) -> Step:
        """Sort the tasks' outcomes (in merge order) and add the work finished earlier
        (and, ``hits``, the results found in the cache)."""
        if self.reporting:  # what was reported as it finished is not reported again
            self.reported = frozenset(k for k, o in outcomes.items() if type(o) is Done)
            self.reporting = False
        if self.sent is not None or hits is not None:
            return self._collect_all(outcomes, hits or {})
        step = Step()
        for key in sorted(outcomes) if len(outcomes) > 1 else outcomes:
            outcome = outcomes[key]
            if isinstance(outcome, Done):  # inline, not _sort: every step (~1k instructions)
                step.results[key] = normalize(key, outcome.value)
            else:
                sort_outcome(step, key, outcome)
        pos = self.pos
        for key, stored in pos.done.items():
            if key in pos.next:
                update, goto = stored
                step.results[key] = (update, None if goto is None else tuple(goto))
        return step

    def _collect_all(self, outcomes: Mapping[str, Outcome], hits: Mapping[str, Any]) -> Step:
        """:meth:`collect` for a step with sends or a cache."""
        self.cached = frozenset(hits)
        return collect_all(self.pos, self.sent, outcomes, hits)

    def commit(self, step: Step) -> Program[None]:
        """Merge a finished step, route, checkpoint it and emit its events."""
        pos, plan, modes = self.pos, self.plan, self.modes
        results = step.results
        sent = self.sent
        if sent is not None:  # a fan-out's tasks route as their node, once
            keys = list(results)  # in merge order already
            ran = list(dict.fromkeys(sent.get(k, k) for k in keys))
            gotos: dict[str, tuple[str, ...]] = {}
            for k in keys:
                if (g := results[k][1]) is not None:
                    n = sent.get(k, k)
                    gotos[n] = (*gotos.get(n, ()), *g)
        else:
            keys = ran = sorted(results)
            gotos = {n: g for n, (_, g) in results.items() if g is not None}
        updates = [(k, u) for k in keys if (u := results[k][0])]
        if plan.managed:  # the engine's to supply: a node's write to them is dropped
            managed = plan.managed
            updates = [(k, {a: b for a, b in u.items() if a not in managed}) for k, u in updates]
            # routers read them as the step that ran did
            now = managed_values(plan, {}, self.config.recursion_limit - self.steps_run)
        else:
            now = None
        pos.values, changes = merge(plan, pos.values, updates)
        net = self.net
        if net is not None:
            for key, change in changes.items():
                net[key] = combine(net.get(key), change, pos.values[key])
        pos.step += 1
        self.steps_run += 1
        kept, pos.done = pos.done, {}
        ctx = self.ctx
        if ctx.answers or ctx.suspended:
            for key in keys:
                ctx.forget(path_key((*self.base, key)))
        pos.next = route(plan, pos, self.config, ran, gotos, now)
        if self.waiting:
            pos.next = tuple(sorted({*pos.next, *self.waiting}))
            self.waiting = ()
        parent = pos.checkpoint_id
        if self.saves:
            if self.plain and sent is None:  # every step of a sync run: the short way
                yield self._put(write(pos, self.config, changes, "loop", ran))
            else:
                yield from self._save(step, changes, ran, task_counts(sent, keys))
        if "updates" in modes:
            reported, self.reported = self.reported, frozenset()
            # work kept from before a pause was done first, so it is reported first
            for key in sorted(keys, key=lambda n: n not in kept) if kept else keys:
                if key in reported:
                    continue
                event = {sent.get(key, key) if sent else key: shown(results[key][0])}
                if key in self.cached:  # the result came from the cache (LangGraph's mark)
                    event["__metadata__"] = {"cached": True}
                yield Emit("updates", event)
        if "values" in modes:
            yield Emit("values", self.plan.schema.output(pos.values))
        if "messages" in modes:
            yield from written_messages(results, self.base)
        if "debug" in modes:
            stored = (parent, pos.checkpoint_id, ran, pos.next)
            where = (self.ctx.anchor, self.base)
            yield from step_events(pos.step, where, results, stored, pos.values, self.config)

    def _save(
        self, step: Step, changes: dict[str, Change], ran: list[str], counts: Any
    ) -> Program[None]:
        """Store a committed step under its durability, with its fan-out's task counts."""
        pos = self.pos
        checkpoint = write(pos, self.config, changes, "loop", ran, counts)
        if self.held is None or (not pos.next and not pos.sends) or self.pauses_after(step):
            put = self._put(checkpoint)  # (under exit: the run ends or pauses here)
            yield Background(put) if self.background else put
        else:
            self.hold(checkpoint)  # durability="exit": stored when the run stops

    def pauses_after(self, step: Step) -> bool:
        """Whether a node of the committed step is an ``interrupt_after`` breakpoint."""
        after = self.plan.interrupt_after
        if not after:
            return False
        sent = self.sent or {}
        return any(sent.get(k, k) in after for k in step.results)
