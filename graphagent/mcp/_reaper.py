"""Stops the local MCP servers still running when the process exits or gets SIGTERM.

Each server runs under a guard process (see ``_guard.py``) that leads its own
process group. On SIGTERM, and at interpreter exit, every guard still registered is
sent SIGTERM and waited for, so no server outlives the agent process and none is left
a zombie. Then the signal's previous handler runs (by default: the process ends).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
import time
from types import FrameType
from typing import Any

__all__ = ["forget", "install", "register", "stop_all"]

_LIVE: set[int] = set()
_LOCK = threading.Lock()
_INSTALLED: list[Any] = []


def register(pid: int) -> None:
    """Track a guard process until :func:`forget`."""
    with _LOCK:
        _LIVE.add(pid)


def forget(pid: int) -> None:
    """Stop tracking a guard process (it exited, or was closed)."""
    with _LOCK:
        _LIVE.discard(pid)


def _gone(pid: int) -> bool:
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        # another waiter (asyncio's child watcher) reaped it, or it is not our child
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False
    return done == pid


def stop_all(grace: float = 3.0) -> None:
    """SIGTERM every tracked guard's group; wait up to ``grace`` s, then SIGKILL."""
    with _LOCK:
        pids = list(_LIVE)
        _LIVE.clear()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    waiting = [p for p in pids if not _gone(p)]
    while waiting and time.monotonic() < deadline:
        time.sleep(0.02)
        waiting = [p for p in waiting if not _gone(p)]
    for pid in waiting:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    stop_all()
    previous = _INSTALLED[0] if _INSTALLED else signal.SIG_DFL
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)


def install() -> None:
    """Hook SIGTERM (main thread only; kept if SIGTERM is ignored) and interpreter exit."""
    if _INSTALLED or threading.current_thread() is not threading.main_thread():
        return
    previous = signal.getsignal(signal.SIGTERM)
    _INSTALLED.append(previous)
    atexit.register(stop_all)
    if previous is not signal.SIG_IGN and previous is not _on_sigterm:
        signal.signal(signal.SIGTERM, _on_sigterm)
