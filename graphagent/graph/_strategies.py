"""Key strategies: how a node's update to one state key merges with the old value.

Besides the merged value, each strategy reports the *change* the merge made, as a
:class:`Change`, the form a checkpoint stores: ``Change("set", value)`` or, for list
values, ``Change("append", items)`` when the old list is a prefix of the new one and
``Change("reset", items)`` otherwise. That is what keeps a step's checkpoint as small as
the step's change.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from checkpoint.base import Change, IndexedList
from graphagent.messages import Message, RemoveMessage, add_messages, coerce_message

__all__ = [
    "MISSING",
    "AppendStrategy",
    "Change",
    "KeyStrategy",
    "MergeStrategy",
    "RemoveValue",
    "ReplaceAll",
    "ReplaceStrategy",
    "arity_problem",
    "as_strategy",
    "empty_factory",
]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()
"""The old value of a key that has never been written."""


@runtime_checkable
class KeyStrategy(Protocol):
    """How updates to one state key merge, and what a checkpoint stores of each merge.

    Subclass it and implement :meth:`merge`; the other members have defaults. An object
    that only has a ``merge(old, new)`` method works too (it gets the defaults), and so
    does a plain ``(old, new) -> merged`` function.

    Attributes:
        replaces: the new value simply replaces the old one: ``merge`` is not called,
            and two writes of the key in one super-step are an error. Default ``False``.

    Example:
        >>> class Maximum(KeyStrategy):
        ...     def merge(self, old, new):
        ...         return new if old is MISSING else max(old, new)
        >>> Maximum().merge_change(3, 5)
        (5, Change(kind='set', value=5))
    """

    replaces: bool = False

    def merge(self, old: Any, new: Any) -> Any:
        """Return the key's value after ``new`` is applied to ``old`` (``MISSING`` if unset)."""
        ...

    def merge_change(self, old: Any, new: Any) -> tuple[Any, Change]:
        """Merge, and report the change for the checkpoint.

        The default stores the merged value whole (``Change("set", merged)``). A list
        that grows can report ``Change("append", items)`` (the merged list is exactly
        ``old + items``) so the checkpoint costs the items, not the list.
        """
        merged = self.merge(old, new)
        return merged, Change("set", merged)

    def empty(self) -> Any:
        """What the key reads as before its first write; ``MISSING`` (the default): it is
        absent until written."""
        return MISSING


class ReplaceStrategy(KeyStrategy):
    """The new value replaces the old one. Two replace-writes in one step conflict.

    Example:
        >>> ReplaceStrategy().merge(1, 2)
        2
    """

    replaces = True

    def merge(self, old: Any, new: Any) -> Any:
        """Return ``new``."""
        return new

    def merge_change(self, old: Any, new: Any) -> tuple[Any, Change]:
        """``new``, stored whole."""
        return new, Change("set", new)

    def __repr__(self) -> str:
        return "ReplaceStrategy()"


class MergeStrategy(KeyStrategy):
    """Values merge: dicts shallowly (new keys added, existing keys overwritten),
    dataclasses and pydantic models field by field; ``None`` changes nothing.

    A dataclass or pydantic update of the old value's class keeps the old value's
    fields that the update leaves ``None``; nested dicts and objects of one class merge
    the same way. Any other value (a number, a string, a list) replaces an old value of
    its type, as Spring AI Alibaba's ``MergeStrategy`` does. Values of different types
    (a list merged into a dict) are an error.

    Example:
        >>> MergeStrategy().merge({"a": 1}, {"b": 2})
        {'a': 1, 'b': 2}
        >>> MergeStrategy().merge({"a": 1}, None)
        {'a': 1}
    """

    replaces = False

    def empty(self) -> dict[str, Any]:
        """``{}``: what the key reads as before its first write."""
        return {}

    def merge(self, old: Any, new: Any) -> Any:
        """Return ``old`` with ``new`` merged in.

        Raises:
            TypeError: ``old`` and ``new`` are of kinds that do not merge.
        """
        if old is MISSING:
            old = None
        return _merged(old, new)

    def __repr__(self) -> str:
        return "MergeStrategy()"


