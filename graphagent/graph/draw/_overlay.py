"""A thread's run as drawn over its graph: the path it took, how often, and where it stands.

Built from the thread's checkpoints alone: each one records the nodes whose step wrote it,
so consecutive checkpoints give the edges taken between them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import networkx as nx

from graphagent.graph._constants import END, START
from graphagent.graph.draw._common import Shown

__all__ = ["RunOverlay", "run_overlay"]


@dataclass(frozen=True)
class RunOverlay:
    """Where one thread went through a graph.

    Attributes:
        thread_id: the thread.
        step: the step of the checkpoint drawn.
        nodes: node -> how many times it ran (a fan-out's node once per Send task;
            ``START``/``END`` count once when reached).
        edges: ``(source, target)`` -> how many times the run took that edge (a fan-out
            edge once per Send task).
        last: the nodes of the step that wrote the checkpoint drawn.
        next: the nodes due to run next.
        waiting: nodes paused in ``interrupt()``, waiting for ``Command(resume=...)``.
        upcoming: edges from the current nodes to the next ones (chosen, not yet run).
        finished: whether the run reached its end.
        at_breakpoint: the run paused at an ``interrupt_before``/``interrupt_after`` breakpoint.
    """

    thread_id: str
    step: int
    nodes: Counter[str] = field(default_factory=Counter)
    edges: Counter[tuple[str, str]] = field(default_factory=Counter)
    last: tuple[str, ...] = ()
    next: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()
    upcoming: frozenset[tuple[str, str]] = frozenset()
    finished: bool = False
    at_breakpoint: bool = False


def _line(head: Shown, history: Sequence[Shown]) -> list[Shown]:
    """The checkpoints from the thread's start to ``head``, oldest first (forks left out)."""
    by_id = {s.checkpoint_id: s for s in history}
    line = [head]
    seen = {head.checkpoint_id}
    while line[-1].parent_id in by_id and line[-1].parent_id not in seen:
        parent = by_id[line[-1].parent_id]
        seen.add(parent.checkpoint_id)
        line.append(parent)
    return line[::-1]


def _ran(snap: Shown) -> tuple[str, ...]:
    """The nodes whose step wrote ``snap``; an input checkpoint counts as ``START``."""
    if snap.metadata.get("source") == "input":
        return (START,)
    return tuple(str(n) for n in snap.metadata.get("nodes", ()) or ())


def _finished(snap: Shown) -> bool:
    return snap.checkpoint_id is not None and not snap.next and not snap.interrupts


def _reach_end(
    g: nx.DiGraph[str],
    before: tuple[str, ...],
    nodes: Counter[str],
    edges: Counter[tuple[str, str]],
) -> None:
    for src in before:
        if g.has_edge(src, END):
            edges[(src, END)] += 1
    nodes[END] += 1


def run_overlay(g: nx.DiGraph[str], head: Shown, history: Sequence[Shown]) -> RunOverlay:
    """What to highlight on ``g`` for the thread at ``head`` (``history``: its checkpoints)."""
    nodes: Counter[str] = Counter()
    edges: Counter[tuple[str, str]] = Counter()
    before: tuple[str, ...] = ()
    previous: Shown | None = None
    for snap in _line(head, history):
        ran = tuple(n for n in _ran(snap) if n in g)
        if ran == (START,) and previous is not None and _finished(previous):
            # a new input on a finished thread: the run before it went to END
            _reach_end(g, before, nodes, edges)
        previous = snap
        tasks = snap.metadata.get("tasks") or {}  # a fan-out step: tasks per node
        for dst in ran:
            nodes[dst] += tasks.get(dst, 1)
        for src in before:
            for dst in ran:
                if g.has_edge(src, dst):
                    edges[(src, dst)] += tasks.get(dst, 1)
        before = ran
    finished = _finished(head)
    if finished:
        _reach_end(g, before, nodes, edges)
    waiting = tuple(dict.fromkeys(i.path[0] if i.path else i.node for i in head.interrupts))
    nxt = tuple(n for n in (*head.next, *waiting) if n in g)
    upcoming = frozenset((a, b) for a in before for b in nxt if g.has_edge(a, b))
    return RunOverlay(
        thread_id=str(head.config.thread_id),
        step=head.step,
        nodes=nodes,
        edges=edges,
        last=tuple(n for n in _ran(head) if n in g),
        next=tuple(dict.fromkeys(nxt)),
        waiting=tuple(n for n in waiting if n in g),
        upcoming=upcoming,
        finished=finished,
        at_breakpoint=head.at_breakpoint,
    )
