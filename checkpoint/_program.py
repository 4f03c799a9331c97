"""The sans-I/O shape every saver with a server shares: programs, their drivers, one face.

A saver's operations are written once, without I/O, as *programs*: generators that yield
an effect (a SQL statement, a Redis command) and receive its result. When performing an
effect raises, the driver throws the error into the program where it yielded, so a
program may recover (the Redis script fallback does) or let it go. :func:`drive` runs a
program with a sync performer, :func:`adrive` with an async one: the same shape as
httpx's auth flows.

The saver methods over those programs are written once too. A saver's *logic* (see
:class:`Logic`) makes each method's program; :class:`ProgramSaver` gives the sync methods
and :class:`AsyncProgramSaver` the ``a``-methods, each running a :class:`Call` through
the saver's one ``_run``: ``SqliteSaver``, ``PostgresSaver``, ``RedisSaver`` and their
async twins only perform effects.
"""

from __future__ import annotations

import builtins
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Generator, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from typing_extensions import Self

from checkpoint._cache import ReadCache
from checkpoint._lockwait import ahold
from checkpoint.base import (
    Checkpoint,
    CheckpointHistory,
    CheckpointSaver,
    CheckpointWrite,
    LockOps,
    PendingWrite,
)
from checkpoint.locks import LockPolicy

__all__ = [
    "AsyncOnly",
    "AsyncProgramSaver",
    "Call",
    "Logic",
    "Program",
    "ProgramSaver",
    "adrive",
    "drive",
]

T = TypeVar("T")

Program = Generator[Any, Any, T]
"""A saver operation without I/O: yields effects, receives their results, returns ``T``."""


def drive(program: Program[T], perform: Callable[[Any], Any]) -> T:
    """Run ``program``, each effect through ``perform``; an error ``perform`` raises is
    thrown into the program at its ``yield``."""
    try:
        op = next(program)
        while True:
            try:
                result = perform(op)
            except Exception as exc:
                op = program.throw(exc)
            else:
                op = program.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        program.close()


async def adrive(program: Program[T], perform: Callable[[Any], Awaitable[Any]]) -> T:
    """:func:`drive` with an async ``perform``."""
    try:
        op = next(program)
        while True:
            try:
                result = await perform(op)
            except Exception as exc:
                op = program.throw(exc)
            else:
                op = program.send(result)
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]
    finally:
        program.close()


Locks = tuple[
    Callable[[str], Program[bool]], Callable[[str], Program[bool]], Callable[[str], Program[None]]
]


