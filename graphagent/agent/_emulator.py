"""``ToolEmulatorInterceptor``: a model answers in place of tools (Spring AI Alibaba's
``ToolEmulatorInterceptor``), to try an agent before its tools exist or without their
side effects."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from graphagent.agent._interceptors import (
    AsyncToolHandler,
    ToolHandler,
    ToolInterceptor,
    ToolRequest,
)
from graphagent.messages import ToolResponseMessage, UserMessage
from graphagent.models import ChatModel

__all__ = ["ToolEmulatorInterceptor"]

_LOG = logging.getLogger("graphagent.agent")

EMULATOR_PROMPT = """You are emulating a tool call for testing purposes.

Tool: {name}
Description: {description}
Arguments: {arguments}

Generate a realistic response that this tool would return given these arguments.
Return ONLY the tool's output, no explanation or preamble."""


class ToolEmulatorInterceptor(ToolInterceptor):
    """Answer tool calls with a model instead of running the tools.

    The model is shown the tool's name, description and the call's arguments and its
    answer is the tool's result. ``tools`` names the tools to emulate (default: all);
    the others run. If the emulating model fails, the real tool runs.

    Args:
        model: the model that plays the tools.
        tools: names of the tools to emulate (``None``: every tool).
        prompt: the template (``{name}``, ``{description}``, ``{arguments}``).

    Example:
        >>> from graphagent.messages import ToolCall
        >>> from graphagent.models import FakeChatModel
        >>> from graphagent.tools import ToolContext, tool
        >>> @tool
        ... def weather(city: str) -> str:
        ...     '''The weather in a city.'''
        ...     raise RuntimeError("no network in tests")
        >>> emulate = ToolEmulatorInterceptor(FakeChatModel(["Sunny, 21 C"]))
        >>> call = ToolCall(id="1", name="weather", arguments='{"city": "Paris"}')
        >>> request = ToolRequest(call, weather, ToolContext(), {}, ToolContext().config)
        >>> emulate.intercept_tool_call(request, lambda r: None).content
        'Sunny, 21 C'
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        tools: Iterable[str] | None = None,
        prompt: str = EMULATOR_PROMPT,
    ) -> None:
        self.model = model
        self.emulated = frozenset(tools) if tools is not None else None
        self.prompt = prompt

    def _emulates(self, name: str) -> bool:
        return self.emulated is None or name in self.emulated

    def _ask(self, request: ToolRequest) -> list[UserMessage]:
        call = request.tool_call
        definition = getattr(request.tool, "definition", None)
        description = getattr(definition, "description", "") or "No description available"
        text = self.prompt.format(name=call.name, description=description, arguments=call.arguments)
        return [UserMessage(text)]

    def _answer(self, request: ToolRequest, text: str) -> ToolResponseMessage:
        call = request.tool_call
        return ToolResponseMessage(text, tool_call_id=call.id, name=call.name)

    def intercept_tool_call(
        self, request: ToolRequest, handler: ToolHandler
    ) -> ToolResponseMessage:
        """The emulating model's answer (or the real tool, for tools not emulated)."""
        if not self._emulates(request.tool_call.name):
            return handler(request)
        try:
            answer = self.model.generate(self._ask(request))
        except Exception as exc:  # emulation is a convenience: fall back to the tool
            _LOG.warning("tool emulation of %r failed (%s)", request.tool_call.name, exc)
            return handler(request)
        return self._answer(request, answer.text)

    async def aintercept_tool_call(
        self, request: ToolRequest, handler: AsyncToolHandler
    ) -> ToolResponseMessage:
        """Async :meth:`intercept_tool_call`."""
        if not self._emulates(request.tool_call.name):
            return await handler(request)
        try:
            answer = await self.model.agenerate(self._ask(request))
        except Exception as exc:
            _LOG.warning("tool emulation of %r failed (%s)", request.tool_call.name, exc)
            return await handler(request)
        return self._answer(request, answer.text)
