"""The seam between the graph engine and the chat models for the ``"messages"`` stream.

While a graph run streams in ``"messages"`` mode, a chat model called from any of its
nodes (not only an agent's) streams its answer and hands each chunk to the run. The
engine (layer 4) registers how to find the running node's sink; the models (layer 5)
ask for it here, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["message_sink", "set_sink_finder"]

Sink = Callable[[Any], None]
"""Hands one chunk (or message) to the running node's ``"messages"`` stream."""

_FINDER: list[Callable[[], Sink | None]] = []


def set_sink_finder(finder: Callable[[], Sink | None]) -> None:
    """Register how to find the running node's sink (the graph engine does, once)."""
    _FINDER[:] = [finder]


def message_sink() -> Sink | None:
    """The running node's ``"messages"`` sink, or ``None`` when nothing streams them."""
    return _FINDER[0]() if _FINDER else None
