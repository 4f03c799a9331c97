"""One run of a graph as a small state machine: start, next tasks, commit, suspend.

``run_program`` is a generator that yields effects (``_effects``) and receives their
results; ``CompiledGraph`` drives it synchronously or asynchronously. No I/O here.

A run is either a *root* (it loads and checkpoints its thread) or *nested* (a compiled
graph run inside a node of another run). A nested run checkpoints nothing: when it
pauses it leaves its position in the shared :class:`RunContext`, and the root stores that
with the paused step, so a resume continues the nested run where it stood.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

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
from graphagent.graph._constants import END, INTERRUPT, START, is_private, public
from graphagent.graph._effects import (
    Done,
    Emit,
    Execute,
    Load,
    Outcome,
    Paused,
    Put,
    PutWrites,
    Task,
)
from graphagent.graph._loop import Loop, attach_node, combine, normalize
from graphagent.graph._state import OverAllState, as_input

if TYPE_CHECKING:
    from graphagent.graph._compiled import CompiledGraph

__all__ = ["Program", "Run", "Step", "run_program"]

Program = Generator[Any, Any, dict[str, Any]]
Effects = Generator[Any, Any, None]
Result = tuple[Mapping[str, Any] | None, tuple[str, ...] | None]
_BREAKPOINT = "__breakpoint__"
_TASK = current_task()


class Step:
    """A super-step's outcomes, sorted out: what finished, what paused, what failed."""

    __slots__ = ("failure", "paused", "results")

    def __init__(self) -> None:
        # a plain class, not a dataclass: one is made every step, and default factories
        # cost a call each
        self.results: dict[str, Result] = {}
        self.paused: dict[str, GraphInterrupt] = {}
        self.failure: tuple[str, BaseException] | None = None

    @property
    def interrupts(self) -> tuple[Interrupt, ...]:
        """Every interrupt asked in the step, in task-path order (so resumes are stable)."""
        found = [i for s in self.paused.values() for i in s.values if isinstance(i, Interrupt)]
        return tuple(sorted(found, key=lambda i: (i.path, i.id)))


