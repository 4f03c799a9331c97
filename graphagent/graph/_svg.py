"""Standalone SVG of a compiled graph: layered layout, subgraphs drawn nested, no network."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import TYPE_CHECKING

import networkx as nx

from graphagent.graph._constants import END, START
from graphagent.graph._layered import Layout, Vertex, layered_layout

if TYPE_CHECKING:
    from graphagent.graph._compiled import CompiledGraph

__all__ = ["STYLE", "label", "render_svg", "subgraphs"]

# kind -> (fill, stroke); one palette for SVG, Mermaid and DOT
STYLE = {
    "start": ("#e8f5e9", "#43a047"),
    "end": ("#fbe9e7", "#e64a19"),
    "model": ("#e3f2fd", "#1e88e5"),
    "tools": ("#fff8e1", "#f9a825"),
    "hook": ("#f3e5f5", "#8e24aa"),
    "subgraph": ("#f4fbfc", "#00838f"),
    "node": ("#fafafa", "#616161"),
}
_CAPTIONS = {"model", "tools", "hook", "agent"}
_CHAR_W = 7.4
_CAPTION_W = 6.0
_BOX_H = 36.0
_CAPTIONED_H = 46.0
_PAD = 18.0
_TITLE_H = 24.0
_MARGIN = 20.0
_EDGE = "#5f6b7a"
_Centre = Callable[[Vertex], tuple[float, float]]


def label(name: str) -> str:
    """How a node is named in drawings (``START``/``END`` for the virtual nodes)."""
    return {START: "START", END: "END"}.get(name, name)


def subgraphs(graph: CompiledGraph) -> dict[str, CompiledGraph]:
    """The nodes of ``graph`` that are compiled graphs themselves."""
    return {
        name: spec.subgraph
        for name, spec in graph.topology.nodes.items()
        if spec.subgraph is not None
    }


def _caption(node: str, kind: str) -> bool:
    """Agent nodes say what they are under their name, unless the name already does."""
    return kind in _CAPTIONS and node != kind


@dataclass
class _Drawing:
    """One graph's geometry; subgraph nodes hold their own drawing."""

    g: nx.DiGraph[str]
    layout: Layout
    sizes: dict[str, tuple[float, float]]
    inner: dict[str, _Drawing] = field(default_factory=dict)


def _measure(graph: CompiledGraph) -> _Drawing:
    g = graph.topology.digraph
    inner = {name: _measure(sub) for name, sub in subgraphs(graph).items()}
    sizes: dict[str, tuple[float, float]] = {}
    for node, data in g.nodes(data=True):
        kind = str(data.get("kind", "node"))
        if node in inner:
            lay = inner[node].layout
            title_w = len(node) * _CHAR_W + 90
            sizes[node] = (max(lay.width, title_w) + 2 * _PAD, lay.height + _TITLE_H + 2 * _PAD)
            continue
        text_w = len(label(node)) * _CHAR_W
        if _caption(node, kind):
            text_w = max(text_w, len(kind) * _CAPTION_W)
        height = _CAPTIONED_H if _caption(node, kind) else _BOX_H
        sizes[node] = (max(text_w + 32, 64.0), height)
    layout = layered_layout(g, sizes.__getitem__)
    return _Drawing(g, layout, sizes, inner)


def _attr(value: object) -> str:
    return html.escape(str(value), quote=True)


