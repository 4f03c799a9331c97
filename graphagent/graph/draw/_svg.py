"""Standalone SVG of a compiled graph: layered layout, subgraphs drawn nested, no network."""

from __future__ import annotations

import html
import math
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import pairwise

import networkx as nx

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
from graphagent.graph.draw._layout import Layout, Vertex, layered_layout
from graphagent.graph.draw._overlay import RunOverlay

__all__ = ["render_svg"]

_CAPTIONS = {"model", "tools", "hook", "agent", "entrypoint"}
_CHAR_W = 7.4
_SMALL_W = 6.0
_BOX_H = 36.0
_LINE_H = 14.0
_MAX_TOOLS = 8
_PAD = 18.0
_TITLE_H = 24.0
_LEGEND_H = 22.0
_KEY_WRAP = 60  # characters per line of the edge key
_MARGIN = 20.0
_EDGE = "#5f6b7a"
# the run overlay's colours: the path taken, what runs next, a pause waiting for a human
_PATH = "#1565c0"
_FADED = "#cfd8dc"
_NEXT = "#ef6c00"
_WAIT = "#c62828"
_TIMES = "\u00d7"  # the multiplication sign of visit counts
_Centre = Callable[[Vertex], tuple[float, float]]


def _caption(node: str, kind: str) -> bool:
    """Agent nodes say what they are under their name, unless the name already does."""
    return kind in _CAPTIONS and node != kind


@dataclass
class _Drawing:
    """One graph's geometry; subgraph nodes hold their own drawing."""

    g: nx.DiGraph[str]
    layout: Layout
    sizes: dict[str, tuple[float, float]]
    details: dict[str, list[str]]
    inner: dict[str, _Drawing] = field(default_factory=dict)


def _details(graph: Plan, node: str) -> list[str]:
    """Small lines under a node's name: the tools a tools node offers."""
    tools = list(tool_names(graph, node))
    if len(tools) > _MAX_TOOLS:
        tools = [*tools[: _MAX_TOOLS - 1], f"+ {len(tools) - _MAX_TOOLS + 1} more"]
    return tools


def _measure(graph: Plan) -> _Drawing:
    g = drawn(graph)
    inner = {name: _measure(sub) for name, sub in subgraphs(graph).items()}
    sizes: dict[str, tuple[float, float]] = {}
    details: dict[str, list[str]] = {}
    for node, data in g.nodes(data=True):
        kind = str(data.get("kind", "node"))
        if node in inner:
            lay = inner[node].layout
            title_w = len(node) * _CHAR_W + 90
            sizes[node] = (max(lay.width, title_w) + 2 * _PAD, lay.height + _TITLE_H + 2 * _PAD)
            continue
        details[node] = _details(graph, node)
        small = [kind] if _caption(node, kind) else []
        small += details[node]
        text_w = max([len(label(node)) * _CHAR_W, *(len(t) * _SMALL_W for t in small)])
        height = _BOX_H + _LINE_H * len(small) - (4.0 if small else 0.0)
        sizes[node] = (max(text_w + 32, 64.0), height)
    layout = layered_layout(g, sizes.__getitem__)
    return _Drawing(g, layout, sizes, details, inner)


def _attr(value: object) -> str:
    return html.escape(str(value), quote=True)


