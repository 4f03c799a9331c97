"""Effects the run program asks its driver to perform (the only I/O of a run)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checkpoint.base import Checkpoint, CheckpointWrite, PendingWrite
from graphagent.graph._command import TaskScope
from graphagent.graph._nodes import NodeSpec


@dataclass(slots=True)
class Load:
    """Read a thread: returns ``(checkpoint or None, head id or None)``."""

    thread_id: str
    checkpoint_id: str | None


@dataclass(slots=True)
class Put:
    """Store a step's checkpoint; returns nothing."""

    thread_id: str
    write: CheckpointWrite
    expected_head: str | None


@dataclass(slots=True)
class PutWrites:
    """Store finished work of an unfinished step; returns nothing."""

    thread_id: str
    checkpoint_id: str
    writes: tuple[PendingWrite, ...]


@dataclass(slots=True)
class Task:
    """One node execution within a step."""

    spec: NodeSpec
    scope: TaskScope


@dataclass(slots=True)
class Execute:
    """Run a step's tasks on one state snapshot.

    Returns ``dict[node, ("ok", value) | ("error", exception)]``.
    """

    tasks: tuple[Task, ...]
    state: Any
    config: Any


@dataclass(slots=True)
class Emit:
    """Hand a stream event to the caller; returns nothing."""

    mode: str
    payload: Any


Effect = Load | Put | PutWrites | Execute | Emit

__all__ = ["Checkpoint", "Effect", "Emit", "Execute", "Load", "Put", "PutWrites", "Task"]
