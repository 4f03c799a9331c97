"""A paused step: what a root run that paused mid-step hands out (its output and its
last events), and how ``Command(resume=...)`` answers the questions pending."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from graphagent.errors import EmptyInputError, UserError
from graphagent.graph._command import Interrupt, is_interrupt_id, path_key
from graphagent.graph._constants import INTERRUPT, public
from graphagent.graph._debug import task_result
from graphagent.graph._effects import Emit, Program
from graphagent.graph._plan import Plan
from graphagent.graph._step import Step, merge

__all__ = ["answers_by_path", "paused"]


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
    if "values" in modes:
        if asked:
            yield Emit("values", {**public(before), INTERRUPT: asked})
        if finished:
            yield Emit("values", public(after))
    if "debug" in modes:
        anchor, base, number = where
        for node in sorted({*results, *step.paused}):
            done, signal = results.get(node), step.paused.get(node)
            asks = tuple(i for i in signal.values if isinstance(i, Interrupt)) if signal else ()
            update = done[0] if done else None
            yield Emit("debug", task_result(number, anchor, base, node, update, asks))
    return {**public(after), INTERRUPT: asked} if asked else public(after)


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
