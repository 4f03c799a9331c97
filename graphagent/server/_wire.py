"""Values on the wire: our messages in LangChain's JSON form, and back.

LangGraph's clients (the ``langgraph-sdk``, its UIs) read messages as LangChain dicts:
``type`` ``human`` / ``ai`` / ``tool`` / ``system``, ``tool_calls`` as ``{name, args, id}``,
streamed pieces as ``AIMessageChunk``. Input comes in either that form or OpenAI's
``role`` form. Everything else in a state is turned into plain JSON here too.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from graphagent.graph import Command, Interrupt, is_private
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
from graphagent.models import AssistantChunk
from graphagent.server._errors import ApiError

__all__ = [
    "chunk_to_wire",
    "command_from_wire",
    "input_from_wire",
    "interrupt_to_wire",
    "message_from_wire",
    "message_to_wire",
    "to_wire",
    "values_to_wire",
]

_TYPES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant"}
_TYPES.update({"tool": "tool", "system": "system", "remove": "remove", "developer": "system"})
_TYPES.update({"AIMessageChunk": "assistant", "HumanMessageChunk": "user"})


def _base(message: Message, kind: str) -> dict[str, Any]:
    return {
        "type": kind,
        "content": message.content,
        "id": message.id,
        "name": None,
        "additional_kwargs": {},
        "response_metadata": dict(message.metadata),
    }


def _args(call: ToolCall) -> Any:
    try:
        return call.args
    except ValueError:
        return {}  # a model's broken JSON: the arguments text stays in additional_kwargs


# Each message's wire form, made once per message object. A thread's state goes out whole
# in every values event and record (LangGraph's clients expect the whole list), so without
# this a run on a 1,000-message thread converted all 1,000 messages at each step (7 ms
# a time: bench in the commit); messages are frozen, so a message's form never changes.
# Keyed by identity, dropped when the message is (a weak reference's callback).
_WIRE: dict[int, tuple[weakref.ref[Message], dict[str, Any]]] = {}


def _forget(key: int) -> Callable[[weakref.ref[Message]], None]:
    def drop(_: weakref.ref[Message]) -> None:
        _WIRE.pop(key, None)

    return drop


def message_to_wire(message: Message) -> dict[str, Any]:
    """One of our messages as LangChain's dict (``type`` human / ai / tool / system).

    The same message object gives the same dict: treat it as read-only.
    """
    key = id(message)
    known = _WIRE.get(key)
    if known is not None and known[0]() is message:
        return known[1]
    out = _message_to_wire(message)
    _WIRE[key] = (weakref.ref(message, _forget(key)), out)
    return out


def _message_to_wire(message: Message) -> dict[str, Any]:
    if isinstance(message, AssistantMessage):
        out = _base(message, "ai")
        out["tool_calls"] = [
            {"name": c.name, "args": _args(c), "id": c.id, "type": "tool_call"}
            for c in message.tool_calls
        ]
        out["invalid_tool_calls"] = []
        out["usage_metadata"] = message.metadata.get("usage")
        return out
    if isinstance(message, ToolResponseMessage):
        out = _base(message, "tool")
        out.update(tool_call_id=message.tool_call_id, name=message.name, status="success")
        out["artifact"] = None
        return out
    if isinstance(message, UserMessage):
        return _base(message, "human")
    if isinstance(message, SystemMessage):
        return _base(message, "system")
    if isinstance(message, RemoveMessage):
        return {"type": "remove", "id": message.id, "content": ""}
    return _base(message, message.role)


def chunk_to_wire(chunk: Any, run_id: str) -> dict[str, Any]:
    """A streamed piece as ``AIMessageChunk`` (a tool's finished answer stays a ``tool``)."""
    if not isinstance(chunk, AssistantChunk):
        return message_to_wire(chunk) if isinstance(chunk, Message) else to_wire(chunk)
    calls = [
        {"name": d.name, "args": d.arguments, "id": d.id, "index": d.index}
        for d in chunk.tool_calls
    ]
    return {
        "type": "AIMessageChunk",
        "content": chunk.content,
        "id": chunk.id or f"run-{run_id}",
        "name": None,
        "additional_kwargs": {},
        "response_metadata": dict(chunk.metadata),
        "tool_call_chunks": [{**c, "type": "tool_call_chunk"} for c in calls],
        "tool_calls": [],
        "invalid_tool_calls": [],
        "usage_metadata": None,
    }


def interrupt_to_wire(interrupt: Interrupt) -> dict[str, Any]:
    """An interrupt as LangGraph's clients read it: ``{"value", "id"}``."""
    return {"value": to_wire(interrupt.value), "id": interrupt.id}


def to_wire(value: Any) -> Any:
    """Any state value as plain JSON (messages in LangChain's form)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, Message):
        return message_to_wire(value)
    if isinstance(value, Interrupt):
        return interrupt_to_wire(value)
    if isinstance(value, Mapping):
        return {str(k): to_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_wire(v) for v in value]
    if isinstance(value, BaseModel):
        return to_wire(value.model_dump(mode="python"))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return to_wire({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, enum.Enum):
        return to_wire(value.value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)


def values_to_wire(values: Mapping[str, Any]) -> dict[str, Any]:
    """A state's public keys as JSON (private ``__`` keys are the engine's own)."""
    return {k: to_wire(v) for k, v in values.items() if not is_private(k)}


def _text(content: Any) -> str:
    """LangChain content: a string or a list of blocks, of which the text ones count."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
        return "".join(parts)
    raise ApiError(422, f"message content must be a string or a list of blocks, got {content!r}")


