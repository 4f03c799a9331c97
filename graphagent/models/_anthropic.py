"""Anthropic's Messages API over httpx: system prompt, tool_use / tool_result blocks, streaming."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx

from graphagent.errors import ModelResponseError
from graphagent.messages import (
    AssistantMessage,
    Message,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
)
from graphagent.models._base import HTTPChatModel
from graphagent.models._http import ModelHTTP
from graphagent.models._media import anthropic_blocks
from graphagent.models._sse import ServerSentEvent
from graphagent.models._types import (
    AssistantChunk,
    ChatOptions,
    ToolCallDelta,
    ToolSpec,
    finish_reason,
)

__all__ = ["AnthropicChatModel"]

API_VERSION = "2023-06-01"


def _usage(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, dict):
        return None
    out = {}
    if raw.get("input_tokens") is not None:
        out["prompt_tokens"] = int(raw["input_tokens"])
    if raw.get("output_tokens") is not None:
        out["completion_tokens"] = int(raw["output_tokens"])
    return out or None


def _with_total(usage: dict[str, int]) -> dict[str, int]:
    if "prompt_tokens" in usage and "completion_tokens" in usage:
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def anthropic_messages(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt and the turns, in the Messages API's shape.

    System messages join into the system prompt; tool results become ``tool_result``
    blocks of a user turn; consecutive turns of one role merge (the API alternates). An
    answer's thinking blocks go back first in its turn, signed as they came (the API
    needs them to continue a tool call made while thinking).
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})

    for m in messages:
        if isinstance(m, RemoveMessage):
            continue
        if isinstance(m, SystemMessage):
            system.append(m.content)
        elif isinstance(m, ToolResponseMessage):
            result: Any = anthropic_blocks(m.content, m.parts) if m.parts else m.content
            push(
                "user", [{"type": "tool_result", "tool_use_id": m.tool_call_id, "content": result}]
            )
        elif isinstance(m, AssistantMessage):
            blocks: list[dict[str, Any]] = _thinking_blocks(m)
            if m.content:
                blocks.append({"type": "text", "text": m.content})
            for call in m.tool_calls:
                try:
                    args = json.loads(call.arguments or "{}")
                except json.JSONDecodeError:
                    args = {"_raw": call.arguments}
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": args})
            push("assistant", blocks or [{"type": "text", "text": ""}])
        else:
            push("user", anthropic_blocks(m.content, getattr(m, "parts", ())) or [_EMPTY_TEXT])
    return "\n\n".join(system), turns


_EMPTY_TEXT = {"type": "text", "text": ""}


def _thinking_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """The signed thinking blocks an answer came with, as plain dicts to send back."""
    kept = message.metadata.get("thinking_blocks") or ()
    return [
        {str(k): v for k, v in block.items()}
        for block in kept
        if isinstance(block, dict)
        and block.get("type") in ("thinking", "redacted_thinking")
        and (block.get("signature") or block.get("data"))
    ]


class _AnthropicStream:
    """Messages API stream events -> :class:`AssistantChunk`."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.events = 0
        self.tool_index: dict[int, int] = {}
        self.id: str | None = None
        self.usage: dict[str, int] = {}
        self.thinking: dict[int, dict[str, Any]] = {}

    def feed(self, event: ServerSentEvent) -> list[AssistantChunk]:
        self.events += 1
        data = json.loads(event.data)
        kind = data.get("type", event.event)
        if kind == "error":
            raise ModelResponseError(
                f"{self.where} reported an error mid-stream: {data.get('error')}"
            )
        if kind == "message_start":
            message = data.get("message") or {}
            self.id = message.get("id")
            self.usage.update(_usage(message.get("usage")) or {})
            meta = {"model": message["model"]} if message.get("model") else {}
            return [AssistantChunk(metadata=meta, id=self.id)] if meta else []
        if kind == "content_block_start":
            block = data.get("content_block") or {}
            if block.get("type") == "tool_use":
                index = self.tool_index.setdefault(data["index"], len(self.tool_index))
                start = ToolCallDelta(index=index, id=block.get("id"), name=block.get("name"))
                return [AssistantChunk(tool_calls=(start,), id=self.id)]
            if block.get("type") == "text" and block.get("text"):
                return [AssistantChunk(content=block["text"], id=self.id)]
            if block.get("type") == "thinking":
                self.thinking[data["index"]] = {"type": "thinking", "thinking": "", "signature": ""}
                if block.get("thinking"):
                    return self._thought(data["index"], block["thinking"])
            if block.get("type") == "redacted_thinking":
                kept = {"type": "redacted_thinking", "data": block.get("data", "")}
                return [AssistantChunk(metadata={"thinking_blocks": [kept]}, id=self.id)]
            return []
        if kind == "content_block_stop" and data.get("index") in self.thinking:
            kept = self.thinking.pop(data["index"])
            return [AssistantChunk(metadata={"thinking_blocks": [kept]}, id=self.id)]
        if kind == "content_block_delta":
            delta = data.get("delta") or {}
            if delta.get("type") == "text_delta":
                return [AssistantChunk(content=delta.get("text", ""), id=self.id)]
            if delta.get("type") == "thinking_delta":
                return self._thought(data["index"], delta.get("thinking", ""))
            if delta.get("type") == "signature_delta":
                self.thinking[data["index"]]["signature"] += delta.get("signature", "")
                return []
            if delta.get("type") == "input_json_delta":
                index = self.tool_index[data["index"]]
                piece = ToolCallDelta(index=index, arguments=delta.get("partial_json", ""))
                return [AssistantChunk(tool_calls=(piece,), id=self.id)]
            return []
        if kind == "message_delta":
            self.usage.update(_usage(data.get("usage")) or {})
            stop = (data.get("delta") or {}).get("stop_reason")
            final: dict[str, Any] = {"usage": _with_total(dict(self.usage))}
            if stop:
                final["finish_reason"] = finish_reason(stop, False)
            return [AssistantChunk(metadata=final, id=self.id)]
        return []

    def _thought(self, index: int, text: str) -> list[AssistantChunk]:
        self.thinking[index]["thinking"] += text
        return [AssistantChunk(reasoning=text, id=self.id)] if text else []

    def finish(self) -> None:
        """Nothing to check: an empty stream is handled by the model (see ``stream``)."""


