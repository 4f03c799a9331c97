"""The decoding half of :class:`checkpoint.serde.Serde`: stored bytes back to values.

Loading looks a type up in the registry by its stored name and never imports a module
or runs code named by the stored bytes; graphagent's own types load without graphagent
(see ``_library``). Nesting is bounded (``MAX_DEPTH``), so tampered bytes raise instead
of overflowing the C stack.
"""

from __future__ import annotations

import datetime as _dt
import functools
import gc
import uuid
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any

import msgpack

from checkpoint import _library
from checkpoint._library import StoredObject
from checkpoint._stored import STORED_WAY_OUT
from checkpoint.errors import SerializationError

__all__ = ["MAX_DEPTH", "FramesDecoder", "Loading"]

_TUPLE, _SET, _FROZENSET, _DATETIME, _DATE, _TIMEDELTA, _UUID = 1, 2, 3, 4, 5, 6, 7
_MODEL, _ENUM, _DATACLASS, _ENCODED = 8, 9, 10, 11

MAX_DEPTH = 100  # documented in checkpoint.serde

# Nested frames this deep are decoded with a heap-allocated Unpacker (~1 KB of C stack per
# level instead of ~25 KB for unpackb); shallower ones keep unpackb, which is faster.
_HEAP_FRAMES_FROM = 4
# Batches this long are decoded with the cyclic garbage collector paused (see loads_all):
# 10,000 chat messages decode ~13% faster, more in a process holding many objects.
_PAUSE_GC_FROM = 256
# Frames handed to a batch decoder at a time (see Loading._batch).
_BATCH = 256
# msgpack's header of an array of n values (0xdc: array 16), for each batch size
_ARRAY_OF = [b"\xdc" + n.to_bytes(2, "big") for n in range(_BATCH + 1)]
_unpack_arrays = functools.partial(msgpack.unpackb, use_list=False)
# Any Python str is stored: lone surrogates as the bytes "surrogatepass" gives them, which
# valid UTF-8 never contains, so every string keeps its own encoding and comes back as itself.
_LONE = "surrogatepass"

_Decode = Callable[[Any], Any]
# a batch decoder (see Serde.register): frames -> their values, the positions of those it
# did not build (their values are the serde's to decode) and each value's ``id``
FramesDecoder = Callable[[Sequence[Any]], tuple[list[Any], list[int], list[Any]]]