def _calls(raw: Any) -> list[ToolCall]:
    calls = []
    for c in raw or ():
        if not isinstance(c, Mapping):
            raise ApiError(422, f"a tool call must be an object, got {c!r}")
        if "function" in c:  # OpenAI's form
            fn = c["function"]
            calls.append(ToolCall(id=str(c.get("id")), name=fn["name"], arguments=fn["arguments"]))
            continue
        args = c.get("args", {})
        text = args if isinstance(args, str) else json.dumps(args)
        calls.append(
            ToolCall(id=str(c.get("id") or uuid.uuid4().hex), name=c["name"], arguments=text)
        )
    return calls


def message_from_wire(raw: Any) -> Message:
    """A message from LangChain's ``type`` form, OpenAI's ``role`` form or a string."""
    if isinstance(raw, (str, Message)):
        return coerce_message(raw)
    if not isinstance(raw, Mapping):
        raise ApiError(422, f"a message must be a string or an object, got {raw!r}")
    kind = raw.get("role", raw.get("type"))
    role = _TYPES.get(str(kind))
    if role is None:
        raise ApiError(
            422,
            f"unknown message type {kind!r}: use type human / ai / tool / system "
            "(or role user / assistant / tool / system)",
        )
    data: dict[str, Any] = {"role": role, "content": _text(raw.get("content"))}
    if raw.get("id"):
        data["id"] = str(raw["id"])
    if role == "assistant" and raw.get("tool_calls"):
        data["tool_calls"] = _calls(raw["tool_calls"])
    if role == "tool":
        data["tool_call_id"] = str(raw.get("tool_call_id", ""))
        data["name"] = str(raw.get("name") or "")
    try:
        return coerce_message(data)
    except (TypeError, ValueError) as exc:
        raise ApiError(422, f"invalid message {raw!r:.200}: {exc}") from None


def _messages(raw: Any) -> Any:
    if isinstance(raw, (str, Mapping)):
        return [message_from_wire(raw)]
    if isinstance(raw, Sequence):
        return [message_from_wire(m) for m in raw]
    return raw


def input_from_wire(raw: Any) -> Any:
    """A run's ``input`` (or ``update_state`` values): messages become ours."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ApiError(422, f"input must be an object of state keys, got {raw!r:.200}")
    out = dict(raw)
    if "messages" in out:
        out["messages"] = _messages(out["messages"])
    return out


def command_from_wire(raw: Mapping[str, Any]) -> Command:
    """A run's ``command``: ``resume``, ``update`` and ``goto``."""
    unknown = set(raw) - {"resume", "update", "goto"}
    if unknown:
        raise ApiError(422, f"command: unknown key(s) {sorted(unknown)}; use resume, update, goto")
    kwargs: dict[str, Any] = {}
    if "resume" in raw:
        kwargs["resume"] = raw["resume"]
    if raw.get("update") is not None:
        kwargs["update"] = input_from_wire(raw["update"])
    if raw.get("goto") is not None:
        kwargs["goto"] = raw["goto"]
    return Command(**kwargs)
