"""What a root run that paused mid-step hands out: its output and its last events."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphagent.graph._command import Interrupt
from graphagent.graph._constants import INTERRUPT, public
from graphagent.graph._debug import task_result
from graphagent.graph._effects import Emit, Program
from graphagent.graph._plan import Plan
from graphagent.graph._step import Step, merge

__all__ = ["paused"]


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
