"""Graph validation with networkx, and the frozen topology the runtime uses."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import networkx as nx

from graphagent.errors import GraphValidationError
from graphagent.graph._constants import END, START
from graphagent.graph._nodes import Branch, Join, NodeSpec
from graphagent.graph._state import Schema
from graphagent.graph._strategies import arity_problem

__all__ = ["Draft", "Topology", "validate"]


class Draft(Protocol):
    """What validation reads of a graph being built (a ``StateGraph``)."""

    schema: Schema
    nodes: dict[str, NodeSpec]
    edges: list[tuple[str, str]]
    joins: list[Join]
    branches: list[Branch]
    commands: list[tuple[str, str]]


@dataclass(frozen=True)
class Topology:
    """The compiled graph's shape in plain dicts and tuples (no networkx in the hot loop).

    Attributes:
        nodes: name -> node.
        edges: source (``START`` included) -> static successors.
        branches: source -> its conditional edges.
        joins: every fan-in edge.
        joins_by_source: node -> indexes into ``joins`` it takes part in.
        digraph: the networkx view, for drawing and inspection.
    """

    nodes: dict[str, NodeSpec]
    edges: dict[str, tuple[str, ...]]
    branches: dict[str, tuple[Branch, ...]]
    joins: tuple[Join, ...]
    joins_by_source: dict[str, tuple[int, ...]]
    digraph: nx.DiGraph[str]


def _check_target(name: str, where: str, nodes: dict[str, NodeSpec], problems: list[str]) -> None:
    if name == START:
        problems.append(f"{where}: START cannot be a target; edges lead out of START")
    elif name != END and name not in nodes:
        problems.append(f"{where}: unknown node {name!r}; add it with add_node({name!r}, fn)")


def _check_source(name: str, where: str, nodes: dict[str, NodeSpec], problems: list[str]) -> None:
    if name == END:
        problems.append(f"{where}: END cannot be a source; nothing runs after END")
    elif name != START and name not in nodes:
        problems.append(f"{where}: unknown node {name!r}; add it with add_node({name!r}, fn)")


def validate(
    builder: Draft,
    problems: list[str],
    interrupt_before: Sequence[str] | str,
    interrupt_after: Sequence[str] | str,
) -> Topology:
    """Check the builder's graph and return its topology.

    Raises:
        GraphValidationError: listing every problem found.
    """
    problems = list(problems)
    for key, strategy in builder.schema.strategies.items():
        problem = arity_problem(strategy)
        if problem is not None:
            problems.append(f"state key {key!r}: {problem}")
    nodes = builder.nodes
    g: nx.DiGraph[str] = nx.DiGraph()
    g.add_node(START, kind="start")
    g.add_node(END, kind="end")
    for spec in nodes.values():
        g.add_node(spec.name, kind=spec.kind)

    edges: dict[str, list[str]] = {}
    for source, target in builder.edges:
        where = f"edge {source!r} -> {target!r}"
        _check_source(source, where, nodes, problems)
        _check_target(target, where, nodes, problems)
        edges.setdefault(source, [])
        if target not in edges[source]:
            edges[source].append(target)
        g.add_edge(source, target, conditional=False, label="")
    for source, target in builder.commands:
        where = f"node {source!r} destination {target!r}"
        _check_target(target, where, nodes, problems)
        if not g.has_edge(source, target):
            g.add_edge(source, target, conditional=True, label="goto")

    branches: dict[str, list[Branch]] = {}
    open_routers: list[str] = []
    for branch in builder.branches:
        where = f"conditional edges from {branch.source!r}"
        _check_source(branch.source, where, nodes, problems)
        branches.setdefault(branch.source, []).append(branch)
        if branch.path_map is None:
            open_routers.append(branch.source)
            continue
        labels: dict[str, list[str]] = {}
        for key, target in branch.path_map.items():
            _check_target(target, f"{where}, path {key!r}", nodes, problems)
            labels.setdefault(target, []).append(str(key))
        for target, keys in labels.items():
            label = "" if keys == [target] else ", ".join(keys)
            if branch.sends:  # one task per Send: drawn as a fan-out edge
                g.add_edge(
                    branch.source, target, conditional=True, label=label or "Send", send=True
                )
            else:
                g.add_edge(branch.source, target, conditional=True, label=label)

    joins_by_source: dict[str, list[int]] = {}
    for i, join in enumerate(builder.joins):
        where = f"join {list(join.sources)!r} -> {join.target!r}"
        for source in join.sources:
            if source in (START, END) or source not in nodes:
                problems.append(f"{where}: a join's sources must be nodes, not {source!r}")
            joins_by_source.setdefault(source, []).append(i)
            g.add_edge(source, join.target, conditional=False, label="", join=True)
        _check_target(join.target, where, nodes, problems)

    # A router with no path map may go anywhere: model that for the reachability checks.
    reach = g.copy()
    for source in open_routers:
        for target in [*nodes, END]:
            reach.add_edge(source, target)

    if START not in edges and START not in branches:
        problems.append(
            "the graph has no entry point; add an edge from START, e.g. add_edge(START, 'first')"
        )
    else:
        reachable = nx.descendants(reach, START)
        for name in nodes:
            if name not in reachable:
                problems.append(
                    f"node {name!r} is unreachable from START; add an edge into it or remove it"
                )
        leads_to_end = nx.ancestors(reach, END)
        for name in nodes:
            if name in reachable and name not in leads_to_end:
                problems.append(
                    f"node {name!r} has no path to END; add an edge from it (or from a node "
                    f"after it) to END, or declare its Command targets with destinations="
                )

    for label, names in (
        ("interrupt_before", interrupt_before),
        ("interrupt_after", interrupt_after),
    ):
        if names == "*":
            continue
        for name in [names] if isinstance(names, str) else names:
            if name not in nodes:
                problems.append(f"{label}: unknown node {name!r}")

    if problems:
        raise GraphValidationError(
            "the graph cannot be compiled:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    return Topology(
        nodes=dict(nodes),
        edges={k: tuple(v) for k, v in edges.items()},
        branches={k: tuple(v) for k, v in branches.items()},
        joins=tuple(builder.joins),
        joins_by_source={k: tuple(v) for k, v in joins_by_source.items()},
        digraph=g,
    )
