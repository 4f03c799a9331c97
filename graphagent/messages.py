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

from graphagent._internal.ids import new_message_id
from graphagent._internal.parts import (
    ContentPart,
    FilePart,
    ImagePart,
    part_from_stored,
    stored_part,
)

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
_CALL_FIELDS = _STORED_FIELDS[ToolCall]
# A field stored only when it is not empty, after the others (parts, reasoning): a message
# without it keeps its stored shape, and threads stored before it load unchanged.
_OPTIONAL: dict[type[BaseModel], str] = {
    UserMessage: "parts",
    AssistantMessage: "reasoning",
    ToolResponseMessage: "parts",
}
_UNSET: dict[type[BaseModel], dict[str, Any]] = {
    cls: {name: cls.model_fields[name].default} for cls, name in _OPTIONAL.items()
}


def _encode_simple(message: Any) -> list[Any]:
    d = message.__dict__
    return [d["content"], d["id"], d["metadata"]]


def _encode_user(message: Any) -> list[Any]:
    d = message.__dict__
    if d["parts"]:
        return [d["content"], d["id"], d["metadata"], [stored_part(p) for p in d["parts"]]]
    return [d["content"], d["id"], d["metadata"]]


def _encode_assistant(message: Any) -> list[Any]:
    d = message.__dict__
    calls = [[c.id, c.name, c.arguments] for c in d["tool_calls"]]
    if d["reasoning"]:
        return [d["content"], d["id"], d["metadata"], calls, d["reasoning"]]
    return [d["content"], d["id"], d["metadata"], calls]


def _encode_tool(message: Any) -> list[Any]:
    d = message.__dict__
    out = [d["content"], d["id"], d["metadata"], d["tool_call_id"], d["name"]]
    if d["parts"]:
        out.append([stored_part(p) for p in d["parts"]])
    return out


def _encode_call(call: Any) -> list[Any]:
    d = call.__dict__
    return [d["id"], d["name"], d["arguments"]]


class _ReadOnlyDict(dict):  # type: ignore[type-arg]
    """The metadata of a message read from a checkpoint: read-only, as the message is.

    Savers hand the same decoded messages to every read of a thread (see
    ``checkpoint.ReadCache``), so what one caller could change in place, every later
    read would see. ``dict(m.metadata)`` is a copy to change; copies, ``deepcopy`` and
    pickles of it are plain dicts.
    """

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "the metadata of a message read from a checkpoint is read-only (messages are "
            "immutable and shared between reads): make a changed copy, e.g. "
            "message.model_copy(update={'metadata': {**message.metadata, 'key': value}})"
        )

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _refuse
    __ior__ = _refuse

    def __reduce__(self) -> Any:
        return (dict, (dict(self),))


