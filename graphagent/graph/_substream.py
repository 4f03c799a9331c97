"""Streaming subgraphs: ``stream(..., subgraphs=True)`` hands out the events of graphs run
inside nodes, each with the namespace of the run it came from.

The root run puts a *sink* in the run context it shares with nested runs. A nested run
then streams in the root's modes: its events are forwarded to the sink by the node that
runs it (:func:`forward`), and what its nodes write through ``config.writer`` (or, for
``"messages"``, ``config.emit``) goes to the sink directly, from whatever thread they run in.
The sink is the root's live channel, so these events reach the caller as they happen.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any

from graphagent.config import RunnableConfig
from graphagent.graph._command import RunContext, current_task
from graphagent.graph._constants import public
from graphagent.graph._drive import RESULT
from graphagent.graph._effects import Emit
from graphagent.graph._namespace import namespace
from graphagent.messages import Message

__all__ = [
    "NAMESPACE",
    "SKIP",
    "SUBGRAPH",
    "Fresh",
    "Shown",
    "Sink",
    "aforward",
    "forward",
    "nested_config",
    "nested_opening",
    "share_streams",
    "streamed",
    "with_namespace",
]

Sink = Callable[[tuple[str, ...], str, Any], None]
"""Where nested runs' events go: ``sink(namespace, mode, payload)``."""

_TASK = current_task()

NAMESPACE = "\x00namespace"
"""The mode of a streamed nested run's first event: its payload is the run's namespace."""

SUBGRAPH = "\x00subgraph"
"""The mode under which the root's live channel carries ``(namespace, mode, payload)``."""


def nested_config(ctx: RunContext, base: tuple[str, ...], config: RunnableConfig) -> RunnableConfig:
    """``config`` for a nested run that streams: its nodes' ``writer`` (and ``emit``) send
    to the root's sink under the run's namespace."""
    assert ctx.stream is not None
    sink, modes = ctx.stream
    ns = namespace(ctx.anchor, base)
    update: dict[str, Any] = {"writer": lambda p: sink(ns, "custom", p)}
    if "messages" in modes:
        update["emit"] = lambda mode, p: sink(ns, mode, p)
    return config.model_copy(update=update)


def share_streams(
    ctx: RunContext, sink: Sink | None, modes: frozenset[str], config: RunnableConfig
) -> None:
    """A streaming root run's sinks, put where its nodes (and nested runs) find them."""
    if sink is not None:
        ctx.stream = (sink, modes)
    ctx.emit, ctx.writer = config.emit, config.writer


def nested_opening(
    ctx: RunContext, base: tuple[str, ...], modes: frozenset[str], values: Mapping[str, Any]
) -> Iterator[Emit]:
    """A streamed nested run's first events: its namespace, then (``"values"``) its state."""
    if ctx.stream is not None:
        yield Emit(NAMESPACE, namespace(ctx.anchor, base))
        if "values" in modes:
            yield Emit("values", public(values))


def streamed() -> tuple[Sink, frozenset[str]] | None:
    """The sink and modes of the root run streaming with ``subgraphs=True`` that the
    calling node belongs to, if it does."""
    scope = _TASK.get()
    ctx = scope.ctx if scope is not None else None
    return ctx.stream if ctx is not None else None


def with_namespace(
    modes: frozenset[str], pairs: bool, mode: str, payload: Any
) -> tuple[Any, ...] | None:
    """A ``subgraphs=True`` stream's event: ``(namespace, [mode,] payload)``, or ``None``
    for one of a mode not asked for."""
    ns: tuple[str, ...] = ()
    if mode == SUBGRAPH:
        ns, mode, payload = payload
    if mode not in modes:
        return None
    return (ns, mode, payload) if pairs else (ns, payload)


def forward(events: Iterator[tuple[str, Any]], sink: Sink) -> Any:
    """Drive a nested run's events into ``sink``; what the run returned."""
    ns: tuple[str, ...] = ()
    result = None
    for mode, payload in events:
        if mode is RESULT:
            result = payload
        elif mode is NAMESPACE:
            ns = payload
        else:
            sink(ns, mode, payload)
    return result


async def aforward(events: AsyncIterator[tuple[str, Any]], sink: Sink) -> Any:
    """Async :func:`forward`."""
    ns: tuple[str, ...] = ()
    result = None
    async for mode, payload in events:
        if mode is RESULT:
            result = payload
        elif mode is NAMESPACE:
            ns = payload
        else:
            sink(ns, mode, payload)
    return result


class Fresh:
    """A ``"messages"`` stream's filter: a whole message a node wrote is passed on only if
    the stream has not carried it already (as the model's chunks, or whole, by id)."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, mode: str, payload: Any) -> bool:
        """Whether to pass the event on."""
        if mode == SUBGRAPH:
            mode, payload = payload[1], payload[2]
        if mode != "messages" or not isinstance(payload, tuple) or not payload:
            return True
        item = payload[0]
        keys = [k for k in (getattr(item, "id", None),) if isinstance(k, str) and k]
        call = getattr(item, "tool_call_id", None)
        if isinstance(call, str) and call:  # a tool's result, streamed as it came and stored
            keys.append(f"tool result {call}")
        if isinstance(item, Message) and any(k in self.seen for k in keys):
            return False
        self.seen.update(keys)
        return True


SKIP = object()
"""What :class:`Shown` gives for an event the caller does not get."""


class Shown:
    """What ``stream()`` hands its caller for each event of the run: the payload, a
    ``(mode, payload)`` pair for a list of modes, with ``subgraphs`` the namespace first;
    :data:`SKIP` for events of modes not asked for and messages already streamed."""

    __slots__ = ("fresh", "modes", "pairs", "subgraphs")

    def __init__(self, modes: frozenset[str], pairs: bool, subgraphs: bool) -> None:
        self.modes, self.pairs, self.subgraphs = modes, pairs, subgraphs
        self.fresh = Fresh() if "messages" in modes else None

    def __call__(self, mode: str, payload: Any) -> Any:
        if self.fresh is not None and not self.fresh(mode, payload):
            return SKIP
        if self.subgraphs:
            shown = with_namespace(self.modes, self.pairs, mode, payload)
            return SKIP if shown is None else shown
        if mode not in self.modes:
            return SKIP
        return (mode, payload) if self.pairs else payload