class _Writer:
    """Writes one drawing's elements at an offset; nested drawings recurse.

    ``overlay`` (a thread's run) applies to the outermost drawing only: a subgraph's inner
    steps are not in its parent's checkpoints.
    """

    def __init__(self, overlay: RunOverlay | None = None) -> None:
        self.parts: list[str] = []
        self.overlay = overlay
        self.labels: list[tuple[float, float, float, float]] = []
        self.right = 0.0  # the rightmost point drawn: loops and labels reach past the layout

    def drawing(self, d: _Drawing, ox: float, oy: float, overlay: RunOverlay | None) -> None:
        lay = d.layout

        def centre(v: Vertex) -> tuple[float, float]:
            return lay.x[v] + ox, lay.y[v] + oy

        ports = self._ports(d, centre)
        # taken edges last, so they are drawn over the faded ones they cross
        routes = sorted(
            lay.routes.items(),
            key=lambda item: bool(
                overlay and (overlay.edges[item[0]] or item[0] in overlay.upcoming)
            ),
        )
        if overlay is not None:
            # the tags drawn on nodes later are obstacles for edge labels now
            for node in d.g.nodes:
                (x, y), (w, h) = centre(node), d.sizes[node]
                look = _Look.of(node, overlay, "")
                self.labels += _tag_rects(look, x + w / 2, y - h / 2)
        for (src, dst), route in routes:
            self._edge(d, src, dst, route, centre, ports, overlay)
        for node in d.g.nodes:
            self._node(d, node, *centre(node), overlay)

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
        overlay: RunOverlay | None,
    ) -> None:
        data = d.g.edges[src, dst]
        dash = ' stroke-dasharray="6 4"' if data.get("conditional") else ""
        if data.get("send"):  # a fan-out, one task per Send: thick, dotted
            dash = ' stroke-dasharray="2 4" stroke-linecap="round"'
        if len(route) == 1:
            x, y = centre(src)
            r = x + d.sizes[src][0] / 2
            path = f"M {r:.1f} {y - 8:.1f} C {r + 40:.1f} {y - 30:.1f}, {r + 40:.1f} {y + 30:.1f}, "
            path += f"{r:.1f} {y + 8:.1f}"
            spots = [(r + 34, y)]
            tail, tip = (r + 40, y + 30), (r, y + 8)
            self.right = max(self.right, r + 42)
        else:
            points = self._route_points(d, (src, dst), route, centre, ports)
            path = f"M {points[0][0]:.1f} {points[0][1]:.1f}"
            for (x1, y1), (x2, y2) in pairwise(points):
                if x1 == x2:
                    path += f" L {x2:.1f} {y2:.1f}"
                else:
                    ym = (y1 + y2) / 2
                    path += f" C {x1:.1f} {ym:.1f}, {x2:.1f} {ym:.1f}, {x2:.1f} {y2:.1f}"
            # every segment ends vertically (a line, or a curve whose last handle is above)
            tip = points[-1]
            tail = (tip[0], points[-2][1])
            spots = _spots(points)
        colour, width, text = _EDGE, 2.4 if data.get("send") else 1.4, str(data.get("label", ""))
        title = f"{label(src)} → {label(dst)}"
        if data.get("send"):
            title += " (fan-out: one task per Send)"
        if dst == ANY:
            title = f"{label(src)}: {ANY_NOTE}"
        if overlay is not None:
            taken = overlay.edges[(src, dst)]
            colour, width = (_PATH, 3.0 if data.get("send") else 2.6) if taken else (_FADED, 1.2)
            if (src, dst) in overlay.upcoming:
                colour, width = _NEXT, 2.6
                title += " (chosen, runs next)"
            if taken > 1:
                text = f"{text} {_TIMES}{taken}".strip()
            if taken:
                title += f" (taken {taken} times)"
        self.parts.append(
            f'<path class="edge" d="{path}" fill="none" stroke="{colour}" '
            f'stroke-width="{width}"{dash}><title>{_attr(title)}</title></path>'
        )
        self.parts.append(_arrowhead(tail, tip, colour))
        if text:
            bold = ' font-weight="600"' if overlay is not None and overlay.edges[(src, dst)] else ""
            lx, ly = self._place(text, spots, d, centre)
            self.parts.append(
                f'<text class="edge-label" x="{lx:.1f}" y="{ly + 4:.1f}" text-anchor="middle" '
                f'font-size="11" fill="#37474f" stroke="#fff" stroke-width="4" '
                f'paint-order="stroke"{bold}>{_attr(text)}</text>'
            )

    def _place(
        self, text: str, spots: list[tuple[float, float]], d: _Drawing, centre: _Centre
    ) -> tuple[float, float]:
        """The first spot along the edge where its label covers no box and no other label."""
        half = len(text) * 3.2 + 2

        def box(x: float, y: float) -> tuple[float, float, float, float]:
            return (x - half, y - 7, x + half, y + 6)

        boxes = []
        for node in d.g.nodes:
            (cx, cy), (w, h) = centre(node), d.sizes[node]
            boxes.append((cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2))
        # beside the line, left or right, when no spot on it is free
        shifted = [(x + dx, y) for x, y in spots for dx in (half + 5, -half - 5)]
        for x, y in [*spots, *shifted]:
            mine = box(x, y)
            if mine[0] > 2 and not any(_overlaps(mine, o) for o in [*boxes, *self.labels]):
                self.labels.append(mine)
                self.right = max(self.right, mine[2])
                return x, y
        self.labels.append(box(*spots[0]))
        self.right = max(self.right, box(*spots[0])[2])
        return spots[0]

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

    def _node(self, d: _Drawing, node: str, x: float, y: float, overlay: RunOverlay | None) -> None:
        kind = str(d.g.nodes[node].get("kind", "node"))
        fill, stroke = STYLE.get(kind, STYLE["node"])
        w, h = d.sizes[node]
        left, top = x - w / 2, y - h / 2
        look = _Look.of(node, overlay, stroke)
        if node in d.inner:
            self.parts.append(
                f'<g class="subgraph{look.css}"{look.opacity}><rect x="{left:.1f}" '
                f'y="{top:.1f}" width="{w:.1f}" height="{h:.1f}" rx="10" fill="{fill}" '
                f'stroke="{look.stroke}" stroke-width="{look.width}"{look.dash}/>'
                f'<text x="{left + 12:.1f}" y="{top + 18:.1f}" font-weight="600" '
                f'fill="{stroke}">{_attr(node)}<tspan fill="#78909c" font-weight="400" '
                f'font-size="11"> · subgraph</tspan></text></g>'
            )
            self._tags(look, x + w / 2, top)
            inner = d.inner[node]
            self.drawing(inner, x - inner.layout.width / 2, top + _TITLE_H + _PAD, None)
            return
        radius = h / 2 if kind in ("start", "end", "any") else 8
        small = ([kind] if _caption(node, kind) else []) + d.details[node]
        text_y = y + 4.5 - len(small) * _LINE_H / 2
        lines = ""
        for i, text in enumerate(small):
            colour = stroke if i == 0 and _caption(node, kind) else "#546e7a"
            lines += (
                f'<text x="{x:.1f}" y="{text_y + 14 + i * _LINE_H:.1f}" text-anchor="middle" '
                f'font-size="10" fill="{colour}" letter-spacing="0.3">{_attr(text)}</text>'
            )
        weight = ' font-weight="600"' if kind in ("start", "end") else ""
        name_fill = "#607d8b" if kind == "any" else "#263238"
        dash = ' stroke-dasharray="4 3"' if kind == "any" else look.dash
        title = ANY_NOTE if node == ANY else f"{label(node)} ({kind})"
        if look.count > 1:
            title += f", ran {look.count} times"
        self.parts.append(
            f'<g class="node {_attr(kind)}{look.css}"{look.opacity}><title>{_attr(title)}</title>'
            f'<rect x="{left:.1f}" y="{top:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f'rx="{radius:.1f}" fill="{fill}" stroke="{look.stroke}" '
            f'stroke-width="{look.width}"{dash}/>'
            f'<text x="{x:.1f}" y="{text_y:.1f}" text-anchor="middle" fill="{name_fill}"{weight}>'
            f"{_attr(label(node))}</text>{lines}</g>"
        )
        self._tags(look, x + w / 2, top)

    def _tags(self, look: _Look, right: float, top: float) -> None:
        """A count badge and a state tag ("next", "waiting") on a node's top-right corner."""
        if look.count > 1:
            self.parts.append(
                f'<g class="visits"><circle cx="{right - 2:.1f}" cy="{top + 1:.1f}" r="9" '
                f'fill="{_PATH}"/><text x="{right - 2:.1f}" y="{top + 4.5:.1f}" '
                f'text-anchor="middle" font-size="10" font-weight="600" fill="#fff">'
                f"{_TIMES}{look.count}</text></g>"
            )
        if look.tag:
            x, _, x2, _ = _tag_rects(look, right, top)[-1]
            width = x2 - x
            self.parts.append(
                f'<g class="tag"><rect x="{x:.1f}" y="{top - 9:.1f}" width="{width:.1f}" '
                f'height="16" rx="8" fill="{look.stroke}"/><text x="{x + width / 2:.1f}" '
                f'y="{top + 3:.1f}" text-anchor="middle" font-size="10" font-weight="600" '
                f'fill="#fff">{_attr(look.tag)}</text></g>'
            )


