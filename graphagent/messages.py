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
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Union

from pydantic import BaseModel, ConfigDict, Field

from graphagent._internal import stored_messages as stored
from graphagent._internal.ids import new_message_id
from graphagent._internal.parts import ContentPart, FilePart, ImagePart

__all__ = [
    "REMOVE_ALL_MESSAGES",
    "AnyMessage",
    "AssistantMessage",
    "ContentPart",
    "FilePart",
    "ImagePart",
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
    """What the user said: text, and any images or files (``parts``) after it."""

    role: ClassVar[str] = "user"

    parts: tuple[ContentPart, ...] = ()

    if TYPE_CHECKING:  # pydantic would otherwise hide the positional ``content``

        def __init__(
            self,
            content: str = "",
            /,
            *,
            id: str = ...,
            metadata: dict[str, Any] = ...,
            parts: tuple[ImagePart | FilePart, ...] | list[ImagePart | FilePart] = ...,
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

    ``reasoning`` is the model's thinking where the provider returns it (DeepSeek's
    ``reasoning_content``, Qwen's thinking, Anthropic's thinking blocks); it is kept and
    shown but not part of ``text``. ``metadata`` holds provider details such as ``usage``
    and ``finish_reason``.
    """

    role: ClassVar[str] = "assistant"

    tool_calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""

    if TYPE_CHECKING:  # pydantic would otherwise hide the positional ``content``

        def __init__(
            self,
            content: str = "",
            /,
            *,
            id: str = ...,
            metadata: dict[str, Any] = ...,
            tool_calls: tuple[ToolCall, ...] | list[ToolCall] = ...,
            reasoning: str = ...,
        ) -> None: ...


class ToolResponseMessage(Message):
    """A tool's result, sent back to the model for the call ``tool_call_id`` (text, and
    any images or files in ``parts``)."""

    role: ClassVar[str] = "tool"

    tool_call_id: str
    name: str
    parts: tuple[ContentPart, ...] = ()

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
            parts: tuple[ImagePart | FilePart, ...] | list[ImagePart | FilePart] = ...,
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


REMOVE_ALL_MESSAGES = "__remove_all__"
"""``RemoveMessage(REMOVE_ALL_MESSAGES)`` clears the list (what follows it is the new one)."""

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
    if isinstance(value, Iterable) and not isinstance(value, (str, Message, Mapping)):
        return list(value)
    return [value]


def add_messages(left: Any, right: Any) -> list[Message]:
    """Merge ``right`` (one message or several) into ``left`` (the same) by message id.

    A message whose id is in ``left`` replaces it in place; :class:`RemoveMessage`
    deletes the message with its id (an unknown id is an error, the same id twice is
    removed once; written again, it appends anew); others append. What follows the last
    ``RemoveMessage(REMOVE_ALL_MESSAGES)`` is the new list. Neither argument is modified.

    Raises:
        ValueError: a :class:`RemoveMessage` names an id that is not in the list.
    """
    incoming = [coerce_message(m) for m in _as_list(right)]
    ids = [m.id if isinstance(m, RemoveMessage) else None for m in incoming]
    if REMOVE_ALL_MESSAGES in ids:  # the last one: what follows it is the new list
        return add_messages([], incoming[len(ids) - ids[::-1].index(REMOVE_ALL_MESSAGES) :])
    merged: list[Message | None] = [coerce_message(m) for m in _as_list(left)] if left else []
    index = {m.id: i for i, m in enumerate(merged) if m is not None}
    removed: set[str] = set()
    for msg in incoming:
        position = index.get(msg.id)
        if isinstance(msg, RemoveMessage):
            if position is not None:
                merged[position] = None
                del index[msg.id]
                removed.add(msg.id)
            elif msg.id not in removed:  # the same removal twice in one update is once
                raise ValueError(f"RemoveMessage names id {msg.id!r}, which is not in the list")
        elif position is not None:
            merged[position] = msg
        else:
            index[msg.id] = len(merged)
            merged.append(msg)
    return [m for m in merged if m is not None] if removed else merged  # type: ignore[return-value]


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
# A field stored only when it is not empty, after the others (parts, reasoning): a message
# without it keeps its stored shape, and threads stored before it load unchanged.
_OPTIONAL: dict[type[BaseModel], str] = {
    UserMessage: "parts",
    AssistantMessage: "reasoning",
    ToolResponseMessage: "parts",
}
_ENCODERS: dict[type[BaseModel], Callable[[Any], list[Any]]] = {
    SystemMessage: stored.encode_simple,
    UserMessage: stored.encode_user,
    RemoveMessage: stored.encode_simple,
    AssistantMessage: stored.encode_assistant,
    ToolResponseMessage: stored.encode_tool,
    ToolCall: stored.encode_call,
}


def _register_with_serde() -> None:
    # Stored threads name message types by these stable names, never by import path. They
    # go in the base registry, so every Serde (not only the process-wide one) stores them.
    # Threads stored before the flat encoding (each message a model frame) load through
    # the same names.
    from checkpoint.serde import base_serde

    stored.install(
        base_serde,
        _STORED_FIELDS,
        _OPTIONAL,
        _ENCODERS,
        user=UserMessage,
        assistant=AssistantMessage,
        tool=ToolResponseMessage,
        call=ToolCall,
    )


_register_with_serde()