class _Writer:
    """Writes one drawing's elements at an offset; nested drawings recurse."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def drawing(self, d: _Drawing, ox: float, oy: float) -> None:
        lay = d.layout

        def centre(v: Vertex) -> tuple[float, float]:
            return lay.x[v] + ox, lay.y[v] + oy

        ports = self._ports(d, centre)
        for (src, dst), route in lay.routes.items():
            self._edge(d, src, dst, route, centre, ports)
        for node in d.g.nodes:
            self._node(d, node, *centre(node))

    def _ports(
        self, d: _Drawing, centre: _Centre
    ) -> dict[tuple[tuple[str, str], str], tuple[float, float]]:
        """Where each edge leaves and enters its boxes, spread along the side it uses."""
        lay = d.layout
        sides: dict[tuple[str, str], list[tuple[float, tuple[str, str]]]] = {}
        for edge, route in lay.routes.items():
            if len(route) < 2:
                continue
            first, last = route[0], route[-1]
            assert isinstance(first, str) and isinstance(last, str)
            upward = edge in lay.reversed
            sides.setdefault((first, "top" if upward else "bottom"), []).append(
                (centre(route[1])[0], edge)
            )
            sides.setdefault((last, "bottom" if upward else "top"), []).append(
                (centre(route[-2])[0], edge)
            )
        out: dict[tuple[tuple[str, str], str], tuple[float, float]] = {}
        for (node, side), entries in sides.items():
            entries.sort()
            w, h = d.sizes[node]
            cx, cy = centre(node)
            span = min(w * 0.6, 18.0 * (len(entries) - 1))
            for i, (_, edge) in enumerate(entries):
                dx = span * (i / (len(entries) - 1) - 0.5) if len(entries) > 1 else 0.0
                out[(edge, node)] = (cx + dx, cy + (h / 2 if side == "bottom" else -h / 2))
        return out

    def _edge(
        self,
        d: _Drawing,
        src: str,
        dst: str,
        route: list[Vertex],
        centre: _Centre,
        ports: dict[tuple[tuple[str, str], str], tuple[float, float]],
    ) -> None:
        data = d.g.edges[src, dst]
        dash = ' stroke-dasharray="6 4"' if data.get("conditional") else ""
        if len(route) == 1:
            x, y = centre(src)
            r = x + d.sizes[src][0] / 2
            path = f"M {r:.1f} {y - 8:.1f} C {r + 40:.1f} {y - 30:.1f}, {r + 40:.1f} {y + 30:.1f}, "
            path += f"{r:.1f} {y + 8:.1f}"
            lx, ly = r + 34, y
        else:
            points = self._route_points(d, (src, dst), route, centre, ports)
            path = f"M {points[0][0]:.1f} {points[0][1]:.1f}"
            for (x1, y1), (x2, y2) in pairwise(points):
                if x1 == x2:
                    path += f" L {x2:.1f} {y2:.1f}"
                else:
                    ym = (y1 + y2) / 2
                    path += f" C {x1:.1f} {ym:.1f}, {x2:.1f} {ym:.1f}, {x2:.1f} {y2:.1f}"
            # the label sits in the first gap between rows, near the source
            gap = next(
                ((a, b) for a, b in pairwise(points) if a[1] != b[1]),
                (points[0], points[-1]),
            )
            (x1, y1), (x2, y2) = gap
            lx, ly = (x1 + x2) / 2, (y1 + y2) / 2 + 4
        self.parts.append(
            f'<path class="edge" d="{path}" fill="none" stroke="{_EDGE}" stroke-width="1.4"'
            f'{dash} marker-end="url(#ga-arrow)"><title>{_attr(label(src))} → '
            f"{_attr(label(dst))}</title></path>"
        )
        if data.get("label"):
            self.parts.append(
                f'<text class="edge-label" x="{lx:.1f}" y="{ly:.1f}" text-anchor="middle" '
                f'font-size="11" fill="#37474f" stroke="#fff" stroke-width="4" '
                f'paint-order="stroke">{_attr(data["label"])}</text>'
            )

    @staticmethod
    def _route_points(
        d: _Drawing,
        edge: tuple[str, str],
        route: list[Vertex],
        centre: _Centre,
        ports: dict[tuple[tuple[str, str], str], tuple[float, float]],
    ) -> list[tuple[float, float]]:
        """The polyline of an edge: straight down through its rows, curves only in the gaps.

        Keeping curves out of the rows is what stops a line crossing a tall neighbour
        (a subgraph block) on its way into a short box.
        """
        lay = d.layout
        first, last = route[0], route[-1]
        assert isinstance(first, str) and isinstance(last, str)
        down = lay.y[last] > lay.y[first]
        dy = centre(first)[1] - lay.y[first]

        def band(v: Vertex) -> tuple[float, float]:
            top, bottom = lay.band[v]
            return (top + dy, bottom + dy) if down else (bottom + dy, top + dy)

        start = ports[(edge, first)]
        points = [start, (start[0], band(first)[1])]
        for v in route[1:-1]:
            x = centre(v)[0]
            enter, leave = band(v)
            points += [(x, enter), (x, leave)]
        end = ports[(edge, last)]
        points += [(end[0], band(last)[0]), end]
        return [p for i, p in enumerate(points) if i == 0 or p != points[i - 1]]

    def _node(self, d: _Drawing, node: str, x: float, y: float) -> None:
        kind = str(d.g.nodes[node].get("kind", "node"))
        fill, stroke = STYLE.get(kind, STYLE["node"])
        w, h = d.sizes[node]
        left, top = x - w / 2, y - h / 2
        if node in d.inner:
            self.parts.append(
                f'<g class="subgraph"><rect x="{left:.1f}" y="{top:.1f}" width="{w:.1f}" '
                f'height="{h:.1f}" rx="10" fill="{fill}" stroke="{stroke}" stroke-width="1.2"/>'
                f'<text x="{left + 12:.1f}" y="{top + 18:.1f}" font-weight="600" '
                f'fill="{stroke}">{_attr(node)}<tspan fill="#78909c" font-weight="400" '
                f'font-size="11"> · subgraph</tspan></text></g>'
            )
            inner = d.inner[node]
            self.drawing(inner, x - inner.layout.width / 2, top + _TITLE_H + _PAD)
            return
        radius = h / 2 if kind in ("start", "end") else 8
        text_y = y + 4.5
        caption = ""
        if _caption(node, kind):
            text_y = y
            caption = (
                f'<text x="{x:.1f}" y="{y + 14:.1f}" text-anchor="middle" font-size="10" '
                f'fill="{stroke}" letter-spacing="0.5">{_attr(kind)}</text>'
            )
        weight = ' font-weight="600"' if kind in ("start", "end") else ""
        self.parts.append(
            f'<g class="node {_attr(kind)}"><title>{_attr(label(node))} ({_attr(kind)})</title>'
            f'<rect x="{left:.1f}" y="{top:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f'rx="{radius:.1f}" fill="{fill}" stroke="{stroke}" stroke-width="1.4"/>'
            f'<text x="{x:.1f}" y="{text_y:.1f}" text-anchor="middle" fill="#263238"{weight}>'
            f"{_attr(label(node))}</text>{caption}</g>"
        )


def render_svg(graph: CompiledGraph) -> str:
    """``graph`` as a standalone SVG document (layered, loops drawn upwards, subgraphs nested).

    Example:
        >>> from graphagent import StateGraph, START, END
        >>> b = StateGraph()
        >>> _ = b.add_node("a", lambda s: {})
        >>> _ = b.add_edge(START, "a").add_edge("a", END)
        >>> render_svg(b.compile()).startswith("<svg")
        True
    """
    d = _measure(graph)
    width = max(d.layout.width, len(graph.name) * 8.5) + 2 * _MARGIN
    height = d.layout.height + 2 * _MARGIN + _TITLE_H
    writer = _Writer()
    writer.drawing(d, _MARGIN, _MARGIN + _TITLE_H)
    head = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" '
        'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" '
        'font-size="13">',
        f"<title>{_attr(graph.name)}</title>",
        '<defs><marker id="ga-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        f'markerHeight="8" orient="auto-start-reverse"><path d="M 0 1 L 9 5 L 0 9 z" '
        f'fill="{_EDGE}"/></marker></defs>',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        f'<text x="{_MARGIN:.0f}" y="{_MARGIN + 4:.0f}" font-size="14" font-weight="600" '
        f'fill="#37474f">{_attr(graph.name)}</text>',
    ]
    return "\n".join([*head, *writer.parts, "</svg>"]) + "\n"
