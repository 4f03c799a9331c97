"""Chat messages and the ``add_messages`` rule for a ``"messages"`` state key.

Every message is an immutable pydantic model with an ``id`` (a fresh one unless
given) and a ``.text``. Appending follows the rule users of LangGraph know: a
message whose ``id`` is already in the list replaces it in place, a
:class:`RemoveMessage` deletes the message with its id, anything else appends.

Example:
    >>> from graphagent.messages import UserMessage, AssistantMessage, add_messages
    >>> history = add_messages([], UserMessage("hi"))
    >>> history = add_messages(history, AssistantMessage("hello!"))
    >>> [m.role for m in history]
    ['user', 'assistant']
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Union

from pydantic import BaseModel, ConfigDict, Field

from graphagent._internal.ids import new_message_id

__all__ = [
    "AnyMessage",
    "AssistantMessage",
    "Message",
    "RemoveMessage",
    "SystemMessage",
    "ToolCall",
    "ToolResponseMessage",
    "UserMessage",
    "add_messages",
    "coerce_message",
]


class Message(BaseModel):
    """Base of all messages: ``content`` text, an ``id`` and free-form ``metadata``."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: ClassVar[str] = "message"

    content: str = ""
    id: str = Field(default_factory=new_message_id)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, content: str = "", /, **data: Any) -> None:
        if content:
            data["content"] = content
        super().__init__(**data)

    @property
    def text(self) -> str:
        """The message's text."""
        return self.content


class SystemMessage(Message):
    """Instructions for the model."""

    role: ClassVar[str] = "system"

    if TYPE_CHECKING:  # pydantic would otherwise hide the positional ``content``

        def __init__(
            self, content: str = "", /, *, id: str = ..., metadata: dict[str, Any] = ...
        ) -> None: ...


class UserMessage(Message):
    """What the user said."""

    role: ClassVar[str] = "user"

    if TYPE_CHECKING:  # pydantic would otherwise hide the positional ``content``

        def __init__(
            self, content: str = "", /, *, id: str = ..., metadata: dict[str, Any] = ...
        ) -> None: ...


class ToolCall(BaseModel):
    """One tool call requested by the model.

    Attributes:
        id: the model's id for this call; the tool's answer carries it back.
        name: the tool to call.
        arguments: the arguments as JSON text, as the model wrote them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    name: str
    arguments: str = "{}"

    @property
    def args(self) -> Any:
        """The arguments parsed from JSON (raises ``json.JSONDecodeError`` if invalid)."""
        return json.loads(self.arguments or "{}")


class AssistantMessage(Message):
    """What the model answered: text, tool calls, or both.

    ``metadata`` holds provider details such as ``usage`` and ``finish_reason``.
    """

    role: ClassVar[str] = "assistant"

    tool_calls: tuple[ToolCall, ...] = ()

    if TYPE_CHECKING:  # pydantic would otherwise hide the positional ``content``

        def __init__(
            self,
            content: str = "",
            /,
            *,
            id: str = ...,
            metadata: dict[str, Any] = ...,
            tool_calls: tuple[ToolCall, ...] | list[ToolCall] = ...,
        ) -> None: ...


class ToolResponseMessage(Message):
    """A tool's result, sent back to the model for the call ``tool_call_id``."""

    role: ClassVar[str] = "tool"

    tool_call_id: str
    name: str

    if TYPE_CHECKING:  # pydantic would otherwise hide the positional ``content``

        def __init__(
            self,
            content: str = "",
            /,
            *,
            id: str = ...,
            metadata: dict[str, Any] = ...,
            tool_call_id: str,
            name: str,
        ) -> None: ...


class RemoveMessage(Message):
    """Appending this to a ``"messages"`` key deletes the message with this ``id``."""

    role: ClassVar[str] = "remove"

    def __init__(self, id: str | None = None, /, **data: Any) -> None:
        # keyword ``id`` too: loading a stored one validates its fields by name
        if id is not None:
            data["id"] = id
        if "id" not in data:
            raise TypeError("RemoveMessage needs the id of the message to remove")
        super().__init__(**data)


AnyMessage = Union[  # noqa: UP007 - a runtime alias, valid on Python 3.10
    SystemMessage, UserMessage, AssistantMessage, ToolResponseMessage, RemoveMessage
]

_ROLES: dict[str, type[Message]] = {
    "system": SystemMessage,
    "user": UserMessage,
    "human": UserMessage,
    "assistant": AssistantMessage,
    "ai": AssistantMessage,
    "tool": ToolResponseMessage,
    "remove": RemoveMessage,
}


