"""Layered (Sugiyama-style) layout of a graph with loops, in pure Python over networkx.

Four passes, each kept simple because agent graphs are small (tens of nodes):

1. loops are broken by reversing the back edges found by a DFS from ``START``;
2. nodes get layers by longest path (``END`` always last);
3. edges that skip layers get a chain of invisible waypoints, one per layer, so no line
   is drawn through a box;
4. the order inside each layer is improved by barycentre sweeps (best of several by
   crossing count), then x positions are pulled towards connected nodes while boxes keep
   their order and gaps.

The output is geometry only; :mod:`graphagent.graph.draw._svg` turns it into SVG.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import networkx as nx

from graphagent.graph._constants import END, START

__all__ = ["Layout", "Waypoint", "layered_layout", "layers"]

GAP_X = 30.0
GAP_Y = 52.0


@dataclass(frozen=True)
class Waypoint:
    """An invisible point where an edge crosses a layer it skips."""

    src: str
    dst: str
    index: int


Vertex = str | Waypoint


@dataclass
class Layout:
    """Positions of the boxes and the route of every edge.

    Attributes:
        x: centre x of each node and waypoint.
        y: centre y of each node and waypoint (the centre of its row).
        band: the top and bottom y of the row each node and waypoint sits in.
        rows: the layers, top to bottom, in left-to-right order.
        routes: ``(src, dst)`` -> the vertices an edge passes through, source first.
        reversed: edges that run upwards (loops).
        width: overall width.
        height: overall height.
    """

    x: dict[Vertex, float] = field(default_factory=dict)
    y: dict[Vertex, float] = field(default_factory=dict)
    band: dict[Vertex, tuple[float, float]] = field(default_factory=dict)
    rows: list[list[Vertex]] = field(default_factory=list)
    routes: dict[tuple[str, str], list[Vertex]] = field(default_factory=dict)
    reversed: set[tuple[str, str]] = field(default_factory=set)
    width: float = 0.0
    height: float = 0.0


def _back_edges(g: nx.DiGraph[str]) -> set[tuple[str, str]]:
    back: set[tuple[str, str]] = set()
    seen: set[str] = set()
    on_path: set[str] = set()
    # iterative DFS: deep chains must not hit Python's recursion limit
    for root in [START, *g.nodes]:
        if root in seen or root not in g:
            continue
        seen.add(root)
        on_path.add(root)
        stack = [(root, iter(list(g.successors(root))))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                on_path.discard(node)
                stack.pop()
            elif child in on_path:
                back.add((node, child))
            elif child not in seen:
                seen.add(child)
                on_path.add(child)
                stack.append((child, iter(list(g.successors(child)))))
    return back


def _depths(g: nx.DiGraph[str], back: set[tuple[str, str]]) -> dict[str, int]:
    dag: nx.DiGraph[str] = nx.DiGraph()
    dag.add_nodes_from(g.nodes)
    for u, v in g.edges:
        if u != v:
            dag.add_edge(*((v, u) if (u, v) in back else (u, v)))
    depth: dict[str, int] = {}
    for n in nx.topological_sort(dag):
        depth[n] = max((depth[p] + 1 for p in dag.predecessors(n)), default=0)
    if END in depth and len(depth) > 1:
        depth[END] = max(d for n, d in depth.items() if n != END) + 1
    return depth


def _crossings(rows: list[list[Vertex]], up: dict[Vertex, list[Vertex]]) -> int:
    total = 0
    for i in range(1, len(rows)):
        above = {v: k for k, v in enumerate(rows[i - 1])}
        pairs = [(k, above[p]) for k, v in enumerate(rows[i]) for p in up[v]]
        total += sum(
            1
            for a, (k1, p1) in enumerate(pairs)
            for k2, p2 in pairs[a + 1 :]
            if (k1 - k2) * (p1 - p2) < 0
        )
    return total


def _invert(rows: list[list[Vertex]], up: dict[Vertex, list[Vertex]]) -> dict[Vertex, list[Vertex]]:
    down: dict[Vertex, list[Vertex]] = {v: [] for row in rows for v in row}
    for v, ps in up.items():
        for p in ps:
            down[p].append(v)
    return down


def _order(rows: list[list[Vertex]], up: dict[Vertex, list[Vertex]]) -> list[list[Vertex]]:
    down = _invert(rows, up)
    best = [list(r) for r in rows]
    best_score = _crossings(best, up)
    current = [list(r) for r in rows]
    for sweep in range(8):
        downward = sweep % 2 == 0
        indices = range(1, len(current)) if downward else range(len(current) - 2, -1, -1)
        for i in indices:
            ref = current[i - 1] if downward else current[i + 1]
            pos = {v: k for k, v in enumerate(ref)}
            links = up if downward else down
            key: dict[Vertex, float] = {}
            for k, v in enumerate(current[i]):
                ks = [pos[n] for n in links[v] if n in pos]
                key[v] = sum(ks) / len(ks) if ks else float(k)
            current[i].sort(key=key.__getitem__)
        score = _crossings(current, up)
        if score < best_score:
            best, best_score = [list(r) for r in current], score
    return best


def _spread(
    order: list[Vertex], want: dict[Vertex, float], size: Callable[[Vertex], float]
) -> None:
    """Move ``want`` as little as possible so boxes keep their order and gaps."""
    n = len(order)
    if n < 2:
        return
    left = [0.0] * n
    right = [0.0] * n
    for i, v in enumerate(order):
        gap = (size(order[i - 1]) + size(v)) / 2 + GAP_X if i else 0.0
        left[i] = want[v] if i == 0 else max(want[v], left[i - 1] + gap)
    for i in range(n - 1, -1, -1):
        v = order[i]
        gap = (size(v) + size(order[i + 1])) / 2 + GAP_X if i < n - 1 else 0.0
        right[i] = want[v] if i == n - 1 else min(want[v], right[i + 1] - gap)
    # both satisfy the gaps, so their mean does too, and it is centred on the wishes
    for i, v in enumerate(order):
        want[v] = (left[i] + right[i]) / 2


def layered_layout(
    g: nx.DiGraph[str], size: Callable[[str], tuple[float, float]], top: float = 0.0
) -> Layout:
    """Lay ``g`` out top-down; ``size(node)`` gives each box's (width, height)."""
    back = _back_edges(g)
    depth = _depths(g, back)
    n_rows = max(depth.values(), default=-1) + 1
    rows: list[list[Vertex]] = [[] for _ in range(n_rows)]
    for n in g.nodes:
        rows[depth[n]].append(n)
    up: dict[Vertex, list[Vertex]] = {n: [] for n in g.nodes}
    layout = Layout(reversed=back)
    for src, dst in g.edges:
        if src == dst:
            layout.routes[(src, dst)] = [src]
            continue
        a, b = (dst, src) if (src, dst) in back else (src, dst)
        chain: list[Vertex] = [a]
        for d in range(depth[a] + 1, depth[b]):
            w = Waypoint(src, dst, d)
            rows[d].append(w)
            up[w] = [chain[-1]]
            chain.append(w)
        up[b].append(chain[-1])
        chain.append(b)
        layout.routes[(src, dst)] = chain[::-1] if (src, dst) in back else chain
    rows = _order(rows, up)

    def width(v: Vertex) -> float:
        return 8.0 if isinstance(v, Waypoint) else size(v)[0]

    down = _invert(rows, up)
    x: dict[Vertex, float] = {}
    for row in rows:
        cursor = 0.0
        for v in row:
            x[v] = cursor + width(v) / 2
            cursor += width(v) + GAP_X
    for sweep in range(6):
        downward = sweep % 2 == 0
        indices = range(len(rows)) if downward else range(len(rows) - 1, -1, -1)
        for i in indices:
            links = up if downward else down
            for v in rows[i]:
                ks = [x[n] for n in links[v]]
                if ks:
                    x[v] = (x[v] + sum(ks) / len(ks) * 3) / 4
            _spread(rows[i], x, width)
    left = min((x[v] - width(v) / 2 for v in x), default=0.0)
    right = max((x[v] + width(v) / 2 for v in x), default=0.0)
    layout.x = {v: p - left for v, p in x.items()}
    layout.width = right - left
    y = top
    for row in rows:
        h = max((size(v)[1] for v in row if not isinstance(v, Waypoint)), default=10.0)
        for v in row:
            layout.y[v] = y + h / 2
            layout.band[v] = (y, y + h)
        y += h + GAP_Y
    layout.height = y - GAP_Y - top if rows else 0.0
    layout.rows = rows
    return layout


def layers(g: nx.DiGraph[str]) -> tuple[list[list[str]], set[tuple[str, str]]]:
    """The nodes by layer, top-down and ordered to reduce crossings, and the loop edges.

    Example:
        >>> import networkx as nx
        >>> g = nx.DiGraph([("__start__", "a"), ("a", "b"), ("b", "a"), ("b", "__end__")])
        >>> layers(g)
        ([['__start__'], ['a'], ['b'], ['__end__']], {('b', 'a')})
    """
    layout = layered_layout(g, lambda n: (len(n) * 8.0, 30.0))
    rows = [[v for v in row if isinstance(v, str)] for row in layout.rows]
    return [r for r in rows if r], layout.reversed
