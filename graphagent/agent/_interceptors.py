"""Interceptors: code wrapped around every model call and every tool call.

Interceptors are ordered as hooks are: by ``order``, lower first (the outermost: it
sees the request first and the response last), and equal orders in list order, so
with the default ``order = 0`` the first in the list is the outermost. Each gets the
request and the next handler; it may change the request, call the handler several
times (retry), not call it at all (short-circuit), or change the response.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from graphagent.config import RunnableConfig
from graphagent.messages import AssistantMessage, Message, ToolCall, ToolResponseMessage
from graphagent.models import ChatModel, ChatOptions
from graphagent.tools import ToolCallback, ToolContext

__all__ = [
    "AsyncModelHandler",
    "AsyncToolHandler",
    "ModelHandler",
    "ModelInterceptor",
    "ModelRequest",
    "ToolHandler",
    "ToolInterceptor",
    "ToolRequest",
    "chain_model",
    "chain_tool",
]


@dataclass(frozen=True)
class ModelRequest:
    """One model call, as interceptors see it.

    Attributes:
        model: the chat model to call.
        messages: what is sent (system prompt included).
        tools: the tools offered.
        options: call options.
        state: the agent's state at the call (read-only).
        config: the run's config.
    """

    model: ChatModel
    messages: list[Message]
    tools: list[Any]
    options: ChatOptions | None
    state: Any
    config: RunnableConfig

    def override(self, **changes: Any) -> ModelRequest:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ToolRequest:
    """One tool call, as interceptors see it.

    Attributes:
        tool_call: the model's call (name, arguments, id).
        tool: the tool it resolved to (``None`` for an unknown name).
        context: the tool's ``ToolContext``.
        state: the agent's state (read-only).
        config: the run's config.
    """

    tool_call: ToolCall
    tool: ToolCallback | None
    context: ToolContext
    state: Any
    config: RunnableConfig

    def override(self, **changes: Any) -> ToolRequest:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


ModelHandler = Callable[[ModelRequest], AssistantMessage]
AsyncModelHandler = Callable[[ModelRequest], Awaitable[AssistantMessage]]
ToolHandler = Callable[[ToolRequest], ToolResponseMessage]
AsyncToolHandler = Callable[[ToolRequest], Awaitable[ToolResponseMessage]]


class ModelInterceptor:
    """Wraps model calls. Override ``intercept_model`` (and ``aintercept_model`` for
    native async; otherwise the sync one runs in a worker thread under ``ainvoke``).
    An interceptor that brings tools lists them in :attr:`provided_tools`; the agent adds them.
    ``order`` places it among the others (lower is outer; ties keep list order)."""

    #: where the interceptor wraps among the others: lower is outer (ties keep list order)
    order: int = 0

    @property
    def name(self) -> str:
        """The interceptor's name."""
        return type(self).__name__

    @property
    def provided_tools(self) -> Sequence[Any]:
        """Tools this interceptor adds to the agent (none by default)."""
        return ()

    def intercept_model(self, request: ModelRequest, handler: ModelHandler) -> AssistantMessage:
        """Call ``handler(request)`` (or not) and return the response."""
        return handler(request)

    async def aintercept_model(
        self, request: ModelRequest, handler: AsyncModelHandler
    ) -> AssistantMessage:
        """Async :meth:`intercept_model`."""
        response: AssistantMessage = await _bridge(self.intercept_model, request, handler)
        return response


class ToolInterceptor:
    """Wraps tool calls. Override ``intercept_tool_call`` (and ``aintercept_tool_call``).
    An interceptor that brings tools lists them in :attr:`provided_tools`; the agent adds them.
    ``order`` places it among the others (lower is outer; ties keep list order)."""

    #: where the interceptor wraps among the others: lower is outer (ties keep list order)
    order: int = 0

    @property
    def name(self) -> str:
        """The interceptor's name."""
        return type(self).__name__

    @property
    def provided_tools(self) -> Sequence[Any]:
        """Tools this interceptor adds to the agent (none by default)."""
        return ()

    def intercept_tool_call(
        self, request: ToolRequest, handler: ToolHandler
    ) -> ToolResponseMessage:
        """Call ``handler(request)`` (or not) and return the tool's message."""
        return handler(request)

    async def aintercept_tool_call(
        self, request: ToolRequest, handler: AsyncToolHandler
    ) -> ToolResponseMessage:
        """Async :meth:`intercept_tool_call`."""
        response: ToolResponseMessage = await _bridge(self.intercept_tool_call, request, handler)
        return response


async def _bridge(sync_intercept: Callable[[Any, Any], Any], request: Any, handler: Any) -> Any:
    """Run a sync interceptor from async code: it runs in a thread, its handler on the loop."""
    loop = asyncio.get_running_loop()

    def sync_handler(req: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(handler(req), loop).result()

    return await asyncio.to_thread(sync_intercept, request, sync_handler)


def _fold(interceptors: Sequence[Any], base: Any, method: str) -> Any:
    """``base`` wrapped by ``interceptor.<method>(request, next)``, the first outermost."""
    handler = base
    for icpt in reversed(interceptors):
        handler = (lambda call, nxt: lambda req: call(req, nxt))(getattr(icpt, method), handler)
    return handler


def chain_model(interceptors: Sequence[ModelInterceptor], base: ModelHandler) -> ModelHandler:
    """``base`` wrapped by the interceptors, the first outermost."""
    return _fold(interceptors, base, "intercept_model")  # type: ignore[no-any-return]


def achain_model(
    interceptors: Sequence[ModelInterceptor], base: AsyncModelHandler
) -> AsyncModelHandler:
    """Async :func:`chain_model`."""
    return _fold(interceptors, base, "aintercept_model")  # type: ignore[no-any-return]


def chain_tool(interceptors: Sequence[ToolInterceptor], base: ToolHandler) -> ToolHandler:
    """``base`` wrapped by the tool interceptors, the first outermost."""
    return _fold(interceptors, base, "intercept_tool_call")  # type: ignore[no-any-return]


def achain_tool(
    interceptors: Sequence[ToolInterceptor], base: AsyncToolHandler
) -> AsyncToolHandler:
    """Async :func:`chain_tool`."""
    return _fold(interceptors, base, "aintercept_tool_call")  # type: ignore[no-any-return]