# Bumped by every registration anywhere, so a Serde knows when to merge its layers again.
_registrations = [0]


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class Loading:
    """``loads`` of a :class:`~checkpoint.serde.Serde`, over the merged registry it keeps
    (``_types``, ``_decoders``) and its decoders by depth (``_hooks``, ``_strict_hooks``)."""

    _seen: int
    _types: dict[str, type]
    _decoders: dict[str, _Decode]
    _many: FramesDecoder | None
    _hooks: list[Callable[[int, bytes], Any]]
    _strict_hooks: list[Callable[[int, bytes], Any]]

    def _current(self) -> None:
        raise NotImplementedError

    def unshareable(self, values: Sequence[Any]) -> list[int]:
        raise NotImplementedError

    def loads_all(self, blobs: Sequence[bytes]) -> list[Any]:
        """``[self.loads(b) for b in blobs]``, faster: the stored messages among them (each
        one frame of its own) are unpacked by one msgpack call and go straight to their
        decoders (or a batch decoder, see :meth:`register`), without the calls
        :meth:`loads` makes around each.

        Raises:
            SerializationError: as :meth:`loads` would for the first blob it refuses.
        """
        return self._loads_all(blobs)[0]

    def loads_shared(self, blobs: Sequence[bytes]) -> tuple[list[Any], list[int]]:
        """:meth:`loads_all`, and the positions of the values that are not
        :meth:`shareable` (``unshareable`` of them, with no pass over the values a batch
        decoder built itself).

        Raises:
            SerializationError: as :meth:`loads` would for the first blob it refuses.
        """
        values, changeable, _ = self.loads_keyed(blobs)
        return values, changeable

    def loads_keyed(self, blobs: Sequence[bytes]) -> tuple[list[Any], list[int], list[Any] | None]:
        """:meth:`loads_shared`, and each value's ``id`` as the batch decoder said, when
        it built every value (else ``None``): the read cache indexes a log's messages by
        id without asking each message for it (pydantic's ``__getattr__`` hook makes
        ``message.id`` cost ~1k instructions).

        Raises:
            SerializationError: as :meth:`loads` would for the first blob it refuses.
        """
        values, slow, keys = self._loads_all(blobs)
        if slow is None:
            return values, self.unshareable(values), None
        if not slow:
            return values, [], keys
        check = self.unshareable([values[i] for i in slow])
        return values, [slow[i] for i in check], None

    def _loads_all(
        self, blobs: Sequence[bytes]
    ) -> tuple[list[Any], list[int] | None, list[Any] | None]:
        """The values of ``blobs``, the positions among them a batch decoder did not build
        (``None``: any may be unshareable) and the ids it gave (``None`` with them)."""
        if self._seen != _registrations[0]:
            self._current()
        # a long batch makes several objects per message, none of them in a cycle: the
        # collector's passes meanwhile would find nothing (and a full pass walks every
        # object of the process), so it waits until the batch is built
        pause = len(blobs) >= _PAUSE_GC_FROM and gc.isenabled()
        if pause:
            gc.disable()
        try:
            payloads = _payloads(blobs)
            if payloads is not None:
                many = self._many
                if many is not None:
                    got = self._batch(many, blobs, payloads)
                    if got is not None:
                        return got
                else:
                    joined = b"".join(payloads)
                    # a msgpack timestamp needs a 0xff type byte: with none anywhere, no
                    # frame needs loads' strict path (the usual case: one memchr over all)
                    if 255 not in joined:
                        decoded = self._frames(joined, list(accumulate(map(len, payloads))))
                        if decoded is not None:
                            return decoded, None, None
            return self._loads_each(blobs), None, None
        finally:
            if pause:
                gc.enable()

    def _loads_each(self, blobs: Sequence[bytes]) -> list[Any]:
        """:meth:`loads_all` blob by blob: the frames that may hold a timestamp, or are
        not one message's frame, are decoded by :meth:`loads`, the others together."""
        frames: list[bytes] = []
        ends: list[int] = []  # where each frame ends in their concatenation
        at: list[int] = []  # each frame's position in ``blobs``
        others: list[int] = []  # positions decoded one by one
        end = 0
        for i, data in enumerate(blobs):
            size = len(data)
            if 255 in data:  # maybe a msgpack timestamp: loads' strict path refuses those
                others.append(i)
                continue
            if size > 3 and data[0] == 0xC7 and data[2] == _ENCODED and data[1] + 3 == size:
                frames.append(data[3:])
                end += size - 3
            elif (
                size > 4
                and data[0] == 0xC8
                and data[3] == _ENCODED
                and (data[1] << 8 | data[2]) + 4 == size
            ):
                frames.append(data[4:])
                end += size - 4
            else:
                others.append(i)
                continue
            ends.append(end)
            at.append(i)
        decoded = self._frames(b"".join(frames), ends) if frames else []
        if decoded is None:  # one is not a well-formed frame: loads names the problem
            return [self.loads(data) for data in blobs]
        if not others:
            return decoded
        out: list[Any] = list(blobs)
        for i, value in zip(at, decoded, strict=True):
            out[i] = value
        for i in others:
            out[i] = self.loads(blobs[i])
        return out

    def _batch(
        self, many: FramesDecoder, blobs: Sequence[bytes], payloads: list[bytes]
    ) -> tuple[list[Any], list[int], list[Any]] | None:
        """The values of ``blobs`` (whose frames' payloads are ``payloads``) through the
        batch decoder ``many``, the positions of those it did not build and the ids it
        gave (``None`` at those positions), or ``None``
        when a frame is not well-formed msgpack (the caller then decodes each blob on its
        own, which names what is wrong).

        The payloads are unpacked as plain msgpack with arrays as tuples, a batch at a
        time as one array: no extension type is decoded (one comes as
        ``msgpack.ExtType``, a timestamp as ``msgpack.Timestamp``), which ``many`` never
        builds. A payload that is not exactly one value makes the batch's array end before
        its bytes or after them, which raises: the batch's payloads are then unpacked one
        by one, and the one that is not a value raises (only two damaged frames whose
        errors cancel exactly could read as whole ones, as damage inside a frame reads:
        msgpack has no checksum). Every frame ``many`` does not build is decoded by
        :meth:`loads` from its blob, with everything ``loads`` checks.
        """
        unpack = msgpack.unpackb
        values: list[Any] = []
        slow: list[int] = []
        keys: list[Any] = []
        # a few frames at a time: their tuples are freed (and their memory reused) before
        # the next are unpacked, where holding all of them costs more
        for at in range(0, len(payloads), _BATCH):
            part = payloads[at : at + _BATCH]
            try:
                # the batch's payloads as one msgpack array: one call, no per-frame one
                # (-0.35k instructions per frame), arrays as tuples (one allocation each
                # where a list takes two: -1k per chat message, unpacking and freeing)
                frames = unpack(_ARRAY_OF[len(part)] + b"".join(part), use_list=False)
            except Exception:
                # a payload that is not exactly one value shifts the ones after it: the
                # array then ends before the bytes do, or the bytes before the array,
                # and each frame alone says which is wrong
                try:
                    frames = list(map(_unpack_arrays, part))
                except Exception:
                    return None
            try:
                done, others, ids = many(frames)
            except Exception:
                return None
            if len(ids) != len(done):
                return None
            for i in others:
                done[i] = self.loads(blobs[at + i])
                ids[i] = None  # not the decoder's: its id is the value's to say
                slow.append(at + i)
            values += done
            keys += ids
        return values, slow, keys

    def _unpacker(self, joined: bytes) -> msgpack.Unpacker:
        """An unpacker fed ``joined``: what a frame nested in a message's frame needs."""
        unpacker = msgpack.Unpacker(
            ext_hook=self._hooks[2],
            raw=False,
            strict_map_key=False,
            use_list=True,
            unicode_errors=_LONE,
            max_buffer_size=max(len(joined), 1),
        )
        unpacker.feed(joined)
        return unpacker

    def _frames(self, joined: bytes, ends: list[int]) -> list[Any] | None:
        """The values of the encoded frames in ``joined`` (each ending where ``ends`` says),
        or ``None`` when any is not a well-formed one (the caller then decodes each on its
        own, which names what is wrong)."""
        decoders = self._decoders
        unpacker = self._unpacker(joined)
        out: list[Any] = []
        append = out.append
        tell = unpacker.tell
        # consecutive frames mostly name the same few types: a name equal to the last one
        # reuses its decoder (a compare of two short texts, where a look-up hashes the
        # text msgpack has just made)
        last, decode = None, None
        try:
            for end, frame in zip(ends, unpacker, strict=True):
                if tell() != end:
                    return None
                name, payload = frame
                if name != last:
                    decode, last = decoders[name], name
                append(decode(payload))  # type: ignore[misc]
        except Exception:
            return None
        return out

    def loads(self, data: bytes) -> Any:
        """Decode bytes made by :meth:`dumps`.

        Raises:
            SerializationError: corrupt bytes, a stored type not registered here, or
                nesting deeper than :data:`MAX_DEPTH` (which :meth:`dumps` never writes).
        """
        if self._seen != _registrations[0]:  # _current's check, without its call
            self._current()
        # msgpack decodes its timestamp extension (-1) itself, never asking ext_hook. Bytes
        # that may hold one (its type byte is 0xff) are decoded checking every container,
        # so that it is refused as every other unknown extension. ``255 in`` is one memchr
        # (15 ns on 80 bytes; ``b"\xff" in`` takes 340 ns)
        strict = 255 in data
        try:
            if strict:
                return self._unpack(data, 0, strict=True)
            # one stored message (the commonest value) is one frame: its payload goes to
            # the frame's decoder directly, without a msgpack call around it
            lead = data[:1]
            if lead == b"\xc7":  # ext 8: a frame of up to 255 bytes
                if len(data) > 3 and data[2] == _ENCODED and data[1] + 3 == len(data):
                    return self._ext_hook(1, _ENCODED, data[3:])
            elif (  # ext 16
                lead == b"\xc8"
                and len(data) > 4
                and data[3] == _ENCODED
                and int.from_bytes(data[1:3], "big") + 4 == len(data)
            ):
                return self._ext_hook(1, _ENCODED, data[4:])
            return msgpack.unpackb(
                data,
                ext_hook=self._hooks[1],
                raw=False,
                strict_map_key=False,
                use_list=True,
                unicode_errors=_LONE,
            )
        except SerializationError:
            raise
        except Exception as exc:
            raise SerializationError(
                f"cannot decode stored checkpoint data ({type(exc).__name__}: {exc}): the "
                f"stored bytes are damaged (changed behind the saver's back, or corrupted). "
                f"{STORED_WAY_OUT}"
            ) from exc

    def _unpack(self, data: bytes, depth: int, strict: bool = False) -> Any:
        """Decode one frame; ``depth`` frames enclose it (``strict``: see :meth:`loads`)."""
        if strict:
            return self._unpack_strict(data, depth)
        hook = self._hooks[depth + 1]
        if depth < _HEAP_FRAMES_FROM:
            return msgpack.unpackb(
                data,
                ext_hook=hook,
                raw=False,
                strict_map_key=False,
                use_list=True,
                unicode_errors=_LONE,
            )
        unpacker = msgpack.Unpacker(
            ext_hook=hook,
            raw=False,
            strict_map_key=False,
            use_list=True,
            unicode_errors=_LONE,
            max_buffer_size=max(len(data), 1),
        )
        return _whole(unpacker, data)

    def _unpack_strict(self, data: bytes, depth: int) -> Any:
        """:meth:`_unpack`, refusing msgpack's timestamps in every container."""
        hook = self._strict_hooks[depth + 1]
        if depth < _HEAP_FRAMES_FROM:
            value = msgpack.unpackb(
                data,
                ext_hook=hook,
                raw=False,
                strict_map_key=False,
                use_list=True,
                unicode_errors=_LONE,
                list_hook=_no_timestamp_in,
                object_pairs_hook=_no_timestamp_pairs,
            )
        else:
            unpacker = msgpack.Unpacker(
                ext_hook=hook,
                raw=False,
                strict_map_key=False,
                use_list=True,
                unicode_errors=_LONE,
                max_buffer_size=max(len(data), 1),
                list_hook=_no_timestamp_in,
                object_pairs_hook=_no_timestamp_pairs,
            )
            value = _whole(unpacker, data)
        return _no_timestamp(value)

    def _ext_hook(self, depth: int, code: int, data: bytes, strict: bool = False) -> Any:
        if depth > MAX_DEPTH:
            raise SerializationError(
                f"stored data nests more than {MAX_DEPTH} levels deep, which this library "
                "never writes: the bytes were damaged or tampered with. Delete the thread, "
                "or restore it from a backup"
            )
        if code == _ENCODED:  # the library's messages: the commonest frames
            name, payload = self._unpack(data, depth, strict)
            decode = self._decoders.get(name)
            if decode is not None:
                try:
                    return decode(payload)
                except Exception as exc:
                    raise SerializationError(
                        f"stored {_qualname(self._types[name])} no longer fits its class: {exc}"
                    ) from exc
            cls = self._types.get(name)
            if cls is None:
                # one of graphagent's types, in a process that has not loaded it
                plain = _library.decode(name, payload)
                if plain is None:
                    raise _unregistered(name)
                return plain
            raise SerializationError(
                f"stored data holds a {name!r} written by its own encoder, and "
                f"{_qualname(cls)} is registered here without one: register it with the "
                "encode and decode it was stored with"
            )
        if code == _TUPLE:
            return tuple(self._unpack(data, depth, strict))
        if code == _SET:
            return set(self._unpack(data, depth, strict))
        if code == _FROZENSET:
            return frozenset(self._unpack(data, depth, strict))
        if code == _DATETIME:
            return _dt.datetime.fromisoformat(data.decode())
        if code == _DATE:
            return _dt.date.fromisoformat(data.decode())
        if code == _TIMEDELTA:
            days, seconds, micros = self._unpack(data, depth, strict)
            return _dt.timedelta(days=days, seconds=seconds, microseconds=micros)
        if code == _UUID:
            return uuid.UUID(bytes=data)
        if code in (_MODEL, _ENUM, _DATACLASS):
            name, payload = self._unpack(data, depth, strict)
            cls = self._types.get(name)
            if cls is None:
                if name in _library.FIELDS and type(payload) is dict:
                    return StoredObject(name, payload)  # stored before its flat frame
                raise _unregistered(name)
            return self._build(code, cls, payload)
        raise _unknown_extension(code)

    @staticmethod
    def _build(code: int, cls: type, payload: Any) -> Any:
        try:
            if code == _ENUM:
                return cls(payload)
            if code == _DATACLASS:
                return cls(**payload)
            validate: Callable[[Any], Any] = cls.model_validate  # type: ignore[attr-defined]
            return validate(payload)
        except Exception as exc:
            raise SerializationError(
                f"stored {_qualname(cls)} no longer fits its class: {exc}"
            ) from exc


