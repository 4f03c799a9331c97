"""The saver interface and the records it stores.

A graph run hands the saver one :class:`CheckpointWrite` per super-step: only the
keys the step changed, each as a change (``("set", value)``, ``("append", items)``
or ``("reset", items)``). The saver gives back whole :class:`Checkpoint` objects,
the state rebuilt from those changes.
"""

from __future__ import annotations

import asyncio
import builtins
import functools
import itertools
import random
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    AbstractContextManager,
    asynccontextmanager,
    nullcontext,
)
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NamedTuple, TypeVar, overload

from checkpoint._lockwait import ahold, hold
from checkpoint._stored import located
from checkpoint.errors import CheckpointNotFoundError, SerializationError
from checkpoint.locks import LockPolicy

__all__ = [
    "DELETE_KEPT",
    "Change",
    "ChangeKind",
    "Checkpoint",
    "CheckpointHistory",
    "CheckpointSaver",
    "CheckpointWrite",
    "IndexedList",
    "ListedHistory",
    "LockOps",
    "PendingWrite",
    "chain_of",
    "id_time",
    "new_checkpoint_id",
    "refuse_if_deleted",
]

ChangeKind = Literal["set", "append", "reset"]

T = TypeVar("T")


class Change(NamedTuple):
    """What one step did to one state key, in the form a checkpoint stores.

    ``Change("set", value)`` stores the value whole. For list values,
    ``Change("append", items)`` says the new list is the old one plus ``items`` (a saver
    stores only the items, so a step costs what it added, not the list's length), and
    ``Change("reset", items)`` that the list was replaced by ``items``.

    Example:
        >>> kind, value = Change("append", ["hi"])
        >>> kind, value
        ('append', ['hi'])
    """

    kind: ChangeKind
    value: Any


class IndexedList(list):  # type: ignore[type-arg]
    """A list with :attr:`ids`: an ``id`` -> position index of its items that have one
    (messages), which a list may share with the lists it grew from.

    A saver reads a log as one, so appending to a long history needs no pass over it.
    Every item with an ``id`` has an entry (entries are never removed), but an entry is
    a hint to check: it may point at another item (a sibling's append) or past the end.

    Example:
        >>> log = IndexedList(["a"])
        >>> log.ids = {}
        >>> log + ["b"]
        ['a', 'b']
    """

    __slots__ = ("ids",)
    ids: dict[Any, int]


@dataclass(frozen=True)
class PendingWrite:
    """Work a step finished before the step as a whole could commit.

    Attributes:
        task: the node that produced it.
        kind: ``"update"`` (the node's return value), ``"interrupt"`` (what it asked)
            or ``"resume"`` (answers it was given).
        value: the payload.
    """

    task: str
    kind: str
    value: Any


@dataclass(frozen=True)
class Checkpoint:
    """One stored state of a thread, as read back.

    Attributes:
        thread_id: the thread.
        id: unique id, roughly time-ordered (history order is the thread's write order,
            not the ids' order: hosts' clocks differ).
        parent_id: the checkpoint this one grew from (``None`` for the first).
        step: the super-step number (-1 for the input checkpoint).
        values: the whole state at this checkpoint.
        next: the nodes due to run next (empty when the run finished).
        metadata: run metadata (source, step, user metadata).
        created_at: UNIX time, seconds.
        extra: engine bookkeeping (pending joins, breakpoints); opaque to savers.
        pending_writes: work saved for this checkpoint's next step.
    """

    thread_id: str
    id: str
    parent_id: str | None
    step: int
    values: dict[str, Any]
    next: tuple[str, ...]
    metadata: dict[str, Any]
    created_at: float
    extra: dict[str, Any] = field(default_factory=dict)
    pending_writes: tuple[PendingWrite, ...] = ()


@dataclass(slots=True)
class CheckpointWrite:
    """What one super-step asks the saver to store (built once per step, so kept light).

    Attributes:
        id: the new checkpoint's id (see :func:`new_checkpoint_id`).
        parent_id: the checkpoint it grows from.
        step: super-step number.
        changes: key -> change, for the keys this step changed only.
        next: nodes due next.
        metadata: run metadata.
        created_at: UNIX time, seconds.
        extra: engine bookkeeping, stored as given.
    """

    id: str
    parent_id: str | None
    step: int
    changes: Mapping[str, Change]
    next: tuple[str, ...]
    metadata: Mapping[str, Any]
    created_at: float
    extra: Mapping[str, Any] = field(default_factory=dict)