class AnthropicChatModel(HTTPChatModel):
    """A Claude model behind Anthropic's Messages API.

    Args:
        model: the model name (``"claude-sonnet-4-5"``).
        base_url: the API root (default ``$ANTHROPIC_BASE_URL`` or Anthropic's).
        api_key: sent as ``x-api-key`` (default ``$ANTHROPIC_API_KEY``); never logged.
        max_tokens: the answer's token budget (the API requires one).
        timeout, max_retries, retry_backoff, deadline, stream_idle_timeout, key_env,
            transport, async_transport: as for :class:`OpenAIChatModel` (``key_env``
            defaults to ``ANTHROPIC_API_KEY`` for Anthropic's URL).
        **options: default :class:`ChatOptions`.
    """

    path = "/v1/messages"
    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 1024,
        timeout: float = 60,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
        deadline: float | None = 600.0,
        stream_idle_timeout: float | None = None,
        key_env: str | None = None,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        **options: Any,
    ) -> None:
        url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        headers = {"anthropic-version": API_VERSION}
        if key:
            headers["x-api-key"] = key
        if key_env is None and httpx.URL(url).host == "api.anthropic.com":
            key_env = "ANTHROPIC_API_KEY"
        http = ModelHTTP(
            base_url=url,
            headers=headers,
            timeout=timeout,
            max_retries=max_retries,
            retry_backoff=retry_backoff,
            deadline=deadline,
            stream_idle_timeout=stream_idle_timeout,
            secrets=[key] if key else [],
            missing_key=None if key else key_env,
            transport=transport,
            async_transport=async_transport,
        )
        defaults = ChatOptions.of(options) or ChatOptions()
        if defaults.max_tokens is None:
            defaults = defaults.merged(ChatOptions(max_tokens=max_tokens))
        super().__init__(model, http, defaults)

    def build_body(
        self, messages: list[Message], tools: list[ToolSpec], options: ChatOptions, stream: bool
    ) -> dict[str, Any]:
        """The Messages API request body."""
        system, turns = anthropic_messages(messages)
        body: dict[str, Any] = {
            "model": self.model,
            "messages": turns,
            "max_tokens": options.max_tokens,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": dict(t.input_schema)}
                for t in tools
            ]
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.stop:
            body["stop_sequences"] = options.stop
        if options.tool_choice is not None:
            choice = options.tool_choice
            body["tool_choice"] = (
                {"type": {"required": "any"}.get(choice, choice)}
                if choice in ("auto", "none", "required", "any")
                else {"type": "tool", "name": choice}
            )
        if stream:
            body["stream"] = True
        body.update(options.extra)
        return body

    def parse_response(self, body: dict[str, Any]) -> AssistantMessage:
        """The assistant message of a Messages API response."""
        if body.get("type") == "error" or "error" in body:
            raise ModelResponseError(
                f"{self.http.where} answered with an error: {body.get('error')}"
            )
        text: list[str] = []
        thought: list[str] = []
        kept: list[dict[str, Any]] = []
        calls: list[ToolCall] = []
        for block in body["content"]:
            if block.get("type") == "text":
                text.append(block.get("text", ""))
            elif block.get("type") == "thinking":
                thought.append(block.get("thinking", ""))
                kept.append(
                    {
                        "type": "thinking",
                        "thinking": block.get("thinking", ""),
                        "signature": block.get("signature", ""),
                    }
                )
            elif block.get("type") == "redacted_thinking":
                kept.append({"type": "redacted_thinking", "data": block.get("data", "")})
            elif block.get("type") == "tool_use":
                calls.append(
                    ToolCall(
                        id=block["id"],
                        name=block["name"],
                        arguments=json.dumps(block.get("input") or {}),
                    )
                )
        metadata: dict[str, Any] = {
            "finish_reason": finish_reason(body.get("stop_reason"), bool(calls))
        }
        if body.get("model"):
            metadata["model"] = body["model"]
        usage = _usage(body.get("usage"))
        if usage:
            metadata["usage"] = _with_total(usage)
        if body.get("id"):
            metadata["provider_id"] = body["id"]  # the message id is ours
        if kept:
            metadata["thinking_blocks"] = kept
        return AssistantMessage(
            "".join(text), tool_calls=tuple(calls), metadata=metadata, reasoning="".join(thought)
        )

    def stream_parser(self) -> _AnthropicStream:
        """A parser for one streamed answer."""
        return _AnthropicStream(self.http.where)
