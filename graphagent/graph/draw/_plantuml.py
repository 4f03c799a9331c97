"""Drawing a compiled graph as PlantUML text (Spring AI Alibaba's ``PLANTUML`` drawing).

The same picture as Mermaid and DOT: START and END as circles, nodes as rounded boxes in
the shared palette, conditional edges dotted with their labels, a fan-out edge (one task
per ``Send``) thick and explained in the legend, a subgraph as a box holding its own
nodes. Nodes are named by generated ids; names appear only as labels.
"""

from __future__ import annotations

from collections.abc import Callable

from graphagent.graph._constants import END, START
from graphagent.graph._plan import Plan
from graphagent.graph.draw._common import (
    ANY_NOTE,
    SEND_NOTE,
    STYLE,
    drawn,
    edge_key,
    label,
    subgraphs,
    tool_names,
)

__all__ = ["plantuml"]

Ids = Callable[[tuple[str, ...]], str]


def _text(text: str) -> str:
    """A label inside PlantUML double quotes: a quote would end it, so it becomes two
    single quotes; a line break becomes PlantUML's ``\\n``."""
    return text.replace('"', "''").replace("\r\n", "\n").replace("\n", "\\n")


def _color(kind: str) -> str:
    fill, stroke = STYLE.get(kind, STYLE["node"])
    return f"{fill.lstrip('#')};line:{stroke.lstrip('#')}"


def plantuml(plan: Plan, ids: Ids) -> str:
    """``plan`` as a PlantUML document (``@startuml`` ... ``@enduml``)."""
    lines = [
        "@startuml",
        f'title "{_text(plan.name)}"',
        "skinparam shadowing false",
        "skinparam roundCorner 12",
        "skinparam defaultFontName Helvetica",
        "skinparam ArrowFontSize 10",
    ]
    _body(plan, (), ids, lines, "")
    key = edge_key(plan)
    if any(data.get("send") for *_, data in drawn(plan).edges(data=True)):
        key.append(f"Send (thick arrow): {SEND_NOTE}")
    if key:
        lines.append("legend right")
        lines.extend(f"  {_text(line)}" for line in key)
        lines.append("endlegend")
    lines.append("@enduml")
    return "\n".join(lines) + "\n"


def _body(plan: Plan, path: tuple[str, ...], ids: Ids, lines: list[str], indent: str) -> None:
    g = drawn(plan)
    inner = subgraphs(plan)
    for node, data in g.nodes(data=True):
        kind = str(data.get("kind", "node"))
        node_id = ids((*path, node))
        text = _text(label(node))
        if node in inner:
            lines.append(f'{indent}rectangle "{text}" as {node_id} #{_color("subgraph")} {{')
            _body(inner[node], (*path, node), ids, lines, indent + "  ")
            lines.append(f"{indent}}}")
            continue
        if kind in ("start", "end"):
            lines.append(f'{indent}circle "{text}" as {node_id} #{_color(kind)}')
            continue
        if kind == "any":
            lines.append(f'{indent}rectangle "{text}" as {node_id} #{_color(kind)}')
            lines.append(f"{indent}note right of {node_id} : {_text(ANY_NOTE)}")
            continue
        small = [kind] if kind not in ("node", node) and kind in STYLE else []
        tools = tool_names(plan, node)
        if tools:
            small.append(", ".join(tools))
        extra = "".join(f"\\n<size:10>{_text(line)}</size>" for line in small)
        lines.append(f'{indent}rectangle "{text}{extra}" as {node_id} #{_color(kind)}')
    for src, dst, data in g.edges(data=True):
        # an edge to or from a subgraph attaches to its START / END (every PlantUML
        # layout draws those; an edge to the box itself is lost by some)
        a = ids((*path, src, END)) if src in inner else ids((*path, src))
        b = ids((*path, dst, START)) if dst in inner else ids((*path, dst))
        # a fan-out (one task per Send) is a thick arrow, as in Mermaid and DOT
        arrow = "-[bold]->" if data.get("send") else "..>" if data.get("conditional") else "-->"
        tag = f" : {_text(str(data['label']))}" if data.get("label") else ""
        lines.append(f"{indent}{a} {arrow} {b}{tag}")