class CheckpointHistory(Sequence[Checkpoint]):
    """A thread's listed checkpoints, newest first, each built when it is read.

    What :meth:`CheckpointSaver.history` returns: the listing read what it needs from
    the store once; indexing or iterating builds a :class:`Checkpoint` then, and
    :meth:`bare` gives one without its state, for views that show no values.
    States built from one history share the stored values and list items they have in
    common (containers are new): copy a value before changing it in place.
    """

    @abstractmethod
    def __len__(self) -> int: ...

    @overload
    def __getitem__(self, index: int) -> Checkpoint: ...

    @overload
    def __getitem__(self, index: slice) -> builtins.list[Checkpoint]: ...

    @abstractmethod
    def __getitem__(self, index: int | slice) -> Checkpoint | builtins.list[Checkpoint]: ...

    @abstractmethod
    def bare(self, index: int) -> Checkpoint:
        """Checkpoint ``index`` with empty ``values`` (nothing of its state is built)."""

    @abstractmethod
    def values(self, index: int) -> dict[str, Any]:
        """The state at checkpoint ``index``, built anew on each call."""

    @abstractmethod
    def size(self, index: int, key: str) -> int | None:
        """How many items list key ``key`` holds at checkpoint ``index``, when known
        without building the state (``None``: unknown, or not a list)."""

    def keys(self, index: int) -> builtins.list[str] | None:
        """The state keys of checkpoint ``index``, found without building the state
        (``None``: not known that way)."""
        return None

    def changed(self, index: int, other: int | None) -> builtins.list[str] | None:
        """The keys whose value differs between checkpoints ``index`` and ``other``
        (``None``: every key of ``index``), found without building either state
        (``None``: not known that way)."""
        return None


class ListedHistory(CheckpointHistory):
    """A :class:`CheckpointHistory` over checkpoints already built (any saver's ``list``).

    Example:
        >>> len(ListedHistory([]))
        0
    """

    def __init__(self, checkpoints: Sequence[Checkpoint]) -> None:
        self._checkpoints = builtins.list(checkpoints)

    def __len__(self) -> int:
        return len(self._checkpoints)

    @overload
    def __getitem__(self, index: int) -> Checkpoint: ...

    @overload
    def __getitem__(self, index: slice) -> builtins.list[Checkpoint]: ...

    def __getitem__(self, index: int | slice) -> Checkpoint | builtins.list[Checkpoint]:
        return self._checkpoints[index]

    def __iter__(self) -> Iterator[Checkpoint]:
        return iter(self._checkpoints)

    def bare(self, index: int) -> Checkpoint:
        """Checkpoint ``index`` with empty ``values``."""
        return replace(self._checkpoints[index], values={})

    def values(self, index: int) -> dict[str, Any]:
        """The state at checkpoint ``index`` (a shallow copy of the stored dict)."""
        return dict(self._checkpoints[index].values)

    def size(self, index: int, key: str) -> int | None:
        """Always ``None``: the state is at hand, count it."""
        return None


_id_lock = threading.Lock()
# Not for secrecy: the suffix only separates ids minted in the same nanosecond by
# different processes. The module-level generator is re-seeded in forked children.
_rand = random.getrandbits
_take, _give = _id_lock.acquire, _id_lock.release
_clock = time.time_ns
_last_ns = 0


def new_checkpoint_id() -> str:
    """A new checkpoint id: 16 hex digits of time (strictly rising here) + 8 random.

    Ids minted by one process sort in creation order; across hosts they only roughly do
    (clocks drift), so savers order a thread's history by its own write order, never by id.
    """
    global _last_ns
    # acquire/release rather than ``with``: one is minted per step, and nothing between
    # them can raise
    _take()
    now = _clock()
    _last_ns = stamp = now if now > _last_ns else _last_ns + 1
    _give()
    return "%024x" % ((stamp << 32) | _rand(32))


DELETE_KEPT = 86_400.0
"""Seconds a thread's delete goes on refusing writes minted before it (see
:meth:`CheckpointSaver.delete_thread`)."""


def id_time(checkpoint_id: str) -> float:
    """When a :func:`new_checkpoint_id` was minted, UNIX seconds (0.0 for other ids)."""
    try:
        return int(checkpoint_id[:16], 16) / 1e9
    except ValueError:
        return 0.0


def refuse_if_deleted(thread_id: str, first_id: str, deleted: str | None) -> None:
    """Refuse a new thread's first write minted before the thread's delete.

    A run's first step stores its input checkpoint too (``put_many``), with
    ``expected_head=None``: the thread is new to it. If the thread was deleted while that
    step ran, the write looks like a new thread's and would bring it back; its checkpoint
    ids were minted before the delete (``deleted``, an id minted by it), a new run's after.

    Raises:
        CheckpointNotFoundError: ``first_id`` sorts before ``deleted``.
    """
    if deleted is not None and first_id < deleted:
        raise CheckpointNotFoundError(
            f"thread {thread_id!r} was deleted while this run was on it; nothing was "
            "written (a delete is final). Run again with new input to start the thread anew"
        )


