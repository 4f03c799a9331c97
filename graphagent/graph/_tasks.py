"""A step's tasks: the nodes due by their edges, each ``Send``'s own task, deferred nodes
held back, cached results looked up and stored. No I/O: the cache is reached through
effects (``CacheGet``, ``CacheSet``).

A task's key names it within its step: the node's name for a node due by its edges,
``node[i]`` for the step's ``i``-th ``Send``. Outcomes, finished work kept across a
pause, answers to interrupts and nested runs are keyed by it, so a resumed fan-out
reruns only the tasks that had not finished.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from graphagent.graph._command import RunContext, TaskScope, path_key
from graphagent.graph._effects import CacheGet, CacheSet, Done, Emit, Outcome, Paused, Program, Task
from graphagent.graph._plan import Plan
from graphagent.graph._policies import cache_namespace
from graphagent.graph._state import OverAllState
from graphagent.graph._step import Position, Result, Step, normalize

__all__ = [
    "announce",
    "cache_lookup",
    "cache_store",
    "collect_all",
    "make_tasks",
    "managed_values",
    "retried",
    "sort_outcome",
    "task_counts",
]

CacheKey = tuple[tuple[str, ...], str]


def make_tasks(
    plan: Plan, pos: Position, ctx: RunContext, base: tuple[str, ...]
) -> tuple[list[Task], tuple[str, ...], dict[str, str] | None]:
    """The step's tasks; the deferred nodes held back for a later step (a node added
    with ``defer=True`` waits while anything else is due); and, when the step runs
    sends, each send's task key -> its node, in the order the sends were made (finished
    ones included)."""
    nodes, done, answers = plan.topology.nodes, pos.done, ctx.answers
    tasks: list[Task] = []
    held: list[str] = []
    for n in pos.next:
        if n in done:
            continue
        spec = nodes[n]
        if spec.defer:
            held.append(n)
            continue
        path = (*base, n)
        resume = answers.get(path_key(path), ()) if answers else ()
        tasks.append(Task(spec, TaskScope(path, resume, ctx), n))
    empties = plan.schema.empties
    sent: dict[str, str] | None = {} if pos.sends else None
    for i, (n, arg) in enumerate(pos.sends):
        key = f"{n}[{i}]"
        sent[key] = n  # type: ignore[index]
        if key in done:
            continue
        path = (*base, key)
        resume = answers.get(path_key(path), ()) if answers else ()
        given = OverAllState(arg, empties) if isinstance(arg, Mapping) else arg
        tasks.append(Task(nodes[n], TaskScope(path, resume, ctx, n), key, (given,)))
    if held and (tasks or _others_pending(pos, held)):
        return tasks, tuple(held), sent
    for n in held:  # nothing else is due: the deferred nodes run now
        path = (*base, n)
        resume = answers.get(path_key(path), ()) if answers else ()
        tasks.append(Task(nodes[n], TaskScope(path, resume, ctx), n))
    return tasks, (), sent


def _others_pending(pos: Position, held: list[str]) -> bool:
    """Whether work other than the deferred nodes is kept from before a pause."""
    return any(key not in held for key in pos.done)


def task_counts(sent: Mapping[str, str] | None, keys: Iterable[str]) -> dict[str, int] | None:
    """How many tasks each node ran in a step with sends (``None`` without sends)."""
    if sent is None:
        return None
    counts: dict[str, int] = {}
    for key in keys:
        node = sent.get(key, key)
        counts[node] = counts.get(node, 0) + 1
    return counts


def managed_values(plan: Plan, values: dict[str, Any], remaining: int) -> dict[str, Any]:
    """``values`` with the schema's managed keys filled in for the coming step."""
    values = dict(values)
    for key, kind in plan.managed.items():
        values[key] = remaining if kind == "remaining_steps" else remaining <= 1
    return values


# -- outcomes ----------------------------------------------------------------------------


def sort_outcome(step: Step, key: str, outcome: Outcome) -> None:
    """File one task's outcome in ``step``: its result, its pause, or its failure (the
    first, unless a stop comes later: Ctrl-C or cancellation is what the run ends with)."""
    if isinstance(outcome, Done):
        step.results[key] = normalize(key, outcome.value)
    elif isinstance(outcome, Paused):
        step.paused[key] = outcome.signal
    elif step.failure is None or (
        isinstance(step.failure[1], Exception) and not isinstance(outcome.error, Exception)
    ):
        step.failure = (key, outcome.error)


