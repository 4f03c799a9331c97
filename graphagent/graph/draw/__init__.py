"""What shows a graph: drawings (SVG, Mermaid, DOT, ASCII), a thread's run drawn over its
graph, and the HTML views Jupyter shows of a thread's state and history.

This wing reads what it is handed: a compiled graph's
:class:`~graphagent.graph._plan.Plan` and snapshot-like objects
(:class:`~graphagent.graph.draw._common.Shown`); it never imports the compiled graph.
Users reach it through ``CompiledGraph.draw`` and the Jupyter reprs.
"""

__all__: list[str] = []