def chain_of(writes: Sequence[CheckpointWrite]) -> Sequence[CheckpointWrite]:
    """``writes``, checked to be a non-empty chain: each the parent of the next."""
    if not writes:
        raise ValueError("put_many needs at least one write")
    for parent, child in itertools.pairwise(writes):
        if child.parent_id != parent.id:
            raise ValueError(
                f"put_many takes a chain: write {child.id!r} grows from {child.parent_id!r}, "
                f"not from the write before it ({parent.id!r})"
            )
    return writes


LockOps = tuple[Callable[[str], bool], Callable[[str], bool], Callable[[str], None]]
"""A backend's take, renew and release of a thread's run lock (see :mod:`checkpoint.locks`)."""


@asynccontextmanager
async def _in_worker_thread(held: AbstractContextManager[None]) -> AsyncIterator[None]:
    await asyncio.to_thread(held.__enter__)
    try:
        yield
    finally:
        await asyncio.to_thread(held.__exit__, None, None, None)


# the saver methods that take a thread id first and may decode stored bytes
_READERS = (
    "get",
    "list",
    "history",
    "put",
    "put_many",
    "put_writes",
    "aget",
    "alist",
    "ahistory",
    "aput",
    "aput_many",
    "aput_writes",
)


def _naming_thread(method: Callable[..., Any]) -> Callable[..., Any]:
    """``method``, whose errors about stored bytes name the thread they were read from."""
    if asyncio.iscoroutinefunction(method):

        @functools.wraps(method)
        async def anamed(self: Any, thread_id: str, *args: Any, **kwargs: Any) -> Any:
            try:
                return await method(self, thread_id, *args, **kwargs)
            except SerializationError as exc:
                located(exc, thread_id)
                raise

        anamed.names_thread = True  # type: ignore[attr-defined]
        return anamed

    @functools.wraps(method)
    def named(self: Any, thread_id: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, thread_id, *args, **kwargs)
        except SerializationError as exc:
            located(exc, thread_id)
            raise

    named.names_thread = True  # type: ignore[attr-defined]
    return named


