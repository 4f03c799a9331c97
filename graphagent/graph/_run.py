"""One run of a graph as a small state machine: start, next tasks, commit, suspend.

``run_program`` is a generator that yields effects (``_effects``) and receives their
results; ``_drive`` performs them, synchronously or asynchronously. No I/O here.
``update_program`` is ``update_state`` the same way.

A run is either a *root* (it loads and checkpoints its thread) or *nested* (a compiled
graph run inside a node of another run). A nested run checkpoints nothing: when it
pauses it leaves its position in the shared :class:`RunContext`, and the root stores that
with the paused step, so a resume continues the nested run where it stood.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkpoint.base import Change, Checkpoint, CheckpointWrite, PendingWrite
from graphagent.config import RunnableConfig
from graphagent.errors import (
    EmptyInputError,
    GraphInterrupt,
    GraphRecursionError,
    InvalidRouteError,
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
from graphagent.graph._constants import END, INTERRUPT, START, public
from graphagent.graph._effects import (
    Done,
    Emit,
    Execute,
    Get,
    Head,
    Lock,
    Outcome,
    Paused,
    Program,
    Put,
    PutMany,
    PutWrites,
    Task,
)
from graphagent.graph._plan import Plan
from graphagent.graph._state import OverAllState, as_input
from graphagent.graph._step import (
    BREAKPOINT,
    Position,
    Step,
    answers_by_path,
    attach_node,
    combine,
    merge,
    normalize,
    parent_changes,
    pending_writes,
    route,
    shown,
    take_pending,
    with_goto,
    write,
)

__all__ = ["Run", "load", "run_program", "update_program"]

_TASK = current_task()


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


def run_program(
    plan: Plan,
    input: Any,
    config: RunnableConfig,
    modes: frozenset[str],
    *,
    net: dict[str, Change] | None = None,
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
    """
    run = Run(plan, config, modes, net)
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
            yield from run.announce(tasks)
        state = OverAllState(run.pos.values, plan.schema.empties)
        outcomes = yield Execute(tasks, state, config)
        step = run.collect(outcomes)
        if step.paused or step.failure is not None:
            return (yield from run.suspend(step))
        yield from run.commit(step)
        if run.pauses_after(step):
            return run.stop_after()


def update_program(
    plan: Plan,
    config: RunnableConfig,
    values: Mapping[str, Any] | None,
    as_node: str | None,
) -> Program[str]:
    """``update_state`` as a program: merge ``values`` as if ``as_node`` wrote them.

    Returns the new checkpoint's id. On an older ``checkpoint_id`` this forks.
    """
    thread = config.thread_id
    if plan.saver is None or thread is None:
        raise UserError("update_state needs a saver and a thread_id in the config")
    nodes = plan.topology.nodes
    if as_node not in (None, START, END) and as_node not in nodes:
        raise InvalidRouteError(
            f"as_node={as_node!r} is not a node of this graph; known nodes: "
            f"{', '.join(sorted(nodes))}"
        )
    pos, saved = yield from load(plan, thread, config.checkpoint_id)
    pos.values, changes = merge(plan, pos.values, [(as_node or "__update__", dict(values or {}))])
    pos.step += 1
    if as_node == END:
        pos.next = ()
    elif as_node is not None:
        pos.next = route(plan, pos, config, [as_node], {})
    checkpoint = write(pos, config, changes, "update", [as_node] if as_node else None)
    yield Put(thread, checkpoint, pos.head)
    if as_node is None and saved is not None and saved.pending_writes:
        # the step stays where it paused: finished work, questions, nested runs and a
        # passed breakpoint carry over, so invoke(None) or a resume continues it
        yield PutWrites(thread, checkpoint.id, tuple(saved.pending_writes))
    return checkpoint.id


