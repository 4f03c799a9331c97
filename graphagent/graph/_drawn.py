"""What every drawing format shows of a compiled graph: its nodes and edges, the palette,
the names as labels, and one "any node" target standing for routers that declared none.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import networkx as nx

from graphagent.graph._constants import END, START

if TYPE_CHECKING:
    from graphagent.graph._compiled import CompiledGraph

__all__ = ["ANY", "STYLE", "drawn", "edge_key", "kind_of", "label", "subgraphs", "tool_names"]

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
ANY_NOTE = "a router with no path map and no -> Literal[...] return type: it may go to any node"


def label(name: str) -> str:
    """How a node is named in drawings (``START``/``END`` for the virtual nodes)."""
    return {START: "START", END: "END", ANY: "any node"}.get(name, name)


def edge_key(graph: CompiledGraph) -> list[str]:
    """``label: meaning`` for each edge label drawn in ``graph`` that its ``edge_notes``
    explain (an agent's graph explains its ``again`` edge), in the order edges are drawn."""
    notes = graph.edge_notes
    labels = dict.fromkeys(data.get("label") for *_, data in drawn(graph).edges(data=True))
    return [f"{name}: {notes[name]}" for name in labels if name and name in notes]


def kind_of(g: nx.DiGraph[str], node: str) -> str:
    """The node's kind, as a key of :data:`STYLE` for the palette (``agent`` kinds kept)."""
    return str(g.nodes[node].get("kind", "node"))


def subgraphs(graph: CompiledGraph) -> dict[str, CompiledGraph]:
    """The nodes of ``graph`` that are compiled graphs themselves."""
    return {
        name: spec.subgraph
        for name, spec in graph.topology.nodes.items()
        if spec.subgraph is not None
    }


def tool_names(graph: CompiledGraph, node: str) -> tuple[str, ...]:
    """The tools a tools node offers, as its metadata lists them (empty for other nodes)."""
    spec = graph.topology.nodes.get(node)
    meta = spec.metadata if spec is not None and spec.metadata else {}
    return tuple(str(t) for t in meta.get("tools", ()))


def drawn(graph: CompiledGraph) -> nx.DiGraph[str]:
    """The topology as drawn: a router whose targets are unknown gets one dashed edge to an
    ``ANY`` pseudo-node, instead of looking like a dead end.

    Returns a copy; ``graph.graph`` stays the plain topology.
    """
    g = graph.topology.digraph
    open_routers = [
        source
        for source, branches in graph.topology.branches.items()
        if any(b.path_map is None for b in branches)
    ]
    if not open_routers:
        return g
    out = g.copy()
    out.add_node(ANY, kind="any")
    for source in open_routers:
        out.add_edge(source, ANY, conditional=True, label="")
    return out
