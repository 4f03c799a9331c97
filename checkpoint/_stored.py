"""Where stored bytes that failed to decode were read, and what the reader can do about it.

Every saver's error about stored bytes names its thread and checkpoint and ends with the
same way out; the savers share these two pieces.
"""

from __future__ import annotations

from checkpoint.errors import SerializationError

STORED_WAY_OUT = (
    "To go on: continue from an earlier checkpoint of the thread (list its history and run "
    "from one before this), restore the store from a backup, or delete the thread"
)
"""What to do about stored bytes that cannot be read (every such error ends with it)."""


def located(
    exc: SerializationError, thread_id: str | None = None, checkpoint_id: str | None = None
) -> SerializationError:
    """``exc``, noting where the stored bytes it is about were read (first place wins)."""
    if thread_id is not None and exc.thread_id is None:
        exc.thread_id = thread_id
    if checkpoint_id is not None and exc.checkpoint_id is None:
        exc.checkpoint_id = checkpoint_id
    return exc
