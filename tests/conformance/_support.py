"""Small helpers shared by the conformance tests (ported LangGraph / Spring AI Alibaba suites)."""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, CompiledGraph, StateGraph, interrupt

__all__ = ["Calls", "ListState", "chain", "summary", "thread"]


class ListState(TypedDict):
    """LangGraph's time-travel state: one list that grows with ``operator.add``."""

    value: Annotated[list[str], operator.add]


def thread() -> dict[str, Any]:
    """A fresh thread, in LangGraph's config shape (graphagent accepts it as is)."""
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


class Calls(list[str]):
    """Records node executions; ``node(name, ...)`` makes a node that appends ``name``."""

    def node(self, name: str, ask: str | None = None) -> Callable[[Any], dict[str, Any]]:
        def run(state: Any) -> dict[str, Any]:
            self.append(name)
            if ask is not None:
                answer = interrupt(ask)
                return {"value": [f"{name}:{answer}"]}
            return {"value": [name]}

        return run


def chain(
    saver: CheckpointSaver | None,
    calls: Calls,
    nodes: list[tuple[str, str | None]],
    **compile_kw: Any,
) -> CompiledGraph:
    """START -> n1 -> ... -> END over :class:`ListState`, from ``(name, question)`` pairs.

    The edge to END is explicit: graphagent refuses nodes with no path to END.
    """
    g = StateGraph(ListState)
    previous = START
    for name, ask in nodes:
        g.add_node(name, calls.node(name, ask))
        g.add_edge(previous, name)
        previous = name
    g.add_edge(previous, END)
    return g.compile(saver=saver, **compile_kw)


def summary(history: list[Any]) -> list[tuple[str, tuple[str, ...], Any]]:
    """``(source, next, values)`` per checkpoint, newest first."""
    return [(s.metadata.get("source"), s.next, s.values) for s in history]
