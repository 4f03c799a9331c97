"""``GraphLifecycleListener``: user code told when a run starts, each node runs, and the
run ends (Spring AI Alibaba's ``GraphLifecycleListener``).

A listener is heard through the same engine hook as logging, tracing and the progress
display (:mod:`graphagent._internal.observe`): :class:`ListenerObserver` turns a
listener into an observer, and the driver makes the listeners of a run (the compiled
graph's and the run config's) current while the run works.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from graphagent._internal.observe import INTERRUPTED, NodeInfo, Observer, RunInfo, Scope
from graphagent.config import RunnableConfig
from graphagent.errors import GraphBubbleUp, UserError

__all__ = ["GraphLifecycleListener", "ListenerObserver", "listener_observers"]

_LOG = logging.getLogger("graphagent.graph")


class GraphLifecycleListener:
    """Told when a run starts, before and after each node, on errors and at the end.

    Subclass it and override what you need (the defaults do nothing); register it at
    compile (``compile(listeners=[...])``) or for one run
    (``config={"listeners": [...]}``). Nodes of nested runs (subgraphs, sub-agents)
    are reported too, each under its own name; ``on_start`` and ``on_complete`` are
    the outermost run's. A listener that raises is logged (``graphagent.graph``,
    WARNING) and the run goes on: listeners watch, they do not steer. Methods are
    called from the thread a node runs in, so parallel nodes call them concurrently.

    Example:
        >>> from graphagent.graph import END, START, ReplaceStrategy, StateGraph
        >>> class Trace(GraphLifecycleListener):
        ...     def after_node(self, node, state, update, config):
        ...         print(node, update)
        >>> g = StateGraph({"n": ReplaceStrategy()})
        >>> g = g.add_node("a", lambda s: {"n": 1}).add_edge(START, "a").add_edge("a", END)
        >>> g.compile(listeners=[Trace()]).invoke({"n": 0})
        a {'n': 1}
        {'n': 1}
    """

    def on_start(self, graph: str, input: Any, config: RunnableConfig) -> None:
        """A run starts, with its ``input`` (``None`` to continue, a ``Command`` to resume)."""

    def before_node(self, node: str, state: Mapping[str, Any], config: RunnableConfig) -> None:
        """Node ``node`` is about to run on ``state``."""

    def after_node(
        self, node: str, state: Mapping[str, Any], update: Any, config: RunnableConfig
    ) -> None:
        """Node ``node`` ran on ``state`` and returned ``update`` (a dict, ``None`` or a
        ``Command``); not called when it paused (``interrupt()``) or failed."""

    def on_error(self, node: str | None, error: BaseException, config: RunnableConfig) -> None:
        """The run failed: in node ``node``, or outside any node (``None``: a saver, a
        limit). Each error is reported once."""

    def on_complete(self, graph: str, values: Mapping[str, Any], config: RunnableConfig) -> None:
        """The run ended (finished or paused for a human) with state ``values``."""


def _safely(listener: GraphLifecycleListener, method: str, *args: Any) -> None:
    try:
        getattr(listener, method)(*args)
    except Exception:  # a listener's bug must not end the run it watches
        _LOG.warning("lifecycle listener %r failed in %s", listener, method, exc_info=True)


_REPORTED = "__graphagent_reported__"


def _report(listener: GraphLifecycleListener, node: str | None, error: Any, config: Any) -> None:
    if not isinstance(error, BaseException) or isinstance(error, (GraphBubbleUp, GeneratorExit)):
        return
    seen = getattr(error, _REPORTED, ())
    if any(s is listener for s in seen):
        return
    # an exception that takes no attributes is reported maybe twice, never lost
    with contextlib.suppress(AttributeError):
        setattr(error, _REPORTED, (*seen, listener))
    _safely(listener, "on_error", node, error, config)


class _NodeScope(Scope):
    __slots__ = ("config", "info", "listener")

    def __init__(self, listener: GraphLifecycleListener, info: NodeInfo) -> None:
        self.listener = listener
        self.info = info
        self.config = info.config if info.config is not None else RunnableConfig()

    def start(self) -> None:
        _safely(self.listener, "before_node", self.info.name, self.info.state, self.config)

    def record(self, result: Any) -> None:
        if result is not INTERRUPTED:
            info = self.info
            _safely(self.listener, "after_node", info.name, info.state, result, self.config)

    def failed(self, error: BaseException | str) -> None:
        _report(self.listener, self.info.name, error, self.config)


class _RunScope(Scope):
    __slots__ = ("config", "info", "listener", "values")

    def __init__(self, listener: GraphLifecycleListener, info: RunInfo) -> None:
        self.listener = listener
        self.info = info
        self.config = info.config if info.config is not None else RunnableConfig()
        self.values: Any = None

    def start(self) -> None:
        _safely(self.listener, "on_start", self.info.graph, self.info.input, self.config)

    def record(self, result: Any) -> None:
        self.values = result

    def finish(self, error: BaseException | None) -> None:
        if error is None:
            values = self.values if self.values is not None else {}
            _safely(self.listener, "on_complete", self.info.graph, values, self.config)
        else:
            _report(self.listener, None, error, self.config)


class ListenerObserver(Observer):
    """A :class:`GraphLifecycleListener` as an engine observer (one per listener)."""

    __slots__ = ("listener",)

    def __init__(self, listener: GraphLifecycleListener) -> None:
        self.listener = listener

    def run(self, info: RunInfo) -> Scope | None:
        """The outermost run's start and end; nested runs are part of their node."""
        return None if info.nested else _RunScope(self.listener, info)

    def node(self, info: NodeInfo) -> Scope | None:
        """Every node, nested ones included."""
        return _NodeScope(self.listener, info)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ListenerObserver) and other.listener is self.listener

    def __hash__(self) -> int:
        return id(self.listener)


def listener_observers(listeners: Sequence[Any], where: str) -> tuple[ListenerObserver, ...]:
    """``listeners`` as observers, refusing what is not a listener (``where`` names the
    place they were given)."""
    out = []
    for listener in listeners:
        if not isinstance(listener, GraphLifecycleListener):
            raise UserError(
                f"{where} takes GraphLifecycleListener objects, got {listener!r}; subclass "
                "graphagent.graph.GraphLifecycleListener and override the methods you need"
            )
        out.append(ListenerObserver(listener))
    return tuple(out)
