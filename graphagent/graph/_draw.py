"""Drawing a compiled graph as Mermaid, DOT, ASCII or standalone SVG, with no network."""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING, Any

import networkx as nx

from graphagent.errors import UserError
from graphagent.graph._constants import END, START

if TYPE_CHECKING:
    from graphagent.graph._compiled import CompiledGraph

__all__ = ["draw", "layers"]

FORMATS = ("mermaid", "dot", "ascii", "svg")
_LABELS = {START: "START", END: "END"}
_FILL = {
    "start": "#e8f5e9",
    "end": "#ffebee",
    "model": "#e3f2fd",
    "tools": "#fff8e1",
    "hook": "#f3e5f5",
    "subgraph": "#e0f7fa",
    "node": "#fafafa",
}


def _label(name: str) -> str:
    return _LABELS.get(name, name)


def _ids(g: nx.DiGraph[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, name in enumerate(g.nodes):
        safe = re.sub(r"\W", "_", _label(name))
        out[name] = f"{safe}_{i}" if safe in out.values() or not safe[:1].isalpha() else safe
    return out


def draw(graph: CompiledGraph, fmt: str = "mermaid") -> str:
    """Render ``graph`` in ``fmt`` (one of ``mermaid``, ``dot``, ``ascii``, ``svg``).

    Raises:
        UserError: an unknown format.
    """
    g = graph.topology.digraph
    if fmt == "mermaid":
        return _mermaid(g, graph.name)
    if fmt == "dot":
        return _dot(g, graph.name)
    if fmt == "ascii":
        return _ascii(g, graph.name)
    if fmt == "svg":
        return _svg(g, graph.name)
    raise UserError(f"unknown drawing format {fmt!r}; use one of {', '.join(FORMATS)}")


def _mermaid(g: nx.DiGraph[str], name: str) -> str:
    ids = _ids(g)
    lines = ["---", f"title: {name}", "---", "flowchart TD"]
    for node, data in g.nodes(data=True):
        kind = data.get("kind", "node")
        text = html.escape(_label(node), quote=True)
        shape = f"([{text}])" if kind in ("start", "end") else f'["{text}"]'
        lines.append(f"  {ids[node]}{shape}:::ga_{kind}")
    for src, dst, data in g.edges(data=True):
        label = data.get("label", "")
        arrow = "-.->" if data.get("conditional") else "-->"
        text = f"|{html.escape(label, quote=True)}|" if label else ""
        lines.append(f"  {ids[src]} {arrow}{text} {ids[dst]}")
    for kind, fill in _FILL.items():
        # prefixed: "end" is a reserved word in Mermaid
        lines.append(f"  classDef ga_{kind} fill:{fill},stroke:#555")
    return "\n".join(lines) + "\n"


def _dot(g: nx.DiGraph[str], name: str) -> str:
    def q(s: str) -> str:
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = [
        f"digraph {q(name)} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled"];',
    ]
    for node, data in g.nodes(data=True):
        kind = data.get("kind", "node")
        shape = ", shape=oval" if kind in ("start", "end") else ""
        fill = q(_FILL.get(kind, "#fafafa"))
        lines.append(f"  {q(node)} [label={q(_label(node))}, fillcolor={fill}{shape}];")
    for src, dst, data in g.edges(data=True):
        attrs = []
        if data.get("conditional"):
            attrs.append("style=dashed")
        if data.get("label"):
            attrs.append(f"label={q(data['label'])}")
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"  {q(src)} -> {q(dst)}{suffix};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def layers(g: nx.DiGraph[str]) -> tuple[list[list[str]], set[tuple[str, str]]]:
    """Layer the graph top-down: back edges (loops) removed by DFS from START.

    Returns the layers (each ordered to reduce crossings) and the back edges.
    """
    back: set[tuple[str, str]] = set()
    seen: set[str] = set()
    stack: set[str] = set()

    def visit(n: str) -> None:
        seen.add(n)
        stack.add(n)
        for m in g.successors(n):
            if m in stack:
                back.add((n, m))
            elif m not in seen:
                visit(m)
        stack.discard(n)

    for root in [START, *g.nodes]:
        if root not in seen and root in g:
            visit(root)
    dag: nx.DiGraph[str] = nx.DiGraph()
    dag.add_nodes_from(g.nodes)
    dag.add_edges_from((u, v) for u, v in g.edges if (u, v) not in back)
    depth: dict[str, int] = {}
    for n in nx.topological_sort(dag):
        preds = [depth[p] + 1 for p in dag.predecessors(n)]
        depth[n] = max(preds, default=0)
    if END in depth:
        depth[END] = max(depth.values()) if len(depth) > 1 else 0
        if any(depth[n] == depth[END] for n in depth if n != END):
            depth[END] += 1
    result: list[list[str]] = [[] for _ in range(max(depth.values(), default=0) + 1)]
    for n in g.nodes:
        result[depth[n]].append(n)
    for i in range(1, len(result)):
        prev = {n: k for k, n in enumerate(result[i - 1])}

        def centre(n: str, prev: dict[str, int] = prev) -> float:
            ps = [prev[p] for p in dag.predecessors(n) if p in prev]
            return sum(ps) / len(ps) if ps else float(len(prev))

        result[i].sort(key=centre)
    return [layer for layer in result if layer], back


def _ascii(g: nx.DiGraph[str], name: str) -> str:
    rows, _ = layers(g)
    width = max((len(" ".join(f"[{_label(n)}]" for n in row)) for row in rows), default=0)
    out = [f"graph {name!r}"]
    for i, row in enumerate(rows):
        out.append(" ".join(f"[{_label(n)}]" for n in row).center(width).rstrip())
        if i < len(rows) - 1:
            out.append("|".center(width).rstrip())
            out.append("v".center(width).rstrip())
    out.append("")
    out.append("edges:")
    for src, dst, data in g.edges(data=True):
        arrow = "-.->" if data.get("conditional") else "--->"
        label = f"  ({data['label']})" if data.get("label") else ""
        out.append(f"  {_label(src)} {arrow} {_label(dst)}{label}")
    return "\n".join(out) + "\n"


def _svg(g: nx.DiGraph[str], name: str) -> str:
    rows, back = layers(g)
    char_w, box_h, gap_x, gap_y, pad = 7.5, 34.0, 28.0, 56.0, 24.0
    size = {n: max(64.0, len(_label(n)) * char_w + 24) for n in g.nodes}
    row_w = [sum(size[n] for n in row) + gap_x * (len(row) - 1) for row in rows]
    total_w = max(row_w, default=0) + 2 * pad + 80
    pos: dict[str, tuple[float, float]] = {}
    for i, row in enumerate(rows):
        x = (total_w - row_w[i]) / 2
        y = pad + 20 + i * (box_h + gap_y)
        for n in row:
            pos[n] = (x + size[n] / 2, y + box_h / 2)
            x += size[n] + gap_x
    total_h = pad * 2 + 20 + len(rows) * (box_h + gap_y) - gap_y
    parts: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total_w:.0f}" height="{total_h:.0f}" '
        f'viewBox="0 0 {total_w:.0f} {total_h:.0f}" font-family="Helvetica, Arial, sans-serif" '
        'font-size="13">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/></marker></defs>',
        f"<title>{html.escape(name)}</title>",
    ]
    for src, dst, data in g.edges(data=True):
        (x1, y1), (x2, y2) = pos[src], pos[dst]
        dash = ' stroke-dasharray="5 4"' if data.get("conditional") else ""
        if (src, dst) in back or src == dst:
            side = max(size[src], size[dst]) / 2 + 26
            path = (
                f"M {x1 + size[src] / 2:.1f} {y1:.1f} C {x1 + side + 30:.1f} {y1:.1f}, "
                f"{x2 + side + 30:.1f} {y2:.1f}, {x2 + size[dst] / 2:.1f} {y2:.1f}"
            )
            lx, ly = max(x1, x2) + side + 8, (y1 + y2) / 2
        else:
            path = f"M {x1:.1f} {y1 + box_h / 2:.1f} L {x2:.1f} {y2 - box_h / 2:.1f}"
            lx, ly = (x1 + x2) / 2 + 6, (y1 + y2) / 2
        parts.append(
            f'<path d="{path}" fill="none" stroke="#555" stroke-width="1.4"{dash} '
            'marker-end="url(#arrow)"/>'
        )
        if data.get("label"):
            parts.append(
                f'<text x="{lx:.1f}" y="{ly:.1f}" fill="#666" font-size="11">'
                f"{html.escape(str(data['label']))}</text>"
            )
    for n, data in g.nodes(data=True):
        kind: Any = data.get("kind", "node")
        x, y = pos[n]
        w = size[n]
        radius = box_h / 2 if kind in ("start", "end") else 6
        parts.append(
            f'<g class="node {html.escape(str(kind))}"><rect x="{x - w / 2:.1f}" '
            f'y="{y - box_h / 2:.1f}" width="{w:.1f}" height="{box_h}" rx="{radius}" '
            f'fill="{_FILL.get(kind, "#fafafa")}" stroke="#555"/>'
            f'<text x="{x:.1f}" y="{y + 4.5:.1f}" text-anchor="middle">'
            f"{html.escape(_label(n))}</text></g>"
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
