"""Names with a fixed meaning in every graph."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

START = "__start__"
"""The virtual node a run begins at: ``add_edge(START, "first")``."""

END = "__end__"
"""The virtual node a run ends at: ``add_edge("last", END)``."""

INTERRUPT = "__interrupt__"
"""The output key under which a paused run returns (and streams) its pending interrupts."""

RESERVED = frozenset({START, END, INTERRUPT, "__input__", "__resume__"})


PRIVATE_PREFIX = "__"
"""State keys starting with this are private to their graph: kept and checkpointed like
any other, but left out of run output, stream events and views, and not passed to or from
subgraphs."""


def is_private(key: str) -> bool:
    """Whether ``key`` is a private state key (it starts with ``__``)."""
    return key[:2] == PRIVATE_PREFIX


def public(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` without its private keys (a new dict either way)."""
    return {k: v for k, v in values.items() if k[:2] != PRIVATE_PREFIX}
