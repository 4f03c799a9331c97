"""Ids minted on the hot path: every message gets one."""

from __future__ import annotations

import random

__all__ = ["new_message_id"]


def new_message_id() -> str:
    """A message id: 128 random bits as 32 hex digits."""
    # 128 random bits from the module-level generator, which Python re-seeds in a
    # forked child; uuid4() costs a syscall per message.
    return random.getrandbits(128).to_bytes(16, "big").hex()  # as f"{n:032x}", faster
