"""How the library's messages are stored and read back (the hot path of a cold read).

Each message is one flat msgpack list (its tool calls as lists inside it), so storing one
is a single frame; :mod:`graphagent.messages` declares each class's stored fields and
:func:`install` registers the codecs here with the serde. Reading a long conversation
decodes every stored message, so the decoders build what this library stored (texts where
texts go, metadata a map of text keys) directly, without pydantic's validation, and hand
anything else to validation, which coerces or refuses it as before. A batch of frames
(:func:`frames_decoder`) is built in one loop, the commonest messages inline.

Decoded metadata is read-only (:class:`ReadOnlyDict`): savers hand the same decoded
message to every read of a thread.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from graphagent._internal.parts import FilePart, ImagePart, part_from_stored, stored_part
from graphagent._internal.stored_build import Maker, maker

__all__ = ["ReadOnlyDict", "install"]

# the stored fields every message starts with
_HEAD = ("content", "id", "metadata")


class ReadOnlyDict(dict):  # type: ignore[type-arg]
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
    """A list inside read-only message metadata (see :class:`ReadOnlyDict`)."""

    __slots__ = ()

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        return ReadOnlyDict._refuse(self)  # type: ignore[arg-type]

    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = _refuse
    sort = reverse = __iadd__ = __imul__ = _refuse

    def __reduce__(self) -> Any:
        return (list, (list(self),))


_EMPTY = ReadOnlyDict()
_PLAIN = frozenset({str, int, float, bool, bytes, type(None)})
_CANNOT = object()  # _freeze's answer for a value it cannot make read-only


def _freeze(value: Any, arrays: bool = False) -> Any:
    """``value`` (decoded metadata) with its dicts and lists read-only; ``_CANNOT`` when it
    holds something else that could change (then the message keeps a plain dict).
    ``arrays``: unpacked with msgpack arrays as tuples (the batch decoder's frames), so
    each tuple was a stored list and reads back as one."""
    cls = type(value)
    if cls is dict:
        frozen = None
        for key, item in value.items():
            if type(item) in _PLAIN:
                continue
            held = _freeze(item, arrays)
            if held is _CANNOT:
                return _CANNOT
            if frozen is None:
                frozen = dict(value)
            frozen[key] = held
        return ReadOnlyDict(value if frozen is None else frozen)
    if cls is list or cls is tuple:
        items = list(value)
        for i, item in enumerate(items):
            if type(item) in _PLAIN:
                continue
            held = _freeze(item, arrays)
            if held is _CANNOT:
                return _CANNOT
            items[i] = held
        return _ReadOnlyList(items) if cls is list or arrays else tuple(items)
    if cls in _PLAIN or (cls is frozenset and all(type(v) in _PLAIN for v in value)):
        return value
    return _CANNOT


def _metadata(stored: Any, arrays: bool = False) -> Any:
    """Stored metadata made read-only, or ``None`` when it is not a map of text keys (the
    validated path then decides: it refuses it). ``stored`` is what this read decoded:
    when all of it can be made read-only, its changeable values are replaced in place
    before it is copied read-only (one copy of it, not two). ``arrays``: see
    :func:`_freeze`."""
    if type(stored) is not dict:
        return None
    if not stored:
        return _EMPTY
    frozen = None  # (key, read-only value) of each value that is not plain
    cannot = False
    for key, value in stored.items():
        if type(key) is not str:
            return None
        if cannot or type(value) in _PLAIN:
            continue
        if type(value) is dict:  # a map of plain values (usage counts): no call
            for item in value.values():
                if type(item) not in _PLAIN:
                    held = _freeze(value, arrays)
                    break
            else:
                held = ReadOnlyDict(value)
        else:
            held = _freeze(value, arrays)
        if held is _CANNOT:
            cannot = True  # the keys are still checked: a key not a text is refused
        elif held is not value:
            if frozen is None:
                frozen = [(key, held)]
            else:
                frozen.append((key, held))
    if cannot:
        return stored
    if frozen is not None:
        for key, held in frozen:
            stored[key] = held
    return ReadOnlyDict(stored)


def shareable(message: Any) -> bool:
    """Whether a decoded message can change in no way (its metadata is read-only), so
    readers may share it."""
    return type(message.__dict__["metadata"]) is ReadOnlyDict


def always(value: Any) -> bool:
    """Shareable whatever it holds (a tool call: three texts)."""
    return True


def encode_simple(message: Any) -> list[Any]:
    """A system, user (without parts) or remove message's stored list."""
    d = message.__dict__
    return [d["content"], d["id"], d["metadata"]]


def encode_user(message: Any) -> list[Any]:
    """A user message's stored list (its parts last, when it has any)."""
    d = message.__dict__
    if d["parts"]:
        return [d["content"], d["id"], d["metadata"], [stored_part(p) for p in d["parts"]]]
    return [d["content"], d["id"], d["metadata"]]


def encode_assistant(message: Any) -> list[Any]:
    """An assistant message's stored list (its reasoning last, when it has any)."""
    d = message.__dict__
    calls = [[c.id, c.name, c.arguments] for c in d["tool_calls"]]
    if d["reasoning"]:
        return [d["content"], d["id"], d["metadata"], calls, d["reasoning"]]
    return [d["content"], d["id"], d["metadata"], calls]


def encode_tool(message: Any) -> list[Any]:
    """A tool response's stored list (its parts last, when it has any)."""
    d = message.__dict__
    out = [d["content"], d["id"], d["metadata"], d["tool_call_id"], d["name"]]
    if d["parts"]:
        out.append([stored_part(p) for p in d["parts"]])
    return out


def encode_call(call: Any) -> list[Any]:
    """A tool call's stored list."""
    d = call.__dict__
    return [d["id"], d["name"], d["arguments"]]


def _built(cls: type[BaseModel], fields: dict[str, Any]) -> Any:
    """An instance of ``cls`` holding ``fields``, already checked: what ``model_construct``
    does, without its per-field alias look-ups (see :mod:`.stored_build`). The instances
    of a class share one set of fields set: pydantic changes it only on a model that is
    not frozen, and ``model_copy`` copies it first."""
    return _MAKERS[cls]([(fields, None, _ALL_SET[cls])])[0]


_ALL_SET: dict[type[BaseModel], set[str]] = {}
_MAKERS: dict[type[BaseModel], Maker] = {}


class _Shape:
    """One class's stored shape, as :mod:`graphagent.messages` declares it."""

    def __init__(
        self, cls: type[BaseModel], names: tuple[str, ...], optional: str | None, call: type
    ) -> None:
        self.cls, self.names, self.optional, self.call = cls, names, optional, call
        self.size = len(names)
        # the optional field's value when it is not stored (parts, reasoning)
        self.unset = {optional: cls.model_fields[optional].default} if optional else {}
        _ALL_SET[cls] = set(cls.model_fields)
        _MAKERS[cls] = maker(cls)


def _calls(call: type[BaseModel], stored: Any, array: type[Any] = list) -> tuple[Any, ...] | None:
    """Stored tool calls as ``call`` objects, or ``None`` when any is not three texts.
    ``array``: the type msgpack unpacked arrays as (``tuple`` in the batch decoder)."""
    if type(stored) is not array:
        return None
    names = _ALL_SET[call]
    triples = []
    for item in stored:
        if type(item) is not array or len(item) != 3:
            return None
        cid, name, arguments = item
        if type(cid) is not str or type(name) is not str or type(arguments) is not str:
            return None
        triples.append(({"id": cid, "name": name, "arguments": arguments}, None, names))
    return tuple(_MAKERS[call](triples))


def _parts(stored: Any) -> tuple[Any, ...] | None:
    """Stored parts (see :func:`~graphagent._internal.parts.stored_part`) as parts, or
    ``None`` when any is not what this library stores (validation then decides)."""
    if type(stored) is not list or not stored:
        return None
    parts = []
    for item in stored:
        if type(item) is not list or len(item) != 5:
            return None
        kind, mime, data, url, name = item
        if type(mime) is not str or not mime:
            return None
        if data is None:
            if type(url) is not str:
                return None
        elif type(data) is not bytes or url is not None:
            return None
        if kind == "image" and name is None:
            fields = {"data": data, "url": url, "mime_type": mime, "kind": "image"}
            parts.append(_built(ImagePart, fields))
        elif kind == "file" and (name is None or type(name) is str):
            fields = {"data": data, "url": url, "mime_type": mime, "kind": "file", "name": name}
            parts.append(_built(FilePart, fields))
        else:
            return None
    return tuple(parts)


def _decoder(shape: _Shape, call_fields: tuple[str, ...]) -> Callable[[Any], Any]:
    """The stored-list decoder of one class (see the module's docstring)."""
    cls, names, size, optional, unset = (
        shape.cls,
        shape.names,
        shape.size,
        shape.optional,
        shape.unset,
    )
    is_call = names == call_fields
    every = _ALL_SET[cls]
    has_calls = "tool_calls" in cls.model_fields

    def validated(stored: list[Any]) -> Any:
        named = (*names, optional) if optional and len(stored) > size else names
        fields = dict(zip(named, stored, strict=True))
        if has_calls:
            fields["tool_calls"] = [dict(zip(call_fields, c, strict=True)) for c in stored[3]]
        if optional == "parts" and len(stored) > size:
            parts = stored[size]
            fields["parts"] = [part_from_stored(p) for p in parts] if type(parts) is list else parts
        message = cls(**fields)  # validated as by model_validate, without its keyword handling
        if not is_call:
            # what validation made is the reader's own: its metadata made read-only, the
            # message can be shared as a fast-built one is (its other fields are texts and
            # tuples of frozen models)
            metadata = _metadata(message.__dict__["metadata"])
            if type(metadata) is ReadOnlyDict:
                message.__dict__["metadata"] = metadata
        return message

    def decode(stored: list[Any]) -> Any:
        if type(stored) is not list or len(stored) != size:
            if optional is not None and type(stored) is list and len(stored) == size + 1:
                # with reasoning or parts: built as without, and the field added (to a
                # message made here, not yet shared) when it holds what this library stores
                extra = stored[size]
                if optional == "parts":
                    extra = _parts(extra)
                elif type(extra) is not str:
                    extra = None
                if extra is not None:
                    message = decode(stored[:size])
                    # built here, not validated (those hold a fields set of their own)
                    if message.__pydantic_fields_set__ is every and shareable(message):
                        message.__dict__[optional] = extra
                        return message
                return validated(stored)
            raise ValueError(f"expected {size} stored fields, got {stored!r:.80}")
        if is_call:
            if all(type(v) is str for v in stored):
                return _built(cls, dict(zip(names, stored, strict=True)))
            return validated(stored)
        content, mid, meta = stored[0], stored[1], stored[2]
        if type(content) is not str or type(mid) is not str:
            return validated(stored)
        metadata = _metadata(meta)
        if metadata is None:
            return validated(stored)
        fields = {"content": content, "id": mid, "metadata": metadata}
        if has_calls:
            calls = () if stored[3] == [] else _calls(shape.call, stored[3])
            if calls is None:
                return validated(stored)
            fields["tool_calls"] = calls
        elif size > 3:  # a tool response: its call's id and the tool's name
            call_id, name = stored[3], stored[4]
            if type(call_id) is not str or type(name) is not str:
                return validated(stored)
            fields["tool_call_id"], fields["name"] = call_id, name
        return _built(cls, {**fields, **unset})

    return decode


FramesDecoder = Callable[[Sequence[Any]], tuple[list[Any], list[int], list[Any]]]


def frames_decoder(
    user: type[BaseModel],
    assistant: type[BaseModel],
    tool: type[BaseModel],
    call: type[BaseModel],
    plain: Mapping[str, type[BaseModel]],
) -> FramesDecoder:
    """The batch decoder of the serde (``decode_frames``): frames (each ``(name, stored
    tuple)``, unpacked as plain msgpack with arrays as tuples) -> their values, the
    positions of those it did not build (``None`` there: the serde decodes those frames
    alone) and each value's id (``None`` at those positions), which the read cache
    indexes without asking each message (pydantic's ``__getattr__`` hook makes
    ``message.id`` cost ~1k instructions).

    User messages, assistant messages, tool responses without parts and ``plain`` (name
    -> a class stored as ``content, id, metadata`` alone) are built here when they hold
    what this library stores (texts where texts go, tool calls of three texts, metadata
    that can be made read-only), the commonest by one call per class into pydantic-core
    (see :mod:`.stored_build`). Anything else (parts, a shape this library does not write,
    metadata holding an extension type) is left to the serde, which validates it.
    """
    user_name, assistant_name, tool_name = (
        f"graphagent.{c.__name__}" for c in (user, assistant, tool)
    )
    user_set, assistant_set, tool_set = _ALL_SET[user], _ALL_SET[assistant], _ALL_SET[tool]
    make_users, make_assistants, make_tools = _MAKERS[user], _MAKERS[assistant], _MAKERS[tool]
    metadata_of, empty, read_only, calls_of = _metadata, _EMPTY, ReadOnlyDict, _calls
    plain_sets = {name: (cls, _ALL_SET[cls]) for name, cls in plain.items()}

    def decode_frames(frames: Sequence[Any]) -> Any:
        # each class's checked fields, built after the loop by one call per class; each
        # frame's value is then taken, in order, from its class's results (``order``
        # holds, per frame, the iterator to take it from: one C pass puts them together).
        # A frame of an unexpected type raises (the serde then decodes each alone).
        users: list[Any] = []
        assistants: list[Any] = []
        tools: list[Any] = []
        others: list[Any] = []
        made_users: list[Any] = []
        made_assistants: list[Any] = []
        made_tools: list[Any] = []
        from_users, from_assistants = iter(made_users), iter(made_assistants)
        from_tools, from_others = iter(made_tools), iter(others)
        order: list[Any] = []
        slow: list[int] = []
        keys: list[Any] = []
        key = keys.append
        for name, stored in frames:
            size = len(stored)
            if name == user_name:
                if size == 3:
                    content, mid, meta = stored
                    if type(content) is str is type(mid):
                        if meta or type(meta) is not dict:
                            meta = metadata_of(meta, True)
                            if type(meta) is not read_only:
                                meta = None
                        else:
                            meta = empty
                        if meta is not None:
                            users.append(
                                (
                                    {"content": content, "id": mid, "metadata": meta, "parts": ()},
                                    None,
                                    user_set,
                                )
                            )
                            order.append(from_users)
                            key(mid)
                            continue
            elif name == assistant_name:
                if size == 4 or (size == 5 and type(stored[4]) is str):
                    content, mid, meta, calls = stored[0], stored[1], stored[2], stored[3]
                    if type(content) is str is type(mid):
                        if meta or type(meta) is not dict:
                            meta = metadata_of(meta, True)
                            if type(meta) is not read_only:
                                meta = None
                        else:
                            meta = empty
                        calls = () if calls == () else calls_of(call, calls, tuple)
                        if meta is not None and calls is not None:
                            assistants.append(
                                (
                                    {
                                        "content": content,
                                        "id": mid,
                                        "metadata": meta,
                                        "tool_calls": calls,
                                        "reasoning": stored[4] if size == 5 else "",
                                    },
                                    None,
                                    assistant_set,
                                )
                            )
                            order.append(from_assistants)
                            key(mid)
                            continue
            elif name == tool_name:
                if size == 5:
                    content, mid, meta, call_id, tool_called = stored
                    if type(content) is str is type(mid) and type(call_id) is str is type(
                        tool_called
                    ):
                        meta = metadata_of(meta, True) if meta or type(meta) is not dict else empty
                        if type(meta) is read_only:
                            tools.append(
                                (
                                    {
                                        "content": content,
                                        "id": mid,
                                        "metadata": meta,
                                        "tool_call_id": call_id,
                                        "name": tool_called,
                                        "parts": (),
                                    },
                                    None,
                                    tool_set,
                                )
                            )
                            order.append(from_tools)
                            key(mid)
                            continue
            elif size == 3 and name in plain_sets:
                content, mid, meta = stored
                if type(content) is str is type(mid):
                    meta = metadata_of(meta, True) if meta or type(meta) is not dict else empty
                    if type(meta) is read_only:
                        cls, names = plain_sets[name]
                        fields = {"content": content, "id": mid, "metadata": meta}
                        others.append(_MAKERS[cls]([(fields, None, names)])[0])
                        order.append(from_others)
                        key(mid)
                        continue
            slow.append(len(order))
            key(None)
            others.append(None)
            order.append(from_others)
        if users:
            made_users += make_users(users)
        if assistants:
            made_assistants += make_assistants(assistants)
        if tools:
            made_tools += make_tools(tools)
        return list(map(next, order)), slow, keys

    return decode_frames


def install(
    serde: Any,
    fields: Mapping[type[BaseModel], tuple[str, ...]],
    optional: Mapping[type[BaseModel], str],
    encoders: Mapping[type[BaseModel], Callable[[Any], list[Any]]],
    *,
    user: type[BaseModel],
    assistant: type[BaseModel],
    tool: type[BaseModel],
    call: type[BaseModel],
) -> None:
    """Register each message class (and ``call``, the tool call) with ``serde`` under
    its stable name ``graphagent.<Class>``, with its encoder, its decoder and, for the
    messages, the batch decoder they share.

    Args:
        serde: the base serde (every ``Serde`` includes it).
        fields: each class's stored fields, in order (new fields go at the end).
        optional: each class's field stored only when not empty, after the others.
        encoders: each class's encoder.
        user: the user message class (built inline by the batch decoder).
        assistant: the assistant message class (the same).
        tool: the tool response class (the same).
        call: the tool call class (always shareable: three texts).
    """
    for part in (ImagePart, FilePart):
        if part not in _MAKERS:
            _ALL_SET[part], _MAKERS[part] = set(part.model_fields), maker(part)
    shapes = {
        cls: _Shape(cls, fields[cls], optional.get(cls), call)
        for cls in encoders
        if not serde.is_registered(cls)
    }
    if not shapes:
        return
    plain = {
        f"graphagent.{cls.__name__}": cls
        for cls, names in fields.items()
        if names == _HEAD and cls not in optional
    }
    many = frames_decoder(user, assistant, tool, call, plain)
    call_fields = fields[call]
    for cls, shape in shapes.items():
        encode = encoders[cls]
        serde.register(
            cls,
            name=f"graphagent.{cls.__name__}",
            encode=encode,
            decode=_decoder(shape, call_fields),
            shareable=always if cls is call else shareable,
            decode_frames=None if cls is call else many,
        )
