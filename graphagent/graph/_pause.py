"""Pausing and resuming a step, without I/O: what a root run that paused mid-step hands
out (its output and last events), answers to pending interrupts by task path, the paused
step taken up from a checkpoint's pending writes, an unfinished step written as pending
writes, and a paused nested run's values as its parent changed them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint.base import Change, Checkpoint, PendingWrite
from graphagent.errors import EmptyInputError, UserError
from graphagent.graph._command import Interrupt, RunContext, is_interrupt_id, path_key
from graphagent.graph._constants import INTERRUPT
from graphagent.graph._debug import task_result
from graphagent.graph._effects import Emit, Program
from graphagent.graph._keep import DONE_KIND
from graphagent.graph._plan import Plan
from graphagent.graph._step import BREAKPOINT, Position, Step, merge

ERROR_KIND = "error"
"""The kind of the pending write naming a step's failed task and its error."""

ERROR_TASK = "__error__"
"""The task name the error write is stored under (a group of its own)."""

__all__ = [
    "ERROR_KIND",
    "ERROR_TASK",
    "answers_by_path",
    "parent_changes",
    "paused",
    "pending_writes",
    "take_pending",
]


def paused(
    plan: Plan,
    before: Mapping[str, Any],
    step: Step,
    modes: frozenset[str],
    where: tuple[str | None, tuple[str, ...], int],
) -> Program[dict[str, Any]]:
    """The output of a run paused in ``step``: the state with the writes of the step's
    finished nodes (they stay pending until the step commits) and the questions asked.

    Streams, as LangGraph does: ``{"__interrupt__": asked}`` in ``"updates"``; in
    ``"values"`` the pause with the state (``{**state, "__interrupt__": asked}``), then
    the state with the finished writes; in ``"debug"`` each task's result. ``where`` is
    the step's anchor checkpoint, the run's task path and the step number.
    """
    asked, results = step.interrupts, step.results
    finished = [(n, u) for n in sorted(results) if (u := results[n][0])]
    after = merge(plan, before, finished)[0] if finished else dict(before)
    if "updates" in modes:
        yield Emit("updates", {INTERRUPT: asked})
    output = plan.schema.output
    if "values" in modes:
        if asked:
            yield Emit("values", {**output(before), INTERRUPT: asked})
        if finished:
            yield Emit("values", output(after))
    if "debug" in modes:
        anchor, base, number = where
        for node in sorted({*results, *step.paused}):
            done, signal = results.get(node), step.paused.get(node)
            asks = tuple(i for i in signal.values if isinstance(i, Interrupt)) if signal else ()
            update = done[0] if done else None
            yield Emit("debug", task_result(number, anchor, base, node, update, asks))
    return {**output(after), INTERRUPT: asked} if asked else output(after)


def answers_by_path(
    pending: Sequence[Interrupt], answer: Any, thread: str | None
) -> list[tuple[str, Any]]:
    """``Command(resume=answer)`` as ``(task path key, answer)`` pairs, one per answered
    pending interrupt, in task-path order.

    Raises:
        EmptyInputError: nothing is pending.
        UserError: ``answer`` names an interrupt id that is not pending (answered
            already, or asked elsewhere), or several are pending and ``answer`` answers
            none of them by id.
    """
    if not pending:
        raise EmptyInputError(
            f"thread {thread!r} has no pending interrupt to resume; send new input instead"
        )
    ids = {i.id for i in pending}
    if isinstance(answer, Mapping):
        stale = [k for k in answer if is_interrupt_id(k) and k not in ids]
        if stale:
            raise UserError(
                f"thread {thread!r}: Command(resume=...) answers interrupt "
                f"{', '.join(map(repr, stale))}, which is not pending (answered already, or "
                f"asked on another thread); nothing was run. Pending: "
                f"{', '.join(sorted(ids))} (get_state(config).interrupts)"
            )
    by_id = isinstance(answer, Mapping) and answer and set(answer) <= ids
    if len(pending) == 1 and not by_id:
        answers = {pending[0].id: answer}
    elif by_id:
        # some may be answered now: the tasks asking the others run again and ask again
        answers = dict(answer)
    else:
        raise UserError(
            f"thread {thread!r} has {len(pending)} pending interrupts; resume with "
            "Command(resume={interrupt_id: answer, ...}) answering one or more of them by id "
            "(ids in get_state(config).interrupts)"
        )
    return [
        (path_key(i.path), answers[i.id])
        for i in sorted(pending, key=lambda i: (i.path, i.id))
        if i.id in answers
    ]


