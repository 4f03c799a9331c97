"""An entrypoint's stream events, made from its graph's.

Task results travel to a stream as :class:`~graphagent.graph._func._journal.TaskUpdate` items on
the run's ``"custom"`` channel (live, as each task finishes); they come out as
``"updates"`` events ``{task: result}``. The graph's own events show the state's keys;
here they show the function's return value.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from graphagent.graph._func._journal import TaskUpdate

__all__ = ["Translator", "engine_modes"]

_INTERRUPT = "__interrupt__"


def engine_modes(modes: frozenset[str]) -> list[str]:
    """The graph's modes that carry what ``modes`` show (task updates ride on custom)."""
    wanted = set(modes)
    if "updates" in modes:
        wanted.add("custom")
    return sorted(wanted)


class Translator:
    """Turns the graph's ``(mode, payload)`` events into the entrypoint's."""

    __slots__ = ("modes", "pairs", "values_seen")

    def __init__(self, modes: frozenset[str], pairs: bool) -> None:
        self.modes = modes
        self.pairs = pairs
        self.values_seen = False

    def __call__(self, mode: str, payload: Any) -> Iterator[Any]:
        for shown_mode, shown in self._events(mode, payload):
            yield (shown_mode, shown) if self.pairs else shown

    def _events(self, mode: str, payload: Any) -> Iterator[tuple[str, Any]]:
        if mode == "custom":
            if isinstance(payload, TaskUpdate):
                if "updates" in self.modes:
                    yield "updates", {payload.name: payload.value}
            elif "custom" in self.modes:
                yield "custom", payload
        elif mode == "updates":
            if _INTERRUPT in payload:
                yield "updates", payload
                return
            for node, update in payload.items():
                value = update.get("value") if isinstance(update, Mapping) else update
                yield "updates", {node: value}
        elif mode == "values":
            first, self.values_seen = not self.values_seen, True
            if _INTERRUPT in payload:
                yield "values", {_INTERRUPT: payload[_INTERRUPT]}
            elif not first:  # the first is the thread's state before the function ran
                yield "values", payload.get("value")
        else:
            yield mode, payload
