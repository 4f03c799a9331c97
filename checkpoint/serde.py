"""msgpack serialization for checkpoint values, with no pickle and no imports on load.

Plain data (None, bool, int, float, str, bytes, lists, dicts) is native msgpack; any
``str`` is stored, lone surrogates included.
These travel as extension types: tuple, set, frozenset, datetime, date, timedelta,
UUID, and the classes registered by name: pydantic models, enums and dataclasses
(and any class registered with its own ``encode``/``decode`` pair, stored as one flat
frame: graphagent's messages are). Loading looks a type up in the registry by its
registered name and never imports a module or runs code named by the stored bytes.
graphagent's own types (its messages, its agent record) load in any process: where
graphagent is not imported, each comes back as a :class:`StoredObject` (a ``dict`` of
its fields that knows its type's name, stored again as it was read).

Values nest at most :data:`MAX_DEPTH` containers deep: ``dumps`` refuses deeper ones, and
``loads`` refuses stored bytes that claim more (each stored tuple, set or object is decoded
by a nested msgpack call, so unbounded nesting in tampered bytes would overflow the C stack
and kill the process instead of raising).

Example:
    >>> from pydantic import BaseModel
    >>> from checkpoint import serde
    >>> class Weather(BaseModel):
    ...     city: str
    ...     temp: float
    >>> _ = serde.register(Weather)
    >>> serde.loads(serde.dumps({"w": Weather(city="Paris", temp=21.5)}))["w"]
    Weather(city='Paris', temp=21.5)
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import threading
import uuid
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NamedTuple, TypeVar

import msgpack

from checkpoint import _library
from checkpoint import _serdeload as _load
from checkpoint._library import StoredObject
from checkpoint._serdeload import (
    _DATACLASS,
    _DATE,
    _DATETIME,
    _ENCODED,
    _ENUM,
    _FROZENSET,
    _LONE,
    _MODEL,
    _SET,
    _TIMEDELTA,
    _TUPLE,
    _UUID,
    _Decode,
    _qualname,
    _registrations,
)
from checkpoint.errors import SerializationError

__all__ = [
    "MAX_DEPTH",
    "Serde",
    "StoredObject",
    "base_serde",
    "default_serde",
    "dumps",
    "loads",
    "register",
]

T = TypeVar("T", bound=type)

# a reused packer keeps the largest buffer it filled: one that packed more is let go
_KEEP_PACKER_BELOW = 1 << 20

MAX_DEPTH = _load.MAX_DEPTH
"""How deeply a value may nest: lists, dicts, tuples, sets and registered objects inside one
another. ``dumps`` stores any value within it and refuses deeper values that hold more than
a few levels of tuples, sets or objects (lists and dicts alone are stored up to msgpack's own
limit, 511 levels); ``loads`` refuses bytes whose tuples, sets and objects nest deeper. Far
above what agent state needs, and low enough that decoding fits a 512 KiB thread stack."""

# Frames encoded without measuring the value first: each may hold lists 511 deep
# (msgpack's limit), so this bounds the C stack an unmeasured value can take.
_FAST_FRAMES = 4
# scalars: no nested frame (a timedelta is stored as one, so it counts as a container)
_ATOMS = frozenset({str, int, float, bool, bytes, type(None), _dt.datetime, _dt.date, uuid.UUID})
_SEQUENCES = (list, tuple, set, frozenset)
# immutable once decoded (a datetime, date and UUID are too)
_SHARED_ATOMS = frozenset(
    {str, int, float, bool, bytes, type(None), _dt.datetime, _dt.date, _dt.timedelta, uuid.UUID}
)
_new_ext = tuple.__new__
# msgpack's ext headers by payload size: fixext 1/2/4/8/16, else ext 8/16/32
_FIXEXT = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}


_Encode = Callable[[Any], Any]


class _Entry(NamedTuple):
    """One registration: the stored name, and how the value is taken apart."""

    name: str
    shallow: bool = False
    encode: _Encode | None = None
    decode: _Decode | None = None
    shareable: Callable[[Any], bool] | None = None
    frames: _load.FramesDecoder | None = None


def _ext(code: int, data: bytes) -> bytes:
    """``data`` as a msgpack extension value of type ``code`` (what packing an ``ExtType``
    writes), built without a packer."""
    size = len(data)
    fixed = _FIXEXT.get(size)
    if fixed is not None:
        return bytes((fixed, code)) + data
    if size < 0x100:
        return bytes((0xC7, size, code)) + data
    if size < 0x10000:
        return b"\xc8" + size.to_bytes(2, "big") + bytes((code,)) + data
    return b"\xc9" + size.to_bytes(4, "big") + bytes((code,)) + data


class _Library(enum.Enum):
    BASE = "base"  # Serde's default base: base_serde, which exists only once made


class _Deeper(Exception):
    """Raised inside the fast path of ``dumps``: measure the value before encoding it."""


class Serde(_load.Loading):
    """A msgpack codec with its own registry of named types, layered on a base registry.

    Types registered here are known to this codec only. Lookups fall through to ``base``
    (by default :data:`base_serde`: the library's own types, such as graphagent's
    messages), so every ``Serde()`` can store what the library stores, and a type
    registered here wins over one of the same class below. Most code uses the module-level
    functions, which share :data:`default_serde`.

    Args:
        base: the registry underneath (``None``: nothing underneath).

    Example:
        >>> import dataclasses
        >>> from checkpoint.serde import Serde
        >>> @dataclasses.dataclass
        ... class Point:
        ...     x: int
        >>> mine = Serde()
        >>> _ = mine.register(Point)
        >>> mine.loads(mine.dumps(Point(1)))
        Point(x=1)
        >>> Serde().is_registered(Point)  # registered on ``mine`` only
        False
    """

    def __init__(self, base: Serde | _Library | None = _Library.BASE) -> None:
        self._base = base_serde if base is _Library.BASE else base
        self._own: dict[type, _Entry] = {}
        self._seen = -1
        self._names: dict[type, str] = {}
        self._types: dict[str, type] = {}
        self._shallow: set[type] = set()
        self._encoders: dict[type, tuple[str, _Encode]] = {}
        self._decoders: dict[str, _Decode] = {}
        self._shareable: dict[type, Callable[[Any], bool]] = {}
        self._many: _load.FramesDecoder | None = None
        # made once: the fast path's encoders by frames left, the decoders by depth
        self._fast = [partial(self._default, None, room) for room in range(_FAST_FRAMES + 1)]
        self._hooks = [partial(self._ext_hook, depth) for depth in range(MAX_DEPTH + 2)]
        self._strict_hooks = [
            partial(self._ext_hook, depth, strict=True) for depth in range(MAX_DEPTH + 2)
        ]
        # the fast path reuses its packers (making one costs more than packing a small
        # value): a free list per frame depth, per thread
        self._rooms: dict[Callable[[Any], Any], int] = {f: i for i, f in enumerate(self._fast)}
        self._local = threading.local()
        self._dataclass_fields: dict[type, tuple[str, ...]] = {}

    def _layers(self) -> list[Serde]:
        """This registry and those under it, the bottom one first."""
        layers: list[Serde] = []
        layer: Serde | None = self
        while layer is not None and layer not in layers:
            layers.append(layer)
            layer = layer._base
        return layers[::-1]

    def _current(self) -> None:
        """Merge the layers' registrations if any registry changed since the last merge."""
        seen = _registrations[0]
        if self._seen == seen:
            return
        merged: dict[type, _Entry] = {}
        types: dict[str, type] = {}
        for layer in self._layers():
            merged.update(layer._own)
            types.update({entry.name: cls for cls, entry in layer._own.items()})
        self._names = {cls: entry.name for cls, entry in merged.items()}
        self._types = types
        self._shallow = {cls for cls, entry in merged.items() if entry.shallow}
        self._encoders = {
            cls: (entry.name, entry.encode)
            for cls, entry in merged.items()
            if entry.encode is not None
        }
        self._decoders = {
            entry.name: entry.decode
            for cls, entry in merged.items()
            if entry.decode is not None and types.get(entry.name) is cls
        }
        self._shareable = {
            cls: entry.shareable for cls, entry in merged.items() if entry.shareable is not None
        }
        # one batch decoder, used while each entry registered with it is still the one
        # its name loads through (a layer that registers one of its classes again, or two
        # batch decoders: frame by frame)
        batched = [e for layer in self._layers() for e in layer._own.values() if e.frames]
        live = all(merged.get(types.get(e.name)) is e for e in batched)  # type: ignore[arg-type]
        self._many = batched[0].frames if live and len({e.frames for e in batched}) == 1 else None
        self._seen = seen

    def register(
        self,
        cls: T,
        name: str | None = None,
        *,
        shallow: bool = False,
        encode: _Encode | None = None,
        decode: _Decode | None = None,
        shareable: Callable[[Any], bool] | None = None,
        decode_frames: _load.FramesDecoder | None = None,
    ) -> T:
        """Let instances of ``cls`` (pydantic model, enum or dataclass) be stored and loaded.

        Usable as a decorator. The name (default ``module.QualName``) is what is stored;
        keep it stable across releases, or pass an explicit ``name``.

        Args:
            cls: the class.
            name: the stored name.
            shallow: for pydantic models whose field values are all plain data or
                registered types: store the fields as they are instead of through
                ``model_dump`` (several times faster).
            encode: with ``decode``: takes an instance apart into storable data (best a
                list of plain values: a list inside it costs nothing, where a tuple or
                a registered object is a frame of its own). The instance is stored as
                one frame holding the name and that data. The library's messages use
                this: one frame per message, its tool calls included.
            decode: with ``encode``: builds an instance from what ``encode`` gave
                (anything it raises makes loading fail with ``SerializationError``).
                Loading still reads values stored as a model, enum or dataclass under
                the same name, so a class can gain a codec without breaking old data.
            shareable: whether a decoded instance can change in no way (its fields and
                what they hold are immutable), so savers may hand the same decoded object
                to every read of a thread instead of decoding it again (see
                :meth:`shareable`). Without it, instances are decoded for each read.
            decode_frames: with ``decode``: a batch decoder several classes may share
                (the library's messages do): ``decode_frames(frames)`` takes a sequence of
                ``(name, data)`` pairs, each unpacked as plain msgpack with arrays as
                tuples (an extension type inside comes as ``msgpack.ExtType``: a
                tuple stored comes as one, a list stored as a tuple), and returns their values,
                the positions of those it did not build and each value's ``id`` attribute
                (a list as long as the values; anything at those positions); the serde
                decodes the frames at those positions itself, as :meth:`loads` does. A
                long read then makes one call for all its frames instead of one per frame.

        Raises:
            SerializationError: ``cls`` is not a supported kind, the name is taken, or
                only one of ``encode`` and ``decode`` is given.
        """
        if (encode is None) != (decode is None):
            raise SerializationError(
                f"cannot register {cls!r}: give both encode and decode, or neither"
            )
        if not isinstance(cls, type) or not (
            hasattr(cls, "model_validate")
            or issubclass(cls, enum.Enum)
            or dataclasses.is_dataclass(cls)
        ):
            raise SerializationError(
                f"cannot register {cls!r}: only pydantic models, enums and dataclasses can be "
                "registered"
            )
        key = name or _qualname(cls)
        self._current()
        taken = self._types.get(key)
        if taken is not None and taken is not cls:
            raise SerializationError(
                f"the serde name {key!r} is already registered for {_qualname(taken)}; "
                "pass name= to register under another name"
            )
        if decode_frames is not None and decode is None:
            raise SerializationError(f"cannot register {cls!r}: decode_frames needs decode")
        self._own[cls] = _Entry(key, shallow, encode, decode, shareable, decode_frames)
        _registrations[0] += 1
        return cls

    def is_registered(self, cls: type) -> bool:
        """Whether ``cls`` can be stored (registered here or in a base)."""
        self._current()
        return cls in self._names

    def shareable(self, value: Any) -> bool:
        """Whether a decoded ``value`` can change in no way, so that readers may share it:
        text, numbers, bytes, ``None``, a registered type whose ``shareable`` says so, and
        tuples and frozensets of those.

        Example:
            >>> from checkpoint.serde import Serde
            >>> Serde().shareable(("a", 1)), Serde().shareable(["a"])
            (True, False)
        """
        cls = type(value)
        if cls in _SHARED_ATOMS:
            return True
        if self._seen != _registrations[0]:
            self._current()
        check = self._shareable.get(cls)
        if check is not None:
            return check(value)
        if cls is tuple or cls is frozenset:
            return all(self.shareable(item) for item in value)
        return False

    def unshareable(self, values: Sequence[Any]) -> list[int]:
        """The positions of ``values`` that are not :meth:`shareable` (one pass)."""
        if self._seen != _registrations[0]:
            self._current()
        checks, atoms = self._shareable, _SHARED_ATOMS
        out = []
        for i, value in enumerate(values):
            cls = type(value)
            if cls in atoms:
                continue
            check = checks.get(cls)
            if check is not None:
                if not check(value):
                    out.append(i)
            elif not self.shareable(value):
                out.append(i)
        return out

    def dumps(self, value: Any) -> bytes:
        """Encode ``value``.

        Raises:
            SerializationError: naming the unsupported type and how to register it, or
                the value nests deeper than :data:`MAX_DEPTH`.
        """
        if self._seen != _registrations[0]:  # _current's check, without its call
            self._current()
        try:
            try:
                # fast path: no walk; a value whose tuples, sets and objects nest more than
                # a few deep, or whose lists nest past msgpack's limit, is measured first
                codec = self._encoders.get(type(value))
                if codec is not None:
                    # one stored message (the commonest value): its frame is the whole
                    # value, so no outer packer is needed
                    inner = [codec[0], codec[1](value)]
                    return _ext(_ENCODED, self._pack(inner, self._fast[_FAST_FRAMES - 1]))
                return self._pack(value, self._fast[_FAST_FRAMES])
            except (_Deeper, UnicodeEncodeError):
                # a lone surrogate (os.listdir on undecodable names, json.loads('"\\ud800"'))
                # is stored by the measured path, with surrogatepass: that one copies every
                # string into bytes first, so the fast path keeps msgpack's own encoder
                pass
            except ValueError as exc:
                if "recursion limit" not in str(exc):
                    raise
            dumped: dict[int, Any] = {}
            if not self._fits(value, dumped):
                raise SerializationError(
                    f"cannot store a value nested more than {MAX_DEPTH} levels deep (lists, "
                    "dicts, tuples, sets and objects inside one another), or one that "
                    "contains itself: flatten it, or store the deep part as text or bytes"
                )
            return self._pack(value, partial(self._default, dumped, MAX_DEPTH), _LONE)
        except SerializationError:
            raise
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            raise SerializationError(f"cannot serialize value: {exc}") from exc

    def _fits(self, value: Any, dumped: dict[int, Any]) -> bool:
        """Whether ``value`` nests at most :data:`MAX_DEPTH` containers deep, as stored.

        Walks one level at a time (no recursion, and the leaves of each level are dropped
        by one comprehension), so measuring costs a small part of encoding.
        """
        level = [value]
        for _ in range(MAX_DEPTH):
            inner: list[Any] = []
            for item in level:
                cls = type(item)
                if cls is dict:
                    inner.extend(item)
                    inner.extend(item.values())
                elif cls is list or cls is tuple:
                    inner.extend(item)
                else:
                    inner.extend(self._parts(item, dumped))
            level = [item for item in inner if type(item) not in _ATOMS]
            if not level:
                return True
        return False

    def _parts(self, value: Any, dumped: dict[int, Any]) -> Any:
        """What ``value`` holds as stored (nothing for a scalar or a refused type)."""
        cls = type(value)
        if cls in self._names:
            codec = self._encoders.get(cls)
            if codec is not None:
                encoded = codec[1](value)
                return encoded if type(encoded) is list else (encoded,)
            if issubclass(cls, enum.Enum):
                return (value.value,)
            if dataclasses.is_dataclass(value):
                return [getattr(value, f.name) for f in dataclasses.fields(value)]
            if cls in self._shallow:
                return value.__dict__.values()
            dumped[id(value)] = fields = value.model_dump(mode="python")
            return fields.values()
        if isinstance(value, dict):
            return [*value, *value.values()]
        if isinstance(value, _SEQUENCES):
            return value
        return ()

    def _pack(self, value: Any, default: Callable[[Any], Any], errors: str | None = None) -> bytes:
        room = self._rooms.get(default) if errors is None else None
        if room is None:
            return msgpack.packb(  # type: ignore[no-any-return]
                value, default=default, use_bin_type=True, strict_types=True, unicode_errors=errors
            )
        pools: list[list[msgpack.Packer]] | None = getattr(self._local, "pools", None)
        if pools is None:
            pools = self._local.pools = [[] for _ in self._fast]
        free = pools[room]
        packer = (
            free.pop()
            if free
            else msgpack.Packer(default=default, use_bin_type=True, strict_types=True)
        )
        packed: bytes = packer.pack(value)  # a packer that raised is not given back
        if len(packed) < _KEEP_PACKER_BELOW:
            free.append(packer)
        return packed

    def _frame(
        self, code: int, value: Any, dumped: dict[int, Any] | None, room: int
    ) -> msgpack.ExtType:
        """``value`` packed as a nested frame of extension type ``code``; ``room``: how
        many frames may still nest here."""
        if room <= 0:
            raise _Deeper
        if dumped is None:
            default = self._fast[room - 1]
        else:
            default = partial(self._default, dumped, room - 1)
        data = self._pack(value, default, None if dumped is None else _LONE)
        # ExtType's own __new__ only checks what is known here (an int code, bytes)
        return _new_ext(msgpack.ExtType, (code, data))

    def _default(self, dumped: dict[int, Any] | None, room: int, obj: Any) -> Any:
        cls = type(obj)
        codec = self._encoders.get(cls)
        if codec is not None:  # the library's messages: the commonest objects
            if dumped is None and room > 0:  # _frame's fast case, one call less
                data = self._pack([codec[0], codec[1](obj)], self._fast[room - 1])
                return _new_ext(msgpack.ExtType, (_ENCODED, data))
            return self._frame(_ENCODED, [codec[0], codec[1](obj)], dumped, room)
        name = self._names.get(cls)
        if name is not None:
            if cls in self._shallow:
                return self._frame(_MODEL, [name, obj.__dict__], dumped, room)
            if issubclass(cls, enum.Enum):
                return self._frame(_ENUM, [name, obj.value], dumped, room)
            names = self._dataclass_fields.get(cls)
            if names is None and dataclasses.is_dataclass(obj):
                names = tuple(f.name for f in dataclasses.fields(obj))
                self._dataclass_fields[cls] = names
            if names is not None:
                fields = {n: getattr(obj, n) for n in names}
                return self._frame(_DATACLASS, [name, fields], dumped, room)
            known = dumped.get(id(obj)) if dumped else None
            model = known if known is not None else obj.model_dump(mode="python")
            return self._frame(_MODEL, [name, model], dumped, room)
        if cls is StoredObject:  # read without its class: stored as it was
            return self._frame(_ENCODED, [obj.type, _library.encode(obj)], dumped, room)
        if isinstance(obj, enum.Enum):
            return self._refuse(cls)
        if isinstance(obj, tuple):
            return self._frame(_TUPLE, list(obj), dumped, room)
        if isinstance(obj, list):
            return list(obj)
        if isinstance(obj, dict):
            return dict(obj)
        if isinstance(obj, frozenset):
            return self._frame(_FROZENSET, list(obj), dumped, room)
        if isinstance(obj, set):
            return self._frame(_SET, list(obj), dumped, room)
        if isinstance(obj, _dt.datetime):
            return msgpack.ExtType(_DATETIME, obj.isoformat().encode())
        if isinstance(obj, _dt.date):
            return msgpack.ExtType(_DATE, obj.isoformat().encode())
        if isinstance(obj, _dt.timedelta):
            return self._frame(_TIMEDELTA, [obj.days, obj.seconds, obj.microseconds], dumped, room)
        if isinstance(obj, uuid.UUID):
            return msgpack.ExtType(_UUID, obj.bytes)
        if isinstance(obj, str):
            return str(obj)
        if isinstance(obj, bool):
            return bool(obj)
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            return float(obj)
        return self._refuse(cls)

    @staticmethod
    def _refuse(cls: type) -> Any:
        raise SerializationError(
            f"cannot store a value of type {_qualname(cls)}: register it with "
            f"checkpoint.serde.register({cls.__name__}) (pydantic models, enums, dataclasses) "
            "or store plain data (dict, list, str, numbers)"
        )


base_serde = Serde(base=None)
"""The library's own types (graphagent registers its messages here): the base registry
every :class:`Serde` includes unless made with another ``base``."""

default_serde = Serde()
"""The process-wide codec the savers use unless given another (:func:`register` adds to
it; a separately made ``Serde()`` sees the library's types but not these)."""

register = default_serde.register
dumps = default_serde.dumps
loads = default_serde.loads
