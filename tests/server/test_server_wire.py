"""Messages on the wire: each message object is converted once, so a long thread's
values cost what changed at each step, and a message's form never goes stale."""

from __future__ import annotations

import gc
from typing import Any

import pytest

from graphagent.messages import AssistantMessage, ToolCall, ToolResponseMessage, UserMessage
from graphagent.server import _wire
from graphagent.server._wire import message_to_wire, values_to_wire

pytestmark = pytest.mark.ours


def _turn(i: int) -> list[Any]:
    call = ToolCall(id=f"c{i}", name="get_weather", arguments='{"city": "Oslo"}')
    return [
        UserMessage(f"weather {i}?"),
        AssistantMessage("", tool_calls=[call]),
        ToolResponseMessage(tool_call_id=f"c{i}", name="get_weather", content="sunny"),
        AssistantMessage(f"It is sunny ({i})."),
    ]


def test_a_long_threads_values_convert_only_the_new_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """values_to_wire of a 1,000-message state again, with one more message, converts one
    message (a run publishes the whole state at each step)."""
    messages = [m for i in range(250) for m in _turn(i)]
    first = values_to_wire({"messages": messages})
    converted: list[Any] = []
    plain = _wire._message_to_wire

    def counting(message: Any) -> dict[str, Any]:
        converted.append(message)
        return plain(message)

    monkeypatch.setattr(_wire, "_message_to_wire", counting)
    grown = [*messages, UserMessage("and tomorrow?")]
    again = values_to_wire({"messages": grown})
    assert converted == [grown[-1]]
    assert again["messages"][:-1] == first["messages"]
    assert again["messages"][-1]["content"] == "and tomorrow?"


def test_equal_messages_that_are_different_objects_convert_alike() -> None:
    """Two messages' forms follow their own fields, also after the first is gone and its
    memory reused."""
    one = UserMessage("first", id="m1")
    assert message_to_wire(one)["content"] == "first"
    del one
    gc.collect()
    for i in range(50):  # new objects, some at the freed addresses
        other = UserMessage(f"other {i}", id="m1")
        assert message_to_wire(other)["content"] == f"other {i}"
    assert message_to_wire(AssistantMessage("x"))["type"] == "ai"