@dataclass(frozen=True)
class _Look:
    """How the run overlay marks one node: outline, fading, count and tag."""

    stroke: str
    width: float = 1.4
    dash: str = ""
    opacity: str = ""
    css: str = ""
    count: int = 0
    tag: str = ""

    @staticmethod
    def of(node: str, overlay: RunOverlay | None, stroke: str) -> _Look:
        if overlay is None:
            return _Look(stroke)
        count = overlay.nodes[node]
        if node in overlay.waiting:
            return _Look(_WAIT, 3.0, "", "", " waiting", count, "waiting")
        if node in overlay.next:
            return _Look(_NEXT, 2.6, ' stroke-dasharray="5 3"', "", " next", count, "next")
        if node in overlay.last:
            return _Look(_PATH, 3.0, "", "", " current", count, "current")
        if count:
            return _Look(_PATH, 2.0, "", "", " visited", count)
        return _Look(stroke, 1.2, "", ' opacity="0.45"', " unvisited")


def _tag_rects(look: _Look, right: float, top: float) -> list[tuple[float, float, float, float]]:
    """Where a node's count badge and state tag sit (the tag last)."""
    rects = []
    if look.count > 1:
        rects.append((right - 11, top - 8, right + 7, top + 10))
    if look.tag:
        width = len(look.tag) * 6.2 + 12
        x = right - width - (14 if look.count > 1 else 0)
        rects.append((x, top - 9, x + width, top + 7))
    return rects


