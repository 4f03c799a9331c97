"""Drawing a compiled graph as SVG, Mermaid, DOT, PlantUML or ASCII, with no network.

Subgraph nodes are drawn as nested blocks holding their own nodes; the SVG layout lives in
:mod:`graphagent.graph.draw._svg` and :mod:`graphagent.graph.draw._layout`. Mermaid and DOT name
nodes by generated ids (never a node's own name, which may be a keyword of the language or
collide with another once cleaned); names appear only as labels.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from graphagent.errors import UserError
from graphagent.graph._constants import END, START
from graphagent.graph._plan import Plan
from graphagent.graph.draw._common import (
    ANY,
    ANY_NOTE,
    STYLE,
    drawn,
    edge_key,
    label,
    subgraphs,
    tool_names,
)
from graphagent.graph.draw._layout import layers
from graphagent.graph.draw._overlay import RunOverlay
from graphagent.graph.draw._plantuml import plantuml
from graphagent.graph.draw._svg import render_svg

__all__ = ["FORMATS", "Drawing", "draw", "layers", "svg_bundle", "svg_img"]

FORMATS = ("svg", "mermaid", "dot", "plantuml", "ascii")
# kinds that Mermaid labels carry under the name, as the SVG does
_CAPTIONED = ("model", "tools", "hook", "agent", "entrypoint")


_TITLE = re.compile(r"<title>([^<]*)</title>")


def svg_img(svg: str) -> str:
    """``svg`` as an HTML ``<img>`` holding it as a data URI.

    The form of a drawing an untrusted notebook shows: JupyterLab renders no
    ``image/svg+xml`` output of a notebook it did not run, and strips inline ``<svg>`` out
    of HTML (leaving its labels as loose text), but it shows an image.

    >>> svg_img("<svg><title>g</title></svg>")
    '<img src="data:image/svg+xml;base64,PHN2Zz48dGl0bGU+ZzwvdGl0bGU+PC9zdmc+" alt="graph g">'
    """
    found = _TITLE.search(svg)
    # the title is already escaped for an attribute by the SVG writer
    name = f"graph {found.group(1)}" if found else "graph"
    data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
    return f'<img src="data:image/svg+xml;base64,{data}" alt="{name}">'


def svg_bundle(svg: str, text: str) -> dict[str, str]:
    """A Jupyter bundle for a drawing: the SVG itself, the ``<img>`` form that untrusted
    notebooks show (:func:`svg_img`), and ``text`` for plain-text front ends."""
    return {"image/svg+xml": svg, "text/html": svg_img(svg), "text/plain": text}


class Drawing(str):
    """The text of a drawing (a plain ``str``) that Jupyter shows in its own format.

    ``app.draw("svg")`` on a cell's last line shows the picture, ``app.draw("mermaid")``
    asks the front end to render Mermaid (the opt-in way to see it), ``"dot"``,
    ``"plantuml"`` and ``"ascii"`` show as text.

    Attributes:
        fmt: ``"svg"``, ``"mermaid"``, ``"dot"``, ``"plantuml"`` or ``"ascii"``.
    """

    fmt: str

    def __new__(cls, text: str, fmt: str) -> Drawing:
        """Wrap ``text`` drawn in ``fmt``."""
        self = super().__new__(cls, text)
        self.fmt = fmt
        return self

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        # pickle and copy rebuild it through __new__, which needs the format too
        return (str(self), self.fmt)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        text = str(self)
        if self.fmt == "svg":
            return svg_bundle(text, f"<SVG drawing, {len(text)} chars>")
        if self.fmt == "mermaid":
            return {"text/vnd.mermaid": text, "text/plain": text}
        return {"text/plain": text}


def draw(graph: Plan, fmt: str = "svg", overlay: RunOverlay | None = None) -> Drawing:
    """Render a compiled graph's plan in ``fmt`` (``svg``, ``mermaid``, ``dot``,
    ``plantuml``, ``ascii``).

    Raises:
        UserError: an unknown format, or an overlay asked of a format other than SVG.
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown drawing format {fmt!r}; use one of {', '.join(FORMATS)}")
    if overlay is not None and fmt != "svg":
        raise UserError(f"a thread's run is drawn in SVG only; use draw('svg', ...), not {fmt!r}")
    if fmt == "svg":
        return Drawing(render_svg(graph, overlay), fmt)
    if fmt == "ascii":
        return Drawing(_ascii(graph, ""), fmt)
    ids = _Ids()
    if fmt == "plantuml":
        return Drawing(plantuml(graph, ids), fmt)
    if fmt == "mermaid":
        lines = ["---", f"title: {json.dumps(graph.name)}", "---", "flowchart TD"]
        _mermaid(graph, (), ids, lines, "  ")
        for kind, (fill, stroke) in STYLE.items():
            dash = ",stroke-dasharray:4 3" if kind == "any" else ""
            lines.append(f"  classDef ga_{kind} fill:{fill},stroke:{stroke},color:#263238{dash}")
        return Drawing("\n".join(lines) + "\n", fmt)
    lines = [
        f"digraph {_q(graph.name)} {{",
        "  rankdir=TB; compound=true;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica"];',
        '  edge [fontname="Helvetica", fontsize=10];',
    ]
    _dot(graph, (), ids, lines, "  ")
    return Drawing("\n".join([*lines, "}"]) + "\n", fmt)


