"""Interceptors that shape the model request: clear old tool results past a token
budget (``ContextEditingInterceptor``), and let a model pick the tools offered
(``ToolSelectionInterceptor``). Both change only what one model call is sent; the
thread keeps every message as it was.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from graphagent.agent._builtins import approximate_tokens
from graphagent.agent._interceptors import ModelHandler, ModelInterceptor, ModelRequest
from graphagent.agent._structured import is_output_tool
from graphagent.errors import UserError
from graphagent.messages import AssistantMessage, Message, SystemMessage, ToolResponseMessage
from graphagent.messages import UserMessage as _User
from graphagent.models import ChatModel

__all__ = ["ContextEditingInterceptor", "ToolSelectionInterceptor"]

_LOG = logging.getLogger("graphagent.agent")


class ContextEditingInterceptor(ModelInterceptor):
    """Clear old tool results from the model request once it grows past ``trigger``
    tokens (Spring AI Alibaba's ``ContextEditingInterceptor``).

    The oldest tool results are replaced by ``placeholder``, keeping the ``keep`` most
    recent ones and those of ``exclude_tools``, until ``clear_at_least`` tokens are
    reclaimed (``0``: all that may be cleared); a cleared result loses its images and
    files too. With ``clear_tool_inputs`` the model's
    old tool calls are candidates too: their arguments become ``{}``. Only the request
    changes: the thread keeps the full results (for the user, the history, a summary).

    Args:
        trigger: the request size (tokens) above which results are cleared.
        clear_at_least: tokens to reclaim before stopping (``0``: clear every candidate).
        keep: the most recent tool results never cleared.
        clear_tool_inputs: also clear the arguments of old tool calls (to ``{}``).
        exclude_tools: names of tools whose results are never cleared.
        placeholder: what a cleared result reads.
        token_counter: ``messages -> tokens`` (default: about 4 characters a token).

    Example:
        >>> from graphagent.messages import ToolCall
        >>> calls = [ToolCall(id=str(i), name="search", arguments="{}") for i in range(3)]
        >>> results = [ToolResponseMessage("x" * 400, tool_call_id=str(i), name="search")
        ...            for i in range(3)]
        >>> history = [AssistantMessage(tool_calls=calls), *results]
        >>> edit = ContextEditingInterceptor(trigger=100, keep=1)
        >>> [m.content[:9] for m in edit.edited(history)[1:]]
        ['[cleared]', '[cleared]', 'xxxxxxxxx']
    """

    def __init__(
        self,
        *,
        trigger: int = 100_000,
        clear_at_least: int = 0,
        keep: int = 3,
        clear_tool_inputs: bool = False,
        exclude_tools: Iterable[str] = (),
        placeholder: str = "[cleared]",
        token_counter: Callable[[Sequence[Message]], int] = approximate_tokens,
    ) -> None:
        if trigger < 0 or clear_at_least < 0 or keep < 0:
            raise UserError("trigger, clear_at_least and keep must not be negative")
        self.trigger = trigger
        self.clear_at_least = clear_at_least
        self.keep = keep
        self.clear_tool_inputs = clear_tool_inputs
        self.exclude_tools = frozenset(exclude_tools)
        self.placeholder = placeholder
        self.token_counter = token_counter

    def _clearable(self, message: Message) -> bool:
        if isinstance(message, ToolResponseMessage):
            cleared = message.content == self.placeholder and not message.parts
            return not cleared and message.name not in self.exclude_tools
        if self.clear_tool_inputs and isinstance(message, AssistantMessage) and message.tool_calls:
            calls = message.tool_calls
            return any(c.arguments != "{}" for c in calls) and not any(
                c.name in self.exclude_tools for c in calls
            )
        return False

    def _cleared(self, message: Message) -> Message:
        if isinstance(message, ToolResponseMessage):  # its images and files go too
            return message.model_copy(update={"content": self.placeholder, "parts": ()})
        assert isinstance(message, AssistantMessage)
        calls = [c.model_copy(update={"arguments": "{}"}) for c in message.tool_calls]
        return message.model_copy(update={"tool_calls": calls})

    def edited(self, messages: Sequence[Message]) -> list[Message]:
        """``messages`` as the model will be sent them (unchanged under the trigger)."""
        if self.token_counter(messages) <= self.trigger:
            return list(messages)
        candidates = [i for i, m in enumerate(messages) if self._clearable(m)]
        candidates = candidates[: max(len(candidates) - self.keep, 0)]
        out = list(messages)
        reclaimed = cleared = 0
        for i in candidates:  # oldest first
            if self.clear_at_least and reclaimed >= self.clear_at_least:
                break
            reclaimed += self.token_counter([out[i]])
            out[i] = self._cleared(out[i])
            cleared += 1
        if cleared:
            _LOG.debug("cleared %d tool messages (~%d tokens)", cleared, reclaimed)
        return out

    def intercept_model(self, request: ModelRequest, handler: ModelHandler) -> AssistantMessage:
        """Send the edited messages."""
        edited = self.edited(request.messages)
        if edited == request.messages:
            return handler(request)
        return handler(request.override(messages=edited))


_SELECT_PROMPT = "Your goal is to select the most relevant tools for answering the user's query."


class ToolSelectionInterceptor(ModelInterceptor):
    """Let a (small, cheap) model pick the tools offered on each call, when an agent has
    more than ``max_tools`` of them (Spring AI Alibaba's ``ToolSelectionInterceptor``).

    The selection model sees the tool names and descriptions and the user's latest
    message, and answers ``{"tools": [...]}``. At most ``max_tools`` of its picks are
    offered (in its order), plus every ``always_include`` tool (not counted). If the
    selection model fails or answers nothing usable, every tool is offered.

    Args:
        model: the selection model.
        max_tools: most tools offered (``None``: as many as the model picks).
        always_include: tool names always offered.
        system_prompt: the selection model's instructions.

    Example:
        >>> from graphagent.models import FakeChatModel
        >>> pick = ToolSelectionInterceptor(FakeChatModel(['{"tools": ["b", "a"]}']),
        ...                                 max_tools=1, always_include=["c"])
        >>> pick.select(["a", "b", "c", "d"], {}, "do b")
        ['b', 'c']
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        max_tools: int | None = None,
        always_include: Iterable[str] = (),
        system_prompt: str = _SELECT_PROMPT,
    ) -> None:
        if max_tools is not None and max_tools < 1:
            raise UserError(f"max_tools must be at least 1, got {max_tools}")
        self.model = model
        self.max_tools = max_tools
        self.always_include = tuple(always_include)
        self.system_prompt = system_prompt

    def _ask(self, names: Sequence[str], descriptions: dict[str, str], query: str) -> str:
        listing = "\n".join(
            f"- {n}: {descriptions[n]}" if descriptions.get(n) else f"- {n}" for n in names
        )
        most = (
            f"\nIMPORTANT: list the tool names in order of relevance; select at most "
            f"{self.max_tools} tools."
            if self.max_tools is not None
            else ""
        )
        prompt = [
            SystemMessage(self.system_prompt + most),
            _User(
                f"Available tools:\n{listing}\n\nUser query: {query}\n\nRespond with a JSON "
                'object holding a "tools" array of the selected tool names: '
                '{"tools": ["tool1", "tool2"]}'
            ),
        ]
        return self.model.generate(prompt).text

    def select(self, names: Sequence[str], descriptions: dict[str, str], query: str) -> list[str]:
        """The tool names to offer for ``query``, in the agent's order."""
        try:
            picked = _picks(self._ask(names, descriptions, query))
        except Exception as exc:  # a failing selector must not fail the agent's call
            _LOG.warning("tool selection failed (%s); offering every tool", type(exc).__name__)
            return list(names)
        picked = [n for n in picked if n in names]
        if not picked:
            return list(names)
        if self.max_tools is not None:
            picked = picked[: self.max_tools]
        chosen = set(picked) | set(self.always_include)
        return [n for n in names if n in chosen]

    def intercept_model(self, request: ModelRequest, handler: ModelHandler) -> AssistantMessage:
        """Offer only the selected tools."""
        tools = list(request.tools)
        if not tools or (self.max_tools is not None and len(tools) <= self.max_tools):
            return handler(request)
        query = next((m.text for m in reversed(request.messages) if isinstance(m, _User)), None)
        if query is None:
            return handler(request)
        # the output tool of a structured agent is how it answers: always offered
        final = {_name(t) for t in tools if is_output_tool(t)}
        names = [_name(t) for t in tools if _name(t) not in final]
        descriptions = {_name(t): getattr(t, "description", "") or "" for t in tools}
        keep = set(self.select(names, descriptions, query)) | final
        return handler(request.override(tools=[t for t in tools if _name(t) in keep]))


def _name(tool: Any) -> str:
    return str(getattr(tool, "name", tool))


def _picks(text: str) -> list[str]:
    """Tool names from ``{"tools": [...]}`` (also inside a code fence or with prose)."""
    found = re.search(r"\{.*\}", text, flags=re.S)
    if found is None:
        return []
    try:
        data = json.loads(found.group())
    except json.JSONDecodeError:
        return []
    tools = data.get("tools") if isinstance(data, dict) else None
    return [str(t) for t in tools] if isinstance(tools, list) else []
