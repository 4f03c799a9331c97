"""Effects the run program asks its driver to perform (the only I/O of a run).

The program (``_run.run_program``) yields one of these and receives what the
docstring says it returns. Executing nodes returns one typed :data:`Outcome` per node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from checkpoint.base import Checkpoint, CheckpointWrite, PendingWrite
from graphagent.errors import GraphInterrupt
from graphagent.graph._command import TaskScope
from graphagent.graph._nodes import NodeSpec


@dataclass(slots=True)
class Load:
    """Read a thread: returns ``(checkpoint or None, head id or None)``."""

    thread_id: str
    checkpoint_id: str | None


@dataclass(slots=True)
class Put:
    """Store a step's checkpoint; returns nothing.

    ``before``: checkpoints not stored yet that ``write`` grows from (the run's input),
    stored with it in one atomic ``put_many``.
    """

    thread_id: str
    write: CheckpointWrite
    expected_head: str | None
    before: tuple[CheckpointWrite, ...] = ()


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
    """Run a step's tasks on one state snapshot: returns ``dict[node, Outcome]``."""

    tasks: tuple[Task, ...]
    state: Any
    config: Any


@dataclass(slots=True)
class Emit:
    """Hand a stream event to the caller; returns nothing."""

    mode: str
    payload: Any


@dataclass(slots=True)
class OpenLive:
    """Open the channel for events nodes emit while they run ("custom", "messages").

    Returns a ``put(event)`` callable, safe to call from any thread.
    """


Effect = Load | Put | PutWrites | Execute | Emit | OpenLive


@dataclass(slots=True)
class Done:
    """The node returned ``value``."""

    value: Any


@dataclass(slots=True)
class Failed:
    """The node raised ``error``."""

    error: BaseException


@dataclass(slots=True)
class Paused:
    """The node (or a graph nested in it) called ``interrupt()`` or reached a breakpoint."""

    signal: GraphInterrupt


Outcome = Done | Failed | Paused

__all__ = [
    "Checkpoint",
    "Done",
    "Effect",
    "Emit",
    "Execute",
    "Failed",
    "Load",
    "OpenLive",
    "Outcome",
    "Paused",
    "Put",
    "PutWrites",
    "Task",
]
