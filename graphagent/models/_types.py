"""What every chat model takes and gives: options, tool specs, streamed chunks."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from graphagent.messages import (
    AssistantMessage,
    Message,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
    coerce_message,
)

__all__ = [
    "AssistantChunk",
    "ChatOptions",
    "ChunkAccumulator",
    "ToolCallDelta",
    "ToolSpec",
    "tool_specs",
]


@runtime_checkable
class ToolSpec(Protocol):
    """What a model needs to know of a tool (``graphagent.tools.ToolDefinition`` fits)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def input_schema(self) -> Mapping[str, Any]: ...


def tool_specs(tools: Iterable[Any]) -> list[ToolSpec]:
    """Tool definitions from definitions or tool callbacks (anything with ``.definition``)."""
    return [getattr(t, "definition", t) for t in tools]


class ChatOptions(BaseModel):
    """Per-call options; ``None`` fields are not sent.

    Attributes:
        temperature: sampling temperature.
        max_tokens: most tokens in the answer.
        top_p: nucleus sampling.
        stop: stop sequences.
        seed: for reproducible sampling, where supported.
        tool_choice: ``"auto"``, ``"none"``, ``"required"``, or a tool name.
        response_format: a pydantic model class (its JSON schema is asked for) or a dict
            sent as is.
        extra: provider fields sent as they are (``{"enable_thinking": False}``).
    """

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    seed: int | None = None
    tool_choice: str | None = None
    response_format: Any = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def merged(self, other: ChatOptions | None) -> ChatOptions:
        """These options overridden by ``other``'s set fields."""
        if other is None:
            return self
        data = self.model_dump(exclude_none=True)
        update = other.model_dump(exclude_none=True)
        extra = {**data.pop("extra", {}), **update.pop("extra", {})}
        data.update(update)
        return ChatOptions(**data, extra=extra)

    @classmethod
    def of(cls, options: ChatOptions | Mapping[str, Any] | None) -> ChatOptions | None:
        """Options from a :class:`ChatOptions`, a dict, or ``None`` (which stays ``None``).

        A dict's keys that are not fields go to ``extra``, so
        ``{"temperature": 0, "enable_thinking": False}`` works as it reads.
        """
        if options is None or isinstance(options, ChatOptions):
            return options
        known = {k: v for k, v in options.items() if k in _OPTION_FIELDS}
        extra = {k: v for k, v in options.items() if k not in _OPTION_FIELDS and k != "extra"}
        extra.update(options.get("extra", {}))
        return cls(**known, extra=extra)


_OPTION_FIELDS = set(ChatOptions.model_fields) - {"extra"}


