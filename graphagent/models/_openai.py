"""The OpenAI-compatible chat completions protocol (OpenAI, DashScope, DeepSeek, Moonshot,
Ollama, vLLM, llama.cpp), over httpx."""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import httpx

from graphagent.errors import ModelError, ModelResponseError
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
from graphagent.models._media import openai_parts
from graphagent.models._reasoning import ThinkSplitter, reasoning_field, split_think
from graphagent.models._sse import ServerSentEvent
from graphagent.models._types import (
    AssistantChunk,
    ChatOptions,
    ToolCallDelta,
    ToolSpec,
    arguments_text,
    finish_reason,
)

__all__ = ["OpenAIChatModel", "openai_message"]


def openai_message(message: Message) -> dict[str, Any] | None:
    """One message in the chat completions format (``None`` for messages not sent).

    An answer's ``reasoning`` is not sent: DeepSeek refuses a request that carries
    ``reasoning_content`` back, and the others ignore it. A tool result's images and
    files go in a user message after the tool results (see :func:`openai_messages`).
    """
    if isinstance(message, RemoveMessage):
        return None
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            # llama.cpp rejects "content": null beside tool calls (HTTP 500); "" works everywhere
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments or "{}"},
                }
                for c in message.tool_calls
            ]
        return out
    if isinstance(message, ToolResponseMessage):
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    parts = getattr(message, "parts", ())
    return {
        "role": "user",
        "content": openai_parts(message.content, parts) if parts else message.content,
    }


def openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The conversation in the chat completions format.

    The API takes only text in a tool message, so the images and files of a run of tool
    results follow it in one user message that names the calls they came from.
    """
    out: list[dict[str, Any]] = []
    held: list[Any] = []
    for message in messages:
        if held and not isinstance(message, ToolResponseMessage):
            out.append(_tool_media(held))
            held = []
        wire = openai_message(message)
        if wire is not None:
            out.append(wire)
        if isinstance(message, ToolResponseMessage) and message.parts:
            held.append(message)
    if held:
        out.append(_tool_media(held))
    return out


def _tool_media(results: list[ToolResponseMessage]) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    for r in results:
        label = f"attachments of the result of {r.name} (call {r.tool_call_id}):"
        content.extend(openai_parts(label, r.parts))
    return {"role": "user", "content": content}


def _response_format(value: Any) -> Any:
    schema_of = getattr(value, "model_json_schema", None)
    if isinstance(value, type) and schema_of is not None:
        return {
            "type": "json_schema",
            "json_schema": {"name": value.__name__, "schema": schema_of(), "strict": False},
        }
    return value


def _tool_choice(choice: str) -> Any:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def _tool_call(raw: dict[str, Any]) -> ToolCall:
    fn = raw.get("function") or {}
    return ToolCall(
        id=raw.get("id") or f"call_{uuid.uuid4().hex[:12]}",
        name=fn.get("name") or "",
        arguments=arguments_text(fn.get("arguments")),
    )


def _usage(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, dict):
        return None
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    return {k: int(raw[k]) for k in keys if raw.get(k) is not None}


class _OpenAIStream:
    """Chat completion chunks -> :class:`AssistantChunk`."""

    def __init__(self, where: str, think_tags: bool = True) -> None:
        self.where = where
        self.events = 0
        self.done = False
        self.positions: dict[str, int] = {}
        self.think = ThinkSplitter() if think_tags else None

    def feed(self, event: ServerSentEvent) -> list[AssistantChunk]:
        self.events += 1
        if event.data.strip() == "[DONE]":
            self.done = True
            return self._held()
        try:
            data = json.loads(event.data)
        except json.JSONDecodeError as exc:
            raise ModelResponseError(
                f"{self.where} sent a stream event that is not JSON: {event.data[:200]!r}"
            ) from exc
        if "error" in data:
            raise ModelResponseError(f"{self.where} reported an error mid-stream: {data['error']}")
        metadata: dict[str, Any] = {}
        if data.get("model"):
            metadata["model"] = data["model"]
        usage = _usage(data.get("usage"))
        if usage:
            metadata["usage"] = usage
        chunk_id = data.get("id")
        choices = data.get("choices") or []
        if not choices:
            return [AssistantChunk(metadata=metadata, id=chunk_id)] if metadata else []
        choice = choices[0]
        delta = choice.get("delta") or {}
        deltas = []
        for i, raw in enumerate(delta.get("tool_calls") or []):
            fn = raw.get("function") or {}
            index = raw.get("index")
            if index is None:  # some servers omit it: place by id, else by position
                index = self.positions.setdefault(raw.get("id") or str(i), len(self.positions))
            deltas.append(
                ToolCallDelta(
                    index=int(index),
                    id=raw.get("id"),
                    name=fn.get("name"),
                    arguments=arguments_text(fn.get("arguments")) if fn.get("arguments") else "",
                )
            )
        content, reasoning = delta.get("content") or "", reasoning_field(delta)
        if self.think is not None and content:
            thought, content = self.think.feed(content)
            reasoning += thought
        out = [AssistantChunk(reasoning=reasoning, id=chunk_id)] if reasoning else []
        if choice.get("finish_reason"):
            metadata["finish_reason"] = finish_reason(choice["finish_reason"], False)
            out.extend(self._held(chunk_id))
        if content or deltas or metadata:
            out.append(
                AssistantChunk(
                    content=content, tool_calls=tuple(deltas), metadata=metadata, id=chunk_id
                )
            )
        return out

    def _held(self, chunk_id: str | None = None) -> list[AssistantChunk]:
        """What the think-tag splitter held back, at the end of the answer."""
        if self.think is None:
            return []
        reasoning, content = self.think.flush()
        if not (reasoning or content):
            return []
        return [AssistantChunk(content=content, reasoning=reasoning, id=chunk_id)]

    def finish(self) -> None:
        """Nothing to check: an empty stream is handled by the model (see ``stream``)."""


class OpenAIChatModel(HTTPChatModel):
    """A model behind the OpenAI-compatible chat completions API.

    Args:
        model: the model name (``"gpt-4o-mini"``, ``"qwen-plus"``, ``"llama3.1"``).
        base_url: the API root (default ``$OPENAI_BASE_URL`` or OpenAI's).
        api_key: sent as a bearer token (default ``$OPENAI_API_KEY``); never logged, and
            replaced by ``***`` in errors. Required for OpenAI's own URL.
        timeout: seconds to wait for any one read.
        deadline: seconds for a whole request, retries and streaming included.
        stream_idle_timeout: seconds a stream may stay silent (default ``timeout``).
        key_env: the environment variable named when the key is missing; a request
            without a key then raises ``ModelConfigError`` before anything is sent (default:
            ``OPENAI_API_KEY`` for OpenAI's URL, none for local servers).
        max_retries: retries on 408/409/425/429/5xx and connection errors.
        stream_usage: ask for token usage in streams (``stream_options``); servers that
            reject unknown fields may need ``False``.
        think_tags: read an answer that opens with ``<think>...</think>`` (Qwen3 and
            DeepSeek-R1 served without a reasoning parser) as reasoning, then the answer.
        transport: an ``httpx`` transport (``httpx.MockTransport`` in tests).
        **options: default :class:`ChatOptions` (``temperature=0``, ``max_tokens=...``) or
            extra provider fields.

    Example:
        >>> model = OpenAIChatModel("llama3.1", base_url="http://localhost:11434/v1")
        >>> model
        <OpenAIChatModel 'llama3.1' at http://localhost:11434/v1>
    """

    path = "/chat/completions"
    provider = "openai"
    supports_response_format = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60,
        max_retries: int = 2,
        retry_backoff: float = 0.5,
        deadline: float | None = 600.0,
        stream_idle_timeout: float | None = None,
        key_env: str | None = None,
        stream_usage: bool = False,
        think_tags: bool = True,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        **options: Any,
    ) -> None:
        url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        if key_env is None and httpx.URL(url).host == "api.openai.com":
            key_env = "OPENAI_API_KEY"
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
        super().__init__(model, http, ChatOptions.of(options) or ChatOptions())
        self.stream_usage = stream_usage
        self.think_tags = think_tags

    def build_body(
        self, messages: list[Message], tools: list[ToolSpec], options: ChatOptions, stream: bool
    ) -> dict[str, Any]:
        """The chat completions request body."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": openai_messages(messages),
        }
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": dict(t.input_schema),
                    },
                }
                for t in tools
            ]
        for key in ("temperature", "max_tokens", "top_p", "stop", "seed"):
            value = getattr(options, key)
            if value is not None:
                body[key] = value
        if options.tool_choice is not None:
            if not tools and options.tool_choice not in ("auto", "none"):
                raise ModelError(f"tool_choice={options.tool_choice!r} needs tools")
            body["tool_choice"] = _tool_choice(options.tool_choice)
        elif tools:
            # OpenAI reads a missing choice as "auto"; llama-cpp-python as "none" (it then
            # leaves the tools out of the prompt), so it is always said
            body["tool_choice"] = "auto"
        if options.response_format is not None:
            body["response_format"] = _response_format(options.response_format)
        if stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        body.update(options.extra)
        return body

    def parse_response(self, body: dict[str, Any]) -> AssistantMessage:
        """The assistant message of a chat completion."""
        if "error" in body:
            raise ModelResponseError(f"{self.http.where} answered with an error: {body['error']}")
        choice = body["choices"][0]
        message = choice.get("message") or {}
        calls = [_tool_call(c) for c in message.get("tool_calls") or []]
        legacy = message.get("function_call")
        if not calls and isinstance(legacy, dict) and legacy.get("name"):
            # old "function_call" servers; some add a stray ':' to the name
            calls = [_tool_call({"function": {**legacy, "name": legacy["name"].rstrip(":")}})]
        metadata: dict[str, Any] = {
            "finish_reason": finish_reason(choice.get("finish_reason"), bool(calls))
        }
        if body.get("model"):
            metadata["model"] = body["model"]
        usage = _usage(body.get("usage"))
        if usage:
            metadata["usage"] = usage
        if body.get("id"):
            # the message id is ours: some servers reuse theirs (Ollama's chatcmpl-%d)
            metadata["provider_id"] = body["id"]
        content, reasoning = message.get("content") or "", reasoning_field(message)
        if self.think_tags and not reasoning:
            reasoning, content = split_think(content)
        return AssistantMessage(
            content, tool_calls=tuple(calls), metadata=metadata, reasoning=reasoning
        )

    def stream_parser(self) -> _OpenAIStream:
        """A parser for one streamed answer."""
        return _OpenAIStream(self.http.where, self.think_tags)