class Run:
    """One run: its identity (plan, config, thread, nested or not), its position, and the
    transitions between positions."""

    __slots__ = (
        "at_breakpoint",
        "base",
        "breakpoint",
        "config",
        "ctx",
        "key",
        "modes",
        "nested",
        "net",
        "pending",
        "plan",
        "pos",
        "saves",
        "start_input",
        "steps_run",
        "unsaved",
    )

    def __init__(
        self,
        plan: Plan,
        config: RunnableConfig,
        modes: frozenset[str],
        net: dict[str, Change] | None,
    ) -> None:
        self.plan = plan
        self.config = config
        self.modes = modes
        self.pos = Position()
        self.net = net
        self.nested = net is not None
        self.pending: list[Interrupt] = []
        self.at_breakpoint = False
        self.breakpoint: list[str] = []
        self.steps_run = 0
        self.start_input: dict[str, Any] = {}
        # the run's input checkpoint (and work to keep with it), stored with the first step
        self.unsaved: tuple[CheckpointWrite, tuple[PendingWrite, ...]] | None = None
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
        self.ctx = ctx or RunContext(config.thread_id, self.saves, plan.saver, config)
        self.key = path_key(self.base)
        if (plan.interrupt_before or plan.interrupt_after) and not self.ctx.persistent:
            where = "its parent graph needs" if self.nested else "need"
            raise UserError(
                f"interrupt_before/interrupt_after {where} a saver and a thread_id: "
                "compile(saver=MemorySaver()) and pass config={'thread_id': ...}"
            )

    @property
    def thread(self) -> str | None:
        """The thread the run (or the root run it is nested in) works on."""
        return self.ctx.thread

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
            pos.next = with_goto(self.plan, pos.next, command.goto)
        pos.step += 1
        if self.saves:
            keep = tuple(saved.pending_writes) if saved is not None else ()
            self._defer(write(pos, self.config, changes, "update"), keep)

    def _load_pending(self, saved: Checkpoint) -> None:
        self.pending, self.at_breakpoint = take_pending(saved, self.pos, self.ctx)
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

    def _net_dump(self) -> dict[str, list[Any]]:
        return {k: [kind, payload] for k, (kind, payload) in (self.net or {}).items()}

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
        if not pos.next:
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
            hit = [n for n in pos.next if n in before]
            if hit:
                self.breakpoint = hit
                return None
        pos.skip_breakpoint = False
        return self._tasks()

    def announce(self, tasks: tuple[Task, ...]) -> Program[None]:
        """The step's tasks as ``debug`` events."""
        step = self.pos.step + 1
        for t in tasks:
            yield Emit("debug", {"type": "task", "step": step, "node": t.spec.name})

    def _tasks(self) -> tuple[Task, ...]:
        pos, ctx, base = self.pos, self.ctx, self.base
        nodes, done = self.plan.topology.nodes, pos.done
        if not self.nested:
            ctx.anchor = pos.checkpoint_id  # what this step's interrupt ids are made from
            # durable sub-tasks store their results at once on a stored checkpoint only
            ctx.kept_on = pos.checkpoint_id if self.unsaved is None else None
        answers = ctx.answers
        tasks = []
        for n in pos.next:
            if n in done:
                continue
            path = (*base, n)
            resume = answers.get(path_key(path), ()) if answers else ()
            tasks.append(Task(nodes[n], TaskScope(path, resume, ctx)))
        return tuple(tasks)

    def collect(self, outcomes: Mapping[str, Outcome]) -> Step:
        """Sort the tasks' outcomes (in node order) and add the work finished earlier."""
        step = Step()
        for node in sorted(outcomes):
            outcome = outcomes[node]
            if isinstance(outcome, Done):
                step.results[node] = normalize(node, outcome.value)
            elif isinstance(outcome, Paused):
                step.paused[node] = outcome.signal
            elif step.failure is None or (
                # a stop (Ctrl-C, cancellation) is what the run ends with, over any error
                isinstance(step.failure[1], Exception) and not isinstance(outcome.error, Exception)
            ):
                step.failure = (node, outcome.error)
        pos = self.pos
        for node, stored in pos.done.items():
            if node in pos.next:
                update, goto = stored
                step.results[node] = (update, None if goto is None else tuple(goto))
        return step

    def commit(self, step: Step) -> Program[None]:
        """Merge a finished step, route, checkpoint it and emit its events."""
        pos, plan, modes = self.pos, self.plan, self.modes
        results = step.results
        ran = sorted(results)
        gotos = {n: g for n, (_, g) in results.items() if g is not None}
        updates = [(n, u) for n in ran if (u := results[n][0])]
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
            for node in ran:
                ctx.forget(path_key((*self.base, node)))
        pos.next = route(plan, pos, self.config, ran, gotos)
        if self.saves:
            yield self._put(write(pos, self.config, changes, "loop", ran))
        if "updates" in modes:
            # work kept from before a pause was done first, so it is reported first
            for node in sorted(ran, key=lambda n: n not in kept) if kept else ran:
                yield Emit("updates", {node: shown(results[node][0])})
        if "values" in modes:
            yield Emit("values", self.plan.schema.output(pos.values))
        if "debug" in modes:
            yield Emit("debug", pos.debug_event())

    def pauses_after(self, step: Step) -> bool:
        """Whether a node of the committed step is an ``interrupt_after`` breakpoint."""
        after = self.plan.interrupt_after
        return bool(after) and any(n in after for n in step.results)

    # -- pausing -----------------------------------------------------------------------

    def suspend(self, step: Step) -> Program[dict[str, Any]]:
        """Stop at an unfinished step: keep its finished work and questions, or fail."""
        pos = self.pos
        if self.nested:
            if step.failure is not None:
                node, exc = step.failure
                raise attach_node(exc, node)
            self._leave_position(step, skip=False)
            raise GraphInterrupt(step.interrupts)
        if step.failure is None and not self.saves:
            node = next(iter(step.paused))
            raise UserError(
                f"node {node!r} called interrupt(), which needs a saver and "
                "a thread_id: compile(saver=MemorySaver()) and pass "
                "config={'thread_id': ...}"
            )
        if self.saves and pos.checkpoint_id is not None:
            if step.failure is None:
                yield from self._anchor()
            else:
                yield from self.flush()  # the input stays, for invoke(None) to retry from
            yield from self._store_step(step)
        if step.failure is not None:
            node, exc = step.failure
            raise attach_node(exc, node)
        asked = step.interrupts
        if not asked:
            return self.plan.schema.output(pos.values)
        for mode in ("updates", "values"):
            if mode in self.modes:
                yield Emit(mode, {INTERRUPT: asked})
        return {**self.plan.schema.output(pos.values), INTERRUPT: asked}

    def _store_step(self, step: Step) -> Program[None]:
        """The unfinished step as pending writes, grouped by top-level task."""
        pos, thread = self.pos, self.thread
        assert thread is not None and pos.checkpoint_id is not None
        writes = pending_writes(step, self.ctx)
        if writes:
            yield PutWrites(thread, pos.checkpoint_id, writes)

    def stop_before(self) -> Program[None]:
        """Pause before the ``interrupt_before`` nodes :meth:`next_tasks` reached."""
        if self.nested:
            self._leave_position(None, skip=True)
            raise GraphInterrupt(())
        thread = self.thread
        assert thread is not None
        yield from self._anchor()
        assert self.pos.checkpoint_id is not None
        yield PutWrites(
            thread,
            self.pos.checkpoint_id,
            (PendingWrite(BREAKPOINT, "breakpoint", self.breakpoint),),
        )

    def stop_after(self) -> dict[str, Any]:
        """Pause after an ``interrupt_after`` node: the checkpoint already says what is next."""
        if self.nested:
            self._leave_position(None, skip=False)
            raise GraphInterrupt(())
        return self.plan.schema.output(self.pos.values)

    def _leave_position(self, step: Step | None, *, skip: bool) -> None:
        """A nested run's position, left in the shared context for the root to store."""
        done = step.dump_results() if step is not None else {}
        position = self.pos.dump(done, skip)
        position["net"], position["input"] = self._net_dump(), self.start_input
        self.ctx.suspend(self.key, position)

    # -- checkpoints -------------------------------------------------------------------

    def _defer(self, checkpoint: CheckpointWrite, keep: tuple[PendingWrite, ...] = ()) -> None:
        """Hold the run's input checkpoint back until its first step commits.

        They are stored together (``put_many``), so a run that loses a race on its thread
        leaves nothing behind, not even its input, and running it again adds it once.
        ``keep``: pending work of the head to carry over, should the input be stored alone.
        """
        self.unsaved = (checkpoint, keep)
        self.pos.checkpoint_id = checkpoint.id

    def flush(self) -> Program[None]:
        """Store the held-back input checkpoint on its own (the run stops before its first
        step commits: it ends, pauses or fails there)."""
        if self.unsaved is None:
            return
        (checkpoint, keep), self.unsaved = self.unsaved, None
        pos, thread = self.pos, self.thread
        assert thread is not None
        yield Put(thread, checkpoint, pos.head)
        pos.checkpoint_id = pos.head = checkpoint.id
        if keep:
            yield PutWrites(thread, checkpoint.id, keep)

    def _put(self, checkpoint: CheckpointWrite) -> Put | PutMany:
        """The effect storing ``checkpoint`` (with the held-back input, if any); the run
        moves to it now (a put that fails ends the run)."""
        pos, thread = self.pos, self.ctx.thread  # not the property: every step (~0.04 µs)
        assert thread is not None
        effect: Put | PutMany
        if self.unsaved is not None:
            effect = PutMany(thread, (self.unsaved[0], checkpoint), pos.head)
            self.unsaved = None
        else:
            effect = Put(thread, checkpoint, pos.head)
        pos.checkpoint_id = pos.head = checkpoint.id
        return effect

    def _anchor(self) -> Program[None]:
        """Make the current position the thread's head before pausing there.

        A replay or fork of an older checkpoint that pauses before finishing a step has
        written nothing yet; a ``"fork"`` checkpoint (same values, same next nodes) makes
        it the head, so ``get_state`` shows its question and ``Command(resume=...)`` on
        the thread continues it.
        """
        pos = self.pos
        if self.unsaved is not None:
            yield from self.flush()
        elif pos.checkpoint_id is not None and pos.checkpoint_id != pos.head:
            yield self._put(write(pos, self.config, {}, "fork"))