def collect_all(
    pos: Position,
    sent: Mapping[str, str] | None,
    outcomes: Mapping[str, Outcome],
    hits: Mapping[str, Result],
) -> Step:
    """A step's outcomes with the cache's hits and the work kept from before a pause, in
    merge order: in a fan-out the nodes due by their edges, then the sends as made."""
    step = Step()
    done = pos.done
    if sent is not None:
        for key in (*pos.next, *sent):
            outcome = outcomes.get(key)
            if outcome is not None:
                sort_outcome(step, key, outcome)
            elif key in hits:
                step.results[key] = hits[key]
            elif key in done:
                update, goto = done[key]
                step.results[key] = (update, None if goto is None else tuple(goto))
        return step
    for key in sorted(outcomes):
        sort_outcome(step, key, outcomes[key])
    step.results.update(hits)
    for key, stored in done.items():
        if key in pos.next:
            update, goto = stored
            step.results[key] = (update, None if goto is None else tuple(goto))
    return step


# -- debug events ------------------------------------------------------------------------


def announce(pos: Position, tasks: tuple[Task, ...]) -> Program[None]:
    """The step's tasks as ``debug`` events."""
    step = pos.step + 1
    for t in tasks:
        event = {"type": "task", "step": step, "node": t.spec.name}
        if t.key != t.spec.name:
            event["task"] = t.key  # one of a fan-out's Send tasks
        yield Emit("debug", event)


def retried(pos: Position, tasks: tuple[Task, ...]) -> Program[None]:
    """Each retried attempt of the step's tasks as a ``task_retry`` debug event."""
    step = pos.step + 1
    for t in tasks:
        for attempt, error in enumerate(getattr(t, "retries", None) or (), 1):
            event = {
                "type": "task_retry",
                "step": step,
                "node": t.spec.name,
                "task": t.key,
                "attempt": attempt,
                "error": f"{type(error).__name__}: {error}",
            }
            yield Emit("debug", event)


# -- the cache ---------------------------------------------------------------------------


def cache_lookup(
    plan: Plan, tasks: tuple[Task, ...], state: OverAllState
) -> Program[tuple[tuple[Task, ...], dict[str, Result], dict[str, tuple[CacheKey, float | None]]]]:
    """Look the step's cached tasks up: returns the tasks still to run, the results of
    the hits (by task key), and where each missed task's result is to be stored."""
    wanted: dict[str, tuple[CacheKey, float | None]] = {}
    for task in tasks:
        policy = task.spec.cache
        if policy is None:
            continue
        given = state if task.input is None else task.input[0]
        key = policy.key(dict(given) if isinstance(given, Mapping) else given)
        wanted[task.key] = ((cache_namespace(task.spec.name, task.spec.fn), key), policy.ttl)
    if not wanted:
        return tasks, {}, {}
    found = yield CacheGet(plan.cache, [k for k, _ in wanted.values()])
    hits: dict[str, Result] = {}
    for task_key, (cache_key, _) in list(wanted.items()):
        if cache_key in found:
            update, goto = found[cache_key]
            hits[task_key] = (update, None if goto is None else tuple(goto))
            del wanted[task_key]
    return tuple(t for t in tasks if t.key not in hits), hits, wanted


def cache_store(
    plan: Plan, results: Mapping[str, Result], wanted: Mapping[str, tuple[CacheKey, float | None]]
) -> Program[None]:
    """Store the finished results of the step's missed cached tasks."""
    pairs: dict[CacheKey, tuple[Any, float | None]] = {}
    for task_key, (cache_key, ttl) in wanted.items():
        result = results.get(task_key)
        if result is None:
            continue
        update, goto = result
        if goto is not None and any(not isinstance(g, str) for g in goto):
            continue  # a result that sends is not reused: its sends carry live values
        pairs[cache_key] = ([dict(update) if update is not None else None, goto], ttl)
    if pairs:
        yield CacheSet(plan.cache, pairs)
