"""What every drawing format shows of a compiled graph's plan: its nodes and edges, the
palette, the names as labels, and one "any node" target standing for routers that declared
none; and what the wing reads of a thread's snapshots (:class:`Shown`).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Protocol

import networkx as nx

from graphagent.config import RunnableConfig
from graphagent.graph._command import Interrupt
from graphagent.graph._constants import END, START
from graphagent.graph._plan import Plan

__all__ = [
    "ANY",
    "STYLE",
    "Shown",
    "drawn",
    "edge_key",
    "kind_of",
    "label",
    "subgraphs",
    "tool_names",
]


class Shown(Protocol):
    """What drawings and views read of a thread's state at one checkpoint (a
    ``StateSnapshot``, handed in: the wing does not import it)."""

    @property
    def values(self) -> dict[str, Any]: ...

    @property
    def next(self) -> tuple[str, ...]: ...

    @property
    def checkpoint_id(self) -> str | None: ...

    @property
    def parent_id(self) -> str | None: ...

    @property
    def metadata(self) -> dict[str, Any]: ...

    @property
    def created_at(self) -> _dt.datetime | None: ...

    @property
    def interrupts(self) -> tuple[Interrupt, ...]: ...

    @property
    def config(self) -> RunnableConfig: ...

    @property
    def step(self) -> int: ...

    @property
    def at_breakpoint(self) -> bool: ...


# kind -> (fill, stroke); one palette for SVG, Mermaid and DOT
STYLE = {
    "start": ("#e8f5e9", "#43a047"),
    "end": ("#fbe9e7", "#e64a19"),
    "model": ("#e3f2fd", "#1e88e5"),
    "tools": ("#fff8e1", "#f9a825"),
    "hook": ("#f3e5f5", "#8e24aa"),
    "subgraph": ("#f4fbfc", "#00838f"),
    "node": ("#fafafa", "#616161"),
    "any": ("#ffffff", "#90a4ae"),
}

# A NUL can't come from a sensible node name, so the pseudo-node never meets a real one.
ANY = "\x00any node"
SEND_NOTE = "fan-out: one task per Send"
"""What a fan-out edge means, in the drawings that explain it (PlantUML's legend, SVG)."""

ANY_NOTE = "a router with no path map and no -> Literal[...] return type: it may go to any node"


def label(name: str) -> str:
    """How a node is named in drawings (``START``/``END`` for the virtual nodes)."""
    return {START: "START", END: "END", ANY: "any node"}.get(name, name)


def edge_key(plan: Plan) -> list[str]:
    """``label: meaning`` for each edge label drawn in ``plan`` that its ``edge_notes``
    explain (an agent's graph explains its ``again`` edge), in the order edges are drawn."""
    notes = plan.edge_notes
    labels = dict.fromkeys(data.get("label") for *_, data in drawn(plan).edges(data=True))
    return [f"{name}: {notes[name]}" for name in labels if name and name in notes]


def kind_of(g: nx.DiGraph[str], node: str) -> str:
    """The node's kind, as a key of :data:`STYLE` for the palette (``agent`` kinds kept)."""
    return str(g.nodes[node].get("kind", "node"))


def subgraphs(plan: Plan) -> dict[str, Plan]:
    """The nodes of ``plan`` that are compiled graphs themselves, with their plans."""
    return {
        name: spec.subgraph
        for name, spec in plan.topology.nodes.items()
        if isinstance(spec.subgraph, Plan)
    }


def tool_names(plan: Plan, node: str) -> tuple[str, ...]:
    """The tools a tools node offers (or the tasks an entrypoint calls), as its metadata
    lists them (empty for other nodes)."""
    spec = plan.topology.nodes.get(node)
    meta = spec.metadata if spec is not None and spec.metadata else {}
    return tuple(str(t) for t in meta.get("tools", ()) or meta.get("tasks", ()))


def drawn(plan: Plan) -> nx.DiGraph[str]:
    """The topology as drawn: a router whose targets are unknown gets one dashed edge to an
    ``ANY`` pseudo-node, instead of looking like a dead end.

    Returns a copy; the plan's topology stays as it is.
    """
    g = plan.topology.digraph
    open_routers = [
        source
        for source, branches in plan.topology.branches.items()
        if any(b.path_map is None for b in branches)
    ]
    if not open_routers:
        return g
    out = g.copy()
    out.add_node(ANY, kind="any")
    for source in open_routers:
        out.add_edge(source, ANY, conditional=True, label="")
    return out