class CheckpointSaver(ABC):
    """Stores a thread's checkpoints. Every method has an ``a``-prefixed async twin.

    The async twins default to running the sync method in a worker thread; savers
    with a native async client (``RedisSaver``) override them.

    Attributes:
        lock_policy: set when the saver was made with ``lock_timeout=``: runs then take
            the thread's lock (see :mod:`checkpoint.locks`); ``None``: no lock.
        outlives_process: whether what it stores survives the process (``False`` for
            an in-memory saver). A run stores a step's tasks' work as each finishes
            only on a saver that does: elsewhere a crash loses it all anyway.
    """

    lock_policy: LockPolicy | None = None
    outlives_process: bool = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # every saver's errors about stored bytes name the thread (one boundary for all,
        # not one per saver: a saver written later gets it too)
        for name in _READERS:
            method = cls.__dict__.get(name)
            default = CheckpointSaver.__dict__.get(name)  # taken as it is (see history)
            if callable(method) and method is not default and not hasattr(method, "names_thread"):
                setattr(cls, name, _naming_thread(method))

    def _lock_ops(self, thread_id: str, policy: LockPolicy) -> LockOps | None:
        """Take, renew and release of the thread's run lock: each one short call that
        never waits for the lock (``None``: the saver has no lock of its own)."""
        return None

    def lock(self, thread_id: str) -> AbstractContextManager[None]:
        """Hold the thread's run lock for a ``with`` block (a no-op without a policy).

        Raises:
            ThreadLockedError: another run kept it longer than the policy's timeout.
        """
        policy = self.lock_policy
        ops = None if policy is None else self._lock_ops(thread_id, policy)
        if policy is None or ops is None:
            return nullcontext()
        return hold(policy, thread_id, *ops)

    def alock(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """Async :meth:`lock`: the waiting happens on the event loop, each try in a worker.

        Waiting inside a worker thread would hold it for up to the lock's timeout: a
        handful of waiters then take the whole pool, and the run holding the lock can no
        longer reach its own checkpoints (a deadlock until ``lock_timeout``).
        """
        policy = self.lock_policy
        if policy is None:
            return nullcontext()
        ops = self._lock_ops(thread_id, policy)
        if ops is None:  # a saver that overrides lock() alone: its own way of waiting
            return _in_worker_thread(self.lock(thread_id))
        take, renew, release = ops

        async def atake(token: str) -> bool:
            return await self._to_thread(take, token)

        async def arenew(token: str) -> bool:
            return await self._to_thread(renew, token)

        async def arelease(token: str) -> None:
            await self._to_thread(release, token)

        return ahold(policy, thread_id, atake, arenew, arelease)

    @abstractmethod
    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Store ``write`` as the thread's new head, atomically.

        Args:
            thread_id: the thread.
            write: the new checkpoint's changes and bookkeeping.
            expected_head: the head the writer read (``None``: the thread is new).

        Raises:
            CheckpointConflictError: the head is not ``expected_head``; nothing written.
        """

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes (each the parent of the next) as one step: the last
        becomes the head, and either all of them land or none does.

        A run stores its input checkpoint this way together with its first step, so a
        run that loses a race leaves nothing behind. This default stores them one by
        one; a saver that can make them atomic overrides it (every saver here does).

        Raises:
            CheckpointConflictError: the head is not ``expected_head``; nothing written.
            ValueError: the writes are not a chain growing from one another.
        """
        head = expected_head
        for write in chain_of(writes):
            self.put(thread_id, write, expected_head=head)
            head = write.id

    @abstractmethod
    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep finished work of the step after ``checkpoint_id`` until that step commits.

        Raises:
            CheckpointNotFoundError: the thread has no such checkpoint (it was deleted,
                expired or pruned meanwhile); nothing written.
        """

    @abstractmethod
    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The thread's head (or the given checkpoint); ``None`` for an unknown thread.

        Raises:
            CheckpointNotFoundError: the thread exists but has no such checkpoint.
        """

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """The thread's checkpoints, newest first, optionally only those before an id.

        This default builds every checkpoint :meth:`history` lists. A saver implements
        ``list`` or ``history`` (each defaults to the other).
        """
        return builtins.list(self.history(thread_id, limit=limit, before=before))

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> CheckpointHistory:
        """What :meth:`list` returns, each checkpoint built only when it is read.

        Savers of this package read every stored item of the listed checkpoints once,
        so listing ``n`` checkpoints costs ``O(n)`` reads plus the newest state's size;
        this default wraps :meth:`list`.

        Raises:
            NotImplementedError: the saver implements neither ``list`` nor ``history``.
        """
        if type(self).list is CheckpointSaver.list:  # the default: it would call back here
            raise NotImplementedError(
                f"{type(self).__name__} implements neither list nor history (a saver needs one)"
            )
        return ListedHistory(self.list(thread_id, limit=limit, before=before))

    @abstractmethod
    def delete_thread(self, thread_id: str) -> None:
        """Remove everything stored for the thread.

        A delete is final: a run that was on the thread meanwhile cannot write it back
        (its writes fail with ``CheckpointNotFoundError``), even when the delete came
        during its first step, before anything of it was stored. The saver keeps a small
        marker for that (:data:`DELETE_KEPT` seconds); a new run on the same id starts a
        new thread."""

    def head(self, thread_id: str) -> str | None:
        """The id of the thread's newest checkpoint, ``None`` for an unknown thread."""
        cp = self.get(thread_id)
        return cp.id if cp is not None else None

    async def _to_thread(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in a worker thread: what the ``a``-defaults below await.

        A saver with a worker thread of its own (``AsyncSqliteSaver``) overrides this, not
        each ``a``-method.
        """
        return await asyncio.to_thread(fn, *args, **kwargs)

    async def aput(
        self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None
    ) -> None:
        """Async :meth:`put`."""
        await self._to_thread(self.put, thread_id, write, expected_head=expected_head)

    async def aput_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Async :meth:`put_many`."""
        await self._to_thread(self.put_many, thread_id, writes, expected_head=expected_head)

    async def aput_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Async :meth:`put_writes`."""
        await self._to_thread(self.put_writes, thread_id, checkpoint_id, writes)

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """Async :meth:`get`."""
        return await self._to_thread(self.get, thread_id, checkpoint_id)

    async def alist(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Async :meth:`list`."""
        return await self._to_thread(self.list, thread_id, limit=limit, before=before)

    async def ahistory(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> CheckpointHistory:
        """Async :meth:`history` (its reads happen here; building needs no I/O)."""
        return await self._to_thread(self.history, thread_id, limit=limit, before=before)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async :meth:`delete_thread`."""
        await self._to_thread(self.delete_thread, thread_id)

    async def ahead(self, thread_id: str) -> str | None:
        """Async :meth:`head`."""
        cp = await self.aget(thread_id)
        return cp.id if cp is not None else None
