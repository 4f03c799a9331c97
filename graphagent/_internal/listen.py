"""``GraphLifecycleListener``: user code told when a run starts, each node runs, each
model and tool is called, and the run ends (Spring AI Alibaba's ``GraphLifecycleListener``,
grown to what LangChain's callbacks report).

Public as ``graphagent.graph.GraphLifecycleListener`` and in
``graphagent.observability``. It lives here, below the engine and the observers, so that
the logging, tracing and progress observers (``graphagent.observability``) are listeners
like any other: they override these methods and are registered with :func:`add_listener`
(tracing), :func:`listening` (a progress display) or while their logger is enabled
(logging). Underneath, :class:`ListenerObserver` turns a listener into an observer of
the engine's one hook (:mod:`graphagent._internal.observe`); with nothing registered the
engine pays one flag check per node, builds no event and calls nothing.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from graphagent._internal.observe import (
    INTERRUPTED,
    ChatInfo,
    NodeInfo,
    Observer,
    RunInfo,
    Scope,
    ToolInfo,
    add_observer,
    observing,
    remove_observer,
)
from graphagent.config import RunnableConfig
from graphagent.errors import GraphBubbleUp, UserError

__all__ = [
    "GraphLifecycleListener",
    "ListenerObserver",
    "add_listener",
    "listener_observers",
    "listening",
    "remove_listener",
]

_LOG = logging.getLogger("graphagent.graph")


class GraphLifecycleListener:
    """Told when a run starts, before and after each node, on errors and at the end;
    and, in detail, of every run, node, model call and tool call.

    Subclass it and override what you need (the defaults do nothing); register it at
    compile (``compile(listeners=[...])``), for one run (``config={"listeners": [...]}``),
    for the runs of a block (:func:`listening`) or for every run (:func:`add_listener`).
    A listener that raises is logged (``graphagent.graph``, WARNING) and the run goes
    on: listeners watch, they do not steer. Methods are called from the thread the work
    runs in, so parallel nodes and tools call them concurrently.

    **Spring's five.** :meth:`on_start` and :meth:`on_complete` are the outermost run's;
    :meth:`before_node` and :meth:`after_node` are called for every node, nested ones
    included, each under its own name; :meth:`on_error` once per error.

    **The detailed events** hand over one info object per operation (:class:`RunInfo`,
    :class:`NodeInfo`, :class:`ChatInfo`, :class:`ToolInfo`): the same object reaches
    the operation's start and its end, so a listener keeps what it started (a span, a
    timer) in a dict keyed by it. Every start is followed by exactly one end. In an end,
    ``error`` is what the operation raised; a failure the library caught is told
    before the end, by :meth:`on_node_error` (the run then fails, or the node's retry
    policy runs it again) or :meth:`on_tool_error` (the model reads the error as the
    tool's answer). A pause for a human arrives as :meth:`on_interrupt` (a node), or as
    ``error`` a :class:`~graphagent.errors.GraphBubbleUp` (a tool, a nested run).

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

    # -- Spring's five -------------------------------------------------------------------

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

    # -- runs, nested ones included ------------------------------------------------------

    def on_run_start(self, run: RunInfo) -> None:
        """A run starts: the outermost one or a nested one (``run.nested``: a subgraph
        or a sub-agent inside a node); ``run.agent`` is set for an agent's graph."""

    def on_run_enter(self, run: RunInfo) -> None:
        """The run's work runs in this context from now: a run is a stream, and the
        caller's code runs between two of its events. Make here what its nodes should
        find current (a span); undo it in :meth:`on_run_exit`."""

    def on_run_exit(self, run: RunInfo) -> None:
        """The run's work no longer runs in this context (an event goes to the caller)."""

    def on_run_end(
        self, run: RunInfo, values: Mapping[str, Any] | None, error: BaseException | None
    ) -> None:
        """The run ended with state ``values`` (``None`` when it failed), or raised
        ``error`` (a ``GraphBubbleUp`` when a nested run paused for a human)."""

    # -- nodes ---------------------------------------------------------------------------

    def on_node_start(self, node: NodeInfo) -> None:
        """A node starts: its name, kind, path through nested graphs, the state it is
        given (``node.state``) and its retry attempt (``node.attempt``, 1 at first)."""

    def on_interrupt(self, node: NodeInfo) -> None:
        """The node paused for a human (``interrupt()``, a breakpoint); the run will
        stop there until resumed."""

    def on_node_error(self, node: NodeInfo, error: BaseException) -> None:
        """The node raised ``error``: the run fails with it, unless the node's retry
        policy runs it again (a new :meth:`on_node_start`, attempt + 1)."""

    def on_node_end(self, node: NodeInfo, update: Any, error: BaseException | None) -> None:
        """The node ended: ``update`` is what it returned (``None`` when it paused or
        failed); ``error`` what went through it uncaught (a cancellation)."""

    # -- model and tool calls ------------------------------------------------------------

    def on_model_start(self, call: ChatInfo) -> None:
        """A chat model is asked: provider, model, the messages and tools sent, the
        options, whether the answer is streamed, the server's URL."""

    def on_model_end(self, call: ChatInfo, answer: Any, error: BaseException | None) -> None:
        """The model answered (``answer``: the ``AssistantMessage``, streamed answers
        assembled) or the request raised ``error``."""

    def on_tool_start(self, call: ToolInfo) -> None:
        """A tool call starts: the tool's name, the call's id and its JSON arguments."""

    def on_tool_error(self, call: ToolInfo, error: BaseException) -> None:
        """The tool call failed and the model is told so (the error as its answer)."""

    def on_tool_end(self, call: ToolInfo, result: Any, error: BaseException | None) -> None:
        """The tool call ended: ``result`` is the text the model reads (``None`` after
        :meth:`on_tool_error`); ``error`` what it raised (a ``GraphBubbleUp`` when the
        tool paused for a human)."""


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


_METHODS = tuple(m for m in vars(GraphLifecycleListener) if m[:3] in ("on_", "bef", "aft"))


def _overridden(listener: GraphLifecycleListener) -> frozenset[str]:
    """The methods ``listener`` has its own of (in its class, or set on itself)."""
    out = []
    for method in _METHODS:
        found = getattr(listener, method)
        if getattr(found, "__func__", found) is not getattr(GraphLifecycleListener, method):
            out.append(method)
    return frozenset(out)


# the methods that make a listener want each kind of operation
_RUN = frozenset({"on_start", "on_complete", "on_error", "on_run_start", "on_run_enter"})
_RUN |= {"on_run_exit", "on_run_end"}
_NODE = frozenset({"before_node", "after_node", "on_error", "on_node_start", "on_interrupt"})
_NODE |= {"on_node_error", "on_node_end"}


class _Told(Scope):
    """A scope telling its listener the methods it overrides (the others do nothing)."""

    __slots__ = ("info", "listener", "wanted")

    def __init__(self, observer: ListenerObserver, info: Any) -> None:
        self.listener = observer.listener
        self.wanted = observer.wanted
        self.info = info

    def tell(self, method: str, *args: Any) -> None:
        if method in self.wanted:
            _safely(self.listener, method, *args)

    def report(self, node: str | None, error: Any, config: Any) -> None:
        if "on_error" in self.wanted:
            _report(self.listener, node, error, config)


class _RunScope(_Told):
    __slots__ = ("config", "values")

    def __init__(self, observer: ListenerObserver, info: RunInfo) -> None:
        super().__init__(observer, info)
        self.config = info.config if info.config is not None else RunnableConfig()
        self.values: Any = None

    def start(self) -> None:
        info = self.info
        if not info.nested:  # Spring's on_start and on_complete are the outermost run's
            self.tell("on_start", info.graph, info.input, self.config)
        self.tell("on_run_start", info)

    def enter(self) -> None:
        if "on_run_enter" in self.wanted:
            _safely(self.listener, "on_run_enter", self.info)

    def exit(self) -> None:
        if "on_run_exit" in self.wanted:
            _safely(self.listener, "on_run_exit", self.info)

    def record(self, result: Any) -> None:
        self.values = result

    def finish(self, error: BaseException | None) -> None:
        info = self.info
        self.tell("on_run_end", info, self.values, error)
        if info.nested:  # its failure is its node's, reported there
            return
        if error is not None:
            self.report(None, error, self.config)
        else:
            values = self.values if self.values is not None else {}
            self.tell("on_complete", info.graph, values, self.config)


class _NodeScope(_Told):
    # per node: each method asks ``wanted`` inline (no call for what is not overridden)
    __slots__ = ("config", "update")

    def __init__(self, observer: ListenerObserver, info: NodeInfo) -> None:
        self.listener = observer.listener
        self.wanted = observer.wanted
        self.info = info
        self.config = info.config if info.config is not None else RunnableConfig()
        self.update: Any = None

    def start(self) -> None:
        info = self.info
        if "on_node_start" in self.wanted:
            _safely(self.listener, "on_node_start", info)
        if "before_node" in self.wanted:
            _safely(self.listener, "before_node", info.name, info.state, self.config)

    def record(self, result: Any) -> None:
        info = self.info
        if result is INTERRUPTED:
            self.tell("on_interrupt", info)
            return
        self.update = result
        if "after_node" in self.wanted:
            _safely(self.listener, "after_node", info.name, info.state, result, self.config)

    def failed(self, error: BaseException | str) -> None:
        if isinstance(error, BaseException):
            self.tell("on_node_error", self.info, error)
        self.report(self.info.name, error, self.config)

    def finish(self, error: BaseException | None) -> None:
        if "on_node_end" in self.wanted:
            _safely(self.listener, "on_node_end", self.info, self.update, error)


class _CallScope(_Told):
    """A model or tool call: ``prefix`` names the methods (``on_model_``, ``on_tool_``)."""

    __slots__ = ("prefix", "result")

    def __init__(self, observer: ListenerObserver, info: Any, prefix: str) -> None:
        super().__init__(observer, info)
        self.prefix = prefix
        self.result: Any = None

    def start(self) -> None:
        self.tell(self.prefix + "start", self.info)

    def record(self, result: Any) -> None:
        self.result = result

    def failed(self, error: BaseException | str) -> None:
        self.tell(self.prefix + "error", self.info, error)

    def finish(self, error: BaseException | None) -> None:
        self.tell(self.prefix + "end", self.info, self.result, error)


class ListenerObserver(Observer):
    """A :class:`GraphLifecycleListener` as an engine observer (one per listener).

    It asks only for the operations the listener's class overrides a method of (a
    listener of nodes costs nothing per model or tool call), and calls only the
    methods it overrides.
    """

    __slots__ = ("chats", "listener", "nodes", "runs", "tools", "wanted")

    def __init__(self, listener: GraphLifecycleListener) -> None:
        self.listener = listener
        self.wanted = wanted = _overridden(listener)
        self.runs = bool(wanted & _RUN)
        self.nodes = bool(wanted & _NODE)
        self.chats = bool(wanted & {"on_model_start", "on_model_end"})
        self.tools = bool(wanted & {"on_tool_start", "on_tool_error", "on_tool_end"})

    def run(self, info: RunInfo) -> Scope | None:
        """Every run, nested ones included."""
        return _RunScope(self, info) if self.runs else None

    def node(self, info: NodeInfo) -> Scope | None:
        """Every node, nested ones included."""
        return _NodeScope(self, info) if self.nodes else None

    def chat(self, info: ChatInfo) -> Scope | None:
        """Every chat model request."""
        return _CallScope(self, info, "on_model_") if self.chats else None

    def tool(self, info: ToolInfo) -> Scope | None:
        """Every tool call."""
        return _CallScope(self, info, "on_tool_") if self.tools else None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ListenerObserver) and other.listener is self.listener

    def __hash__(self) -> int:
        return id(self.listener)


