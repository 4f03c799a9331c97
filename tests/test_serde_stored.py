"""Bytes stored by earlier versions of the serde keep loading as the same values.

``fixtures/stored/serde-6b7e9c1.json`` holds values as the serde stored them at commit
6b7e9c1 (each message a model frame, its tool calls a tuple frame of tool-call frames),
written by that version's ``serde.dumps`` from :data:`VALUES`. Threads saved then must
read back the same after any change to how values are written.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from checkpoint import serde
from checkpoint.serde import Serde
from graphagent.agent._record import AgentRecord
from graphagent.messages import (
    AssistantMessage,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)

FIXTURES = Path(__file__).parent / "fixtures" / "stored"

_CALLS = (
    ToolCall(id="c1", name="add_one", arguments='{"x": 1}'),
    ToolCall(id="c2", name="search", arguments=""),
)

VALUES: dict[str, Any] = {
    "user": UserMessage("go", id="u1"),
    "user_metadata": UserMessage("hi", id="u2", metadata={"source": "cli", "n": [1, 2]}),
    "system": SystemMessage("be brief", id="s1"),
    "assistant_text": AssistantMessage("done", id="a1"),
    "assistant_one_call": AssistantMessage(id="a2", tool_calls=_CALLS[:1]),
    "assistant_calls_and_metadata": AssistantMessage(
        "thinking",
        id="a3",
        tool_calls=_CALLS,
        metadata={"usage": {"input_tokens": 12, "output_tokens": 3}, "finish_reason": "tool"},
    ),
    "assistant_odd_metadata": AssistantMessage(
        "x",
        id="a4",
        metadata={
            "when": dt.datetime(2026, 11, 23, 12, 0, 5),
            "pair": (1, "two"),
            "tags": frozenset({"a"}),
            "uid": uuid.UUID(int=7),
            "nested": UserMessage("inner", id="u3"),
        },
    ),
    "tool": ToolResponseMessage("2", id="t1", tool_call_id="c1", name="add_one"),
    "tool_surrogate": ToolResponseMessage("bad \udcff name", id="t2", tool_call_id="c2", name="ls"),
    "remove": RemoveMessage("u1"),
    "tool_call": ToolCall(id="c3", name="lookup", arguments='{"q": "x"}'),
    "agent_record": {
        "__agent": AgentRecord(3, {"add_one": 3}, 2, {"add_one": 2}, False, 1, {"c9": "no"})
    },
    "conversation": {
        "messages": [
            UserMessage("go", id="u1"),
            AssistantMessage(id="a2", tool_calls=_CALLS[:1]),
            ToolResponseMessage("2", id="t1", tool_call_id="c1", name="add_one"),
            AssistantMessage("done", id="a1"),
        ],
        "step": 4,
    },
}


def _stored(name: str) -> dict[str, bytes]:
    raw = json.loads((FIXTURES / name).read_text())
    return {key: bytes.fromhex(blob) for key, blob in raw.items()}


@pytest.mark.parametrize("codec", [serde.default_serde, Serde()], ids=["default", "new"])
def test_values_stored_by_commit_6b7e9c1_load_as_they_were(codec: Serde) -> None:
    """Every value of the fixture decodes equal to the value that was stored, with the
    message classes and the tool calls' types intact."""
    stored = _stored("serde-6b7e9c1.json")
    assert sorted(stored) == sorted(VALUES)
    for name, blob in stored.items():
        loaded = codec.loads(blob)
        assert loaded == VALUES[name], name
        assert type(loaded) is type(VALUES[name]), name
    calls = codec.loads(stored["assistant_calls_and_metadata"]).tool_calls
    assert type(calls) is tuple and all(type(c) is ToolCall for c in calls)


def test_values_stored_now_round_trip_with_their_types() -> None:
    """The same values, written by the serde of today, come back equal and typed."""
    for name, value in VALUES.items():
        loaded = serde.loads(serde.dumps(value))
        assert loaded == value, name
        assert type(loaded) is type(value), name
