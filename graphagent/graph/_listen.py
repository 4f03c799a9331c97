"""``GraphLifecycleListener`` in the engine: the class lives with the observers that use
it (:mod:`graphagent.observability._listener`, below the engine, so logging, tracing
and the progress display are listeners too); the engine registers a compiled graph's
and a run config's listeners through :func:`listener_observers`.
"""

from __future__ import annotations

from graphagent.observability._listener import (
    GraphLifecycleListener,
    ListenerObserver,
    listener_observers,
)

__all__ = ["GraphLifecycleListener", "ListenerObserver", "listener_observers"]
