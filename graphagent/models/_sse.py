"""Server-sent events, parsed by the rules of the HTML standard (no I/O)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

__all__ = ["EventDecoder", "ServerSentEvent", "iter_events"]


@dataclass(frozen=True)
class ServerSentEvent:
    """One event: its ``event`` type (``"message"`` unless named), ``data`` and ``id``."""

    event: str
    data: str
    id: str | None = None


class EventDecoder:
    """Turns a stream's lines into events, one line at a time (no I/O).

    ``data:`` lines of one event join with newlines; lines starting with ``:`` are
    comments (keep-alives); a blank line ends an event; an event without data is dropped.
    """

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, raw: str) -> ServerSentEvent | None:
        """Take one line (without its ending); the event it completes, if any."""
        line = raw.rstrip("\r")
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            self._id = value
        return None

    def flush(self) -> ServerSentEvent | None:
        """The event in progress (at a blank line or the end of the stream), if it has data."""
        event = None
        if self._data:
            event = ServerSentEvent(self._event or "message", "\n".join(self._data), self._id)
        self._event, self._data = "", []
        return event


def iter_events(lines: Iterable[str]) -> Iterator[ServerSentEvent]:
    """Events from a stream's lines (without line endings); see :class:`EventDecoder`.

    Example:
        >>> [e.data for e in iter_events(["data: a", "data: b", "", ": ping", "", "data: c", ""])]
        ['a\\nb', 'c']
    """
    decoder = EventDecoder()
    for line in lines:
        event = decoder.feed(line)
        if event is not None:
            yield event
    last = decoder.flush()
    if last is not None:
        yield last
