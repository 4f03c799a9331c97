"""What shows a graph: drawings (SVG, Mermaid, DOT, ASCII), a thread's run drawn over its
graph, and the HTML views Jupyter shows of a thread's state and history.

This wing reads what it is handed: a compiled graph's
:class:`~graphagent.graph._plan.Plan` and snapshot-like objects
(:class:`~graphagent.graph.draw._common.Shown`); it never imports the compiled graph.
Users reach it through ``CompiledGraph.draw`` and the Jupyter reprs; the command line
through the names below (the formats it can draw, and a snapshot's rows as text); the
engine's durable functions through :class:`Drawing`, what their ``draw`` returns.
"""

from graphagent.graph.draw._formats import FORMATS, Drawing
from graphagent.graph.draw._html import conversation, written_by

__all__ = ["FORMATS", "Drawing", "conversation", "written_by"]
