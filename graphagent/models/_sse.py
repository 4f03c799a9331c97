"""Server-sent events, parsed by the rules of the HTML standard (no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["ServerSentEvent", "iter_events"]


@dataclass(frozen=True)
class ServerSentEvent:
    """One event: its ``event`` type (``"message"`` unless named), ``data`` and ``id``."""

    event: str
    data: str
    id: str | None = None


def iter_events(lines: Iterable[str]) -> Iterator[ServerSentEvent]:
    """Events from a stream's lines (without line endings).

    ``data:`` lines of one event join with newlines; lines starting with ``:`` are
    comments (keep-alives); a blank line ends an event; an event without data is dropped.

    Example:
        >>> [e.data for e in iter_events(["data: a", "data: b", "", ": ping", "", "data: c", ""])]
        ['a\\nb', 'c']
    """
    event = ""
    data: list[str] = []
    last_id: str | None = None
    for raw in lines:
        line = raw.rstrip("\r")
        if not line:
            if data:
                yield ServerSentEvent(event or "message", "\n".join(data), last_id)
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "event":
            event = value
        elif field == "id":
            last_id = value
    if data:
        yield ServerSentEvent(event or "message", "\n".join(data), last_id)