class _Ids:
    """Ids for one Mermaid or DOT document: ASCII, never a keyword, unique across nesting.

    ``a-b``, ``a b`` and ``a.b`` all clean to ``a_b``; the second and third get a suffix
    instead of silently becoming the same node.
    """

    def __init__(self) -> None:
        self._by_path: dict[tuple[str, ...], str] = {}
        self._used: set[str] = set()

    def __call__(self, path: tuple[str, ...]) -> str:
        got = self._by_path.get(path)
        if got is not None:
            return got
        name = path[-1]
        virtual = {START: "ga_start", END: "ga_end", ANY: "ga_any"}
        # the "n_" prefix keeps user names off every keyword (end, style, graph, class, ...)
        part = virtual.get(name) or "n_" + re.sub(r"[^A-Za-z0-9_]", "_", name)
        base = f"{self(path[:-1])}__{part}" if len(path) > 1 else part
        candidate, n = base, 1
        while candidate in self._used:
            n += 1
            candidate = f"{base}_{n}"
        self._used.add(candidate)
        self._by_path[path] = candidate
        return candidate


def _mermaid_text(text: str) -> str:
    """A label inside Mermaid quotes, as HTML entities without a ``#``.

    Mermaid rewrites ``#name;`` in its source before parsing and, in version 12, leaves its
    placeholder characters in the picture; numeric entities (``&#35;``) contain that form,
    so only named ones are used.
    """
    codes = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "#": "&num;", "`": "&grave;"}
    out = "".join(codes.get(ch, ch) for ch in text)
    return out.replace("\r\n", "\n").replace("\n", "<br>")


