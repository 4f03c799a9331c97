"""The points where the library reports what it does, and the observers listening.

Library code calls :func:`run`, :func:`node`, :func:`chat` and :func:`tool` around the
work it does. Each returns a *watch* (a context manager) that tells every observer
when the work starts and how it ends. With nobody listening they return one shared
no-op watch: the cost is a tuple check, so an uninstrumented run pays nothing that a
benchmark can see.

This is the engine's private dispatch. What listens is public: every observer here is
a ``GraphLifecycleListener`` adapted by ``ListenerObserver``
(:mod:`graphagent._internal.listen`), the logs, tracing and progress display
included. Observers come from three places: global ones (:func:`add_observer`, behind
``add_listener()`` and ``instrument()``), ones scoped to a context (:func:`observing`,
behind ``listening()`` and ``progress()``; a ``contextvars`` variable holds them, so
they follow the run into the engine's worker threads and asyncio tasks), and the
loggers' (:func:`register_log`), asked while their logger is enabled for DEBUG.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ACTIVE",
    "IDLE",
    "INTERRUPTED",
    "ChatInfo",
    "Listening",
    "NodeInfo",
    "Observer",
    "RunInfo",
    "Scope",
    "ToolInfo",
    "Watch",
    "add_observer",
    "capture_content",
    "chat",
    "content_captured",
    "node",
    "observing",
    "register_log",
    "remove_observer",
    "run",
    "tool",
]

_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_CONTENT = [os.environ.get(_ENV, "").strip().lower() in ("1", "true", "yes")]


def capture_content(enabled: bool) -> None:
    """Include message text, tool arguments, tool results and exception text in logs and spans.

    Off by default (the OpenTelemetry GenAI convention, also read from the environment
    variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``): prompts and
    answers often hold personal data. API keys and ``ToolContext`` are never recorded.
    """
    _CONTENT[0] = enabled


def content_captured() -> bool:
    """Whether message text is recorded (see :func:`capture_content`)."""
    return _CONTENT[0]


@dataclass(frozen=True, slots=True, eq=False)
class RunInfo:
    """A graph run: ``graph`` its name, ``nested`` when it runs inside a node of
    another run, ``agent`` the agent whose graph it is (or ``None``), ``input`` and
    ``config`` what the run was given.

    One object per operation, as for :class:`NodeInfo`, :class:`ChatInfo` and
    :class:`ToolInfo`: a listener is handed the same one at the operation's start and
    end, and can key what it keeps meanwhile by it (it hashes by identity)."""

    graph: str
    thread_id: str | None
    nested: bool
    agent: Any = None
    input: Any = None
    config: Any = None


@dataclass(frozen=True, slots=True, eq=False)
class NodeInfo:
    """A node run: ``kind`` (``"node"``, ``"subgraph"``, an agent's ``"model"``, ``"tools"``,
    ``"hook"``...), ``path`` the nodes down to it through nested graphs, the state and
    config it is called with, and ``attempt``: 1, or the retry's number under a retry
    policy."""

    name: str
    kind: str
    path: tuple[str, ...]
    state: Any = None
    config: Any = None
    attempt: int = 1


@dataclass(frozen=True, slots=True, eq=False)
class ChatInfo:
    """A request to a chat model (the messages and tools are the ones sent; ``server``
    the base URL of a remote model)."""

    provider: str
    model: str
    messages: Sequence[Any]
    tools: Sequence[Any]
    options: Any  # ChatOptions (read by attribute)
    stream: bool
    server: str | None = None


@dataclass(frozen=True, slots=True, eq=False)
class ToolInfo:
    """A tool call (``arguments``: the JSON text the model sent)."""

    name: str
    call_id: str
    arguments: str


class Scope:
    """What an observer keeps for one operation.

    ``start`` runs where the operation starts, ``finish`` where it ends (``error`` is
    what it raised, or ``None``). ``record`` receives what the operation produced (a
    model's answer, a tool's text, a node's outcome), possibly never. ``enter`` and
    ``exit`` bracket each stretch of a run that executes in the caller's context
    (between two events of a stream); they must undo each other.
    """

    def start(self) -> None:
        """The operation starts."""

    def record(self, result: Any) -> None:
        """What the operation produced."""

    def failed(self, error: BaseException | str) -> None:
        """The operation failed without raising (a tool error handed to the model)."""

    def enter(self) -> None:
        """Work of the operation runs in this context from now."""

    def exit(self) -> None:
        """Work of the operation no longer runs in this context."""

    def finish(self, error: BaseException | None) -> None:
        """The operation ended."""


class Observer:
    """Receives the library's operations; each method returns a :class:`Scope` or None."""

    def run(self, info: RunInfo) -> Scope | None:
        """A graph run."""
        return None

    def node(self, info: NodeInfo) -> Scope | None:
        """A node execution."""
        return None

    def chat(self, info: ChatInfo) -> Scope | None:
        """A chat model request."""
        return None

    def tool(self, info: ToolInfo) -> Scope | None:
        """A tool call."""
        return None


class Watch:
    """One operation, as seen by every observer that wanted it (a context manager)."""

    __slots__ = ("scopes",)

    def __init__(self, scopes: list[Scope]) -> None:
        self.scopes = scopes

    def __enter__(self) -> Watch:
        for scope in self.scopes:
            scope.start()
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        for scope in reversed(self.scopes):
            scope.finish(error)

    def record(self, result: Any) -> None:
        """Hand the operation's result to the observers."""
        for scope in self.scopes:
            scope.record(result)

    def failed(self, error: BaseException | str) -> None:
        """The operation failed, but the failure was handled (not raised)."""
        for scope in self.scopes:
            scope.failed(error)

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """Run a stretch of the operation's work in its context."""
        for scope in self.scopes:
            scope.enter()
        try:
            yield
        finally:
            for scope in reversed(self.scopes):
                scope.exit()


class _Idle(Watch):
    """The watch when nobody listens: does nothing, shared."""

    __slots__ = ()

    def __enter__(self) -> Watch:
        return self

    def __exit__(self, kind: Any, error: BaseException | None, tb: Any) -> None:
        return None

    def record(self, result: Any) -> None:
        return None

    def failed(self, error: BaseException | str) -> None:
        return None


IDLE: Watch = _Idle([])
"""The shared no-op watch."""

INTERRUPTED = "interrupted"
"""What a node's watch records when the node paused (``interrupt()``, a breakpoint)."""

_GLOBAL: tuple[Observer, ...] = ()
_SCOPED: ContextVar[tuple[Observer, ...]] = ContextVar("graphagent_observers", default=())
_LOGS: dict[str, Observer] = {}
_LOCK = threading.Lock()
_SCOPES = [0]  # observing() blocks open anywhere in the process

ACTIVE = False
"""Whether any observer is registered or scoped anywhere: the engine's per-node check."""
_LOGGERS: dict[str, logging.Logger] = {}


def _update() -> None:
    global ACTIVE
    ACTIVE = bool(_GLOBAL) or _SCOPES[0] > 0


def add_observer(observer: Observer) -> None:
    """Make ``observer`` see every operation in the process."""
    global _GLOBAL
    with _LOCK:
        if observer not in _GLOBAL:
            _GLOBAL = (*_GLOBAL, observer)
        _update()


def remove_observer(observer: Observer) -> None:
    """Undo :func:`add_observer` (no error if it was not added)."""
    global _GLOBAL
    with _LOCK:
        _GLOBAL = tuple(o for o in _GLOBAL if o != observer)
        _update()


@contextlib.contextmanager
def observing(observer: Observer) -> Iterator[None]:
    """Make ``observer`` see the operations started in this context (and its threads)."""
    with _LOCK:
        _SCOPES[0] += 1
        _update()
    token = _SCOPED.set((*_SCOPED.get(), observer))
    try:
        yield
    finally:
        _SCOPED.reset(token)
        with _LOCK:
            _SCOPES[0] -= 1
            _update()


class Listening:
    """Observers scoped to one run, made current around each stretch of the run's work.

    A run is a generator: its work happens inside the caller's ``next()`` calls, so the
    observers are set around each of them (:meth:`active`) and the process-wide
    :data:`ACTIVE` flag is held on from construction until :meth:`close`. Observers
    already current (a nested run under its parent's) are left out, so nothing hears an
    operation twice.
    """

    __slots__ = ("_open", "observers")

    def __init__(self, observers: Sequence[Observer]) -> None:
        current = _SCOPED.get()
        self.observers = tuple(o for o in observers if o not in current)
        self._open = bool(self.observers)
        if self._open:
            with _LOCK:
                _SCOPES[0] += 1
                _update()

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """Make the observers current for the enclosed work."""
        if not self.observers:
            yield
            return
        token = _SCOPED.set((*_SCOPED.get(), *self.observers))
        try:
            yield
        finally:
            _SCOPED.reset(token)

    def close(self) -> None:
        """Release the hold on :data:`ACTIVE` (idempotent)."""
        if self._open:
            self._open = False
            with _LOCK:
                _SCOPES[0] -= 1
                _update()


def register_log(kind: str, logger: logging.Logger, observer: Observer) -> None:
    """Let ``observer`` see operations of ``kind`` while ``logger`` is enabled for DEBUG."""
    _LOGS[kind] = observer
    _LOGGERS[kind] = logger


def _observers(kind: str) -> tuple[Observer, ...]:
    found = _GLOBAL
    scoped = _SCOPED.get()
    if scoped:
        found = found + scoped
    logger = _LOGGERS.get(kind)
    if logger is not None and logger.isEnabledFor(logging.DEBUG):
        found = (*found, _LOGS[kind])
    return found


def _watch(scopes: list[Scope | None]) -> Watch:
    kept = [s for s in scopes if s is not None]
    return Watch(kept) if kept else IDLE


def run(
    graph: str,
    thread_id: str | None,
    *,
    nested: bool,
    agent: Any = None,
    input: Any = None,
    config: Any = None,
) -> Watch:
    """Watch a graph run (IDLE when nobody listens); ``record`` it with the final values."""
    if not ACTIVE:
        return IDLE
    observers = _observers("run")
    if not observers:
        return IDLE
    info = RunInfo(graph, thread_id, nested, agent, input, config)
    return _watch([o.run(info) for o in observers])


def node(
    name: str,
    kind: str,
    path: tuple[str, ...],
    state: Any = None,
    config: Any = None,
    attempt: int = 1,
) -> Watch:
    """Watch one node execution (callers on hot paths check :data:`ACTIVE` first);
    ``record`` it with the node's update."""
    if not ACTIVE:
        return IDLE
    observers = _observers("node")
    if not observers:
        return IDLE
    info = NodeInfo(name, kind, path, state, config, attempt)
    return _watch([o.node(info) for o in observers])


def chat(
    provider: str,
    model: str,
    messages: Sequence[Any],
    tools: Sequence[Any],
    options: Any,
    *,
    stream: bool,
    server: str | None = None,
) -> Watch:
    """Watch one chat model request; ``record`` it with the assistant message."""
    observers = _observers("chat")
    if not observers:
        return IDLE
    info = ChatInfo(provider, model, messages, tools, options, stream, server)
    return _watch([o.chat(info) for o in observers])


def tool(name: str, call_id: str, arguments: str) -> Watch:
    """Watch one tool call; ``record`` its text, or call ``failed`` with the error."""
    observers = _observers("tool")
    if not observers:
        return IDLE
    info = ToolInfo(name, call_id, arguments)
    return _watch([o.tool(info) for o in observers])