def _checked(listener: Any, where: str) -> GraphLifecycleListener:
    if not isinstance(listener, GraphLifecycleListener):
        raise UserError(
            f"{where} takes GraphLifecycleListener objects, got {listener!r}; subclass "
            "graphagent.graph.GraphLifecycleListener and override the methods you need"
        )
    return listener


def listener_observers(listeners: Sequence[Any], where: str) -> tuple[ListenerObserver, ...]:
    """``listeners`` as observers, refusing what is not a listener (``where`` names the
    place they were given)."""
    return tuple(ListenerObserver(_checked(listener, where)) for listener in listeners)


def add_listener(listener: GraphLifecycleListener) -> None:
    """Tell ``listener`` of every run in the process, from now until
    :func:`remove_listener` (what :func:`~graphagent.observability.instrument` does
    with its tracing listener). Adding it twice adds it once."""
    add_observer(ListenerObserver(_checked(listener, "add_listener()")))


def remove_listener(listener: GraphLifecycleListener) -> None:
    """Undo :func:`add_listener` (no error if it was not added)."""
    remove_observer(ListenerObserver(_checked(listener, "remove_listener()")))


@contextlib.contextmanager
def listening(listener: GraphLifecycleListener) -> Iterator[GraphLifecycleListener]:
    """Tell ``listener`` of the runs, model calls and tool calls started inside the
    block, in this context and the threads and tasks it starts (what
    :func:`~graphagent.observability.progress` does with its display).

    Example:
        >>> from graphagent.graph import END, START, ReplaceStrategy, StateGraph
        >>> class Nodes(GraphLifecycleListener):
        ...     def on_node_start(self, node):
        ...         print("/".join(node.path), node.kind)
        >>> g = StateGraph({"n": ReplaceStrategy()})
        >>> g = g.add_node("a", lambda s: {"n": 1}).add_edge(START, "a").add_edge("a", END)
        >>> app = g.compile()
        >>> with listening(Nodes()):
        ...     app.invoke({"n": 0})
        a node
        {'n': 1}
    """
    with observing(ListenerObserver(_checked(listener, "listening()"))):
        yield listener
