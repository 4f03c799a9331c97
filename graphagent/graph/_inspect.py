"""Looking into subgraphs: the tasks of a paused step with the state of each subgraph
paused inside them, read from what the parent's checkpoint keeps.

A subgraph run inside a node checkpoints nothing of its own: when it pauses, its position
(values, step, next nodes, finished work) is kept with the parent's paused step, under
its task path. This module turns those positions into :class:`StateSnapshot` objects,
addressed by checkpoint namespace, for ``get_state(config, subgraphs=True)`` and
``get_state`` on a subgraph's config.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
from collections.abc import Mapping
from typing import Any

from checkpoint.base import Checkpoint
from graphagent.config import RunnableConfig
from graphagent.graph._command import Interrupt, path_key
from graphagent.graph._constants import public
from graphagent.graph._namespace import namespace, ns_path, ns_text, task_id
from graphagent.graph._plan import Plan
from graphagent.graph._snapshot import StateSnapshot, StateTask
from graphagent.graph._update import subgraph_plan

__all__ = ["nested_positions", "snapshot_of", "subgraph_snapshot", "with_task_states"]


def nested_positions(cp: Checkpoint) -> dict[str, dict[str, Any]]:
    """The positions of the subgraph runs kept with ``cp``'s paused step, by task path key."""
    return {w.value[0]: dict(w.value[1]) for w in cp.pending_writes if w.kind == "nested"}


class _Reader:
    """One checkpoint, read once, for the snapshots of every level below it."""

    def __init__(self, cp: Checkpoint, config: RunnableConfig, plan: Plan | None) -> None:
        self.cp, self.config, self.plan = cp, config, plan
        self.positions = nested_positions(cp)
        self.interrupts = tuple(
            Interrupt.load(w.value) for w in cp.pending_writes if w.kind == "interrupt"
        )

    def asked_under(self, path: tuple[str, ...]) -> tuple[Interrupt, ...]:
        return tuple(i for i in self.interrupts if i.path[: len(path)] == path)

    def ns_config(self, path: tuple[str, ...]) -> RunnableConfig:
        # no checkpoint_id: the subgraph's state is read from (and written to) the thread's
        # head, where its paused position is kept
        ns = ns_text(namespace(self.cp.id, path))
        return self.config.model_copy(update={"checkpoint_ns": ns, "checkpoint_id": None})

    def state_of(self, path: tuple[str, ...], deep: bool) -> Any:
        """A task's ``state``: the subgraph's snapshot (``deep``) or a config naming it."""
        kept = path_key(path) in self.positions
        if not kept and subgraph_plan(self.plan, path) is None:
            return None
        if deep and kept:
            return self.snapshot(path)
        return self.ns_config(path)

    def tasks(
        self, base: tuple[str, ...], due: tuple[str, ...], done: Mapping[str, Any], deep: bool
    ) -> tuple[StateTask, ...]:
        out = []
        for n in due:
            path = (*base, n)
            finished = done.get(n)
            out.append(
                StateTask(
                    task_id(self.cp.id, path),
                    n,
                    path,
                    None,
                    self.asked_under(path),
                    self.state_of(path, deep),
                    finished[0] if finished is not None else None,
                )
            )
        return tuple(out)

    def snapshot(self, path: tuple[str, ...]) -> StateSnapshot:
        """The snapshot of the subgraph run kept at task path ``path``."""
        position = self.positions[path_key(path)]
        cp = self.cp
        done = position.get("done", {})
        finished = bool(position.get("finished"))
        due: tuple[str, ...] = () if finished else tuple(position["next"])
        step = position.get("step", -1)
        return StateSnapshot(
            values=public(position["values"]),
            next=tuple(n for n in due if n not in done),
            checkpoint_id=cp.id,
            parent_id=cp.parent_id,
            metadata={"source": "loop", "step": step},
            created_at=_dt.datetime.fromtimestamp(cp.created_at, tz=_dt.timezone.utc),
            interrupts=self.asked_under(path),
            config=self.ns_config(path),
            step=step,
            at_breakpoint=bool(position.get("skip")),
            tasks=self.tasks(path, due, done, True),
        )


def with_task_states(
    snap: StateSnapshot, cp: Checkpoint, config: RunnableConfig, plan: Plan, deep: bool
) -> StateSnapshot:
    """``snap`` with each task's subgraph ``state`` filled in (snapshots with ``deep``)."""
    if not snap.tasks:
        return snap
    reader = _Reader(cp, config, plan)
    states = [reader.state_of(t.path, deep) for t in snap.tasks]
    if not any(s is not None for s in states):
        return snap
    tasks = tuple(
        dataclasses.replace(t, state=s) if s is not None else t
        for t, s in zip(snap.tasks, states, strict=True)
    )
    return dataclasses.replace(snap, tasks=tasks)


def subgraph_snapshot(
    cp: Checkpoint, config: RunnableConfig, plan: Plan, path: tuple[str, ...]
) -> StateSnapshot:
    """The snapshot of the subgraph paused at task path ``path`` of ``cp``'s paused step;
    an empty one (``exists`` false) when no subgraph run is kept there."""
    reader = _Reader(cp, config, plan)
    if path_key(path) not in reader.positions:
        return StateSnapshot.from_checkpoint(None, config)
    return reader.snapshot(path)


def snapshot_of(
    cp: Checkpoint | None, config: RunnableConfig, graph: Any, deep: bool
) -> StateSnapshot:
    """What ``graph.get_state(config, subgraphs=deep)`` returns for checkpoint ``cp``: its
    snapshot with its tasks' subgraph states, or (``config.checkpoint_ns``) the snapshot of
    the subgraph paused there."""
    if config.checkpoint_ns:
        if cp is None:
            return StateSnapshot.from_checkpoint(None, config)
        return subgraph_snapshot(cp, config, graph.plan, ns_path(config.checkpoint_ns))
    snap = StateSnapshot.from_checkpoint(cp, config, graph)
    return snap if cp is None else with_task_states(snap, cp, config, graph.plan, deep)
