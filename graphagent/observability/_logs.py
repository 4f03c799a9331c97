"""DEBUG logs of model requests and tool calls, through the ``logging`` module.

Loggers: ``graphagent.models`` (requests and answers), ``graphagent.tools`` (tool
calls); checkpoint writes log under ``graphagent.checkpoint`` from the savers. Each
record carries its fields in ``record.graphagent`` (a dict) for structured handlers.
Message text, tool arguments and tool results appear only when content capture is on.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from graphagent._internal.observe import (
    ChatInfo,
    Observer,
    Scope,
    ToolInfo,
    content_captured,
    register_log,
)
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


class _ChatScope(Scope):
    def __init__(self, info: ChatInfo) -> None:
        self.info = info
        self.began = 0.0
        self.answer: Any = None

    def start(self) -> None:
        info = self.info
        self.began = time.perf_counter()
        fields: dict[str, Any] = {
            "provider": info.provider,
            "model": info.model,
            "messages": len(info.messages),
            "tools": len(info.tools),
            "stream": info.stream,
        }
        suffix = ""
        if content_captured() and info.messages:
            last = info.messages[-1]
            fields["last_message"] = _text(getattr(last, "text", last))
            suffix = f" last={fields['last_message']!r}"
        MODELS.debug(
            "chat request provider=%s model=%s messages=%d tools=%d stream=%s%s",
            info.provider,
            info.model,
            len(info.messages),
            len(info.tools),
            info.stream,
            suffix,
            extra={"graphagent": {"event": "chat.request", **fields}},
        )

    def record(self, result: Any) -> None:
        self.answer = result

    def finish(self, error: BaseException | None) -> None:
        info = self.info
        latency = (time.perf_counter() - self.began) * 1000
        base = {"provider": info.provider, "model": info.model, "latency_ms": round(latency, 1)}
        if error is not None and not isinstance(error, (GraphBubbleUp, GeneratorExit)):
            MODELS.debug(
                "chat failed provider=%s model=%s error=%s latency_ms=%.1f",
                info.provider,
                info.model,
                error_name(error),
                latency,
                extra={"graphagent": {"event": "chat.error", **base, "error": error_name(error)}},
            )
            return
        reason, tokens_in, tokens_out = usage_of(self.answer)
        fields = {**base, "finish_reason": reason, "input_tokens": tokens_in}
        fields["output_tokens"] = tokens_out
        suffix = ""
        if content_captured() and self.answer is not None:
            fields["answer"] = _text(getattr(self.answer, "text", ""))
            calls = [c.name for c in getattr(self.answer, "tool_calls", ())]
            suffix = f" answer={fields['answer']!r}" + (f" tool_calls={calls}" if calls else "")
        MODELS.debug(
            "chat response provider=%s model=%s finish_reason=%s input_tokens=%s "
            "output_tokens=%s latency_ms=%.1f%s",
            info.provider,
            info.model,
            reason,
            tokens_in,
            tokens_out,
            latency,
            suffix,
            extra={"graphagent": {"event": "chat.response", **fields}},
        )


class _ToolScope(Scope):
    def __init__(self, info: ToolInfo) -> None:
        self.info = info
        self.began = 0.0
        self.outcome = "ok"
        self.result: Any = None

    def start(self) -> None:
        self.began = time.perf_counter()

    def record(self, result: Any) -> None:
        self.result = result

    def failed(self, error: BaseException | str) -> None:
        self.outcome = f"error:{error_name(error)}"

    def finish(self, error: BaseException | None) -> None:
        info = self.info
        duration = (time.perf_counter() - self.began) * 1000
        outcome = self.outcome
        if isinstance(error, GraphBubbleUp):
            outcome = "interrupted"
        elif error is not None:
            outcome = f"error:{error_name(error)}"
        fields: dict[str, Any] = {
            "tool": info.name,
            "call_id": info.call_id,
            "outcome": outcome,
            "duration_ms": round(duration, 1),
        }
        suffix = ""
        if content_captured():
            fields["arguments"] = _text(info.arguments)
            fields["result"] = _text(self.result) if self.result is not None else None
            suffix = f" arguments={fields['arguments']!r} result={fields['result']!r}"
        TOOLS.debug(
            "tool call name=%s call_id=%s outcome=%s duration_ms=%.1f%s",
            info.name,
            info.call_id,
            outcome,
            duration,
            suffix,
            extra={"graphagent": {"event": "tool.call", **fields}},
        )


class ChatLog(Observer):
    """Logs each chat request and its answer (or failure) at DEBUG."""

    def chat(self, info: ChatInfo) -> Scope:
        """A scope logging this request."""
        return _ChatScope(info)


class ToolLog(Observer):
    """Logs each tool call (name, duration, outcome) at DEBUG."""

    def tool(self, info: ToolInfo) -> Scope:
        """A scope logging this call."""
        return _ToolScope(info)


register_log("chat", MODELS, ChatLog())
register_log("tool", TOOLS, ToolLog())
