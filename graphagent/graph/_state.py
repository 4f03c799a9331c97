"""The read-only state view nodes receive, and schema parsing."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from graphagent.errors import InvalidUpdateError
from graphagent.graph._constants import public
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
    """Graph input (or an update) as a mapping: a dict, a TypedDict instance, a pydantic
    model (its fields that were set) or a dataclass instance (all its fields).

    Raises:
        InvalidUpdateError: the input is none of those.
    """
    if isinstance(input, Mapping):
        return input
    fields_set = getattr(input, "model_fields_set", None)
    if isinstance(fields_set, set) and hasattr(type(input), "model_fields"):
        return {key: getattr(input, key) for key in type(input).model_fields if key in fields_set}
    if dataclasses.is_dataclass(input) and not isinstance(input, type):
        return {f.name: getattr(input, f.name) for f in dataclasses.fields(input)}
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
        fallback: the strategy of keys the schema does not name (an open schema's;
            ``ReplaceStrategy()`` unless ``StateGraph(default_strategy=...)`` says).
        input_keys: the keys graph input may set (``StateGraph(input_schema=...)``;
            others are dropped), or ``None``: any key.
        output_keys: the keys a run returns (``StateGraph(output_schema=...)``), or
            ``None``: every public key.
        checks: key -> a check that validates and converts an input value (a pydantic
            schema's replace keys: nested models become models).
    """

    __slots__ = (
        "checks",
        "closed",
        "defaults",
        "empties",
        "fallback",
        "input_keys",
        "name",
        "output_keys",
        "strategies",
    )

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
        self.fallback: KeyStrategy = _REPLACE
        self.input_keys: frozenset[str] | None = None
        self.output_keys: frozenset[str] | None = None
        self.checks: dict[str, Callable[[Any], Any]] = {}

    def add(self, other: Schema) -> None:
        """Take in ``other``'s keys that this schema does not have (a node's input
        schema, the graph's input or output schema): nodes may write them."""
        for key, strategy in other.strategies.items():
            if key not in self.strategies:
                self.strategies[key] = strategy
                empty = empty_factory(strategy)
                if empty is not None:
                    self.empties[key] = empty
        for key, check in other.checks.items():
            self.checks.setdefault(key, check)

    def read_input(self, input: Any) -> Mapping[str, Any]:
        """Graph input as the update it makes: only :attr:`input_keys`, and values of
        checked keys validated (a pydantic schema's nested dicts become its models).

        Raises:
            InvalidUpdateError: the input is not a mapping or a state object.
            pydantic.ValidationError: a value the pydantic schema refuses.
        """
        data = as_input(input)
        keys, checks = self.input_keys, self.checks
        if keys is not None:
            data = {k: v for k, v in data.items() if k in keys}
        if checks and any(k in checks for k in data):
            data = {k: (checks[k](v) if k in checks else v) for k, v in data.items()}
        return data

    def read_update(self, values: Mapping[str, Any] | None, where: str) -> dict[str, Any]:
        """``update_state`` values with checked keys validated as input is (a pydantic
        schema's nested dicts become its models), before anything is written.

        Raises:
            InvalidUpdateError: a value the schema refuses, naming the key (nothing is
                written).
        """
        data = dict(values or {})
        checks = self.checks
        if not checks:
            return data
        for key, value in data.items():
            check = checks.get(key)
            if check is None:
                continue
            try:
                data[key] = check(value)
            except ValueError as exc:  # pydantic's ValidationError is one
                raise InvalidUpdateError(
                    f"{where}: {key}={value!r} does not fit the state schema, so nothing "
                    f"was written; pass a value of the field's type. {_first_line(exc)}"
                ) from exc
        return data

    def output(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """What a run returns of ``values``: the public keys, or :attr:`output_keys`."""
        keys = self.output_keys
        if keys is None:
            return public(values)
        return {k: v for k, v in values.items() if k in keys}


_REPLACE = ReplaceStrategy()


def _first_line(exc: ValueError) -> str:
    """What a validation error says, shortly: pydantic's first error, or the message."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        found = errors()
        if found:
            return f"The schema says: {found[0].get('msg', '')}."
    return f"The schema says: {exc}."


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


def parse_schema(schema: Any, default_strategy: Any = None) -> Schema:
    """Read a schema: ``None``, a dict of key -> strategy, a TypedDict or a pydantic model.

    Args:
        schema: the state schema.
        default_strategy: the strategy of keys an open schema does not name.

    Raises:
        TypeError: the schema is none of those, or a strategy is not one.
    """
    parsed = _parse(schema)
    if default_strategy is not None:
        parsed.fallback = as_strategy(default_strategy)
    return parsed


def _parse(schema: Any) -> Schema:
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
            parsed = Schema(strategies, closed=True, defaults=defaults, name=schema.__name__)
            parsed.checks = _field_checks(schema, parsed.strategies)
            return parsed
        if dataclasses.is_dataclass(schema):
            return _dataclass_schema(schema)
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
        "a TypedDict, a pydantic model or a dataclass"
    )


def _dataclass_schema(schema: type) -> Schema:
    """A dataclass's fields as keys: ``Annotated[T, strategy]`` fields merge, defaults
    (and default factories) are the initial values."""
    hints = typing.get_type_hints(schema, include_extras=True)
    strategies: dict[str, KeyStrategy] = {}
    defaults: dict[str, Any] = {}
    for f in dataclasses.fields(schema):
        hint = hints.get(f.name, Any)
        if typing.get_origin(hint) is typing.Annotated:
            args = typing.get_args(hint)
            strategies[f.name] = _strategy_from_metadata(args[1:], args[0])
        else:
            strategies[f.name] = _REPLACE
        if f.default is not dataclasses.MISSING:
            defaults[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            defaults[f.name] = f.default_factory()
    return Schema(strategies, closed=True, defaults=defaults, name=schema.__name__)


def _field_checks(
    model: Any, strategies: Mapping[str, KeyStrategy]
) -> dict[str, Callable[[Any], Any]]:
    """Validators for a pydantic schema's replace keys (a merging key's update is not of
    the field's type: one item for a list, say). Made on first use: building a validator
    costs about a millisecond, and most graphs never read most keys as input."""
    from pydantic import TypeAdapter

    checks: dict[str, Callable[[Any], Any]] = {}
    for key, info in model.model_fields.items():
        if not strategies[key].replaces or info.annotation is None:
            continue
        adapters: list[Any] = []

        def check(
            value: Any, _annotation: Any = info.annotation, _made: list[Any] = adapters
        ) -> Any:
            if not _made:
                _made.append(TypeAdapter(_annotation))
            return _made[0].validate_python(value)

        checks[key] = check
    return checks
