"""``GraphLifecycleListener`` in the engine: the class lives below the engine and the
observers (:mod:`graphagent._internal.listen`), so logging, tracing and the progress
display are listeners too; the engine registers a compiled graph's and a run config's
listeners through :func:`listener_observers`.
"""

from __future__ import annotations

from graphagent._internal.listen import (
    GraphLifecycleListener,
    ListenerObserver,
    listener_observers,
)

__all__ = ["GraphLifecycleListener", "ListenerObserver", "listener_observers"]
