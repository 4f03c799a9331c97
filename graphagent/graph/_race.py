"""Steps whose tasks race: the sources of an ``any_of`` join that run in one step.

``add_edge(["a", "b", "c"], "merge", aggregation="any_of")`` makes ``a``, ``b`` and ``c``
racers for ``merge`` (Spring AI Alibaba's ``NodeAggregationStrategy.ANY_OF``). When two or
more of them run in one super-step, the step takes the first of them to finish without
failing and drops the others: under ``ainvoke`` they are cancelled, under ``invoke`` their
threads are left to end on their own (Python cannot stop a thread) and what they return
is dropped. Only the winner's update is merged and only its edges are followed. The race
fails only when every racer fails. The step's other tasks run as in any step.
"""

from __future__ import annotations

import asyncio
import contextvars
import queue
import threading
from collections.abc import Awaitable, Callable, Sequence

from graphagent.graph._effects import Failed, Outcome, Task

__all__ = ["Executed", "arace", "race", "race_groups"]

Executed = tuple[dict[str, Outcome], "BaseException | None"]


def race_groups(tasks: Sequence[Task]) -> dict[str, str] | None:
    """Task key -> the ``any_of`` join its node races for, for the racers of groups that
    have two or more tasks in this step; ``None`` when nothing races (the common case).

    Keyed by task, not node: each ``Send`` task of a racing node (``node[i]``) races on
    its own, so a fan-out into a racer ends with its first task to finish."""
    counts: dict[str, int] = {}
    for task in tasks:
        group = task.spec.race
        if group is not None:
            counts[group] = counts.get(group, 0) + 1
    if not counts or max(counts.values()) < 2:
        return None
    return {
        t.key: t.spec.race for t in tasks if t.spec.race is not None and counts[t.spec.race] >= 2
    }


class _Referee:
    """Takes outcomes as they come and decides each race: its first outcome that is not a
    failure wins; a race whose every racer failed ends with its first failure."""

    def __init__(self, tasks: Sequence[Task], groups: dict[str, str]) -> None:
        self.groups = groups
        self.left: dict[str, int] = {}
        for name in groups.values():
            self.left[name] = self.left.get(name, 0) + 1
        self.failures: dict[str, tuple[str, Outcome]] = {}
        self.decided: set[str] = set()
        self.outcomes: dict[str, Outcome] = {}
        self.waiting = len(tasks)

    def take(self, node: str, outcome: Outcome) -> str | None:
        """Record ``node``'s outcome; returns the race it just decided, if any."""
        self.waiting -= 1
        group = self.groups.get(node)
        if group is None:
            self.outcomes[node] = outcome
            return None
        if group in self.decided:
            return None
        self.left[group] -= 1
        if type(outcome) is not Failed:
            self.outcomes[node] = outcome
            self.decided.add(group)
            return group
        self.failures.setdefault(group, (node, outcome))
        if self.left[group] == 0:
            failed_node, failure = self.failures[group]
            self.outcomes[failed_node] = failure
            self.decided.add(group)
        return None

    def done(self, pending_nodes: Sequence[str]) -> bool:
        """Whether the step may end: every task left is a loser of a decided race."""
        return all(self.groups.get(n) in self.decided for n in pending_nodes)


def race(
    tasks: Sequence[Task], groups: dict[str, str], call: Callable[[Task], Outcome]
) -> Executed:
    """Run a step with races in this thread: each task on a thread of its own (or its
    node's executor), so the step can end before the losers do."""
    results: queue.SimpleQueue[tuple[str, Outcome]] = queue.SimpleQueue()

    def work(task: Task) -> None:
        try:
            outcome = call(task)
        except BaseException as exc:  # a stop inside the node: the step ends with it
            outcome = Failed(exc)
        results.put((task.key, outcome))

    for task in tasks:
        run = contextvars.copy_context().run
        if task.spec.executor is not None:
            task.spec.executor.submit(run, work, task)
        else:
            threading.Thread(target=run, args=(work, task), daemon=True).start()
    referee = _Referee(tasks, groups)
    pending = [t.key for t in tasks]
    try:
        while pending and not referee.done(pending):
            node, outcome = results.get()
            pending.remove(node)
            referee.take(node, outcome)
            if type(outcome) is Failed and not isinstance(outcome.error, Exception):
                return referee.outcomes, outcome.error
    except BaseException as stop:  # Ctrl-C while waiting: what finished is kept
        return referee.outcomes, stop
    return referee.outcomes, None


async def arace(
    tasks: Sequence[Task], groups: dict[str, str], acall: Callable[[Task], Awaitable[Outcome]]
) -> Executed:
    """:func:`race` under the event loop: the losers of a race are cancelled."""
    running: dict[asyncio.Future[Outcome], str] = {
        asyncio.ensure_future(acall(t)): t.key for t in tasks
    }
    pending: set[asyncio.Future[Outcome]] = set(running)
    referee = _Referee(tasks, groups)
    stop: BaseException | None = None
    try:
        while pending and not referee.done([running[f] for f in pending]):
            finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for future in finished:
                decided = referee.take(running[future], future.result())
                if decided is not None:
                    for other in [f for f in pending if groups.get(running[f]) == decided]:
                        other.cancel()
                        pending.discard(other)
    except BaseException as exc:  # cancelled while waiting
        stop = exc
    finally:
        for future in pending:
            future.cancel()
        losers = [f for f in running if not f.done()]
        if losers:
            await asyncio.wait(losers)
    return referee.outcomes, stop
