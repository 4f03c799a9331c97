"""The sync half of a saver that has only ``a``-methods: each sync method names the saver
to use instead (shared by the PostgreSQL and Redis subpackages' async savers)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

from checkpoint.base import (
    Checkpoint,
    CheckpointHistory,
    CheckpointSaver,
    CheckpointWrite,
    PendingWrite,
)

__all__ = ["AsyncOnly"]


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
