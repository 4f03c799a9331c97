"""The read-only state view nodes receive, and schema parsing."""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from graphagent.errors import InvalidUpdateError
from graphagent.graph._strategies import (
    AppendStrategy,
    KeyStrategy,
    ReplaceStrategy,
    as_strategy,
    empty_factory,
)

__all__ = ["OverAllState", "Schema", "as_input", "parse_schema"]


class OverAllState(Mapping[str, Any]):
    """The overall state as a node sees it: a read-only mapping of key -> value.

    Nodes never change it; they return partial updates. Every node of a super-step
    sees the same snapshot.

    Example:
        >>> s = OverAllState({"count": 1})
        >>> s["count"], s.get("missing", 0), s.value("count")
        (1, 0, 1)
    """

    __slots__ = ("_data", "_empties")

    def __init__(
        self, data: Mapping[str, Any], empties: Mapping[str, Callable[[], Any]] | None = None
    ) -> None:
        self._data = data
        # Keys with a merging strategy read as their empty value ([] / {}) until written.
        # Kept whole (one state is built per step): keys already in ``data`` are skipped
        # where it matters, when iterating.
        self._empties: Mapping[str, Callable[[], Any]] = empties or {}

    def __getitem__(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            empty = self._empties.get(key)
            if empty is None:
                raise
            return empty()

    def __iter__(self) -> Iterator[str]:
        data = self._data
        yield from data
        yield from (k for k in self._empties if k not in data)

    def __len__(self) -> int:
        data = self._data
        return len(data) + sum(1 for k in self._empties if k not in data)

    def __contains__(self, key: object) -> bool:
        return key in self._data or key in self._empties

    def value(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default`` when the state has none (Spring AI style)."""
        return self.get(key, default)

    def data(self) -> dict[str, Any]:
        """A shallow copy of the state as a plain dict."""
        return dict(self)

    def __repr__(self) -> str:
        return f"OverAllState({dict(self._data)!r})"


def as_input(input: Any) -> Mapping[str, Any]:
    """Graph input as a mapping: a dict, a TypedDict instance, or a pydantic model
    (its fields that were set).

    Raises:
        InvalidUpdateError: the input is none of those.
    """
    if isinstance(input, Mapping):
        return input
    fields_set = getattr(input, "model_fields_set", None)
    if isinstance(fields_set, set) and hasattr(type(input), "model_fields"):
        return {key: getattr(input, key) for key in type(input).model_fields if key in fields_set}
    raise InvalidUpdateError(
        f"graph input must be a dict of state keys (or a pydantic model of the state), "
        f"got {type(input).__name__}"
    )


class Schema:
    """What the builder knows about the state: key strategies and, if typed, the keys.

    Attributes:
        strategies: key -> strategy for every declared key.
        closed: True when the schema is a class, so unknown keys are an error.
        defaults: initial values (pydantic field defaults).
        empties: key -> what the key reads as before its first write (``[]`` for
            append keys, ``{}`` for merge keys).
    """

    __slots__ = ("closed", "defaults", "empties", "name", "strategies")

    def __init__(
        self,
        strategies: dict[str, KeyStrategy],
        *,
        closed: bool,
        defaults: dict[str, Any],
        name: str,
    ) -> None:
        self.strategies = {k: _messages_key(k, v) for k, v in strategies.items()}
        self.empties = {
            k: f for k, f in ((k, empty_factory(v)) for k, v in self.strategies.items()) if f
        }
        self.closed = closed
        self.defaults = defaults
        self.name = name


_REPLACE = ReplaceStrategy()


def _messages_key(key: str, strategy: KeyStrategy) -> KeyStrategy:
    """A ``"messages"`` key's AppendStrategy coerces strings and dicts to messages."""
    if key == "messages" and type(strategy) is AppendStrategy and strategy.messages is None:
        return AppendStrategy(messages=True)
    return strategy


def _strategy_from_metadata(metadata: typing.Iterable[Any], value_type: Any) -> KeyStrategy:
    for meta in metadata:
        if hasattr(meta, "merge") or callable(meta):
            if isinstance(meta, type) and not hasattr(meta, "merge"):
                continue
            return as_strategy(meta, value_type)
    return _REPLACE


def parse_schema(schema: Any) -> Schema:
    """Read a schema: ``None``, a dict of key -> strategy, a TypedDict or a pydantic model.

    Raises:
        TypeError: the schema is none of those, or a strategy is not one.
    """
    if schema is None:
        return Schema({}, closed=False, defaults={}, name="dict")
    if isinstance(schema, Mapping):
        return Schema(
            {str(k): as_strategy(v) for k, v in schema.items()},
            closed=False,
            defaults={},
            name="dict",
        )
    if isinstance(schema, type):
        fields = getattr(schema, "model_fields", None)
        if fields is not None:  # pydantic model
            strategies: dict[str, KeyStrategy] = {}
            defaults: dict[str, Any] = {}
            for key, info in fields.items():
                strategies[key] = _strategy_from_metadata(info.metadata, info.annotation)
                if not info.is_required():
                    defaults[key] = info.get_default(call_default_factory=True)
            return Schema(strategies, closed=True, defaults=defaults, name=schema.__name__)
        if typing.is_typeddict(schema):
            hints = typing.get_type_hints(schema, include_extras=True)
            strategies = {}
            for key, hint in hints.items():
                args = typing.get_args(hint)
                if typing.get_origin(hint) is typing.Annotated:
                    strategies[key] = _strategy_from_metadata(args[1:], args[0])
                else:
                    strategies[key] = _REPLACE
            return Schema(strategies, closed=True, defaults={}, name=schema.__name__)
    raise TypeError(
        f"unsupported state schema {schema!r}; use a dict of key -> strategy, "
        "a TypedDict or a pydantic model"
    )