class _ReadOnlyList(list):  # type: ignore[type-arg]
    """A list inside read-only message metadata (see :class:`_ReadOnlyDict`)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        return _ReadOnlyDict._refuse(self)  # type: ignore[arg-type]

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = _refuse
    sort = reverse = __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> Any:
        return (list, (list(self),))


_EMPTY = _ReadOnlyDict()
_PLAIN = frozenset({str, int, float, bool, bytes, type(None)})
_CANNOT = object()  # _freeze's answer for a value it cannot make read-only


def _freeze(value: Any) -> Any:
    """``value`` (decoded metadata) with its dicts and lists read-only; ``_CANNOT`` when it
    holds something else that could change (then the message keeps a plain dict)."""
    cls = type(value)
    if cls is dict:
        out = None
        for key, item in value.items():
            if type(item) in _PLAIN:
                continue
            frozen = _freeze(item)
            if frozen is _CANNOT:
                return _CANNOT
            if out is None:
                out = dict(value)
            out[key] = frozen
        return _ReadOnlyDict(value if out is None else out)
    if cls is list or cls is tuple:
        items = list(value)
        for i, item in enumerate(items):
            if type(item) in _PLAIN:
                continue
            frozen = _freeze(item)
            if frozen is _CANNOT:
                return _CANNOT
            items[i] = frozen
        return _ReadOnlyList(items) if cls is list else tuple(items)
    if cls in _PLAIN or (cls is frozenset and all(type(v) in _PLAIN for v in value)):
        return value
    return _CANNOT


def _metadata(stored: Any) -> Any:
    """Stored metadata made read-only, or ``None`` when it is not a map of text keys (the
    validated path then decides: it refuses it)."""
    if type(stored) is not dict:
        return None
    if not stored:
        return _EMPTY
    flat = True
    for key, value in stored.items():
        if type(key) is not str:
            return None
        if flat and type(value) not in _PLAIN:
            flat = False
    if flat:
        return _ReadOnlyDict(stored)
    frozen = _freeze(stored)
    return stored if frozen is _CANNOT else frozen


def _shareable(message: Any) -> bool:
    """Whether a decoded message can change in no way (its metadata is read-only), so
    readers may share it."""
    return type(message.__dict__["metadata"]) is _ReadOnlyDict


def _always(value: Any) -> bool:
    return True


_new = object.__new__
_put = BaseModel.__dict__["__dict__"].__set__  # the instance dict, set without a look-up
# BaseModel's slots, set through their descriptors (object.__setattr__ looks each one up)
_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_private = BaseModel.__dict__["__pydantic_private__"].__set__


def _built(cls: type[BaseModel], fields: dict[str, Any]) -> Any:
    """An instance of ``cls`` holding ``fields``, already checked: what ``model_construct``
    does, without its per-field alias look-ups. The instances of a class share one set of
    fields set: pydantic changes it only on a model that is not frozen, and ``model_copy``
    copies it first."""
    message = _new(cls)
    _put(message, fields)
    _fields_set(message, _ALL_SET[cls])
    _extra(message, None)
    _private(message, None)
    return message


def _calls(stored: Any) -> tuple[ToolCall, ...] | None:
    """Stored tool calls as ``ToolCall`` objects, or ``None`` when any is not three texts."""
    if type(stored) is not list:
        return None
    calls = []
    for call in stored:
        if type(call) is not list or len(call) != 3:
            return None
        cid, name, arguments = call
        if type(cid) is not str or type(name) is not str or type(arguments) is not str:
            return None
        calls.append(_built(ToolCall, {"id": cid, "name": name, "arguments": arguments}))
    return tuple(calls)


def _decoder(cls: type[BaseModel]) -> Any:
    """The stored-list decoder of ``cls``. What this library stored (texts where texts go,
    metadata a map of text keys, tool calls of three texts) is built directly, several
    times faster than validating it; anything else goes through pydantic's validation,
    which coerces or refuses it as before."""
    names = _STORED_FIELDS[cls]
    size = len(names)
    optional = _OPTIONAL.get(cls)
    unset = _UNSET.get(cls, {})
    fields_set = _ALL_SET[cls]
    key, default = next(iter(unset.items())) if unset else (None, None)  # parts, reasoning

    def validated(stored: list[Any]) -> Any:
        named = (*names, optional) if optional and len(stored) > size else names
        fields = dict(zip(named, stored, strict=True))
        if cls is AssistantMessage:
            fields["tool_calls"] = [dict(zip(_CALL_FIELDS, c, strict=True)) for c in stored[3]]
        if optional == "parts" and len(stored) > size:
            fields["parts"] = [part_from_stored(p) for p in stored[size]]
        return cls(**fields)  # validated as by model_validate, without its keyword handling

    def simple(stored: list[Any]) -> Any:  # a user, system or remove message
        try:
            content, mid, meta = stored
        except (TypeError, ValueError):  # not three items: decode refuses or validates it
            return decode(stored)
        if type(content) is str and type(mid) is str and type(meta) is dict:
            metadata = _metadata(meta) if meta else _EMPTY
            if metadata is not None:
                message = _new(cls)
                fields = {"content": content, "id": mid, "metadata": metadata}
                if key is not None:
                    fields[key] = default
                _put(message, fields)
                _fields_set(message, fields_set)
                _extra(message, None)
                _private(message, None)
                return message
        return decode(stored)

    def decode(stored: list[Any]) -> Any:
        if type(stored) is not list or len(stored) != size:
            if optional is not None and type(stored) is list and len(stored) == size + 1:
                return validated(stored)  # with parts or reasoning: rare, so validated
            raise ValueError(f"expected {size} stored fields, got {stored!r:.80}")
        if cls is ToolCall:
            if all(type(v) is str for v in stored):
                return _built(cls, dict(zip(names, stored, strict=True)))
            return validated(stored)
        content, mid, meta = stored[0], stored[1], stored[2]
        if type(content) is not str or type(mid) is not str:
            return validated(stored)
        metadata = _EMPTY if type(meta) is dict and not meta else _metadata(meta)
        if metadata is None:
            return validated(stored)
        if size == 3:
            return _built(cls, {"content": content, "id": mid, "metadata": metadata, **unset})
        if cls is AssistantMessage:
            calls = () if stored[3] == [] else _calls(stored[3])
            if calls is None:
                return validated(stored)
            fields = {"content": content, "id": mid, "metadata": metadata, "tool_calls": calls}
            return _built(cls, {**fields, **unset})
        call_id, name = stored[3], stored[4]
        if type(call_id) is not str or type(name) is not str:
            return validated(stored)
        fields = {
            "content": content,
            "id": mid,
            "metadata": metadata,
            "tool_call_id": call_id,
            "name": name,
            **unset,
        }
        return _built(cls, fields)

    def assistant(stored: list[Any]) -> Any:  # an assistant message without tool calls
        try:
            content, mid, meta, calls = stored
        except (TypeError, ValueError):
            return decode(stored)
        if type(content) is str and type(mid) is str and type(meta) is dict and calls == []:
            metadata = _metadata(meta) if meta else _EMPTY
            if metadata is not None:
                message = _new(cls)
                fields = {"content": content, "id": mid, "metadata": metadata, "tool_calls": ()}
                fields[key] = default  # type: ignore[index]
                _put(message, fields)
                _fields_set(message, fields_set)
                _extra(message, None)
                _private(message, None)
                return message
        return decode(stored)

    if names == ("content", "id", "metadata"):
        return simple
    return assistant if cls is AssistantMessage else decode


_ALL_SET: dict[type[BaseModel], set[str]] = {cls: set(cls.model_fields) for cls in _STORED_FIELDS}

_ENCODERS: dict[type[BaseModel], Callable[[Any], list[Any]]] = {
    SystemMessage: _encode_simple,
    UserMessage: _encode_user,
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
                cls,
                name=f"graphagent.{cls.__name__}",
                encode=encode,
                decode=_decoder(cls),
                shareable=_always if cls is ToolCall else _shareable,
            )


_register_with_serde()