class ToolCallDelta(BaseModel):
    """A piece of a tool call, as streamed: pieces with one ``index`` add up to one call."""

    model_config = ConfigDict(frozen=True)

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class AssistantChunk(BaseModel):
    """A piece of an assistant message, as streamed.

    Chunks of one answer add up (``ChunkAccumulator``, or ``sum`` of chunks with ``+``)
    to exactly the message ``generate`` returns. A chunk of the model's thinking has
    ``reasoning`` set and no ``content``: it streams as its own event.
    """

    model_config = ConfigDict(frozen=True)

    content: str = ""
    reasoning: str = ""
    tool_calls: tuple[ToolCallDelta, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None

    @property
    def text(self) -> str:
        """The chunk's text."""
        return self.content


class ChunkAccumulator:
    """Adds streamed chunks up into an :class:`AssistantMessage`.

    Tool-call pieces are assembled by index: the first id and name win (a name sent
    again whole is not doubled), argument text is concatenated in arrival order.

    Example:
        >>> acc = ChunkAccumulator()
        >>> acc.add(AssistantChunk(tool_calls=(ToolCallDelta(index=0, id="c1", name="f"),)))
        >>> acc.add(AssistantChunk(tool_calls=(ToolCallDelta(index=0, arguments='{"a":'),)))
        >>> acc.add(AssistantChunk(tool_calls=(ToolCallDelta(index=0, arguments=" 1}"),)))
        >>> acc.message().tool_calls[0].arguments
        '{"a": 1}'
    """

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._metadata: dict[str, Any] = {}
        self._id: str | None = None
        self.chunks = 0

    def add(self, chunk: AssistantChunk) -> None:
        """Take one more chunk."""
        self.chunks += 1
        if chunk.id and not self._id:
            self._id = chunk.id
        if chunk.content:
            self._text.append(chunk.content)
        if chunk.reasoning:
            self._reasoning.append(chunk.reasoning)
        for delta in chunk.tool_calls:
            slot = self._calls.setdefault(delta.index, {"id": None, "name": "", "args": []})
            if delta.id and not slot["id"]:
                slot["id"] = delta.id
            if delta.name:
                name = slot["name"]
                if not name or delta.name.startswith(name):
                    slot["name"] = delta.name
                elif delta.name != name:
                    slot["name"] = name + delta.name
            if delta.arguments:
                slot["args"].append(delta.arguments)
        for key, value in chunk.metadata.items():
            if key == "usage" and isinstance(value, dict):
                self._metadata["usage"] = {**self._metadata.get("usage", {}), **value}
            elif key == "thinking_blocks" and isinstance(value, list):
                self._metadata[key] = [*self._metadata.get(key, ()), *value]
            elif value is not None:
                self._metadata[key] = value

    def message(self) -> AssistantMessage:
        """The message the chunks add up to."""
        calls = tuple(
            ToolCall(
                id=slot["id"] or f"call_{uuid.uuid4().hex[:12]}",
                name=slot["name"],
                arguments="".join(slot["args"]) or "{}",
            )
            for _, slot in sorted(self._calls.items())
        )
        metadata = dict(self._metadata)
        if calls and "finish_reason" in metadata:
            # some servers end a tool-calling stream with "stop"; generate() says tool_calls
            metadata["finish_reason"] = "tool_calls"
        extra: dict[str, Any] = {"id": self._id} if self._id else {}
        return AssistantMessage(
            "".join(self._text),
            tool_calls=calls,
            metadata=metadata,
            reasoning="".join(self._reasoning),
            **extra,
        )


def chunks_of(message: AssistantMessage, size: int) -> list[AssistantChunk]:
    """Split a message into chunks of about ``size`` characters that add up to it."""
    out: list[AssistantChunk] = []
    thought = message.reasoning
    for i in range(0, len(thought), max(1, size)):
        out.append(AssistantChunk(reasoning=thought[i : i + size], id=message.id))
    text = message.content
    for i in range(0, len(text), max(1, size)):
        out.append(AssistantChunk(content=text[i : i + size], id=message.id))
    for index, call in enumerate(message.tool_calls):
        out.append(
            AssistantChunk(
                tool_calls=(ToolCallDelta(index=index, id=call.id, name=call.name),),
                id=message.id,
            )
        )
        args = call.arguments
        for i in range(0, len(args), max(1, size)):
            piece = ToolCallDelta(index=index, arguments=args[i : i + size])
            out.append(AssistantChunk(tool_calls=(piece,), id=message.id))
    out.append(AssistantChunk(metadata=dict(message.metadata), id=message.id))
    return out


def arguments_text(raw: Any) -> str:
    """Tool-call arguments as JSON text (some servers send an object, not a string)."""
    if raw is None:
        return "{}"
    if isinstance(raw, str):
        return raw
    return json.dumps(raw)


def finish_reason(raw: str | None, has_tool_calls: bool) -> str:
    """One vocabulary for why a model stopped: ``stop``, ``tool_calls``, ``length``, ..."""
    if has_tool_calls:
        return "tool_calls"
    mapping = {
        None: "stop",
        "": "stop",
        "end_turn": "stop",
        "stop_sequence": "stop",
        "tool_use": "tool_calls",
        "function_call": "tool_calls",
        "max_tokens": "length",
    }
    return mapping.get(raw, raw or "stop")


_MESSAGE_KINDS = frozenset(
    {SystemMessage, UserMessage, AssistantMessage, ToolResponseMessage, RemoveMessage}
)


def messages_list(messages: Sequence[Any]) -> list[Any]:
    """The messages as a list (a single message or string is wrapped)."""
    if type(messages) is not list and isinstance(messages, (str, BaseModel)):
        return [coerce_message(messages)]
    listed = list(messages)
    for m in listed:  # a conversation is messages already: one copy, no call per message
        # the library's own kinds first: isinstance on a pydantic class is an ABC check
        if type(m) not in _MESSAGE_KINDS and not isinstance(m, Message):
            return [coerce_message(m) for m in listed]
    return listed
