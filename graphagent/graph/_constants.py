"""Names with a fixed meaning in every graph."""

from __future__ import annotations

START = "__start__"
"""The virtual node a run begins at: ``add_edge(START, "first")``."""

END = "__end__"
"""The virtual node a run ends at: ``add_edge("last", END)``."""

RESERVED = frozenset({START, END, "__interrupt__", "__input__", "__resume__"})
