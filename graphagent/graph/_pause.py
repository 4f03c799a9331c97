"""Pausing and resuming a step, without I/O: answers to pending interrupts by task path,
the paused step taken up from a checkpoint's pending writes, an unfinished step written as
pending writes, and a paused nested run's values as its parent changed them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint.base import Change, Checkpoint, PendingWrite
from graphagent.errors import EmptyInputError, UserError
from graphagent.graph._command import Interrupt, RunContext, is_interrupt_id, path_key
from graphagent.graph._plan import Plan
from graphagent.graph._step import BREAKPOINT, Position, Step, merge

__all__ = ["answers_by_path", "parent_changes", "pending_writes", "take_pending"]


def answers_by_path(
    pending: Sequence[Interrupt], answer: Any, thread: str | None
) -> list[tuple[str, Any]]:
    """``Command(resume=answer)`` as ``(task path key, answer)`` pairs, one per pending
    interrupt, in task-path order.

    Raises:
        EmptyInputError: nothing is pending.
        UserError: ``answer`` names an interrupt id that is not pending (answered
            already, or asked elsewhere), or several are pending and ``answer`` does not
            answer each by id.
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
    if len(pending) == 1 and not (isinstance(answer, Mapping) and answer and set(answer) <= ids):
        answers = {pending[0].id: answer}
    elif isinstance(answer, Mapping):
        answers = dict(answer)
        missing = [i.id for i in pending if i.id not in answers]
        if missing:
            raise UserError(
                f"thread {thread!r} has {len(pending)} pending interrupts; "
                f"Command(resume=...) must answer each by id, missing: {', '.join(missing)}"
            )
    else:
        raise UserError(
            f"thread {thread!r} has {len(pending)} pending interrupts; resume with "
            "Command(resume={interrupt_id: answer, ...}) (ids in get_state(config).interrupts)"
        )
    return [
        (path_key(i.path), answers[i.id]) for i in sorted(pending, key=lambda i: (i.path, i.id))
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
    for w in saved.pending_writes:
        kind = w.kind
        if kind == "update":
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


def pending_writes(step: Step, ctx: RunContext) -> tuple[PendingWrite, ...]:
    """An unfinished step as pending writes, grouped by top-level task: finished work,
    the answers and nested positions under each paused task, its questions."""
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