def _shown(update: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """A node's update as stream events show it: without private keys."""
    if update is None or not any(is_private(k) for k in update):
        return update
    return public(update)


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
        net: when given, the run is nested inside a node: it does not checkpoint, lets
            errors through, pauses by raising ``GraphInterrupt``, and collects every
            change it made (beyond its input) into this dict.
    """
    run = Run(graph, config, modes, net)
    yield from run.start(input)
    while True:
        tasks = run.next_tasks()
        if tasks is None:
            if run.breakpoint:
                yield from run.stop_before()
            yield from run.flush()
            return run.finish()
        if "debug" in modes:
            yield from run.announce(tasks)
        state = OverAllState(run.loop.values, graph.schema.empties)
        outcomes = yield Execute(tasks, state, config)
        step = run.collect(outcomes)
        if step.paused or step.failure is not None:
            return (yield from run.suspend(step))
        yield from run.commit(step)
        if run.pauses_after(step):
            return (yield from run.stop_after())


class Run:
    """A run's position and the transitions between positions."""

    __slots__ = (
        "at_breakpoint",
        "base",
        "breakpoint",
        "ctx",
        "graph",
        "key",
        "loop",
        "modes",
        "nested",
        "pending",
        "saver",
        "start_input",
        "steps_run",
        "thread",
        "unsaved",
    )

    def __init__(
        self,
        graph: CompiledGraph,
        config: RunnableConfig,
        modes: frozenset[str],
        net: dict[str, Change] | None,
    ) -> None:
        self.graph = graph
        self.modes = modes
        self.loop = Loop(graph, config)
        self.loop.net = net
        self.nested = net is not None
        self.pending: list[Interrupt] = []
        self.at_breakpoint = False
        self.breakpoint: list[str] = []
        self.steps_run = 0
        self.start_input: dict[str, Any] = {}
        # the run's input checkpoint (and work to keep with it), stored with the first step
        self.unsaved: tuple[CheckpointWrite, tuple[PendingWrite, ...]] | None = None
        if self.nested:
            scope = _TASK.get()
            self.thread, self.saver = None, None
            self.ctx = scope.ctx if scope is not None and scope.ctx is not None else None
            self.base = scope.nested_path() if scope is not None else ()
        else:
            self.thread = config.thread_id
            self.saver = graph.saver if self.thread is not None else None
            self.ctx = None
            self.base = ()
        if self.ctx is None:
            self.ctx = RunContext(self.thread, self.saver is not None)
        self.key = path_key(self.base)
        if (graph.interrupt_before or graph.interrupt_after) and not self.ctx.persistent:
            where = "its parent graph needs" if self.nested else "need"
            raise UserError(
                f"interrupt_before/interrupt_after {where} a saver and a thread_id: "
                "compile(saver=MemorySaver()) and pass config={'thread_id': ...}"
            )

    @property
    def values(self) -> dict[str, Any]:
        """The state values at the current position."""
        return self.loop.values

    # -- start -------------------------------------------------------------------------

    def start(self, input: Any) -> Effects:
        """Take the run to its first position: fresh input, a resume, or a continue."""
        loop = self.loop
        if self.nested:
            assert self.ctx is not None
            position = self.ctx.resume_position(self.key)
            if position is not None:
                self._restore(position, input)
            else:
                self._merge_input(input, None)
                self.start_input = dict(input)
            return
        saved: Checkpoint | None = None
        if self.saver is not None:
            assert self.thread is not None
            saved, loop.head = yield Load(self.thread, loop.config.checkpoint_id)
        if saved is not None:
            self.graph.check_stored(self.thread, saved)
            loop.values = dict(saved.values)
            loop.step = saved.step
            loop.checkpoint_id = saved.id
            loop.barriers = {k: list(v) for k, v in saved.extra.get("barriers", {}).items()}
        if isinstance(input, Command) and input.resume is not None:
            self._resume(saved, input)
        elif isinstance(input, Command) and (input.goto is not None or input.update is not None):
            self._redirect(saved, input)
        elif input is None:
            self._continue(saved)
        else:
            changes = self._merge_input(input, saved)
            if self.saver is not None:
                self._defer(loop.write(changes, "input"))
        if "values" in self.modes:
            yield Emit("values", public(loop.values))

    def _merge_input(self, input: Any, saved: Checkpoint | None) -> dict[str, Change]:
        if isinstance(input, Command):
            raise UserError(
                "a Command as input needs resume=, goto= or update= (it was empty); "
                "to continue a paused thread pass None"
            )
        input = as_input(input)
        loop = self.loop
        updates: list[tuple[str, Mapping[str, Any]]] = [("__input__", input)]
        if saved is None and self.graph.schema.defaults:
            defaults = {k: v for k, v in self.graph.schema.defaults.items() if k not in input}
            updates.insert(0, ("__defaults__", defaults))
        loop.values, changes = loop.merge(updates)
        loop.step += 1
        loop.barriers = {}
        loop.next = loop.route([START], {})
        return changes

    def _continue(self, saved: Checkpoint | None) -> None:
        if saved is None:
            raise EmptyInputError(
                "invoke(None) continues a saved thread, but there is none: pass an input dict, "
                "or a config with the thread_id of an existing thread"
            )
        self.loop.next = saved.next
        self._load_pending(saved)

    def _resume(self, saved: Checkpoint | None, command: Command) -> None:
        if saved is None:
            raise EmptyInputError(
                f"nothing to resume: thread {self.thread!r} has no checkpoint; "
                "start it with an input first"
            )
        loop = self.loop
        loop.next = saved.next
        self._load_pending(saved)
        if self.pending or not self.at_breakpoint:
            self._answer(command.resume)
        loop.skip_breakpoint = True
        self._apply_command(saved, command)

    def _redirect(self, saved: Checkpoint | None, command: Command) -> None:
        """``Command(goto=..., update=...)`` as input: continue the thread (past a
        breakpoint) with the update applied and the goto nodes added to what runs next."""
        if saved is not None:
            self.loop.next = saved.next
            self._load_pending(saved)
        self.loop.skip_breakpoint = True
        self._apply_command(saved, command)

    def _apply_command(self, saved: Checkpoint | None, command: Command) -> None:
        """A Command input's update and goto land first, in a checkpoint of their own, so
        the next step sees them and a pause in it resumes with them."""
        loop = self.loop
        if command.update is None and command.goto is None:
            return
        changes: dict[str, Change] = {}
        if command.update is not None:
            loop.values, changes = loop.merge([("__resume__", as_input(command.update))])
        if command.goto is not None:
            loop.next = self._with_goto(loop.next, command.goto)
        loop.step += 1
        if self.saver is not None:
            keep = tuple(saved.pending_writes) if saved is not None else ()
            self._defer(loop.write(changes, "update"), keep)

    def _with_goto(self, due: tuple[str, ...], goto: str | Sequence[str]) -> tuple[str, ...]:
        targets = [goto] if isinstance(goto, str) else list(goto)
        nodes = self.graph.topology.nodes
        unknown = [t for t in targets if t != END and t not in nodes]
        if unknown:
            raise InvalidRouteError(
                f"Command(goto=...) names {', '.join(map(repr, unknown))}, not a node of this "
                f"graph; known nodes: {', '.join(sorted(nodes))}"
            )
        return tuple(sorted({*due, *(t for t in targets if t != END)}))

    def _load_pending(self, saved: Checkpoint) -> None:
        ctx, loop = self.ctx, self.loop
        assert ctx is not None
        for w in saved.pending_writes:
            kind = w.kind
            if kind == "update":
                loop.done[w.task] = w.value
            elif kind == "answers":
                ctx.set_answers(w.value[0], list(w.value[1]))
            elif kind == "resume":  # layout before nested answers: the node's own answers
                ctx.set_answers(w.task, list(w.value))
            elif kind == "interrupt":
                self.pending.append(Interrupt.load(w.value))
            elif kind == "nested":
                ctx.suspend(w.value[0], dict(w.value[1]))
            elif kind == "breakpoint":
                self.at_breakpoint = True
                loop.skip_breakpoint = True

    def _answer(self, answer: Any) -> None:
        """Hand ``Command(resume=answer)`` to the pending interrupts, by task path."""
        interrupts, thread, ctx = self.pending, self.thread, self.ctx
        assert ctx is not None
        if not interrupts:
            raise EmptyInputError(
                f"thread {thread!r} has no pending interrupt to resume; send new input instead"
            )
        ids = {i.id for i in interrupts}
        if len(interrupts) == 1 and not (
            isinstance(answer, Mapping) and answer and set(answer) <= ids
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
        for i in sorted(interrupts, key=lambda i: (i.path, i.id)):
            ctx.add_answer(path_key(i.path), answers[i.id])

    def _restore(self, position: Mapping[str, Any], input: Mapping[str, Any]) -> None:
        """Continue a nested run from the position it left when it paused (or finished)."""
        loop = self.loop
        loop.values = dict(position["values"])
        net = {key: Change(kind, payload) for key, (kind, payload) in position["net"].items()}
        if loop.net is not None:
            loop.net.update(net)
        self.start_input = dict(input)
        if position.get("finished"):
            return  # it ended inside a task that paused later: its result stands
        self._take_parent_changes(position["input"], input, net)
        loop.step = position["step"]
        loop.next = tuple(position["next"])
        loop.barriers = {k: list(v) for k, v in position["barriers"].items()}
        loop.done = dict(position["done"])
        loop.skip_breakpoint = bool(position["skip"])

    def _take_parent_changes(
        self, before: Mapping[str, Any], now: Mapping[str, Any], net: Mapping[str, Change]
    ) -> None:
        """Keys the parent changed while this run was paused (``update_state`` on the
        parent's thread) take the parent's new value, plus what this run appended."""
        loop = self.loop
        appended: dict[str, Any] = {}
        for key, value in now.items():
            if key in before and before[key] == value:
                continue
            change = net.get(key)
            if change is None or change.kind == "append":
                loop.values[key] = value
                if change is not None:
                    appended[key] = change.value
        if appended:
            loop.values, _ = loop.merge([("__nested__", appended)])

    def finish(self) -> dict[str, Any]:
        """The run reached its end. A nested run leaves its result in the shared context
        too: should its task pause later, the task's rerun gets the result, not a rerun."""
        loop = self.loop
        if self.nested:
            assert self.ctx is not None
            self.ctx.suspend(
                self.key,
                {
                    "finished": True,
                    "values": dict(loop.values),
                    "net": {k: [kind, payload] for k, (kind, payload) in (loop.net or {}).items()},
                },
            )
        return public(loop.values)

    # -- each step ---------------------------------------------------------------------

    def next_tasks(self) -> tuple[Task, ...] | None:
        """The tasks of the next step, or ``None`` when the run ends or pauses before it
        (then :attr:`breakpoint` names the ``interrupt_before`` nodes it reached).

        A plain function, not a generator: it runs every step, and effects are only
        needed at a breakpoint (:meth:`stop_before`) or for debug events (:meth:`announce`).
        """
        loop = self.loop
        if not loop.next:
            return None
        limit = loop.config.recursion_limit
        if self.steps_run >= limit:
            raise GraphRecursionError(
                f"the run took {limit} super-steps without reaching END (next: "
                f"{', '.join(loop.next)}); raise config recursion_limit if the loop is "
                "intended, or add a condition that routes to END"
            )
        before = self.graph.interrupt_before
        if before and not loop.skip_breakpoint:
            hit = [n for n in loop.next if n in before]
            if hit:
                self.breakpoint = hit
                return None
        loop.skip_breakpoint = False
        return self._tasks()

    def announce(self, tasks: tuple[Task, ...]) -> Effects:
        """The step's tasks as ``debug`` events."""
        step = self.loop.step + 1
        for t in tasks:
            yield Emit("debug", {"type": "task", "step": step, "node": t.spec.name})

    def _tasks(self) -> tuple[Task, ...]:
        loop, ctx, base = self.loop, self.ctx, self.base
        nodes, done = self.graph.topology.nodes, loop.done
        answers = ctx.answers if ctx is not None else None
        tasks = []
        for n in loop.next:
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
            elif step.failure is None:
                step.failure = (node, outcome.error)
        loop = self.loop
        for node, stored in loop.done.items():
            if node in loop.next:
                update, goto = stored
                step.results[node] = (update, None if goto is None else tuple(goto))
        return step

    def commit(self, step: Step) -> Effects:
        """Merge a finished step, route, checkpoint it and emit its events."""
        loop, modes = self.loop, self.modes
        results = step.results
        ran = sorted(results)
        gotos = {n: g for n, (_, g) in results.items() if g is not None}
        updates = [(n, u) for n in ran if (u := results[n][0])]
        loop.values, changes = loop.merge(updates)
        if loop.net is not None:
            for key, change in changes.items():
                loop.net[key] = combine(loop.net.get(key), change, loop.values[key])
        loop.step += 1
        self.steps_run += 1
        kept, loop.done = loop.done, {}
        ctx = self.ctx
        if ctx is not None and (ctx.answers or ctx.suspended):
            for node in ran:
                ctx.forget(path_key((*self.base, node)))
        loop.next = loop.route(ran, gotos)
        if self.saver is not None:
            yield self._put(loop.write(changes, "loop", ran))
        if "updates" in modes:
            # work kept from before a pause was done first, so it is reported first
            for node in sorted(ran, key=lambda n: n not in kept) if kept else ran:
                yield Emit("updates", {node: _shown(results[node][0])})
        if "values" in modes:
            yield Emit("values", public(loop.values))
        if "debug" in modes:
            yield Emit("debug", self._debug_checkpoint())

    def _debug_checkpoint(self) -> dict[str, Any]:
        loop = self.loop
        return {
            "type": "checkpoint",
            "step": loop.step,
            "checkpoint_id": loop.checkpoint_id,
            "next": loop.next,
            "values": dict(loop.values),
        }

    def pauses_after(self, step: Step) -> bool:
        """Whether a node of the committed step is an ``interrupt_after`` breakpoint."""
        after = self.graph.interrupt_after
        return bool(after) and any(n in after for n in step.results)

    # -- pausing -----------------------------------------------------------------------

    def suspend(self, step: Step) -> Program:
        """Stop at an unfinished step: keep its finished work and questions, or fail."""
        loop = self.loop
        if self.nested:
            if step.failure is not None:
                node, exc = step.failure
                raise attach_node(exc, node)
            self._leave_position(step, skip=False)
            raise GraphInterrupt(step.interrupts)
        if step.failure is None and self.saver is None:
            node = next(iter(step.paused))
            raise UserError(
                f"node {node!r} called interrupt(), which needs a saver and "
                "a thread_id: compile(saver=MemorySaver()) and pass "
                "config={'thread_id': ...}"
            )
        if self.saver is not None and loop.checkpoint_id is not None:
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
            return public(loop.values)
        for mode in ("updates", "values"):
            if mode in self.modes:
                yield Emit(mode, {INTERRUPT: asked})
        return {**public(loop.values), INTERRUPT: asked}

    def _store_step(self, step: Step) -> Effects:
        """The unfinished step as pending writes, grouped by top-level task."""
        ctx, loop = self.ctx, self.loop
        assert ctx is not None and self.thread is not None and loop.checkpoint_id is not None
        writes: list[PendingWrite] = [
            PendingWrite(node, "update", [dict(u) if u is not None else None, g])
            for node, (u, g) in step.results.items()
        ]
        for node, signal in step.paused.items():
            for key, answers in ctx.under(ctx.answers, node):
                writes.append(PendingWrite(node, "answers", [key, list(answers)]))
            for key, position in ctx.under(ctx.suspended, node):
                writes.append(PendingWrite(node, "nested", [key, position]))
            for intr in signal.values:
                if isinstance(intr, Interrupt):
                    writes.append(PendingWrite(node, "interrupt", intr.dump()))
            if not signal.values:  # a nested graph stopped at one of its breakpoints
                writes.append(PendingWrite(_BREAKPOINT, "breakpoint", [node]))
        if writes:
            yield PutWrites(self.thread, loop.checkpoint_id, tuple(writes))

    def stop_before(self) -> Effects:
        """Pause before the ``interrupt_before`` nodes :meth:`next_tasks` reached."""
        loop, hit = self.loop, self.breakpoint
        if self.nested:
            self._leave_position(None, skip=True)
            raise GraphInterrupt(())
        assert self.thread is not None
        yield from self._anchor()
        assert loop.checkpoint_id is not None
        yield PutWrites(
            self.thread, loop.checkpoint_id, (PendingWrite(_BREAKPOINT, "breakpoint", hit),)
        )

    def stop_after(self) -> Program:
        """Pause after an ``interrupt_after`` node: the checkpoint already says what is next."""
        if self.nested:
            self._leave_position(None, skip=False)
            raise GraphInterrupt(())
        return public(self.loop.values)
        yield  # a generator like the other transitions

    def _leave_position(self, step: Step | None, *, skip: bool) -> None:
        """A nested run's position, left in the shared context for the root to store."""
        loop, ctx = self.loop, self.ctx
        assert ctx is not None
        done = {}
        if step is not None:
            done = {
                n: [dict(u) if u is not None else None, g] for n, (u, g) in step.results.items()
            }
        position = {
            "values": dict(loop.values),
            "step": loop.step,
            "next": list(loop.next),
            "barriers": loop.barriers,
            "done": done,
            "skip": skip,
            "net": {k: [kind, payload] for k, (kind, payload) in (loop.net or {}).items()},
            "input": self.start_input,
        }
        ctx.suspend(self.key, position)

    # -- checkpoints -------------------------------------------------------------------

    def _defer(self, write: CheckpointWrite, keep: tuple[PendingWrite, ...] = ()) -> None:
        """Hold the run's input checkpoint back until its first step commits.

        They are stored together (``put_many``), so a run that loses a race on its thread
        leaves nothing behind, not even its input, and running it again adds it once.
        ``keep``: pending work of the head to carry over, should the input be stored alone.
        """
        self.unsaved = (write, keep)
        self.loop.checkpoint_id = write.id

    def flush(self) -> Effects:
        """Store the held-back input checkpoint on its own (the run stops before its first
        step commits: it ends, pauses or fails there)."""
        if self.unsaved is None:
            return
        (write, keep), self.unsaved = self.unsaved, None
        loop = self.loop
        assert self.thread is not None
        yield Put(self.thread, write, loop.head)
        loop.checkpoint_id = loop.head = write.id
        if keep:
            yield PutWrites(self.thread, write.id, keep)

    def _put(self, write: CheckpointWrite) -> Put:
        """The effect storing ``write`` (with the held-back input, if any); the run moves
        to it now (a put that fails ends the run)."""
        loop = self.loop
        assert self.thread is not None
        before: tuple[CheckpointWrite, ...] = ()
        if self.unsaved is not None:
            before, self.unsaved = (self.unsaved[0],), None
        effect = Put(self.thread, write, loop.head, before)
        loop.checkpoint_id = loop.head = write.id
        return effect

    def _anchor(self) -> Effects:
        """Make the current position the thread's head before pausing there.

        A replay or fork of an older checkpoint that pauses before finishing a step has
        written nothing yet; a ``"fork"`` checkpoint (same values, same next nodes) makes
        it the head, so ``get_state`` shows its question and ``Command(resume=...)`` on
        the thread continues it.
        """
        loop = self.loop
        if self.unsaved is not None:
            yield from self.flush()
        elif loop.checkpoint_id is not None and loop.checkpoint_id != loop.head:
            yield self._put(loop.write({}, "fork"))