def _mermaid(graph: Plan, path: tuple[str, ...], ids: _Ids, lines: list[str], indent: str) -> None:
    g = drawn(graph)
    inner = subgraphs(graph)
    for node, data in g.nodes(data=True):
        kind = str(data.get("kind", "node"))
        style = kind if kind in STYLE else "node"
        node_id = ids((*path, node))
        text = _mermaid_text(label(node))
        if node in inner:
            lines.append(f'{indent}subgraph {node_id}["{text}"]')
            lines.append(f"{indent}  direction TB")
            _mermaid(inner[node], (*path, node), ids, lines, indent + "  ")
            lines.append(f"{indent}end")
            # a class does not reach a subgraph's box in every Mermaid version; style does
            fill, stroke = STYLE["subgraph"]
            lines.append(f"{indent}style {node_id} fill:{fill},stroke:{stroke},color:{stroke}")
            continue
        small = [kind] if kind in _CAPTIONED and node != kind else []
        small += [", ".join(tool_names(graph, node))] if tool_names(graph, node) else []
        for line in small:
            text += "<br><small>" + _mermaid_text(line) + "</small>"
        shape = f'(["{text}"])' if kind in ("start", "end", "any") else f'("{text}")'
        lines.append(f"{indent}{node_id}{shape}:::ga_{style}")
    for src, dst, data in g.edges(data=True):
        # a fan-out (one task per Send) is a thick arrow
        arrow = "==>" if data.get("send") else "-.->" if data.get("conditional") else "-->"
        text = str(data.get("label", ""))
        tag = f'|"{_mermaid_text(text)}"|' if text else ""
        lines.append(f"{indent}{ids((*path, src))} {arrow}{tag} {ids((*path, dst))}")


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _dot(graph: Plan, path: tuple[str, ...], ids: _Ids, lines: list[str], indent: str) -> None:
    g = drawn(graph)
    inner = subgraphs(graph)
    for node, data in g.nodes(data=True):
        kind = str(data.get("kind", "node"))
        node_id = ids((*path, node))
        fill, stroke = STYLE.get(kind, STYLE["node"])
        if node in inner:
            lines.append(f"{indent}subgraph {_q('cluster_' + node_id)} {{")
            lines.append(
                f'{indent}  label={_q(node)}; style="rounded,filled"; '
                f"fillcolor={_q(fill)}; color={_q(stroke)};"
            )
            _dot(inner[node], (*path, node), ids, lines, indent + "  ")
            lines.append(f"{indent}}}")
            continue
        text = label(node)
        tools = tool_names(graph, node)
        if tools:
            text += "\n" + ", ".join(tools)
        shape = ", shape=oval" if kind in ("start", "end", "any") else ""
        if kind == "any":
            shape += ', style="dashed,filled", tooltip=' + _q(ANY_NOTE)
        lines.append(
            f"{indent}{_q(node_id)} [label={_q(text)}, fillcolor={_q(fill)}, "
            f"color={_q(stroke)}{shape}];"
        )
    for src, dst, data in g.edges(data=True):
        attrs = []
        # an edge to or from a subgraph attaches to its START/END, clipped at the cluster
        a, b = ids((*path, src)), ids((*path, dst))
        if src in inner:
            attrs.append(f"ltail={_q('cluster_' + a)}")
            a = ids((*path, src, END))
        if dst in inner:
            attrs.append(f"lhead={_q('cluster_' + b)}")
            b = ids((*path, dst, START))
        if data.get("send"):  # a fan-out: one task per Send
            attrs.append("style=bold, penwidth=2, arrowhead=crow")
        elif data.get("conditional"):
            attrs.append("style=dashed")
        if data.get("label"):
            attrs.append(f"label={_q(data['label'])}")
        suffix = f" [{', '.join(attrs)}]" if attrs else ""
        lines.append(f"{indent}{_q(a)} -> {_q(b)}{suffix};")


def _ascii(graph: Plan, indent: str) -> str:
    g = drawn(graph)
    inner = subgraphs(graph)
    rows, _ = layers(g)

    def box(n: str) -> str:
        kind = g.nodes[n].get("kind", "node")
        plain = kind in ("node", "start", "end", "any") or kind == n
        tools = tool_names(graph, n)
        extra = f": {', '.join(tools)}" if tools else ""
        return f"[{label(n)}{extra}]" if plain else f"[{label(n)} <{kind}>{extra}]"

    texts = [" ".join(box(n) for n in row) for row in rows]
    width = max((len(t) for t in texts), default=0)
    out = [f"{indent}graph {graph.name!r}"]
    for i, text in enumerate(texts):
        out.append(indent + text.center(width).rstrip())
        if i < len(texts) - 1:
            out.append(indent + "|".center(width).rstrip())
            out.append(indent + "v".center(width).rstrip())
    out.append("")
    out.append(f"{indent}edges (-.-> conditional, =>> fan-out: one task per Send):")
    for src, dst, data in g.edges(data=True):
        arrow = "=>>" if data.get("send") else "-.->" if data.get("conditional") else "--->"
        tag = f"  ({data['label']})" if data.get("label") else ""
        if dst == ANY:
            tag = "  (no path map: may go to any node)"
        out.append(f"{indent}  {label(src)} {arrow} {label(dst)}{tag}")
    key = edge_key(graph)
    if key:
        out.append("")
        out.extend(f"{indent}{line}" for line in key)
    text = "\n".join(out) + "\n"
    for name, sub in inner.items():
        text += f"\n{indent}subgraph {name!r}:\n" + _ascii(sub, indent + "    ")
    return text
