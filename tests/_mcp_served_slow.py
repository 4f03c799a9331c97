"""Served for the stop tests: tools that take long, async and in a thread, saying on
stdout (which the server sends to stderr) when they start, end or are cancelled."""

from __future__ import annotations

import asyncio
import time

from graphagent.tools import tool


@tool
async def nap(seconds: float) -> str:
    """Sleep asynchronously."""
    print("nap started", flush=True)
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        print("nap cancelled", flush=True)
        raise
    print("nap finished", flush=True)
    return "woke"


@tool
def snooze(seconds: float) -> str:
    """Sleep in a thread (sync code cannot be cancelled)."""
    print("snooze started", flush=True)
    time.sleep(seconds)
    print("snooze finished", flush=True)
    return "woke"


served = [nap, snooze]
