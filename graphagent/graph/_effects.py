"""The effects a run asks its driver to perform: its only I/O.

A program (``_run.run_program``, ``_update.update_program``) is a generator that yields
an :data:`Effect` and is sent back what that effect's docstring says it returns; the
drivers (``_drive``) perform them. Running a step's nodes returns one typed
:data:`Outcome` per node.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from checkpoint.base import CheckpointWrite, PendingWrite
from graphagent.config import RunnableConfig
from graphagent.errors import GraphInterrupt
from graphagent.graph._command import TaskScope
from graphagent.graph._nodes import NodeSpec
from graphagent.graph._state import OverAllState

__all__ = [
    "Background",
    "CacheGet",
    "CacheSet",
    "Done",
    "Effect",
    "Emit",
    "Execute",
    "Failed",
    "Get",
    "Head",
    "Keep",
    "Lock",
    "OpenLive",
    "Outcome",
    "Paused",
    "Program",
    "Put",
    "PutMany",
    "PutWrites",
    "Task",
]

T = TypeVar("T")

# -- the saver's ----------------------------------------------------------------------


@dataclass(slots=True)
class Lock:
    """Hold the thread's run lock (when the saver has one) until the run ends; returns
    nothing. A run asks for it once, before it first reads the thread."""

    thread_id: str


@dataclass(slots=True)
class Get:
    """Read a checkpoint (the head when ``checkpoint_id`` is ``None``): returns a
    :class:`~checkpoint.base.Checkpoint` or ``None``."""

    thread_id: str
    checkpoint_id: str | None


@dataclass(slots=True)
class Head:
    """Read the id of the thread's head checkpoint: returns it, or ``None``."""

    thread_id: str


@dataclass(slots=True)
class Put:
    """Store a step's checkpoint on top of ``expected_head``; returns nothing."""

    thread_id: str
    write: CheckpointWrite
    expected_head: str | None


@dataclass(slots=True)
class PutMany:
    """Store checkpoints, each growing from the one before, in one atomic write; returns
    nothing. A run stores its held-back input this way with its first step."""

    thread_id: str
    writes: tuple[CheckpointWrite, ...]
    expected_head: str | None


@dataclass(slots=True)
class PutWrites:
    """Store finished work of an unfinished step on checkpoint ``checkpoint_id``;
    returns nothing."""

    thread_id: str
    checkpoint_id: str
    writes: tuple[PendingWrite, ...]


@dataclass(frozen=True, slots=True)
class Keep:
    """Where a step stores its tasks' work as each finishes (``_keep``): the thread and
    the stored checkpoint the step grows from."""

    thread_id: str
    checkpoint_id: str


@dataclass(slots=True)
class Background:
    """``durability="async"``: perform ``effect`` (a step's ``Put`` or ``PutMany``) while
    the run goes on; returns nothing. The driver waits for it before the run's next saver
    effect and before the run ends, and a failure of it ends the run there."""

    effect: Put | PutMany


# -- the nodes' and the caller's ------------------------------------------------------


class Task:
    """One node execution within a step.

    Attributes:
        spec: the node.
        scope: its task path, answers so far, call counters.
        key: the task's name within its step: the node's name, or ``node[i]`` for the
            ``i``-th ``Send`` of the step (outcomes, pending writes and answers use it).
        input: ``(what the node is called with instead of the state,)`` (a ``Send``'s
            arg), or ``None``.
        retries: the errors of the attempts that were retried, oldest first (set only
            when a retry happens: read it with ``getattr(task, "retries", None)``).
    """

    # a plain class: one is made per node-step, and a dataclass's defaults cost a line
    # each in its __init__ (~0.1k instructions a node-step)
    __slots__ = ("input", "key", "retries", "scope", "spec")

    def __init__(self, spec: NodeSpec, scope: TaskScope, key: str, input: Any = None) -> None:
        self.spec = spec
        self.scope = scope
        self.key = key
        self.input = input

    retries: list[BaseException]


@dataclass(slots=True)
class Execute:
    """Run a step's tasks on one state snapshot: returns ``dict[node, Outcome]``.

    ``keep``: where to store each task's work as it finishes (``_keep``), or ``None``;
    ``report``: hand each task's update to the live channel as it finishes (the run
    does not report it again when the step commits).
    """

    tasks: tuple[Task, ...]
    state: OverAllState
    config: RunnableConfig
    keep: Keep | None = None
    report: bool = False


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


@dataclass(slots=True)
class CacheGet:
    """Read cached node results: returns ``{(namespace, key): value}`` for the hits."""

    cache: Any
    keys: list[tuple[tuple[str, ...], str]]


@dataclass(slots=True)
class CacheSet:
    """Store node results in the cache: ``(namespace, key) -> (value, ttl)``; returns
    nothing."""

    cache: Any
    pairs: dict[tuple[tuple[str, ...], str], tuple[Any, float | None]]


Effect = (
    Lock
    | Get
    | Head
    | Put
    | PutMany
    | PutWrites
    | Background
    | Execute
    | Emit
    | OpenLive
    | CacheGet
    | CacheSet
)

Program = Generator[Effect, Any, T]
"""A run, an update or any part of them: yields effects, returns a ``T``."""


# -- what a node's execution came to ---------------------------------------------------


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