def take_pending(
    saved: Checkpoint, position: Position, ctx: RunContext
) -> tuple[list[Interrupt], bool]:
    """Take up the paused step stored with ``saved``: its finished work into
    ``position.done``, answers and nested positions into ``ctx``.

    Returns its pending interrupts and whether it paused at a breakpoint (then the next
    step runs past it).
    """
    pending: list[Interrupt] = []
    at_breakpoint = False
    # work kept as each task finished (``_keep``) counts on the head only, after a
    # crash: a replay of an older checkpoint reruns its step
    on_head = saved.id == position.head
    for w in saved.pending_writes:
        kind = w.kind
        if kind == "update" or (kind == DONE_KIND and on_head):
            position.done[w.task] = w.value
        elif kind == "answers":
            ctx.set_answers(w.value[0], list(w.value[1]))
        elif kind == "resume":  # layout before nested answers: the node's own answers
            ctx.set_answers(w.task, list(w.value))
        elif kind == "interrupt":
            pending.append(Interrupt.load(w.value))
        elif kind == "nested":
            ctx.suspend(w.value[0], dict(w.value[1]))
        elif kind == "breakpoint":
            at_breakpoint = position.skip_breakpoint = True
    return pending, at_breakpoint


def pending_writes(
    step: Step, ctx: RunContext, clear_error: bool = False
) -> tuple[PendingWrite, ...]:
    """An unfinished step as pending writes, grouped by top-level task: finished work,
    the answers and nested positions under each paused task, its questions, and the
    failed task with its error (``repr`` of it), or, ``clear_error``, none (the step's
    checkpoint holds the error of an earlier attempt at the step)."""
    writes = [PendingWrite(node, "update", done) for node, done in step.dump_results().items()]
    for node, signal in step.paused.items():
        for key, answers in ctx.under(ctx.answers, node):
            writes.append(PendingWrite(node, "answers", [key, list(answers)]))
        for key, position in ctx.under(ctx.suspended, node):
            writes.append(PendingWrite(node, "nested", [key, position]))
        for intr in signal.values:
            if isinstance(intr, Interrupt):
                writes.append(PendingWrite(node, "interrupt", intr.dump()))
        if not signal.values:  # a nested graph stopped at one of its breakpoints
            writes.append(PendingWrite(BREAKPOINT, "breakpoint", [node]))
    if step.failure is not None and isinstance(step.failure[1], Exception):
        # what get_state shows as the task's error (a stop, Ctrl-C or cancellation, is not
        # the task's); the task runs again when the thread continues. Kept apart from the
        # task's own writes, which it must not replace: a resume refused by the node
        # leaves the task's question pending
        node, exc = step.failure
        writes.append(PendingWrite(ERROR_TASK, ERROR_KIND, [node, repr(exc)]))
    elif clear_error:  # the step failed before, on this checkpoint: no longer
        writes.append(PendingWrite(ERROR_TASK, ERROR_KIND, None))
    return tuple(writes)


def parent_changes(
    plan: Plan,
    values: dict[str, Any],
    before: Mapping[str, Any],
    now: Mapping[str, Any],
    net: Mapping[str, Change],
) -> dict[str, Any]:
    """A paused nested run's ``values`` as it resumes: keys the parent changed meanwhile
    (``update_state`` on the parent's thread) take the parent's new value, plus what the
    nested run had appended to them."""
    appended: dict[str, Any] = {}
    for key, value in now.items():
        if key in before and before[key] == value:
            continue
        change = net.get(key)
        if change is None or change.kind == "append":
            values[key] = value
            if change is not None:
                appended[key] = change.value
    if appended:
        values, _ = merge(plan, values, [("__nested__", appended)])
    return values
