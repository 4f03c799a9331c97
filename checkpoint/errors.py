"""Errors raised by checkpoint savers and the serde.

The ``checkpoint`` package stands alone (it never imports ``graphagent``), so its
errors form their own small tree::

    CheckpointError                  anything a saver or the serde could not do
    ├── CheckpointConflictError      another writer moved the thread's head first
    │   └── ThreadLockedError        the opt-in per-thread lock stayed taken too long
    ├── CheckpointNotFoundError      a checkpoint id that the thread does not hold
    ├── CheckpointStorageError       the store failed (connection lost, timeout, ...)
    └── SerializationError           a value that cannot be stored or loaded

``graphagent.errors`` mirrors this tree under ``GraphAgentError``; a graph run
translates saver errors into those mirrors, so ``except GraphAgentError`` catches
everything a run raises.
"""

from __future__ import annotations

__all__ = [
    "CheckpointConflictError",
    "CheckpointError",
    "CheckpointNotFoundError",
    "CheckpointStorageError",
    "SerializationError",
    "ThreadLockedError",
]


class CheckpointError(Exception):
    """A saver or the serde could not do what was asked."""


class CheckpointConflictError(CheckpointError):
    """The thread's head moved since the writer read it; nothing was written.

    Re-read the thread (``get_state``) and run again, or serialise writers per thread.
    """


class ThreadLockedError(CheckpointConflictError):
    """Another run held the thread's lock for longer than ``lock_timeout``; nothing ran.

    Raised only when the saver was made with ``lock_timeout=`` (runs wait their turn).
    """


class CheckpointNotFoundError(CheckpointError):
    """The thread holds no checkpoint with the requested id."""


class CheckpointStorageError(CheckpointError):
    """The backing store failed (for Redis: connection, timeout, response errors)."""


class SerializationError(CheckpointError):
    """A value could not be encoded for storage, or stored bytes could not be decoded.

    Attributes:
        thread_id: the thread whose stored bytes failed to decode (``None``: not known,
            or not about stored bytes); the message names it.
        checkpoint_id: the checkpoint they belong to, likewise.
    """

    thread_id: str | None = None
    checkpoint_id: str | None = None

    def __str__(self) -> str:
        text = super().__str__()
        where = []
        if self.thread_id is not None and f"thread {self.thread_id!r}" not in text:
            where.append(f"thread {self.thread_id!r}")
        if self.checkpoint_id is not None and f"checkpoint {self.checkpoint_id!r}" not in text:
            where.append(f"checkpoint {self.checkpoint_id!r}")
        return f"{', '.join(where)}: {text}" if where else text
