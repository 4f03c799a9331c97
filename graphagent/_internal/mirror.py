"""``checkpoint`` errors as their ``GraphAgentError`` mirrors, at the boundary between a
graph run and its saver (same message, the original chained)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import checkpoint.errors as _cp
from graphagent.errors import (
    CheckpointConflictError,
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStorageError,
    SerializationError,
    ThreadLockedError,
)

__all__ = ["mirror_error", "saver_errors"]

_MIRRORS: tuple[tuple[type[_cp.CheckpointError], type[CheckpointError]], ...] = (
    (_cp.ThreadLockedError, ThreadLockedError),
    (_cp.CheckpointConflictError, CheckpointConflictError),
    (_cp.CheckpointNotFoundError, CheckpointNotFoundError),
    (_cp.CheckpointStorageError, CheckpointStorageError),
    (_cp.SerializationError, SerializationError),
    (_cp.CheckpointError, CheckpointError),
)


def mirror_error(exc: _cp.CheckpointError) -> CheckpointError:
    """The ``GraphAgentError`` mirror of a ``checkpoint`` error (same message, chained)."""
    if isinstance(exc, CheckpointError):
        return exc
    for source, mirror in _MIRRORS:
        if isinstance(exc, source):
            made = mirror(str(exc))
            made.__cause__ = exc
            return made
    raise AssertionError("unreachable: _MIRRORS ends with the root")  # pragma: no cover


@contextmanager
def saver_errors() -> Iterator[None]:
    """Re-raise ``checkpoint`` errors as their ``GraphAgentError`` mirrors.

    The one boundary between a graph run and its saver (hot loops call
    :func:`mirror_error` from a plain ``try`` instead).
    """
    try:
        yield
    except _cp.CheckpointError as exc:
        raise mirror_error(exc) from exc
