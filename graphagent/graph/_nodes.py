"""How user callables (nodes and routers) are described and called."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from graphagent._internal.callables import accepts_config, is_async_callable

__all__ = [
    "Branch",
    "Join",
    "NodeSpec",
    "accepts_config",
    "is_async_callable",
    "wants_store",
    "with_store",
]


def wants_store(fn: Any) -> bool:
    """True when ``fn`` has a parameter named ``store`` (it receives the run's store)."""
    try:
        param = inspect.signature(fn).parameters.get("store")
    except (TypeError, ValueError):
        return False
    return param is not None and param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)


def with_store(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` as a ``(state, config)`` node that passes ``store=config.store``.

    A parameter *named* ``store`` is the store even when it is the second positional one
    (``def node(state, store)``); the config is passed too when ``fn`` has a slot for it
    (a second positional parameter with another name, or one named ``config``).
    """
    sig = inspect.signature(fn)
    if sig.parameters["store"].kind is inspect.Parameter.POSITIONAL_ONLY:
        raise TypeError(f"{fn!r}: a 'store' parameter must be passable by keyword")
    positional = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name != "store"
    ]
    takes_config = len(positional) >= 2 and (
        positional[1].default is positional[1].empty or positional[1].name == "config"
    )
    call: Callable[..., Any]
    if is_async_callable(fn):

        async def call(state: Any, config: Any) -> Any:
            if takes_config:
                return await fn(state, config, store=config.store)
            return await fn(state, store=config.store)

    else:

        def call(state: Any, config: Any) -> Any:
            if takes_config:
                return fn(state, config, store=config.store)
            return fn(state, store=config.store)

    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(call, attr, getattr(fn, attr, None))
    return call


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
