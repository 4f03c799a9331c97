"""Drawing a compiled graph as Mermaid, DOT, ASCII or standalone SVG, with no network.

Subgraph nodes are drawn as nested blocks holding their own nodes; the SVG layout lives in
:mod:`graphagent.graph._svg` and :mod:`graphagent.graph._layered`.
"""

from __future__ import annotations

import html
import re
from typing import TYPE_CHECKING

from graphagent.errors import UserError
from graphagent.graph._constants import END, START
from graphagent.graph._layered import layers
from graphagent.graph._svg import STYLE, label, render_svg, subgraphs

if TYPE_CHECKING:
    from graphagent.graph._compiled import CompiledGraph

__all__ = ["FORMATS", "draw", "layers"]

FORMATS = ("mermaid", "dot", "ascii", "svg")


def draw(graph: CompiledGraph, fmt: str = "mermaid") -> str:
    """Render ``graph`` in ``fmt`` (one of ``mermaid``, ``dot``, ``ascii``, ``svg``).

    Raises:
        UserError: an unknown format.
    """
    if fmt == "mermaid":
        lines = ["---", f"title: {graph.name}", "---", "flowchart TD"]
        _mermaid(graph, "", lines, "  ")
        for kind, (fill, stroke) in STYLE.items():
            # prefixed: "end" is a reserved word in Mermaid
            lines.append(f"  classDef ga_{kind} fill:{fill},stroke:{stroke},color:#263238")
        return "\n".join(lines) + "\n"
    if fmt == "dot":
        lines = [
            f"digraph {_q(graph.name)} {{",
            "  rankdir=TB; compound=true;",
            '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
            '  edge [fontname="Helvetica", fontsize=10];',
        ]
        _dot(graph, "", lines, "  ")
        return "\n".join([*lines, "}"]) + "\n"
    if fmt == "ascii":
        return _ascii(graph, "")
    if fmt == "svg":
        return render_svg(graph)
    raise UserError(f"unknown drawing format {fmt!r}; use one of {', '.join(FORMATS)}")


def _id(prefix: str, name: str) -> str:
    """A Mermaid/DOT-safe id, unique across nesting (``prefix`` is the parent's path)."""
    safe = re.sub(r"\W", "_", label(name))
    # START/END ids are reserved-looking; suffixing keeps them apart from user nodes
    return f"{prefix}{safe}" + ("_" if name in (START, END) else "")


def _mermaid(graph: CompiledGraph, prefix: str, lines: list[str], indent: str) -> None:
    g = graph.topology.digraph
    inner = subgraphs(graph)
    for node, data in g.nodes(data=True):
        kind = data.get("kind", "node")
        node_id = _id(prefix, node)
        text = html.escape(label(node), quote=True)
        if node in inner:
            lines.append(f'{indent}subgraph {node_id}["{text}"]')
            lines.append(f"{indent}  direction TB")
            _mermaid(inner[node], node_id + "__", lines, indent + "  ")
            lines.append(f"{indent}end")
            lines.append(f"{indent}class {node_id} ga_subgraph")
            continue
        shape = f"([{text}])" if kind in ("start", "end") else f'["{text}"]'
        lines.append(f"{indent}{node_id}{shape}:::ga_{kind}")
    for src, dst, data in g.edges(data=True):
        arrow = "-.->" if data.get("conditional") else "-->"
        text = data.get("label", "")
        tag = f"|{html.escape(text, quote=True)}|" if text else ""
        lines.append(f"{indent}{_id(prefix, src)} {arrow}{tag} {_id(prefix, dst)}")


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _dot(graph: CompiledGraph, prefix: str, lines: list[str], indent: str) -> None:
    g = graph.topology.digraph
    inner = subgraphs(graph)
    for node, data in g.nodes(data=True):
        kind = data.get("kind", "node")
        node_id = _id(prefix, node)
        fill, stroke = STYLE.get(kind, STYLE["node"])
        if node in inner:
            lines.append(f"{indent}subgraph {_q('cluster_' + node_id)} {{")
            lines.append(
                f'{indent}  label={_q(node)}; style="rounded,filled"; '
                f"fillcolor={_q(fill)}; color={_q(stroke)};"
            )
            _dot(inner[node], node_id + "__", lines, indent + "  ")
            lines.append(f"{indent}}}")
            continue
        shape = ", shape=oval" if kind in ("start", "end") else ""
        lines.append(
            f"{indent}{_q(node_id)} [label={_q(label(node))}, fillcolor={_q(fill)}, "
            f"color={_q(stroke)}{shape}];"
        )
    for src, dst, data in g.edges(data=True):
        attrs = []
        # an edge to or from a subgraph attaches to its START/END, clipped at the cluster
        a, b = _id(prefix, src), _id(prefix, dst)
        if src in inner:
            attrs.append(f"ltail={_q('cluster_' + a)}")
            a = _id(a + "__", END)
        if dst in inner:
            attrs.append(f"lhead={_q('cluster_' + b)}")
            b = _id(b + "__", START)
        if data.get("conditional"):
            attrs.append("style=dashed")
        if data.get("label"):
            attrs.append(f"label={_q(data['label'])}")
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"{indent}{_q(a)} -> {_q(b)}{suffix};")


def _ascii(graph: CompiledGraph, indent: str) -> str:
    g = graph.topology.digraph
    inner = subgraphs(graph)
    rows, _ = layers(g)

    def box(n: str) -> str:
        kind = g.nodes[n].get("kind", "node")
        plain = kind in ("node", "start", "end") or kind == n
        return f"[{label(n)}]" if plain else f"[{label(n)} <{kind}>]"

    texts = [" ".join(box(n) for n in row) for row in rows]
    width = max((len(t) for t in texts), default=0)
    out = [f"{indent}graph {graph.name!r}"]
    for i, text in enumerate(texts):
        out.append(indent + text.center(width).rstrip())
        if i < len(texts) - 1:
            out.append(indent + "|".center(width).rstrip())
            out.append(indent + "v".center(width).rstrip())
    out.append("")
    out.append(f"{indent}edges (-.-> conditional):")
    for src, dst, data in g.edges(data=True):
        arrow = "-.->" if data.get("conditional") else "--->"
        tag = f"  ({data['label']})" if data.get("label") else ""
        out.append(f"{indent}  {label(src)} {arrow} {label(dst)}{tag}")
    text = "\n".join(out) + "\n"
    for name, sub in inner.items():
        text += f"\n{indent}subgraph {name!r}:\n" + _ascii(sub, indent + "    ")
    return text
