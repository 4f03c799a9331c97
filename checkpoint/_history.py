"""Listing a thread's history in time linear in what is stored: pure, no I/O.

Rebuilding each listed checkpoint on its own reads and decodes every item of its
state, so listing ``n`` checkpoints of a growing conversation costs ``n²/2`` item
reads. Consecutive checkpoints share almost all of their state (a checkpoint stores
only its step's changes, see ``_layout``), so a listing reads the union of the
fields its records need once (:func:`needed_fields`), and :class:`History` decodes
each of them at most once, on first use, and builds a checkpoint's state only when
that checkpoint is read. States built from one history share the decoded values
and items they have in common (the lists and the dict around them are new).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, overload

from checkpoint import _layout as layout
from checkpoint._stored import located
from checkpoint.base import Checkpoint, CheckpointHistory, PendingWrite
from checkpoint.errors import SerializationError

__all__ = ["History", "needed_fields"]

Loads = Callable[[bytes], Any]
_MISSING: Any = object()


def needed_fields(records: Sequence[layout.Record], stored: int | None = None) -> list[str]:
    """Every data field that any of ``records`` needs, each once.

    Costs the records' number of ranges plus the distinct fields, not the sum of the
    states' sizes: the spans of one log branch are merged before any name is made.

    Args:
        records: the listed records.
        stored: how many data fields the thread stores: a record claiming more items
            than that is damaged, and is refused before anything is allocated for it.

    Raises:
        SerializationError: the records need more fields than ``stored``.
    """
    versions: dict[str, None] = {}
    spans: dict[tuple[str, str], set[tuple[int, int]]] = {}
    for record in records:
        if stored is not None:
            layout.check_claim(record, stored)
        versions.update(dict.fromkeys(record.vals.values()))
        for key, ranges in record.logs.items():
            for branch, start, end in ranges:
                spans.setdefault((key, branch), set()).add((start, end))
    fields = [layout.val_field(version) for version in versions]
    for (key, branch), found in spans.items():
        reach = 0
        for start, end in sorted(found):
            if end > reach:
                first = max(start, reach)
                if stored is not None and len(fields) + end - first > stored:
                    raise layout.damaged(
                        None,
                        f"the listed records name more than the {stored} stored values and "
                        f"list items the thread holds (items {first}..{end} of {key!r})",
                    )
                stem = layout.log_stem(key, branch)
                fields.extend([f"{stem}{i}" for i in range(first, end)])
                reach = end
    return fields


class History(CheckpointHistory):
    """A thread's listed checkpoints, newest first, built from what one listing read.

    Args:
        thread_id: the thread.
        records: the listed checkpoints' records, newest first.
        blobs: every field of :func:`needed_fields` (``None``: not stored any more).
        pending: checkpoint id -> task -> that task's encoded pending writes.
        loads: the value decoder.
    """

    def __init__(
        self,
        thread_id: str,
        records: Sequence[layout.Record],
        blobs: dict[str, bytes | None],
        pending: Mapping[str, Mapping[str, bytes]],
        loads: Loads,
    ) -> None:
        self.thread_id = thread_id
        self._records = list(records)
        self._blobs = blobs
        self._pending = pending
        self._loads = loads
        self._sets: dict[str, dict[str, Any]] = {}
        # (key, branch) -> decoded items by index; every index below _whole[...] is decoded
        self._items: dict[tuple[str, str], list[Any]] = {}
        self._whole: dict[tuple[str, str], int] = {}
        # a blob is dropped once decoded: two threads building at once must not both
        # see an item as undecoded and the second find its bytes gone
        self._decoding = threading.Lock()

    def __len__(self) -> int:
        return len(self._records)

    @property
    def complete(self) -> bool:
        """Whether every field the listing needs was found (before any was decoded)."""
        return None not in self._blobs.values()

    @overload
    def __getitem__(self, index: int) -> Checkpoint: ...

    @overload
    def __getitem__(self, index: slice) -> list[Checkpoint]: ...

    def __getitem__(self, index: int | slice) -> Checkpoint | list[Checkpoint]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        record = self._records[index]
        return layout.to_checkpoint(
            self.thread_id, record, self._values(record), self._writes(record)
        )

    def __iter__(self) -> Iterator[Checkpoint]:
        for i in range(len(self)):
            yield self[i]

    def bare(self, index: int) -> Checkpoint:
        """Checkpoint ``index`` without its state (``values`` is empty): no value is read."""
        record = self._records[index]
        return layout.to_checkpoint(self.thread_id, record, {}, self._writes(record))

    def values(self, index: int) -> dict[str, Any]:
        """The state at checkpoint ``index``, built now."""
        return self._values(self._records[index])

    def size(self, index: int, key: str) -> int | None:
        """How many items the appended key ``key`` holds at checkpoint ``index``.

        ``None`` when ``key`` is not an appended (list) key there; nothing is decoded.
        """
        ranges = self._records[index].logs.get(key)
        return None if ranges is None else sum(end - start for _, start, end in ranges)

    def keys(self, index: int) -> list[str]:
        """The state keys of checkpoint ``index`` (nothing is decoded)."""
        record = self._records[index]
        return [*record.vals, *record.logs]

    def changed(self, index: int, other: int | None) -> list[str]:
        """The keys whose value differs between checkpoints ``index`` and ``other``
        (``None``: every key of ``index``).

        Keys stored alike (the same value version, the same log ranges) are equal
        without a look; the others compare their one value, or their lengths, so no
        state is built.
        """
        if other is None:
            return self.keys(index)
        a, b = self._records[index], self._records[other]
        out = []
        with self._decoding:
            for key in dict.fromkeys([*a.vals, *a.logs, *b.vals, *b.logs]):
                if key in a.vals and key in b.vals:
                    if a.vals[key] == b.vals[key]:
                        continue
                    mine = self._set(a.vals[key], key).get(key, _MISSING)
                    theirs = self._set(b.vals[key], key).get(key, _MISSING)
                    if mine is theirs or _equal(mine, theirs):
                        continue
                elif key in a.logs and key in b.logs:
                    if a.logs[key] == b.logs[key]:
                        continue
                    if self.size(index, key) == self.size(other, key) and _equal(
                        self._log(key, a.logs[key]), self._log(key, b.logs[key])
                    ):
                        continue
                out.append(key)
        return out

    # -- building -----------------------------------------------------------------

    def _writes(self, record: layout.Record) -> list[PendingWrite]:
        try:
            return layout.group_writes(self._pending.get(record.id, {}), self._loads)
        except SerializationError as exc:
            located(exc, self.thread_id, record.id)
            raise

    def _values(self, record: layout.Record) -> dict[str, Any]:
        with self._decoding:
            try:
                return self._build(record)
            except SerializationError as exc:
                located(exc, self.thread_id, record.id)
                raise

    def _build(self, record: layout.Record) -> dict[str, Any]:
        values: dict[str, Any] = {}
        for key, version in record.vals.items():
            written = self._set(version, key)
            if key not in written:
                raise SerializationError(f"stored data for key {key!r} is missing")
            values[key] = written[key]
        for key, ranges in record.logs.items():
            values[key] = self._log(key, ranges)
        return values

    def _log(self, key: str, ranges: Sequence[tuple[str, int, int]]) -> list[Any]:
        if len(ranges) == 1:
            branch, start, end = ranges[0]
            return self._segment(key, branch, start, end)[start:end]
        items: list[Any] = []
        for branch, start, end in ranges:
            items.extend(self._segment(key, branch, start, end)[start:end])
        return items

    def _take(self, field: str, key: str) -> bytes:
        # each blob is decoded once, so its bytes can go as soon as it is
        blob = self._blobs.pop(field, None)
        if blob is None:
            raise SerializationError(
                f"stored data for key {key!r} is missing (the thread was pruned or expired "
                "while being read)"
            )
        return blob

    def _set(self, version: str, key: str) -> dict[str, Any]:
        written = self._sets.get(version)
        if written is None:
            written = self._loads(self._take(layout.val_field(version), key))
            if not isinstance(written, dict):
                raise layout.damaged(
                    version,
                    f"the values it set (field {layout.val_field(version)!r}) are not a map",
                )
            self._sets[version] = written
        return written

    def _segment(self, key: str, branch: str, start: int, end: int) -> list[Any]:
        """The decoded items of one log branch, holding at least ``start..end``."""
        slot = (key, branch)
        items = self._items.get(slot)
        if items is None:
            items = self._items[slot] = []
        whole = self._whole.get(slot, 0)
        if end <= whole:
            return items
        if len(items) < end:
            items.extend([_MISSING] * (end - len(items)))
        for index in range(max(start, whole), end):
            if items[index] is _MISSING:
                items[index] = self._loads(self._take(layout.log_field(key, branch, index), key))
        while whole < len(items) and items[whole] is not _MISSING:
            whole += 1
        self._whole[slot] = whole
        return items


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # a value whose == raises or is not a bool (arrays)
        return False