def _fields(value: Any) -> tuple[str, ...] | None:
    """The field names of a dataclass instance or a pydantic model, else ``None``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return tuple(f.name for f in dataclasses.fields(value) if f.init)
    model_fields = getattr(type(value), "model_fields", None)
    if isinstance(model_fields, Mapping) and hasattr(value, "model_copy"):
        return tuple(model_fields)
    return None


def _merged(old: Any, new: Any) -> Any:
    if new is None:
        return old
    if old is None:
        return dict(new) if isinstance(new, Mapping) else new
    if isinstance(old, Mapping):
        if not isinstance(new, Mapping):
            raise TypeError(
                f"MergeStrategy takes a dict update for a dict value, got {type(new).__name__}"
            )
        return {**old, **new}
    if type(old) is not type(new):
        raise TypeError(
            f"MergeStrategy cannot merge {type(new).__name__} into {type(old).__name__}; "
            "write a value of the key's type (or give the key another strategy)"
        )
    names = _fields(new)
    if names is None:
        return new  # a number, a string, a list: the new one replaces it
    changed = {}
    for name in names:
        value = getattr(new, name)
        if value is not None:
            before = getattr(old, name)
            same = before is not None and (
                (isinstance(before, Mapping) and isinstance(value, Mapping))
                or (type(before) is type(value) and _fields(value) is not None)
            )
            changed[name] = _merged(before, value) if same else value
    if dataclasses.is_dataclass(old):
        return dataclasses.replace(old, **changed)  # type: ignore[type-var]
    return old.model_copy(update=changed)


class _IdList(list):  # type: ignore[type-arg]
    """A list that shares a message-id -> position index with the lists it grew from.

    Appending to a long history then needs no O(n) scan for id collisions: a
    lookup is checked against the list itself, so an index entry written by a
    sibling fork can cause a (correct) slow path, never a wrong answer.
    """

    __slots__ = ("ids",)
    ids: dict[str, int]


@dataclasses.dataclass(frozen=True)
class RemoveValue:
    """Written to an :class:`AppendStrategy` key (alone or among the items): remove the
    first item equal to ``value`` (Spring AI Alibaba's ``RemoveIdentifier``).

    Example:
        >>> AppendStrategy().merge(["a", "b", "a"], RemoveValue("a"))
        ['b', 'a']
    """

    value: Any


@dataclasses.dataclass(frozen=True)
class ReplaceAll:
    """Written to an :class:`AppendStrategy` key: the list becomes ``items`` (Spring AI
    Alibaba's ``ReplaceAllWith``); the key's next writes append again.

    Example:
        >>> AppendStrategy().merge(["a", "b"], ReplaceAll(["c"]))
        ['c']
    """

    items: Sequence[Any] = ()


class AppendStrategy(KeyStrategy):
    """List values grow: the update (one item or a list) is appended.

    Items that are :class:`~graphagent.messages.Message` follow ``add_messages``:
    an existing id is replaced in place and :class:`RemoveMessage` deletes. For other
    items, :class:`RemoveValue` removes the first equal item and :class:`ReplaceAll`
    replaces the whole list.

    Args:
        messages: coerce every item to a message (a string is a user message, a
            ``{"role": ...}`` dict its role's message), as ``add_messages`` does. A
            schema's ``"messages"`` key gets this unless ``messages=False`` is given.
        allow_duplicates: ``False`` appends only items not already in the list (by
            ``==``; Spring AI Alibaba's ``AppendStrategy(false)``).

    Example:
        >>> AppendStrategy().merge([1], [2, 3])
        [1, 2, 3]
        >>> AppendStrategy(allow_duplicates=False).merge([1, 2], [2, 3, 3])
        [1, 2, 3]
        >>> AppendStrategy(messages=True).merge([], "hi")[0].role
        'user'
    """

    replaces = False

    def __init__(self, *, messages: bool | None = None, allow_duplicates: bool = True) -> None:
        self.messages = messages
        self.allow_duplicates = allow_duplicates

    def empty(self) -> list[Any]:
        """``[]``: what the key reads as before its first write."""
        return []

    def merge(self, old: Any, new: Any) -> Any:
        """Return the old list with ``new`` appended (messages merged by id)."""
        return self.merge_change(old, new)[0]

    def merge_change(self, old: Any, new: Any) -> tuple[list[Any], Change]:
        """Merge and report the change: ``Change("append", items)`` or, when a message
        was replaced or removed, ``Change("reset", whole)``."""
        base: Sequence[Any] = () if old is MISSING or old is None else old
        cls = type(new)
        items = list(new) if cls is list or cls is tuple else _as_items(new)
        # a one-item update is scanned for markers in ~0.19 us with map + isdisjoint, ~0.42 us
        # with a generator (timeit, this machine): every append pays it
        if (not self.allow_duplicates and not self.messages) or not _MARKER_TYPES.isdisjoint(
            map(type, items)
        ):
            return self._edited(base, items)
        if self.messages:
            items = [i if isinstance(i, Message) else coerce_message(i) for i in items]
        # a saver's read hands its message log on indexed (checkpoint.base.IndexedList)
        kind = type(base)
        ids = getattr(base, "ids", None) if kind is _IdList or kind is IndexedList else None
        if ids is None:
            ids = {m.id: i for i, m in enumerate(base) if isinstance(m, Message)}
        n = len(base)
        fresh: set[str] = set()
        for item in items:
            if not isinstance(item, Message):
                continue
            iid = item.id
            if iid in fresh or isinstance(item, RemoveMessage):
                return self._slow(base, items)
            pos = ids.get(iid)
            if pos is not None and (
                (pos < n and base[pos].id == iid) or any(m.id == iid for m in base)
            ):
                return self._slow(base, items)
            fresh.add(iid)
        merged = _IdList(base)
        merged.extend(items)
        for offset, item in enumerate(items, n):
            if isinstance(item, Message):
                ids[item.id] = offset
        merged.ids = ids
        return merged, Change("append", items)

    def _edited(self, base: Sequence[Any], items: list[Any]) -> tuple[list[Any], Change]:
        """Items holding :class:`ReplaceAll` / :class:`RemoveValue`, or appended without
        duplicates: the new list and its change."""
        whole = list(base)
        edits = False
        added: list[Any] = []
        for item in items:
            kind = type(item)
            if kind is ReplaceAll:
                whole, added, edits = list(item.items), [], True
            elif kind is RemoveValue:
                edits = True
                for at, present in enumerate(whole):
                    if present == item.value:
                        del whole[at]
                        break
            elif self.allow_duplicates or item not in whole:
                whole.append(item)
                added.append(item)
        if not edits:
            return whole, Change("append", added)
        if self.messages:
            whole = [i if isinstance(i, Message) else coerce_message(i) for i in whole]
            return self._slow((), whole)
        return whole, Change("reset", list(whole))

    @staticmethod
    def _slow(base: Sequence[Any], items: list[Any]) -> tuple[list[Any], Change]:
        whole = _IdList(add_messages(base, items))
        whole.ids = {m.id: i for i, m in enumerate(whole) if isinstance(m, Message)}
        return whole, Change("reset", list(whole))

    def __repr__(self) -> str:
        args = [] if self.messages is None else [f"messages={self.messages}"]
        if not self.allow_duplicates:
            args.append("allow_duplicates=False")
        return f"AppendStrategy({', '.join(args)})"


_MARKERS = (RemoveValue, ReplaceAll)
_MARKER_TYPES = frozenset(_MARKERS)


def _as_items(new: Any) -> list[Any]:
    if isinstance(new, (str, bytes, Mapping, Message, RemoveValue, ReplaceAll)) or not isinstance(
        new, Iterable
    ):
        return [new]
    return list(new)


class _FunctionStrategy(KeyStrategy):
    """Wraps an ``(old, new) -> merged`` callable."""

    replaces = False

    def __init__(self, fn: Callable[[Any, Any], Any], initial: Callable[[], Any] | None) -> None:
        self.fn = fn
        self.initial = initial

    def empty(self) -> Any:
        return MISSING if self.initial is None else self.initial()

    def merge(self, old: Any, new: Any) -> Any:
        if old is MISSING:
            if self.initial is None:
                return new
            old = self.initial()
        return self.fn(old, new)

    def __repr__(self) -> str:
        return f"FunctionStrategy({getattr(self.fn, '__name__', self.fn)!r})"


class _Adapted(KeyStrategy):
    """An object with a ``merge`` method but not the whole protocol, given its defaults."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.replaces = bool(getattr(inner, "replaces", False))
        self._merge_change = getattr(inner, "merge_change", None)
        self._empty = getattr(inner, "empty", None)

    def merge(self, old: Any, new: Any) -> Any:
        return self.inner.merge(old, new)

    def merge_change(self, old: Any, new: Any) -> tuple[Any, Change]:
        if self._merge_change is not None:
            merged, change = self._merge_change(old, new)
            return merged, Change(*change)
        merged = self.inner.merge(old, new)
        return merged, Change("set", merged)

    def empty(self) -> Any:
        return self._empty() if callable(self._empty) else MISSING

    def __repr__(self) -> str:
        return repr(self.inner)


def takes_two(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` can be called as ``fn(old, new)`` (unknown signatures pass)."""
    try:
        inspect.signature(fn).bind(MISSING, MISSING)
    except TypeError:
        return False
    except ValueError:  # builtins without a signature, e.g. some C functions
        return True
    return True


def arity_problem(strategy: Any) -> str | None:
    """Why ``strategy`` cannot merge ``(old, new)``, or ``None`` when it can."""
    if isinstance(strategy, _Adapted):
        strategy = strategy.inner
    fn = strategy.fn if isinstance(strategy, _FunctionStrategy) else strategy.merge
    if takes_two(fn):
        return None
    what = (
        "the merge function" if isinstance(strategy, _FunctionStrategy) else f"{strategy!r}.merge"
    )
    return f"{what} must take (old, new), but its signature is {_signature(fn)}"


def _signature(fn: Callable[..., Any]) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "unknown"


def empty_factory(strategy: KeyStrategy) -> Callable[[], Any] | None:
    """What makes the key's value before its first write, or ``None`` (the key is absent)."""
    if isinstance(strategy, _FunctionStrategy):
        return strategy.initial
    if strategy.empty() is MISSING:
        return None
    return strategy.empty


def as_strategy(value: Any, value_type: Any = None) -> KeyStrategy:
    """Turn a strategy, a strategy class, or an ``(old, new)`` callable into a strategy.

    Args:
        value: the declared strategy.
        value_type: the key's type, when known; a callable's first merge starts from
            ``value_type()`` (e.g. ``[]`` for ``list``) instead of taking the update as is.

    Raises:
        TypeError: ``value`` is neither a strategy nor a callable.
    """
    if isinstance(value, type) and issubclass(
        value, (ReplaceStrategy, AppendStrategy, MergeStrategy)
    ):
        return value()
    if isinstance(value, KeyStrategy):
        return value
    if hasattr(value, "merge") and callable(value.merge):
        return _Adapted(value)
    if callable(value):
        origin = getattr(value_type, "__origin__", value_type)
        initial = origin if isinstance(origin, type) and origin in (list, dict, set, str) else None
        if origin in (int, float):
            initial = origin
        return _FunctionStrategy(value, initial)
    raise TypeError(
        f"{value!r} is not a key strategy; use ReplaceStrategy(), AppendStrategy(), "
        "MergeStrategy() or an (old, new) -> merged callable"
    )


def _register_markers() -> None:
    # a step that pauses stores its finished nodes' updates, markers included
    from checkpoint.serde import base_serde

    for cls in _MARKERS:
        if not base_serde.is_registered(cls):
            base_serde.register(cls, name=f"graphagent.{cls.__name__}")


_register_markers()
