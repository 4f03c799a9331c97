"""The saver's effects, one table for both drivers: each effect written once over the
saver's sync methods or, through :class:`AsyncCalls`, their async twins."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from checkpoint.base import CheckpointSaver, CheckpointWrite, PendingWrite
from graphagent.graph._effects import Get, Head, Put, PutMany, PutWrites

__all__ = ["SAVER_CALLS", "AsyncCalls"]


class _Calls(Protocol):
    """The saver methods the effects call: the saver's own (sync), or :class:`AsyncCalls`."""

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Any: ...

    def head(self, thread_id: str) -> Any: ...

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> Any: ...

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> Any: ...

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> Any: ...


class AsyncCalls:
    """A saver's async methods under their sync names, so one table serves both drivers."""

    __slots__ = ("saver",)

    def __init__(self, saver: CheckpointSaver) -> None:
        self.saver = saver

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Awaitable[Any]:
        return self.saver.aget(thread_id, checkpoint_id)

    def head(self, thread_id: str) -> Awaitable[Any]:
        return self.saver.ahead(thread_id)

    def put(
        self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None
    ) -> Awaitable[Any]:
        return self.saver.aput(thread_id, write, expected_head=expected_head)

    def put_many(
        self, thread_id: str, writes: Sequence[CheckpointWrite], *, expected_head: str | None
    ) -> Awaitable[Any]:
        return self.saver.aput_many(thread_id, writes, expected_head=expected_head)

    def put_writes(
        self, thread_id: str, checkpoint_id: str, writes: Sequence[PendingWrite]
    ) -> Awaitable[Any]:
        return self.saver.aput_writes(thread_id, checkpoint_id, writes)


SAVER_CALLS: dict[type, Callable[[_Calls, Any], Any]] = {
    Get: lambda io, e: io.get(e.thread_id, e.checkpoint_id),
    Head: lambda io, e: io.head(e.thread_id),
    # one write goes through put_many, which every saver here overrides atomically: put
    # itself only forwards there, a call (and an error-naming wrapper) more per step
    Put: lambda io, e: io.put_many(e.thread_id, (e.write,), expected_head=e.expected_head),
    PutMany: lambda io, e: io.put_many(e.thread_id, e.writes, expected_head=e.expected_head),
    PutWrites: lambda io, e: io.put_writes(e.thread_id, e.checkpoint_id, e.writes),
}
"""Effect type -> the saver call that performs it (the sync driver gets its result, the
async one awaits it)."""