def coerce_message(value: Any) -> Message:
    """Turn a message, a string (a user message) or a ``{"role": ..., ...}`` dict into a message.

    Raises:
        TypeError: for anything else, naming what was given.
    """
    if isinstance(value, Message):
        return value
    if isinstance(value, str):
        return UserMessage(value)
    if isinstance(value, Mapping) and "role" in value:
        data = dict(value)
        cls = _ROLES.get(str(data.pop("role")))
        if cls is not None:
            if cls is RemoveMessage:
                return RemoveMessage(str(data["id"]))
            return cls(**data)
    raise TypeError(
        f"cannot use {type(value).__name__} {value!r:.80} as a message; pass a Message, "
        "a string (a user message) or a dict with a 'role' key"
    )


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, (str, Message, Mapping)):
        return [value]
    if isinstance(value, Iterable):
        return list(value)
    return [value]


def add_messages(left: Sequence[Any] | None, right: Any) -> list[Message]:
    """Merge ``right`` (one message or several) into ``left`` by message id.

    A message whose id is in ``left`` replaces it in place; :class:`RemoveMessage`
    deletes the message with its id (an unknown id is an error); others append.
    Neither argument is modified.

    Raises:
        ValueError: a :class:`RemoveMessage` names an id that is not in the list.
    """
    merged: list[Message | None] = [coerce_message(m) for m in (left or ())]
    index = {m.id: i for i, m in enumerate(merged) if m is not None}
    removed = False
    for raw in _as_list(right):
        msg = coerce_message(raw)
        position = index.get(msg.id)
        if isinstance(msg, RemoveMessage):
            if position is None:
                raise ValueError(f"RemoveMessage names id {msg.id!r}, which is not in the list")
            merged[position] = None
            del index[msg.id]
            removed = True
        elif position is not None:
            merged[position] = msg
        else:
            index[msg.id] = len(merged)
            merged.append(msg)
    if removed:
        return [m for m in merged if m is not None]
    return [m for m in merged if m is not None] if None in merged else merged  # type: ignore[return-value]


# How each message is stored: one flat list per message (its tool calls as lists inside
# it), so encoding one is a single msgpack frame. New fields go at the end of a list.
_STORED_FIELDS: dict[type[BaseModel], tuple[str, ...]] = {
    SystemMessage: ("content", "id", "metadata"),
    UserMessage: ("content", "id", "metadata"),
    RemoveMessage: ("content", "id", "metadata"),
    AssistantMessage: ("content", "id", "metadata", "tool_calls"),
    ToolResponseMessage: ("content", "id", "metadata", "tool_call_id", "name"),
    ToolCall: ("id", "name", "arguments"),
}
_CALL_FIELDS = _STORED_FIELDS[ToolCall]


def _encode_simple(message: Any) -> list[Any]:
    d = message.__dict__
    return [d["content"], d["id"], d["metadata"]]


def _encode_assistant(message: Any) -> list[Any]:
    d = message.__dict__
    calls = [[c.id, c.name, c.arguments] for c in d["tool_calls"]]
    return [d["content"], d["id"], d["metadata"], calls]


def _encode_tool(message: Any) -> list[Any]:
    d = message.__dict__
    return [d["content"], d["id"], d["metadata"], d["tool_call_id"], d["name"]]


def _encode_call(call: Any) -> list[Any]:
    d = call.__dict__
    return [d["id"], d["name"], d["arguments"]]


def _decoder(cls: type[BaseModel]) -> Any:
    names = _STORED_FIELDS[cls]

    def decode(stored: list[Any]) -> Any:
        if type(stored) is not list or len(stored) != len(names):
            raise ValueError(f"expected {len(names)} stored fields, got {stored!r:.80}")
        fields = dict(zip(names, stored, strict=True))
        if cls is AssistantMessage:
            fields["tool_calls"] = [dict(zip(_CALL_FIELDS, c, strict=True)) for c in stored[3]]
        return cls(**fields)  # validated as by model_validate, without its keyword handling

    return decode


_ENCODERS: dict[type[BaseModel], Callable[[Any], list[Any]]] = {
    SystemMessage: _encode_simple,
    UserMessage: _encode_simple,
    RemoveMessage: _encode_simple,
    AssistantMessage: _encode_assistant,
    ToolResponseMessage: _encode_tool,
    ToolCall: _encode_call,
}


def _register_with_serde() -> None:
    # Stored threads name message types by these stable names, never by import path. They
    # go in the base registry, so every Serde (not only the process-wide one) stores them.
    # Threads stored before the flat encoding (each message a model frame) load through
    # the same names.
    from checkpoint.serde import base_serde

    for cls, encode in _ENCODERS.items():
        if not base_serde.is_registered(cls):
            base_serde.register(
                cls, name=f"graphagent.{cls.__name__}", encode=encode, decode=_decoder(cls)
            )


_register_with_serde()
