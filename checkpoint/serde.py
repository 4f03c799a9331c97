"""msgpack serialization for checkpoint values, with no pickle and no imports on load.

Plain data (None, bool, int, float, str, bytes, lists, dicts) is native msgpack.
These travel as extension types: tuple, set, frozenset, datetime, date, timedelta,
UUID, and the classes registered by name: pydantic models, enums and dataclasses.
Loading looks a type up in the registry by its registered name and never imports
a module or runs code named by the stored bytes.

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
from collections.abc import Callable
from typing import Any, TypeVar

import msgpack

from checkpoint.errors import SerializationError

__all__ = ["Serde", "default_serde", "dumps", "loads", "register"]

T = TypeVar("T", bound=type)

_TUPLE, _SET, _FROZENSET, _DATETIME, _DATE, _TIMEDELTA, _UUID = 1, 2, 3, 4, 5, 6, 7
_MODEL, _ENUM, _DATACLASS = 8, 9, 10
_KEEP_PACKER_BELOW = 1 << 20


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class Serde:
    """A msgpack codec with its own registry of named types.

    Most code uses the module-level functions, which share :data:`default_serde`.
    """

    def __init__(self) -> None:
        self._names: dict[type, str] = {}
        self._types: dict[str, type] = {}
        self._shallow: set[type] = set()
        self._fields: dict[type, tuple[str, ...]] = {}
        # Packers are reused (making one costs more than packing a small value); each
        # thread keeps its own free list, and a nested pack (an extension type's payload,
        # packed from inside ``default``) takes another one from it
        self._local = threading.local()

    def register(self, cls: T, name: str | None = None, *, shallow: bool = False) -> T:
        """Let instances of ``cls`` (pydantic model, enum or dataclass) be stored and loaded.

        Usable as a decorator. The name (default ``module.QualName``) is what is stored;
        keep it stable across releases, or pass an explicit ``name``.

        Args:
            cls: the class.
            name: the stored name.
            shallow: for pydantic models whose field values are all plain data or
                registered types: store the fields as they are instead of through
                ``model_dump`` (several times faster; used for the library's messages).

        Raises:
            SerializationError: ``cls`` is not a supported kind, or the name is taken.
        """
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
        taken = self._types.get(key)
        if taken is not None and taken is not cls:
            raise SerializationError(
                f"the serde name {key!r} is already registered for {_qualname(taken)}; "
                "pass name= to register under another name"
            )
        self._names[cls] = key
        self._types[key] = cls
        if dataclasses.is_dataclass(cls):
            self._fields[cls] = tuple(f.name for f in dataclasses.fields(cls))
        if shallow:
            self._shallow.add(cls)
        return cls

    def is_registered(self, cls: type) -> bool:
        """Whether ``cls`` can be stored."""
        return cls in self._names

    def dumps(self, value: Any) -> bytes:
        """Encode ``value``.

        Raises:
            SerializationError: naming the unsupported type and how to register it.
        """
        try:
            return self._pack(value)
        except SerializationError:
            raise
        except (TypeError, ValueError, OverflowError) as exc:
            raise SerializationError(f"cannot serialize value: {exc}") from exc

    def loads(self, data: bytes) -> Any:
        """Decode bytes made by :meth:`dumps`.

        Raises:
            SerializationError: corrupt bytes, or a stored type not registered here.
        """
        try:
            return msgpack.unpackb(
                data, ext_hook=self._ext_hook, raw=False, strict_map_key=False, use_list=True
            )
        except SerializationError:
            raise
        except Exception as exc:
            raise SerializationError(
                f"cannot decode stored checkpoint data ({type(exc).__name__}: {exc})"
            ) from exc

    def _pack(self, value: Any) -> bytes:
        free: list[msgpack.Packer] | None = getattr(self._local, "free", None)
        if free is None:
            free = self._local.free = []
        packer = (
            free.pop()
            if free
            else msgpack.Packer(default=self._default, use_bin_type=True, strict_types=True)
        )
        packed: bytes = packer.pack(value)  # a packer that raised is not reused
        if len(packed) < _KEEP_PACKER_BELOW:  # a packer keeps its largest buffer
            free.append(packer)
        return packed

    def _default(self, obj: Any) -> Any:
        cls = type(obj)
        name = self._names.get(cls)
        if name is not None:
            if issubclass(cls, enum.Enum):
                return msgpack.ExtType(_ENUM, self._pack([name, obj.value]))
            names = self._fields.get(cls)
            if names is not None:  # a dataclass
                fields = {n: getattr(obj, n) for n in names}
                return msgpack.ExtType(_DATACLASS, self._pack([name, fields]))
            fields = obj.__dict__ if cls in self._shallow else obj.model_dump(mode="python")
            return msgpack.ExtType(_MODEL, self._pack([name, fields]))
        if isinstance(obj, enum.Enum):
            return self._refuse(cls)
        if isinstance(obj, tuple):
            return msgpack.ExtType(_TUPLE, self._pack(list(obj)))
        if isinstance(obj, list):
            return list(obj)
        if isinstance(obj, dict):
            return dict(obj)
        if isinstance(obj, frozenset):
            return msgpack.ExtType(_FROZENSET, self._pack(list(obj)))
        if isinstance(obj, set):
            return msgpack.ExtType(_SET, self._pack(list(obj)))
        if isinstance(obj, _dt.datetime):
            return msgpack.ExtType(_DATETIME, obj.isoformat().encode())
        if isinstance(obj, _dt.date):
            return msgpack.ExtType(_DATE, obj.isoformat().encode())
        if isinstance(obj, _dt.timedelta):
            return msgpack.ExtType(
                _TIMEDELTA, self._pack([obj.days, obj.seconds, obj.microseconds])
            )
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

    def _ext_hook(self, code: int, data: bytes) -> Any:
        if code == _TUPLE:
            return tuple(self.loads(data))
        if code == _SET:
            return set(self.loads(data))
        if code == _FROZENSET:
            return frozenset(self.loads(data))
        if code == _DATETIME:
            return _dt.datetime.fromisoformat(data.decode())
        if code == _DATE:
            return _dt.date.fromisoformat(data.decode())
        if code == _TIMEDELTA:
            days, seconds, micros = self.loads(data)
            return _dt.timedelta(days=days, seconds=seconds, microseconds=micros)
        if code == _UUID:
            return uuid.UUID(bytes=data)
        if code in (_MODEL, _ENUM, _DATACLASS):
            name, payload = self.loads(data)
            cls = self._types.get(name)
            if cls is None:
                raise SerializationError(
                    f"stored data holds a {name!r}, which is not registered in this process; "
                    "import the module that defines it and call checkpoint.serde.register(cls) "
                    "before loading"
                )
            return self._build(code, cls, payload)
        raise SerializationError(f"stored data holds unknown extension type {code}")

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


default_serde = Serde()
"""The process-wide codec the savers use unless given another."""

register = default_serde.register
dumps = default_serde.dumps
loads = default_serde.loads
