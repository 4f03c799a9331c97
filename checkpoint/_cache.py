"""A saver's cache of decoded list items, so a turn does not decode the history again.

Starting a turn reads the thread's head and rebuilds its state: on a long conversation,
decoding every stored message is most of the turn's cost. But what a log item's field
holds never changes once written (``_layout``: a branch ``b`` of key ``k`` is named by the
checkpoint that started it, only its owner line extends it, and a write that loses the
head check writes nothing), so a decoded item stays right for as long as the thread
exists. This cache keeps, per thread, the decoded items of each log branch it read (a
window ``lo..hi`` of item indices) and the stored bytes of each value map. A read asks
:meth:`ReadCache.plan` which data fields the head's record needs that the cache lacks
(the items written since the last read: a delta), fetches only those, and
:meth:`ReadPlan.build` assembles the state.

Nothing is invalidated by time or by guessing: the record the store names as the head
says exactly which items the state holds, so a write by another process (a fork, an
``update_state``, a second worker) shows up as a record naming branches and indices this
cache does not hold yet, which are then read. ``delete_thread`` drops the thread's entry.

Reads never hand out a shared object that can change: list items are shared only when
the serde says they cannot change (text, numbers, the library's messages, whose metadata
is read-only once decoded; see :meth:`~checkpoint.serde.Serde.shareable`); other items
keep their bytes and are decoded for each read, and so are value maps (``set`` keys).
Lists and the state dict are new on every read.

Bounded by threads and by the stored bytes of what it holds (with its id index), least
recently read first out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from itertools import count, islice
from typing import Any, cast

from checkpoint import _layout as layout
from checkpoint._stored import located
from checkpoint.base import IndexedList
from checkpoint.errors import SerializationError
from checkpoint.serde import Serde

__all__ = ["ReadCache", "ReadPlan"]

Slot = tuple[str, str]  # (key, branch)


class _Raw(bytes):
    """An item that is decoded for each read (it could change in a caller's hands)."""

    __slots__ = ()


class _Window:
    """Decoded items ``lo..lo + len(items)`` of one log branch; only ever extended.

    ``ids`` indexes the items' ids by position from ``lo`` (see ``IndexedList``): a
    read whose log is this window from ``lo`` hands on a copy, so that appending to the
    log needs no pass over it.
    """

    __slots__ = ("ids", "items", "lo", "raw", "size")

    def __init__(self, lo: int) -> None:
        self.lo = lo
        self.items: list[Any] = []
        self.ids: dict[Any, int] = {}
        self.raw = 0  # how many items are _Raw
        self.size = 0  # stored bytes of the items, and their index's entries

    @property
    def hi(self) -> int:
        return self.lo + len(self.items)


class _Thread:
    __slots__ = ("last", "sets", "size", "windows")

    def __init__(self) -> None:
        self.windows: dict[Slot, _Window] = {}
        self.sets: dict[str, bytes] = {}  # value map version -> its stored bytes
        self.size = 0
        self.last: tuple[Slot, ...] = ()  # the branches the latest fetching read ended on


class ReadCache:
    """A saver's decoded list items of the threads it read, so a turn decodes only what was
    written since the last.

    Every saver has one as ``read_cache``. A read is checked against the record the store
    names as the head, so another process's writes (turns, forks, ``update_state``) are
    read, never missed. Items shared between reads are immutable (messages, text,
    numbers); others are decoded for each read. A saver takes another as
    ``saver.read_cache = ReadCache(saver.serde, ...)``; ``max_bytes=0`` holds nothing.

    Args:
        serde: the saver's codec.
        max_threads: threads held at most; the least recently read goes first.
        max_bytes: stored bytes of the items held, plus :attr:`ID_ENTRY_BYTES` per
            entry of their message-id index, at most (decoded objects take a few times
            more memory); a thread larger than this alone is not held.

    Example:
        >>> from checkpoint import MemorySaver
        >>> saver = MemorySaver()
        >>> saver.read_cache.max_threads
        1024
    """

    ID_ENTRY_BYTES = 48
    """What one entry of a log's message-id index counts toward ``max_bytes`` (a dict
    entry and its position: ~33-48 bytes measured for 100-10,000 ids)."""

    def __init__(self, serde: Serde, *, max_threads: int = 1024, max_bytes: int = 64 << 20) -> None:
        self.serde = serde
        self.max_threads = max_threads
        self.max_bytes = max_bytes
        self._threads: OrderedDict[str, _Thread] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    @property
    def size(self) -> int:
        """Bytes counted for what is held now (see ``max_bytes``)."""
        return self._size

    def __len__(self) -> int:
        return len(self._threads)

    def __contains__(self, thread_id: object) -> bool:
        return thread_id in self._threads

    def clear(self) -> None:
        """Forget every thread."""
        with self._lock:
            self._threads.clear()
            self._size = 0

    def forget(self, thread_id: str) -> None:
        """Forget one thread (its saver deleted it)."""
        with self._lock:
            held = self._threads.pop(thread_id, None)
            if held is not None:
                self._size -= held.size

    def plan(self, thread_id: str, record: layout.Record) -> ReadPlan:
        """What reading ``record``'s state needs from the store, given what is held."""
        with self._lock:
            held = self._threads.get(thread_id) if self.max_bytes > 0 else None
            if held is not None:
                self._threads.move_to_end(thread_id)
            return ReadPlan(self, thread_id, record, held)

    def guess(self, thread_id: str, ahead: int) -> list[str]:
        """The data fields a next read of the thread likely needs: the ``ahead`` items
        after what is held of each log branch its latest read ended on (what a turn
        appends). A driver may fetch them with the head, saving a round trip.

        Args:
            thread_id: the thread.
            ahead: how many items per branch.

        Example:
            >>> from checkpoint import MemorySaver
            >>> MemorySaver().read_cache.guess("never-read", 16)
            []
        """
        with self._lock:
            held = self._threads.get(thread_id)
            if held is None:
                return []
            out: list[str] = []
            for slot in held.last:
                window = held.windows.get(slot)
                if window is not None:
                    stem = layout.log_stem(*slot)
                    out.extend([f"{stem}{i}" for i in range(window.hi, window.hi + ahead)])
            return out

    def _keep(self, thread_id: str, held: _Thread) -> None:
        """Hold ``held`` (new or grown) and evict down to the bounds; under the lock."""
        self._threads[thread_id] = held
        self._threads.move_to_end(thread_id)
        if held.size > self.max_bytes:  # too large alone: not held
            del self._threads[thread_id]
            self._size -= held.size
        while len(self._threads) > self.max_threads or self._size > self.max_bytes:
            _, gone = self._threads.popitem(last=False)
            self._size -= gone.size


# what a read fetched of one branch: its slot, first index, items (_Raw where they could
# change), how many are _Raw, their stored bytes, the index it handed on (or None) and
# the items all decoded, and their ids as the decoder gave them (or None)
_Fetched = tuple[
    Slot, int, list[Any], int, int, "dict[Any, int] | None", list[Any], "list[Any] | None"
]


def _index(
    ids: dict[Any, int], items: Sequence[Any], at: int, keys: Sequence[Any] | None = None
) -> None:
    """Add the position (from ``at``) of each of ``items`` with a text ``id`` to ``ids``
    (what ``IndexedList`` promises: every message has an entry). ``keys``: the items' ids
    as the batch decoder gave them (it built every item), so that
    no message is asked for its id: pydantic's ``__getattr__`` hook makes ``message.id``
    ~1k instructions, ~10M on a cold read of 10,000 messages."""
    if keys is not None:
        ids.update(zip(keys, count(at)))
        return
    try:
        ids.update({item.id: i for i, item in enumerate(items, at)})
        return
    except (AttributeError, TypeError):
        pass  # not all messages: only those with an id
    for i, item in enumerate(items, at):
        iid = getattr(item, "id", None)
        if type(iid) is str:
            ids[iid] = i


# one log range of the record: key, branch, start, end, the window held for it (or
# None), and the first index fetched (``end``: none)
_Part = tuple[str, str, int, int, "_Window | None", int]


class ReadPlan:
    """One read's plan: :attr:`fields` to fetch, then :meth:`build` with their bytes.

    Attributes:
        count: how many data fields it reads.
        singles: the value-map fields among them (they come first).
        spans: the log items among them, as ``(key, branch, start, end)``: fields
            ``log_stem(key, branch) + str(i)`` for ``start <= i < end``, in this order.
    """

    __slots__ = (
        "_cache",
        "_fields",
        "_parts",
        "_record",
        "_sets",
        "_thread_id",
        "count",
        "singles",
        "spans",
    )

    def __init__(
        self, cache: ReadCache, thread_id: str, record: layout.Record, held: _Thread | None
    ) -> None:
        self._cache = cache
        self._thread_id = thread_id
        self._record = record
        # what is held now: windows only grow, so the parts below stay valid
        versions = dict.fromkeys(record.vals.values())
        held_sets = held.sets if held is not None else {}
        self._sets = {v: held_sets[v] for v in versions if v in held_sets}
        windows = held.windows if held is not None else {}
        self.singles = [layout.val_field(v) for v in versions if v not in self._sets]
        self.spans: list[tuple[str, str, int, int]] = []
        self._parts: list[_Part] = []
        for key, ranges in record.logs.items():
            for branch, start, end in ranges:
                window = windows.get((key, branch))
                if window is not None and window.lo <= start <= window.hi:
                    first = min(max(window.hi, start), end)
                else:
                    window, first = None, start
                self._parts.append((key, branch, start, end, window, first))
                if first < end:
                    self.spans.append((key, branch, first, end))
        self.count = len(self.singles) + sum(end - first for _, _, first, end in self.spans)
        self._fields: list[str] | None = None

    @property
    def fields(self) -> list[str]:
        """The data fields to read, in the order :meth:`build` takes their bytes (named
        when first asked: check :attr:`count` against what the thread stores before)."""
        if self._fields is None:
            fields = list(self.singles)
            for key, branch, start, end in self.spans:
                stem = layout.log_stem(key, branch)
                fields.extend([f"{stem}{i}" for i in range(start, end)])
            self._fields = fields
        return self._fields

    def build(self, blobs: Sequence[bytes | None]) -> dict[str, Any]:
        """The state at the record, from the stored bytes of :attr:`fields` (same order;
        ``None``: not stored). What was fetched is held for later reads.

        Raises:
            SerializationError: a field is missing or damaged (nothing is held then),
                naming the checkpoint.
        """
        try:
            return self._build(blobs)
        except SerializationError as exc:
            located(exc, checkpoint_id=self._record.id)
            raise

    def _build(self, blobs: Sequence[bytes | None]) -> dict[str, Any]:
        record, cache = self._record, self._cache
        serde = cache.serde
        loads, loads_keyed = serde.loads, serde.loads_keyed
        it = iter(blobs)
        fresh_sets = {name[2:]: _present(next(it), "?") for name in self.singles}
        sets = {**self._sets, **fresh_sets} if fresh_sets else self._sets
        values: dict[str, Any] = {}
        decoded: dict[str, Any] = {}
        for key, version in record.vals.items():
            held = decoded.get(version)
            if held is None:
                held = decoded[version] = loads(sets[version])
                if type(held) is not dict:
                    raise layout.damaged(
                        record.id,
                        f"the values it set (field {layout.val_field(version)!r}) are not a map",
                    )
            if key not in held:
                raise SerializationError(f"stored data for key {key!r} is missing")
            values[key] = held[key]
        fetched: list[_Fetched] = []
        logs = record.logs
        for key, branch, start, end, window, first in self._parts:
            raw = 0
            # the log is this one range read from its window's start: it gets the index
            whole = len(logs[key]) == 1 and (window is None or window.lo == start)
            make: type[list[Any]] = IndexedList if whole else list
            ids: dict[Any, int] | None = None
            if window is not None:
                part = make(window.items[start - window.lo : first - window.lo])
                raw = window.raw
                if whole:
                    ids = window.ids.copy()  # the reader's own: a caller may change it
            else:
                part = make()
                if whole:
                    ids = {}
            if first < end:
                got = list(islice(it, end - first))
                if len(got) < end - first or None in got:
                    _present(None, key)
                chunk = cast("list[bytes]", got)
                items, changeable, keys = loads_keyed(chunk)
                plain = items
                if ids is not None:
                    _index(ids, items, first - start, keys)
                if changeable:
                    plain = list(items)
                    for i in changeable:
                        items[i] = _Raw(chunk[i])
                new_raw = len(changeable)
                size = sum(map(len, chunk))
                fetched.append(((key, branch), first, items, new_raw, size, ids, plain, keys))
                part.extend(items)
                raw += new_raw
            if raw:
                part = make([loads(i) if type(i) is _Raw else i for i in part])
            out = values.get(key)
            if out is None:
                if ids is not None:
                    cast("IndexedList", part).ids = ids
                values[key] = part
            else:
                out.extend(part)
        for key in record.logs:  # a log whose ranges are all empty
            values.setdefault(key, [])
        if cache.max_bytes > 0 and (fresh_sets or fetched):
            self._keep(fresh_sets, fetched)
        return values

    def _keep(self, fresh_sets: dict[str, bytes], fetched: list[_Fetched]) -> None:
        """Hold what this read fetched, extending the windows it continues."""
        cache = self._cache
        with cache._lock:
            held = cache._threads.get(self._thread_id)
            if held is None:
                held = _Thread()
            grown = 0
            if fresh_sets:
                # value maps are held for the latest read's record only: a thread of
                # 10,000 steps that each set a key would otherwise hold 10,000 of them
                used = set(self._record.vals.values())
                for version in [v for v in held.sets if v not in used]:
                    grown -= len(held.sets.pop(version))
                for version, blob in fresh_sets.items():
                    if version not in held.sets:
                        held.sets[version] = blob
                        grown += len(blob)
            for slot, first, items, raw, size, ids, plain, keys in fetched:
                window = held.windows.get(slot)
                if window is not None and window.lo <= first <= window.hi:
                    skip = window.hi - first  # another read may have extended it meanwhile
                    if skip < len(items):
                        more = items[skip:]
                        indexed = len(window.ids)
                        more_keys = keys[skip:] if keys is not None else None
                        _index(window.ids, plain[skip:], window.hi - window.lo, more_keys)
                        window.items.extend(more)
                        window.raw += sum(1 for i in more if type(i) is _Raw) if raw else 0
                        share = size * len(more) // len(items)
                        share += (len(window.ids) - indexed) * ReadCache.ID_ENTRY_BYTES
                        window.size += share
                        grown += share
                    continue
                if window is not None:  # held elsewhere in the branch: replaced
                    grown -= window.size
                window = held.windows[slot] = _Window(first)
                window.items, window.raw = items, raw
                if ids is not None:
                    window.ids = ids.copy()
                else:
                    _index(window.ids, plain, 0, keys)
                window.size = size + len(window.ids) * ReadCache.ID_ENTRY_BYTES
                grown += window.size
            logs = self._record.logs
            held.last = tuple((key, ranges[-1][0]) for key, ranges in logs.items() if ranges)
            held.size += grown
            cache._size += grown if cache._threads.get(self._thread_id) is held else held.size
            cache._keep(self._thread_id, held)


def _present(blob: bytes | None, key: str) -> bytes:
    if blob is None:
        raise SerializationError(
            f"stored data for key {key!r} is missing (the thread was pruned or expired "
            "while being read)"
        )
    return blob
