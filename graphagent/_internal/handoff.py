"""The seam that lets a tool hand control to the graph above its agent.

A tool may return ``Command(graph=Command.PARENT, goto=..., update=...)`` (LangGraph's
handoff tools do). The tools (layer 6) pass every result here before turning it into
text; the graph engine (layer 4) registers what to do with such a command (raise it up
to the parent graph), so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["hand_off", "set_hand_off"]

_HANDLER: list[Callable[[Any], None]] = []


def set_hand_off(handler: Callable[[Any], None]) -> None:
    """Register the engine's handler (it raises for a command meant for a parent graph)."""
    _HANDLER[:] = [handler]


def hand_off(result: Any) -> None:
    """Let the engine act on a tool's ``result`` when it is a command for a parent graph."""
    if _HANDLER and type(result).__name__ == "Command":
        _HANDLER[0](result)