def _overlaps(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _spots(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Where an edge's label may sit, best first: along the curves between rows (nearest the
    source first), then along its straight runs."""
    curves: list[tuple[float, float]] = []
    runs: list[tuple[float, float]] = []
    for (x1, y1), (x2, y2) in pairwise(points):
        if y1 == y2:
            continue
        if x1 == x2:
            runs += [(x1, y1 + (y2 - y1) * t) for t in (0.5, 0.3, 0.7)]
            continue
        ym = (y1 + y2) / 2
        for t in (0.5, 0.35, 0.65, 0.2, 0.8):
            # the cubic from (x1, y1) to (x2, y2) with handles (x1, ym) and (x2, ym)
            u = 1 - t
            x = (u**3 + 3 * u * u * t) * x1 + (3 * u * t * t + t**3) * x2
            y = u**3 * y1 + 3 * u * u * t * ym + 3 * u * t * t * ym + t**3 * y2
            curves.append((x, y))
    return curves + runs or [points[0]]


def _arrowhead(tail: tuple[float, float], tip: tuple[float, float], colour: str) -> str:
    """A filled arrowhead at ``tip`` pointing away from ``tail``.

    Drawn inline rather than as an SVG ``<marker>``: a marker is found by an id that is
    global to the whole HTML page, so hiding one graph (a collapsed output, a docs tab)
    took the arrowheads of every other graph with it.
    """
    dx, dy = tip[0] - tail[0], tip[1] - tail[1]
    norm = math.hypot(dx, dy) or 1.0
    ux, uy = dx / norm, dy / norm
    bx, by = tip[0] - 8 * ux, tip[1] - 8 * uy
    px, py = -uy * 4, ux * 4
    return (
        f'<path class="arrow" d="M {tip[0]:.1f} {tip[1]:.1f} L {bx + px:.1f} {by + py:.1f} '
        f'L {bx - px:.1f} {by - py:.1f} z" fill="{colour}"/>'
    )


def render_svg(graph: Plan, overlay: RunOverlay | None = None) -> str:
    """``graph`` as a standalone SVG document (layered, loops drawn upwards, subgraphs nested).

    With ``overlay``, the drawing shows one thread's run: the path taken (with counts on
    edges taken more than once), the current and next nodes, and a pause waiting for an answer.

    Example:
        >>> from graphagent import StateGraph, START, END
        >>> b = StateGraph()
        >>> _ = b.add_node("a", lambda s: {})
        >>> _ = b.add_edge(START, "a").add_edge("a", END)
        >>> render_svg(b.compile().plan).startswith("<svg")
        True
    """
    d = _measure(graph)
    legend = _legend(overlay) if overlay is not None else ""
    # what edge labels mean (an agent's "again"), wrapped to the drawing's usual width
    key = [part for line in edge_key(graph) for part in textwrap.wrap(line, _KEY_WRAP)]
    lines = [legend] if legend else []
    lines += key
    top = _MARGIN + _TITLE_H + _LEGEND_H * len(lines)
    height = d.layout.height + _MARGIN + top
    writer = _Writer()
    writer.drawing(d, _MARGIN, top, overlay)
    width = max(
        d.layout.width + 2 * _MARGIN,
        len(graph.name) * 8.5 + 2 * _MARGIN,
        max((len(line) for line in lines), default=0) * 6.4 + 2 * _MARGIN,
        writer.right + _MARGIN / 2,
    )
    head = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" '
        'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" '
        'font-size="13">',
        f"<title>{_attr(graph.name)}</title>",
        '<rect width="100%" height="100%" fill="#ffffff"/>',
        f'<text x="{_MARGIN:.0f}" y="{_MARGIN + 4:.0f}" font-size="14" font-weight="600" '
        f'fill="#37474f">{_attr(graph.name)}</text>',
    ]
    for i, line in enumerate(lines):
        kind = "legend" if legend and i == 0 else "key"
        head.append(
            f'<text class="{kind}" x="{_MARGIN:.0f}" y="{_MARGIN + 24 + i * _LEGEND_H:.0f}" '
            f'font-size="11" fill="#546e7a">{_attr(line)}</text>'
        )
    return "\n".join([*head, *writer.parts, "</svg>"]) + "\n"


def _legend(overlay: RunOverlay) -> str:
    """One line under the title: which thread, where it stands, how to read the colours."""
    if overlay.waiting:
        where = f"waiting at {', '.join(overlay.waiting)} for Command(resume=...)"
    elif overlay.next and overlay.at_breakpoint:
        where = f"paused at a breakpoint before {', '.join(overlay.next)}"
    elif overlay.next:
        where = f"next: {', '.join(overlay.next)}"
    elif overlay.finished:
        where = "finished"
    else:
        where = "no such thread (nothing saved yet)"
    return (
        f"thread {overlay.thread_id!r} · step {overlay.step} · {where} · "
        "blue: the path taken · orange: next"
    )
