"""``CancellationToken``: how a sync tool learns that nobody waits for it any more.

Python cannot stop a thread from outside. When a sync tool runs past the tool timeout,
the tools step answers the model that the call timed out and sets the call's token; the
tool's thread goes on until the tool itself checks the token and returns (or raises
:class:`~graphagent.errors.ToolCancelledError` through :meth:`raise_if_cancelled`).
An async tool is cancelled for real (``asyncio`` cancels its task) and its token is set
as well.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from graphagent.errors import ToolCancelledError

__all__ = ["CancellationToken"]


class CancellationToken:
    """Set once a tool call is cancelled; the tool checks it (Spring AI Alibaba's
    ``CancellationToken``). Reach it as ``ctx.cancellation`` in a tool that takes a
    ``ToolContext``.

    Example:
        >>> token = CancellationToken()
        >>> token.cancelled
        False
        >>> token.cancel("timed out after 1 s")
        >>> token.cancelled, token.reason
        (True, 'timed out after 1 s')
    """

    __slots__ = ("_callbacks", "_event", "_lock", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        """Whether the call was cancelled."""
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        """Cancel the call (the first reason given is kept); runs the ``on_cancel``
        callbacks once."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the call is cancelled (at once if it already is): close
        a connection, kill a subprocess the tool started."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def raise_if_cancelled(self) -> None:
        """Raise :class:`~graphagent.errors.ToolCancelledError` if the call was cancelled.

        Raises:
            ToolCancelledError: the call was cancelled.
        """
        if self._event.is_set():
            raise ToolCancelledError(f"tool call cancelled: {self.reason}")

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds, waking at once on cancellation; whether the
        call was cancelled (use it instead of ``time.sleep`` in a polling tool)."""
        return self._event.wait(timeout)

    def __repr__(self) -> str:
        return f"<CancellationToken cancelled={self.cancelled}>"
