"""How user callables (nodes and routers) are described and called."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphagent._internal.callables import accepts_config, is_async_callable

__all__ = ["Branch", "Join", "NodeSpec", "accepts_config", "is_async_callable"]


@dataclass(frozen=True)
class NodeSpec:
    """A node: its callable, how to call it, and what kind it is (for drawing).

    Attributes:
        name: the node's name.
        fn: ``(state)`` or ``(state, config)``, sync or async.
        is_async: whether ``fn`` returns an awaitable.
        takes_config: whether ``fn`` takes the config as its second argument.
        kind: ``"node"``, ``"subgraph"``, or an agent kind (``"model"``, ``"tools"``, ``"hook"``).
        subgraph: the compiled graph, when the node is one.
        metadata: free-form details shown when drawing.
        afn: an async implementation of the same node, used by ``ainvoke``/``astream``
            (so a node can call a sync client under ``invoke`` and an async one under
            ``ainvoke``).
        retry: the retry policies of the node, in order (``None``: it is not retried).
        cache: how the node's results are reused for equal inputs (``None``: never).
        defer: the node waits until nothing else is due (a map-reduce's collect step).
        executor: where the node runs when it runs beside others in a step (and, under
            ``ainvoke``, when it is sync): a ``concurrent.futures.Executor``, or
            ``None`` for the shared pool.
        race: the ``any_of`` join this node races for (its target's name), or ``None``.
    """

    name: str
    fn: Callable[..., Any]
    is_async: bool
    takes_config: bool
    kind: str = "node"
    subgraph: Any = None
    metadata: Mapping[str, Any] | None = None
    afn: Callable[..., Any] | None = None
    retry: Any = None
    cache: Any = None
    defer: bool = False
    executor: Any = None
    race: str | None = None


@dataclass(frozen=True)
class Branch:
    """Conditional edges out of ``source``: ``router`` picks, ``path_map`` translates;
    ``sends``: the router's return annotation names ``Send`` (drawn as fan-out edges)."""

    source: str
    router: Callable[..., Any]
    takes_config: bool
    path_map: Mapping[Any, str] | None
    sends: bool = False

    def targets(self) -> tuple[str, ...]:
        """Every node this branch can route to (empty when it has no path map)."""
        return tuple(dict.fromkeys(self.path_map.values())) if self.path_map else ()


@dataclass(frozen=True)
class Join:
    """A fan-in edge: ``target`` runs once every node in ``sources`` has finished."""

    sources: tuple[str, ...]
    target: str
