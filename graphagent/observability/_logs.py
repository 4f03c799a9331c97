"""DEBUG logs of model requests and tool calls, through the ``logging`` module.

Loggers: ``graphagent.models`` (requests and answers), ``graphagent.tools`` (tool
calls); checkpoint writes log under ``graphagent.checkpoint`` from the savers. Each
record carries its fields in ``record.graphagent`` (a dict) for structured handlers.
Message text, tool arguments and tool results appear only when content capture is on.

Both loggers are lifecycle listeners (:class:`ChatLog`, :class:`ToolLog`), asked for
model and tool calls while their logger is enabled for DEBUG.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from graphagent._internal.listen import GraphLifecycleListener, ListenerObserver
from graphagent._internal.observe import ChatInfo, ToolInfo, content_captured, register_log
from graphagent.errors import GraphBubbleUp

__all__ = ["ChatLog", "ToolLog", "error_name", "usage_of"]

MODELS = logging.getLogger("graphagent.models")
TOOLS = logging.getLogger("graphagent.tools")


def error_name(error: BaseException | str) -> str:
    """A failure's name for a log or span: the exception type (never its text)."""
    return error if isinstance(error, str) else type(error).__qualname__


def usage_of(message: Any) -> tuple[str | None, int | None, int | None]:
    """(finish reason, input tokens, output tokens) of an assistant message."""
    metadata = getattr(message, "metadata", None) or {}
    usage = metadata.get("usage") or {}
    return metadata.get("finish_reason"), usage.get("prompt_tokens"), usage.get("completion_tokens")


def _text(value: Any, limit: int = 2000) -> str:
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit else text[:limit] + "…"


class ChatLog(GraphLifecycleListener):
    """Logs each chat request and its answer (or failure) at DEBUG."""

    def __init__(self) -> None:
        self.began: dict[ChatInfo, float] = {}

    def on_model_start(self, call: ChatInfo) -> None:
        """Log the request."""
        self.began[call] = time.perf_counter()
        fields: dict[str, Any] = {
            "provider": call.provider,
            "model": call.model,
            "messages": len(call.messages),
            "tools": len(call.tools),
            "stream": call.stream,
        }
        suffix = ""
        if content_captured() and call.messages:
            last = call.messages[-1]
            fields["last_message"] = _text(getattr(last, "text", last))
            suffix = f" last={fields['last_message']!r}"
        MODELS.debug(
            "chat request provider=%s model=%s messages=%d tools=%d stream=%s%s",
            call.provider,
            call.model,
            len(call.messages),
            len(call.tools),
            call.stream,
            suffix,
            extra={"graphagent": {"event": "chat.request", **fields}},
        )

    def on_model_end(self, call: ChatInfo, answer: Any, error: BaseException | None) -> None:
        """Log the answer, or the failure."""
        latency = (time.perf_counter() - self.began.pop(call)) * 1000
        base = {"provider": call.provider, "model": call.model, "latency_ms": round(latency, 1)}
        if error is not None and not isinstance(error, (GraphBubbleUp, GeneratorExit)):
            MODELS.debug(
                "chat failed provider=%s model=%s error=%s latency_ms=%.1f",
                call.provider,
                call.model,
                error_name(error),
                latency,
                extra={"graphagent": {"event": "chat.error", **base, "error": error_name(error)}},
            )
            return
        reason, tokens_in, tokens_out = usage_of(answer)
        fields = {**base, "finish_reason": reason, "input_tokens": tokens_in}
        fields["output_tokens"] = tokens_out
        suffix = ""
        if content_captured() and answer is not None:
            fields["answer"] = _text(getattr(answer, "text", ""))
            calls = [c.name for c in getattr(answer, "tool_calls", ())]
            suffix = f" answer={fields['answer']!r}" + (f" tool_calls={calls}" if calls else "")
        MODELS.debug(
            "chat response provider=%s model=%s finish_reason=%s input_tokens=%s "
            "output_tokens=%s latency_ms=%.1f%s",
            call.provider,
            call.model,
            reason,
            tokens_in,
            tokens_out,
            latency,
            suffix,
            extra={"graphagent": {"event": "chat.response", **fields}},
        )


class ToolLog(GraphLifecycleListener):
    """Logs each tool call (name, duration, outcome) at DEBUG."""

    def __init__(self) -> None:
        self.began: dict[ToolInfo, float] = {}
        self.failures: dict[ToolInfo, str] = {}

    def on_tool_start(self, call: ToolInfo) -> None:
        """Start the call's clock."""
        self.began[call] = time.perf_counter()

    def on_tool_error(self, call: ToolInfo, error: BaseException) -> None:
        """Keep the failure handed to the model for the call's line."""
        self.failures[call] = f"error:{error_name(error)}"

    def on_tool_end(self, call: ToolInfo, result: Any, error: BaseException | None) -> None:
        """Log the call."""
        duration = (time.perf_counter() - self.began.pop(call)) * 1000
        outcome = self.failures.pop(call, "ok")
        if isinstance(error, GraphBubbleUp):
            outcome = "interrupted"
        elif error is not None:
            outcome = f"error:{error_name(error)}"
        fields: dict[str, Any] = {
            "tool": call.name,
            "call_id": call.call_id,
            "outcome": outcome,
            "duration_ms": round(duration, 1),
        }
        suffix = ""
        if content_captured():
            fields["arguments"] = _text(call.arguments)
            fields["result"] = _text(result) if result is not None else None
            suffix = f" arguments={fields['arguments']!r} result={fields['result']!r}"
        TOOLS.debug(
            "tool call name=%s call_id=%s outcome=%s duration_ms=%.1f%s",
            call.name,
            call.call_id,
            outcome,
            duration,
            suffix,
            extra={"graphagent": {"event": "tool.call", **fields}},
        )


register_log("chat", MODELS, ListenerObserver(ChatLog()))
register_log("tool", TOOLS, ListenerObserver(ToolLog()))
