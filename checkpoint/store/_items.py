"""The store's public shapes: ``Item``, ``SearchItem``, the four ops a batch takes, and the
checked requests ``BaseStore`` hands its backends (``_Put``, ``_Search``, ``_Listing``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any, NamedTuple, Union

from checkpoint.store import _core as core

__all__ = [
    "NOT_PROVIDED",
    "Candidate",
    "GetOp",
    "Item",
    "ListNamespacesOp",
    "Op",
    "PutOp",
    "SearchItem",
    "SearchOp",
]


class _NotProvided:
    def __repr__(self) -> str:
        return "NOT_PROVIDED"


NOT_PROVIDED: Any = _NotProvided()
"""Marks a ``ttl`` left out (the store's default applies); ``ttl=None`` means never expire."""


def _stamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=timezone.utc)


class Item:
    """One stored value: ``namespace``, ``key``, ``value`` (a dict of your own),
    ``created_at`` (kept across updates) and ``updated_at`` (timezone-aware UTC)."""

    __slots__ = ("_created", "_ttl", "_updated", "key", "namespace", "value")

    def __init__(
        self,
        *,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime | float,
        updated_at: datetime | float,
    ) -> None:
        self.namespace = tuple(namespace)
        self.key = key
        self.value = value
        self._created = created_at
        self._updated = updated_at
        self._ttl = True  # whether a read should restart a TTL (False: the store knows none)

    @property
    def created_at(self) -> datetime:
        """When the item was first put (an update keeps it)."""
        if not isinstance(self._created, datetime):
            self._created = _stamp(self._created)
        return self._created

    @property
    def updated_at(self) -> datetime:
        """When the item was last put."""
        if not isinstance(self._updated, datetime):
            self._updated = _stamp(self._updated)
        return self._updated

    def dict(self) -> dict[str, Any]:
        """The item as plain data (timestamps as ISO text), e.g. for JSON."""
        return {
            "namespace": list(self.namespace),
            "key": self.key,
            "value": self.value,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Item):
            return NotImplemented
        return (
            self.namespace == other.namespace
            and self.key == other.key
            and self.value == other.value
            and self.created_at == other.created_at
            and self.updated_at == other.updated_at
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.key))

    def _updated_key(self) -> float:
        stamp = self._updated
        return stamp.timestamp() if isinstance(stamp, datetime) else stamp

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(namespace={self.namespace!r}, key={self.key!r}, "
            f"value={self.value!r}, created_at={self.created_at.isoformat()!r}, "
            f"updated_at={self.updated_at.isoformat()!r})"
        )


_new = object.__new__


def new_item(
    namespace: tuple[str, ...], key: str, value: dict[str, Any], created: float, updated: float
) -> Item:
    """An ``Item`` from a store's own checked parts, without ``__init__``'s keyword call
    (the memory store's get is a few hundred nanoseconds; the call was a third of it)."""
    item: Item = _new(Item)
    item.namespace = namespace
    item.key = key
    item.value = value
    item._created = created
    item._updated = updated
    item._ttl = True
    return item


class SearchItem(Item):
    """An item a search found; ``score`` is its cosine similarity to the query (``None``
    without a semantic query, or for an item stored with ``index=False``)."""

    __slots__ = ("score",)

    def __init__(
        self,
        *,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime | float,
        updated_at: datetime | float,
        score: float | None = None,
    ) -> None:
        super().__init__(
            namespace=namespace,
            key=key,
            value=value,
            created_at=created_at,
            updated_at=updated_at,
        )
        self.score = score

    @property
    def response_metadata(self) -> dict[str, Any]:
        """LangGraph's spelling: ``{"score": ...}`` when scored."""
        return {} if self.score is None else {"score": self.score}

    def dict(self) -> dict[str, Any]:
        """The item as plain data, with its score."""
        return {**super().dict(), "score": self.score}

    def __eq__(self, other: object) -> bool:
        same = super().__eq__(other)
        if same is NotImplemented or not same:
            return same
        return not isinstance(other, SearchItem) or other.score == self.score

    __hash__ = Item.__hash__


class GetOp(NamedTuple):
    """Read one item (``refresh_ttl=None``: the store's ``refresh_on_read``)."""

    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool | None = None


class PutOp(NamedTuple):
    """Write one item; ``value=None`` deletes it. ``index``: ``None`` (the store's fields),
    ``False`` (no embedding) or a list of fields; ``ttl`` in minutes."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None
    index: Any = None
    ttl: Any = NOT_PROVIDED


class SearchOp(NamedTuple):
    """Find items under a namespace prefix, by filter and optional query."""

    namespace_prefix: tuple[str, ...]
    filter: dict[str, Any] | None = None
    limit: int = 10
    offset: int = 0
    query: str | None = None
    refresh_ttl: bool | None = None


class ListNamespacesOp(NamedTuple):
    """List namespaces holding live items ("*" matches any one label)."""

    prefix: tuple[str, ...] | None = None
    suffix: tuple[str, ...] | None = None
    max_depth: int | None = None
    limit: int = 100
    offset: int = 0


Op = Union[GetOp, PutOp, SearchOp, ListNamespacesOp]  # noqa: UP007 (a runtime alias on 3.10)


class _Put(NamedTuple):
    """A checked put: ``value`` owned, ``vectors`` as ``(field, unit vector)`` pairs."""

    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None
    vectors: list[tuple[str, list[float]]]
    ttl: float | None


class _Search(NamedTuple):
    """A checked search."""

    prefix: tuple[str, ...]
    conditions: list[core.Condition]
    limit: int
    offset: int
    needle: str | None  # casefolded text query on a store without an index
    query: list[float] | None  # unit query vector on an indexed store
    refresh: bool


class _Listing(NamedTuple):
    """A checked namespace listing."""

    prefix: tuple[str, ...] | None
    suffix: tuple[str, ...] | None
    max_depth: int | None
    limit: int
    offset: int


Candidate = tuple[SearchItem, Sequence[Sequence[float]]]
