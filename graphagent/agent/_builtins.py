"""Built-in hooks and interceptors: call limits, summarization, retries, fallbacks."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypeVar

from graphagent.agent._hooks import ModelHook
from graphagent.agent._interceptors import (
    ModelHandler,
    ModelInterceptor,
    ModelRequest,
    ToolHandler,
    ToolInterceptor,
    ToolRequest,
)
from graphagent.agent._react_tools import pending_tool_calls
from graphagent.agent._record import AgentRecord, answer_tool_calls
from graphagent.config import RunnableConfig
from graphagent.errors import GraphBubbleUp, LimitExceededError, ModelError, UserError
from graphagent.graph import Command, OverAllState
from graphagent.messages import (
    AssistantMessage,
    Message,
    RemoveMessage,
    SystemMessage,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import ChatModel

__all__ = [
    "ModelCallLimitHook",
    "ModelFallbackInterceptor",
    "ModelRetryInterceptor",
    "SummarizationHook",
    "ToolCallLimitHook",
    "ToolErrorInterceptor",
    "ToolRetryInterceptor",
    "approximate_tokens",
]

Exit = Literal["end", "error"]


class ModelCallLimitHook(ModelHook):
    """Stop before the model is called more than ``run_limit`` times in a run, or
    ``thread_limit`` times over a whole thread (counts persist in the thread's state).

    Args:
        run_limit: most model calls per run.
        thread_limit: most model calls per thread, across runs and processes.
        exit_behavior: ``"end"`` finishes the run with a short assistant message;
            ``"error"`` raises :class:`LimitExceededError`.
    """

    can_jump_to = ("end",)

    def __init__(
        self,
        *,
        run_limit: int | None = None,
        thread_limit: int | None = None,
        exit_behavior: Exit = "end",
        name: str | None = None,
    ) -> None:
        if run_limit is None and thread_limit is None:
            raise UserError("ModelCallLimitHook needs run_limit=, thread_limit= or both")
        self.run_limit = run_limit
        self.thread_limit = thread_limit
        self.exit_behavior = exit_behavior
        self._name = name

    def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        """End (or raise) when a limit is reached."""
        record = AgentRecord.of(state)
        run, thread = record.run_model_calls, record.model_calls
        hit = None
        if self.run_limit is not None and run >= self.run_limit:
            hit = f"run limit of {self.run_limit} model calls"
        elif self.thread_limit is not None and thread >= self.thread_limit:
            hit = f"thread limit of {self.thread_limit} model calls"
        if hit is None:
            return None
        if self.exit_behavior == "error":
            raise LimitExceededError(f"model call limit reached: {hit}")
        note = AssistantMessage(f"Stopped: the {hit} was reached.", metadata={"limit": hit})
        return Command(update={"messages": [note]}, goto="end")


class ToolCallLimitHook(ModelHook):
    """Limit tool calls per run or per thread, for all tools or one.

    Calls past the limit are not run: each gets a tool message saying the limit was
    reached (``exit_behavior="continue"``, the model can answer without them), or the
    run ends (``"end"``) or raises (``"error"``). Blocked calls are answered through
    :func:`answer_tool_calls`, as any hook can.

    Args:
        limit: most calls allowed.
        tool_name: count only this tool (default: all tools).
        per: ``"run"`` or ``"thread"``.
        exit_behavior: ``"continue"``, ``"end"`` or ``"error"``.
    """

    can_jump_to = ("end",)

    def __init__(
        self,
        limit: int,
        *,
        tool_name: str | None = None,
        per: Literal["run", "thread"] = "run",
        exit_behavior: Literal["continue", "end", "error"] = "continue",
        name: str | None = None,
    ) -> None:
        self.limit = limit
        self.tool_name = tool_name
        self.per = per
        self.exit_behavior = exit_behavior
        self._name = name or (f"tool_call_limit_{tool_name}" if tool_name else None)

    def after_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        """Block or stop on calls past the limit."""
        last, pending = pending_tool_calls(state.get("messages", []))
        if last is None or not pending:
            return None
        record = AgentRecord.of(state)
        counts = record.run_tool_calls if self.per == "run" else record.tool_calls
        used = counts.get(self.tool_name, 0) if self.tool_name else sum(counts.values())
        blocked = []
        for call in pending:
            if self.tool_name is not None and call.name != self.tool_name:
                continue
            if used >= self.limit:
                blocked.append(call)
            else:
                used += 1
        if not blocked:
            return None
        what = f"tool {self.tool_name!r}" if self.tool_name else "tools"
        text = f"Not run: the {self.per} limit of {self.limit} calls to {what} was reached."
        if self.exit_behavior == "error":
            raise LimitExceededError(text)
        if self.exit_behavior == "end":
            notes = [
                ToolResponseMessage(
                    text if c in blocked else "Not run: the run was stopped.",
                    tool_call_id=c.id,
                    name=c.name,
                )
                for c in pending
            ]
            final = AssistantMessage(text, metadata={"limit": what})
            return Command(update={"messages": [*notes, final]}, goto="end")
        # pre-answer the blocked calls: the tools node writes them in call order
        return answer_tool_calls(state, {c.id: text for c in blocked})


PART_TOKENS = 1000
"""What :func:`approximate_tokens` counts for one image or file part (providers charge an
image by its pixels, not its bytes: about 85 to 1,600 tokens; a page of a PDF more)."""


def approximate_tokens(messages: Sequence[Message]) -> int:
    """A rough token count: about four characters a token, and :data:`PART_TOKENS` for
    each image or file (no tokenizer dependency)."""
    total = 0
    for m in messages:
        total += len(m.content) // 4 + 4
        if isinstance(m, AssistantMessage):
            total += sum(len(c.arguments) // 4 + 4 for c in m.tool_calls)
        parts = getattr(m, "parts", ())
        if parts:
            total += PART_TOKENS * len(parts)
    return total


class SummarizationHook(ModelHook):
    """Summarize old messages when the conversation grows past a token budget.

    The oldest messages are replaced by one summary message; the newest
    ``keep_last`` are kept, and the cut never separates a tool call from its result.

    Args:
        model: the model that writes the summary.
        max_tokens: summarize when the messages exceed this many tokens.
        keep_last: messages to keep as they are.
        token_counter: counts tokens (default :func:`approximate_tokens`).
        prompt: the instruction given with the old messages.
    """

    def __init__(
        self,
        model: ChatModel,
        *,
        max_tokens: int = 4000,
        keep_last: int = 20,
        token_counter: Callable[[Sequence[Message]], int] = approximate_tokens,
        prompt: str = (
            "Summarize the conversation above in a few sentences, keeping every fact, "
            "decision and open question needed to continue it."
        ),
        name: str | None = None,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.keep_last = keep_last
        self.token_counter = token_counter
        self.prompt = prompt
        self._name = name

    def cut_point(self, messages: Sequence[Message]) -> int:
        """Index of the first kept message: never a tool result cut from its call."""
        cut = max(0, len(messages) - self.keep_last)
        while 0 < cut < len(messages) and isinstance(messages[cut], ToolResponseMessage):
            cut -= 1
        return cut

    def before_model(self, state: OverAllState, config: RunnableConfig) -> Any:
        """Replace old messages by a summary when over budget."""
        messages: list[Message] = list(state.get("messages", []))
        if self.token_counter(messages) <= self.max_tokens:
            return None
        cut = self.cut_point(messages)
        old, kept = messages[:cut], messages[cut:]
        if not old:
            return None
        answer = self.model.generate([*old, UserMessage(self.prompt)])
        summary = SystemMessage(
            f"Summary of the earlier conversation: {answer.content}",
            metadata={"summary_of": len(old)},
        )
        removals: list[Message] = [RemoveMessage(m.id) for m in messages]
        return {"messages": [*removals, summary, *kept]}


T = TypeVar("T")


def _retrying(
    call: Callable[[], T],
    max_retries: int,
    retry_on: tuple[type[BaseException], ...],
    backoff: float,
) -> T:
    """``call()``, retried up to ``max_retries`` times on ``retry_on``, backing off 2x."""
    for attempt in range(max_retries):
        try:
            return call()
        except GraphBubbleUp:
            raise
        except retry_on:
            time.sleep(backoff * 2**attempt)
    return call()


class ModelRetryInterceptor(ModelInterceptor):
    """Retry a failed model call (after the client's own HTTP retries).

    Args:
        max_retries: extra attempts.
        retry_on: exception types worth retrying.
        backoff: seconds before the first retry, doubled each time.
    """

    def __init__(
        self,
        max_retries: int = 2,
        *,
        retry_on: tuple[type[BaseException], ...] = (ModelError,),
        backoff: float = 0.5,
    ) -> None:
        self.max_retries = max_retries
        self.retry_on = retry_on
        self.backoff = backoff

    def intercept_model(self, request: ModelRequest, handler: ModelHandler) -> AssistantMessage:
        """Call, retrying on ``retry_on``."""
        return _retrying(lambda: handler(request), self.max_retries, self.retry_on, self.backoff)


class ModelFallbackInterceptor(ModelInterceptor):
    """On a model failure, try the next model in order.

    Args:
        *fallbacks: models to try after the agent's own.
        retry_on: exception types that trigger a fallback.
    """

    def __init__(
        self, *fallbacks: ChatModel, retry_on: tuple[type[BaseException], ...] = (ModelError,)
    ) -> None:
        if not fallbacks:
            raise UserError("ModelFallbackInterceptor needs at least one fallback model")
        self.fallbacks = fallbacks
        self.retry_on = retry_on

    def intercept_model(self, request: ModelRequest, handler: ModelHandler) -> AssistantMessage:
        """Call the agent's model, then each fallback until one answers."""
        try:
            return handler(request)
        except GraphBubbleUp:
            raise
        except self.retry_on as first:
            error: BaseException = first
            for model in self.fallbacks:
                try:
                    return handler(request.override(model=model))
                except GraphBubbleUp:
                    raise
                except self.retry_on as exc:
                    error = exc
            raise error from first


class ToolRetryInterceptor(ToolInterceptor):
    """Retry a tool that raised.

    Args:
        max_retries: extra attempts.
        retry_on: exception types worth retrying.
        backoff: seconds before the first retry, doubled each time.
        tools: only these tool names (default: all).
    """

    def __init__(
        self,
        max_retries: int = 2,
        *,
        retry_on: tuple[type[BaseException], ...] = (Exception,),
        backoff: float = 0.1,
        tools: Sequence[str] | None = None,
    ) -> None:
        self.max_retries = max_retries
        self.retry_on = retry_on
        self.backoff = backoff
        self.tools = set(tools) if tools is not None else None

    def intercept_tool_call(
        self, request: ToolRequest, handler: ToolHandler
    ) -> ToolResponseMessage:
        """Call the tool, retrying on ``retry_on``."""
        if self.tools is not None and request.tool_call.name not in self.tools:
            return handler(request)
        return _retrying(lambda: handler(request), self.max_retries, self.retry_on, self.backoff)


class ToolErrorInterceptor(ToolInterceptor):
    """Turn a tool's exception into a message of your wording (instead of the default).

    Args:
        message: ``(tool_name, exception) -> text`` for the model.
        handle: exception types to handle (others propagate).
    """

    def __init__(
        self,
        message: Callable[[str, BaseException], str] = lambda name, exc: (
            f"The tool {name} is unavailable right now ({type(exc).__name__}). "
            "Try another way or tell the user."
        ),
        *,
        handle: tuple[type[BaseException], ...] = (Exception,),
    ) -> None:
        self.message = message
        self.handle = handle

    def intercept_tool_call(
        self, request: ToolRequest, handler: ToolHandler
    ) -> ToolResponseMessage:
        """Call the tool; on a handled exception answer with the message."""
        try:
            return handler(request)
        except GraphBubbleUp:
            raise
        except self.handle as exc:
            call = request.tool_call
            return ToolResponseMessage(
                self.message(call.name, exc), tool_call_id=call.id, name=call.name
            )
