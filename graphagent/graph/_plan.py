"""``Plan``: what ``compile()`` freezes, and all the run's core reads of its graph.

The core (``_step``, ``_run``) and the drawings (``draw/``) take a plan, never the
``CompiledGraph`` it sits under; the compiled graph is the plan's public face.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from checkpoint.base import CheckpointSaver
from graphagent.errors import SerializationError
from graphagent.graph._state import Schema
from graphagent.graph._validate import Topology

__all__ = ["Plan", "StoredCheck"]

StoredCheck = Callable[[Mapping[str, Any]], "str | None"]
"""Called with a stored thread's values; returns why the graph cannot continue the
thread (a layout it no longer reads), or ``None`` when it can."""


@dataclass(frozen=True, slots=True)
class Plan:
    """A compiled graph, frozen: its shape, state schema, breakpoints, saver and identity.

    Attributes:
        name: the graph's name (drawings and traces show it).
        schema: the state's keys and their strategies.
        topology: nodes, edges, branches and joins in plain dicts and tuples.
        saver: where threads are checkpointed, or ``None``.
        interrupt_before: nodes a run pauses before.
        interrupt_after: nodes a run pauses after.
        stored_check: refuses stored threads this graph cannot continue, or ``None``.
        agent: the agent whose graph this is (traces name it), or ``None``.
        edge_notes: what conditional edges' labels mean, by label (drawings print a key).
        store: the long-term memory store runs get in ``config.store``, or ``None``.
        cache: where nodes with a cache policy keep their results, or ``None``.
        durability: when runs store their steps: ``"sync"``, ``"async"`` or ``"exit"``.
        deferred: the nodes added with ``defer=True``.
        managed: managed state keys (``RemainingSteps``, ``IsLastStep``) -> their kind.
        context_schema: the type of the run's context object (``invoke(context=...)``
            turns a dict into it), or ``None``.
        interrupt_before_edge: a pause after a node leaves its conditional edges to be
            taken when the run continues, on the state as it is then.
        listeners: lifecycle listeners of every run, as engine observers.
        input_first: store a run's input checkpoint before its first step runs, rather
            than with that step's (an entrypoint's tasks keep their results on it as
            each finishes, so a crash mid-step loses none of them).
    """

    name: str
    schema: Schema
    topology: Topology
    saver: CheckpointSaver | None
    interrupt_before: frozenset[str] = frozenset()
    interrupt_after: frozenset[str] = frozenset()
    stored_check: StoredCheck | None = None
    agent: Any = None
    edge_notes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    store: Any = None
    cache: Any = None
    durability: str = "sync"
    deferred: frozenset[str] = frozenset()
    managed: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    context_schema: Any = None
    interrupt_before_edge: bool = False
    listeners: tuple[Any, ...] = ()
    input_first: bool = False

    def check_stored(self, thread: str | None, values: Mapping[str, Any]) -> None:
        """Refuse a stored thread this graph cannot continue, naming what to do.

        Raises:
            SerializationError: :attr:`stored_check` found a problem with ``values``.
        """
        check = self.stored_check
        if check is not None:
            problem = check(values)
            if problem is not None:
                raise SerializationError(f"thread {thread!r}: {problem}")

    def with_saver(self, saver: CheckpointSaver | None) -> Plan:
        """The same plan, checkpointing into ``saver``."""
        return replace(self, saver=saver)