def _payloads(blobs: Sequence[bytes]) -> list[bytes] | None:
    """Each blob's payload when every one is a message's frame (an ext 8 or ext 16 of the
    encoded type spanning the whole blob), else ``None``."""
    # the usual case, every frame under 256 bytes (ext 8): one comprehension
    try:
        ext8 = [d[3:] for d in blobs if d[0] == 0xC7 and d[2] == _ENCODED and d[1] + 3 == len(d)]
    except IndexError:  # a blob of fewer than 3 bytes
        return None
    if len(ext8) == len(blobs):
        return ext8
    out: list[bytes] = []
    append = out.append
    for data in blobs:
        size = len(data)
        if size > 3 and data[0] == 0xC7 and data[2] == _ENCODED and data[1] + 3 == size:
            append(data[3:])
        elif (
            size > 4
            and data[0] == 0xC8
            and data[3] == _ENCODED
            and data[1] * 256 + data[2] + 4 == size
        ):
            append(data[4:])
        else:
            return None
    return out


def _unknown_extension(code: int) -> SerializationError:
    return SerializationError(
        f"stored data holds unknown extension type {code}: its bytes were damaged, or "
        "written by a newer graphagent (upgrade this one to read them)"
    )


def _whole(unpacker: msgpack.Unpacker, data: bytes) -> Any:
    """The one value ``data`` holds, through ``unpacker`` (nothing may follow it)."""
    unpacker.feed(data)
    value = unpacker.unpack()
    if unpacker.tell() != len(data):
        raise SerializationError("cannot decode stored checkpoint data: extra bytes")
    return value


def _no_timestamp(value: Any) -> Any:
    """``value``, unless it is msgpack's timestamp (see :meth:`Serde.loads`)."""
    if type(value) is msgpack.Timestamp:
        raise _unknown_extension(-1)
    return value


def _no_timestamp_in(items: list[Any]) -> list[Any]:
    for item in items:
        _no_timestamp(item)
    return items


def _no_timestamp_pairs(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    for key, value in pairs:
        _no_timestamp(key)
        _no_timestamp(value)
    return dict(pairs)


def _unregistered(name: Any) -> SerializationError:
    return SerializationError(
        f"stored data holds a {name!r}, which is not registered in this process; "
        "import the module that defines it and call checkpoint.serde.register(cls) "
        "before loading"
    )
