"""Names with a fixed meaning in every graph."""

from __future__ import annotations

START = "__start__"
"""The virtual node a run begins at: ``add_edge(START, "first")``."""

END = "__end__"
"""The virtual node a run ends at: ``add_edge("last", END)``."""

INTERRUPT = "__interrupt__"
"""The output key under which a paused run returns (and streams) its pending interrupts."""

RESERVED = frozenset({START, END, INTERRUPT, "__input__", "__resume__"})
