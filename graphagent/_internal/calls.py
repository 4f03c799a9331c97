"""A model's tool calls made safe to answer: unique ids, empty arguments, clipped names."""

from __future__ import annotations

from graphagent.messages import AssistantMessage, ToolCall

__all__ = ["arguments_of", "clip_name", "unique_call_ids"]

_NAME_LIMIT = 64  # OpenAI's own limit for function names


def unique_call_ids(message: AssistantMessage) -> AssistantMessage:
    """``message`` with a distinct, non-empty id on every tool call.

    Some servers reuse ids within one answer (llama.cpp, Ollama) or send none. Every
    call must get its own answer, and answers are matched to calls by id, so a
    repeated id gets a suffix and a missing one is made up. The same message comes
    back when nothing needed fixing.

    Example:
        >>> twice = [ToolCall(id="a", name="t"), ToolCall(id="a", name="t")]
        >>> m = AssistantMessage(tool_calls=twice)
        >>> [c.id for c in unique_call_ids(m).tool_calls]
        ['a', 'a_2']
    """
    given = message.tool_calls
    if not given or (len(given) == 1 and given[0].id):  # the common answer: nothing to fix
        return message
    ids = [c.id for c in given]
    if all(ids) and len(set(ids)) == len(ids):
        return message
    taken = set(ids)
    seen: set[str] = set()
    calls: list[ToolCall] = []
    for i, call in enumerate(message.tool_calls):
        base = call.id or f"call_{i}"
        new, n = base, 2
        # a made-up id must not take an id the model gave a later call
        while new in seen or (new != call.id and new in taken):
            new, n = f"{base}_{n}", n + 1
        seen.add(new)
        calls.append(call if new == call.id else call.model_copy(update={"id": new}))
    return message.model_copy(update={"tool_calls": tuple(calls)})


def arguments_of(call: ToolCall) -> str:
    """The call's JSON arguments; empty or blank (as streams often send) is ``"{}"``."""
    return call.arguments if call.arguments and call.arguments.strip() else "{}"


def clip_name(name: str) -> str:
    """A tool name fit to quote back to a model: an invented one may be any length."""
    return name if len(name) <= _NAME_LIMIT else name[:_NAME_LIMIT] + "..."
