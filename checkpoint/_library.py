"""The stored shapes of graphagent's own types, so that ``checkpoint`` alone reads them.

graphagent stores each message and its agent record as one flat frame: the type's stored
name and its fields in a fixed order (see ``checkpoint.serde``, ``register(encode=...)``).
The names and field orders are written here, in the package that stores them, so a
process that never imports graphagent (a support tool, an export job, a migration) reads
every stored thread: each such object comes back as a :class:`StoredObject`, a ``dict`` of
its fields that knows its type's name. Where graphagent is imported, its classes are
registered under the same names and loading builds them instead. A ``StoredObject`` is
stored again exactly as it was read, so copying a thread with ``checkpoint`` alone keeps
its messages messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkpoint.errors import SerializationError

__all__ = ["FIELDS", "OPTIONAL", "StoredObject", "decode", "encode"]

_CALL = "graphagent.ToolCall"
FIELDS: dict[str, tuple[str, ...]] = {
    "graphagent.SystemMessage": ("content", "id", "metadata"),
    "graphagent.UserMessage": ("content", "id", "metadata"),
    "graphagent.RemoveMessage": ("content", "id", "metadata"),
    "graphagent.AssistantMessage": ("content", "id", "metadata", "tool_calls"),
    "graphagent.ToolResponseMessage": ("content", "id", "metadata", "tool_call_id", "name"),
    _CALL: ("id", "name", "arguments"),
    "graphagent.Send": ("node", "arg"),
    "graphagent.AgentRecord": (
        "model_calls",
        "tool_calls",
        "run_model_calls",
        "run_tool_calls",
        "run_finished",
        "structured_retries",
        "answers",
    ),
}
"""Stored name -> its fields, in stored order (new fields go at the end)."""

OPTIONAL: dict[str, str] = {
    "graphagent.UserMessage": "parts",
    "graphagent.AssistantMessage": "reasoning",
    "graphagent.ToolResponseMessage": "parts",
}
"""Stored name -> the one field stored after the others only when it is not empty (a
user's or a tool result's images and files, an answer's reasoning)."""

_CALL_FIELDS = FIELDS[_CALL]
_WITH_CALLS = "graphagent.AssistantMessage"


class StoredObject(dict[str, Any]):
    """One of graphagent's messages or its agent record, read where its class is not
    loaded: its fields by name (a ``dict``), and :attr:`type`, its stored type name.

    An assistant message's ``tool_calls`` are ``StoredObject`` s of type
    ``"graphagent.ToolCall"``. Stored again, it is written as the object it was read from.

    Example:
        >>> m = StoredObject("graphagent.UserMessage", {"content": "hi", "id": "u1"})
        >>> m.type, m["content"]
        ('graphagent.UserMessage', 'hi')
    """

    __slots__ = ("type",)

    def __init__(self, type: str, fields: Mapping[str, Any]) -> None:
        super().__init__(fields)
        self.type = type

    def __repr__(self) -> str:
        return f"StoredObject({self.type!r}, {dict.__repr__(self)})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, StoredObject) and other.type != self.type:
            return False
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = None


def decode(name: str, stored: Any) -> StoredObject | None:
    """The :class:`StoredObject` for a flat frame of the library type ``name`` (``None``:
    ``name`` is not one of the library's types).

    Raises:
        SerializationError: the frame does not have the type's stored shape.
    """
    fields = FIELDS.get(name)
    if fields is None:
        return None
    if type(stored) is list and len(stored) == len(fields) + 1 and name in OPTIONAL:
        fields = (*fields, OPTIONAL[name])
    if type(stored) is not list or len(stored) != len(fields):
        raise SerializationError(
            f"stored {name} does not have its {len(fields)} stored fields: {stored!r:.80}"
        )
    values = dict(zip(fields, stored, strict=True))
    if name == _WITH_CALLS:
        calls = values["tool_calls"]
        if type(calls) is not list or not all(
            type(c) is list and len(c) == len(_CALL_FIELDS) for c in calls
        ):
            raise SerializationError(f"stored {name} has damaged tool calls: {calls!r:.80}")
        values["tool_calls"] = [
            StoredObject(_CALL, dict(zip(_CALL_FIELDS, c, strict=True))) for c in calls
        ]
    return StoredObject(name, values)


def encode(obj: StoredObject) -> list[Any]:
    """``obj``'s flat frame, as graphagent stores an object of its type.

    Raises:
        SerializationError: ``obj.type`` is not one of the library's types.
    """
    fields = FIELDS.get(obj.type)
    if fields is None:
        raise SerializationError(
            f"cannot store a StoredObject of type {obj.type!r}: only the library's own "
            f"types ({', '.join(sorted(FIELDS))}) are stored that way"
        )
    stored = [obj.get(f) for f in fields]
    optional = OPTIONAL.get(obj.type)
    if optional is not None and obj.get(optional):
        stored.append(obj[optional])
    if obj.type == _WITH_CALLS:
        stored[3] = [[c.get(f) for f in _CALL_FIELDS] for c in stored[3] or ()]
    return stored