class Logic(Protocol):
    """What a saver's logic offers: each saver method as a program."""

    cache: ReadCache  # the decoded list items of recently read threads

    def put_mode(self, expected_head: str | None) -> bool | None:
        """The transaction a put on ``expected_head`` runs in (see :class:`Call`)."""

    def put(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> Program[None]: ...

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> Program[None]: ...

    def get(self, thread_id: str, checkpoint_id: str | None) -> Program[Checkpoint | None]: ...

    def get_mode(self) -> bool | None:
        """The transaction a get runs in (see :class:`Call`)."""

    def history(
        self, thread_id: str, limit: int | None, before: str | None
    ) -> Program[CheckpointHistory]: ...

    def delete(self, thread_id: str) -> Program[None]: ...

    def head(self, thread_id: str) -> Program[str | None]: ...

    def threads(self) -> Program[builtins.list[str]]: ...

    def purge_due(self) -> bool:
        """Whether expired threads should be purged after this put."""

    def purge_expired(self) -> Program[int]: ...

    def lock_programs(self, thread_id: str, lease: float) -> Locks:
        """Take, renew and release of the thread's run lock."""


@dataclass(slots=True)  # not frozen: one is made per saver call, and frozen costs 3x
class Call(Generic[T]):
    """What one saver method runs.

    Attributes:
        program: the operation.
        write: its transaction, for a driver that has them: ``True`` a write, ``False``
            one snapshot read, ``None`` none (each effect whole on its own).
        action: what it is doing, for error messages.
    """

    program: Program[T]
    write: bool | None
    action: str


L = TypeVar("L", bound=Logic)


class _Calls(CheckpointSaver, Generic[L]):
    """Each saver method's :class:`Call`, for :class:`ProgramSaver` and
    :class:`AsyncProgramSaver`.

    The transactions a saver chooses are class attributes: ``_small_read`` for ``head``
    and ``threads`` (one read each) and ``_lock_write`` for each step of the run lock.
    """

    logic: L
    _small_read: ClassVar[bool | None] = None
    _lock_write: ClassVar[bool | None] = None

    @property
    def read_cache(self) -> ReadCache:
        """The decoded list items of recently read threads, so a turn decodes only what
        was written since the last (see :class:`~checkpoint.ReadCache`)."""
        return self.logic.cache

    @read_cache.setter
    def read_cache(self, cache: ReadCache) -> None:
        self.logic.cache = cache

    def _put_call(
        self, thread_id: str, writes: Sequence[CheckpointWrite], expected_head: str | None
    ) -> Call[None]:
        action = f"writing checkpoint {writes[-1].id if writes else ''} of thread {thread_id!r}"
        logic = self.logic
        program = logic.put(thread_id, writes, expected_head)
        return Call(program, logic.put_mode(expected_head), action)

    def _put_writes_call(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> Call[None]:
        program = self.logic.put_writes(thread_id, checkpoint_id, writes)
        return Call(program, True, f"saving pending writes of thread {thread_id!r}")

    def _get_call(self, thread_id: str, checkpoint_id: str | None) -> Call[Checkpoint | None]:
        program = self.logic.get(thread_id, checkpoint_id)
        return Call(program, self.logic.get_mode(), f"reading thread {thread_id!r}")

    def _history_call(
        self, thread_id: str, limit: int | None, before: str | None
    ) -> Call[CheckpointHistory]:
        program = self.logic.history(thread_id, limit, before)
        return Call(program, False, f"listing thread {thread_id!r}")

    def _delete_call(self, thread_id: str) -> Call[None]:
        return Call(self.logic.delete(thread_id), True, f"deleting thread {thread_id!r}")

    def _head_call(self, thread_id: str) -> Call[str | None]:
        program = self.logic.head(thread_id)
        return Call(program, self._small_read, f"reading thread {thread_id!r}")

    def _threads_call(self) -> Call[builtins.list[str]]:
        return Call(self.logic.threads(), self._small_read, "listing threads")

    def _purge_call(self) -> Call[int]:
        return Call(self.logic.purge_expired(), True, "purging expired threads")

    def _lock_call(self, program: Program[T], thread_id: str) -> Call[T]:
        return Call(program, self._lock_write, f"locking thread {thread_id!r}")


class ProgramSaver(_Calls[L]):
    """The sync saver methods, each running its :class:`Call` through ``_run``."""

    @abstractmethod
    def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        """Run ``program`` in the transaction ``write`` names (see :class:`Call`); the
        driver's errors become checkpoint errors that name ``action``."""

    @abstractmethod
    def close(self) -> None:
        """Close the saver's connections."""

    def _do(self, call: Call[T]) -> T:
        return self._run(call.program, write=call.write, action=call.action)

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Store ``write`` as the new head, atomically (see ``CheckpointSaver.put``)."""
        self.put_many(thread_id, (write,), expected_head=expected_head)

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes as one step, atomically (see ``CheckpointSaver.put_many``)."""
        self._do(self._put_call(thread_id, writes, expected_head))
        if self.logic.purge_due():
            self._do(self._purge_call())

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        self._do(self._put_writes_call(thread_id, checkpoint_id, writes))

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state."""
        return self._do(self._get_call(thread_id, checkpoint_id))

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> CheckpointHistory:
        """Checkpoints newest first, every stored item read once, states built on read."""
        return self._do(self._history_call(thread_id, limit, before))

    def delete_thread(self, thread_id: str) -> None:
        """Remove everything stored for the thread."""
        self._do(self._delete_call(thread_id))

    def head(self, thread_id: str) -> str | None:
        """The thread's head id, without loading its state."""
        return self._do(self._head_call(thread_id))

    def threads(self) -> builtins.list[str]:
        """Every thread id stored (expired ones excepted)."""
        return self._do(self._threads_call())

    def _lock_ops(self, thread_id: str, policy: LockPolicy) -> LockOps:
        """Take, renew and release of the thread's run lock, each one short call."""
        take, renew, release = self.logic.lock_programs(thread_id, policy.lease)

        def run(program: Callable[[str], Program[T]]) -> Callable[[str], T]:
            return lambda token: self._do(self._lock_call(program(token), thread_id))

        return run(take), run(renew), run(release)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncProgramSaver(_Calls[L]):
    """The ``a``-methods: :class:`ProgramSaver`'s, awaiting an async ``_run``."""

    @abstractmethod
    async def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        """See :meth:`ProgramSaver._run`."""

    async def _ado(self, call: Call[T]) -> T:
        return await self._run(call.program, write=call.write, action=call.action)

    async def aput(
        self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None
    ) -> None:
        """Store ``write`` as the new head, atomically (see ``CheckpointSaver.put``)."""
        await self.aput_many(thread_id, (write,), expected_head=expected_head)

    async def aput_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Store a chain of writes as one step, atomically (see ``CheckpointSaver.put_many``)."""
        await self._ado(self._put_call(thread_id, writes, expected_head))
        if self.logic.purge_due():
            await self._ado(self._purge_call())

    async def aput_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Keep a step's finished work until the step commits."""
        await self._ado(self._put_writes_call(thread_id, checkpoint_id, writes))

    async def aget(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """The head (or the named checkpoint) with its state."""
        return await self._ado(self._get_call(thread_id, checkpoint_id))

    async def alist(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Checkpoints newest first."""
        return builtins.list(await self.ahistory(thread_id, limit=limit, before=before))

    async def ahistory(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> CheckpointHistory:
        """Checkpoints newest first, every stored item read once, states built on read."""
        return await self._ado(self._history_call(thread_id, limit, before))

    async def adelete_thread(self, thread_id: str) -> None:
        """Remove everything stored for the thread."""
        await self._ado(self._delete_call(thread_id))

    async def ahead(self, thread_id: str) -> str | None:
        """The thread's head id, without loading its state."""
        return await self._ado(self._head_call(thread_id))

    async def athreads(self) -> builtins.list[str]:
        """Every thread id stored (expired ones excepted)."""
        return await self._ado(self._threads_call())

    def alock(self, thread_id: str) -> AbstractAsyncContextManager[None]:
        """The thread's run lock (a no-op unless made with ``lock_timeout=``)."""
        if self.lock_policy is None:
            return nullcontext()
        take, renew, release = self.logic.lock_programs(thread_id, self.lock_policy.lease)

        def run(program: Callable[[str], Program[T]]) -> Callable[[str], Awaitable[T]]:
            return lambda token: self._ado(self._lock_call(program(token), thread_id))

        return ahold(self.lock_policy, thread_id, run(take), run(renew), run(release))


class AsyncOnly(CheckpointSaver):
    """The sync methods of a saver that has only ``a``-methods (``AsyncRedisSaver``,
    ``AsyncPostgresSaver``): each raises ``TypeError`` naming the sync saver to use.

    A subclass names that saver in its class statement, first among its bases:
    ``class AsyncRedisSaver(AsyncOnly, ..., sync_twin="RedisSaver")``.
    """

    _sync_only_message = ""

    def __init_subclass__(cls, *, sync_twin: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if sync_twin is not None:
            cls._sync_only_message = (
                f"{cls.__name__} has only async methods; use {sync_twin} for sync runs"
            )

    def _sync_only(self) -> TypeError:
        return TypeError(self._sync_only_message)

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        """Not available: use :meth:`aput`."""
        raise self._sync_only()

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> None:
        """Not available: use :meth:`aput_many`."""
        raise self._sync_only()

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> None:
        """Not available: use :meth:`aput_writes`."""
        raise self._sync_only()

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Checkpoint | None:
        """Not available: use :meth:`aget`."""
        raise self._sync_only()

    def list(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> builtins.list[Checkpoint]:
        """Not available: use :meth:`alist`."""
        raise self._sync_only()

    def history(
        self, thread_id: str, *, limit: int | None = None, before: str | None = None
    ) -> CheckpointHistory:
        """Not available: use :meth:`ahistory`."""
        raise self._sync_only()

    def delete_thread(self, thread_id: str) -> None:
        """Not available: use :meth:`adelete_thread`."""
        raise self._sync_only()
