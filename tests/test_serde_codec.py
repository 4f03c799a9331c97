"""Types registered with their own encode/decode pair: one flat frame per value, the depth
limit and lone surrogates kept, old frames of the same name still read, clear refusals."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import msgpack
import pytest

from checkpoint.errors import SerializationError
from checkpoint.serde import _DATACLASS, _ENCODED, MAX_DEPTH, Serde, _ext, dumps, loads
from graphagent.agent._record import AgentRecord
from graphagent.messages import (
    AssistantMessage,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)


@dataclasses.dataclass
class Pair:
    left: Any
    right: Any


def _pair_codec(s: Serde) -> None:
    s.register(
        Pair,
        name="tests.Pair",
        encode=lambda p: [p.left, p.right],
        decode=lambda stored: Pair(*stored),
    )


def _frames(blob: bytes) -> list[int]:
    """The extension codes in ``blob``, outermost first (nested frames opened)."""
    codes: list[int] = []

    def hook(code: int, data: bytes) -> Any:
        codes.append(code)
        msgpack.unpackb(data, ext_hook=hook, raw=False, strict_map_key=False)
        return None

    msgpack.unpackb(blob, ext_hook=hook, raw=False, strict_map_key=False)
    return codes


def test_a_message_with_tool_calls_is_one_frame() -> None:
    """The assistant message, its tool calls and its metadata are stored in one frame."""
    calls = (ToolCall(id="a", name="f", arguments="{}"), ToolCall(id="b", name="g"))
    message = AssistantMessage("hi", tool_calls=calls, metadata={"usage": {"in": 3}})
    blob = dumps(message)
    assert _frames(blob) == [_ENCODED]
    assert _frames(dumps({"messages": [message, UserMessage("x")]})) == [_ENCODED, _ENCODED]
    loaded = loads(blob)
    assert loaded == message and type(loaded.tool_calls) is tuple
    assert all(type(c) is ToolCall for c in loaded.tool_calls)


@pytest.mark.parametrize(
    "value",
    [
        UserMessage("u"),
        SystemMessage("s", metadata={"k": (1, 2)}),
        AssistantMessage(),
        ToolResponseMessage("r", tool_call_id="c", name="t"),
        RemoveMessage("gone"),
        ToolCall(id="c", name="t", arguments='{"a": 1}'),
        AgentRecord(1, {"t": 1}, 1, {"t": 1}, True, 2, {"c": "no"}),
        [ToolCall(id="c", name="t"), AgentRecord()],
    ],
    ids=repr,
)
def test_library_types_round_trip_on_every_serde(value: Any) -> None:
    """Messages, tool calls and the agent record come back equal and typed, through the
    process-wide codec and a fresh one."""
    for codec in (None, Serde()):
        blob = dumps(value) if codec is None else codec.dumps(value)
        loaded = loads(blob) if codec is None else codec.loads(blob)
        assert loaded == value and type(loaded) is type(value)


def test_lone_surrogates_in_encoded_values_are_stored() -> None:
    """A lone surrogate anywhere in a message (top level or nested) round-trips."""
    message = ToolResponseMessage("\udcff", tool_call_id="\ud800", name="n", metadata={"\udc80": 1})
    assert loads(dumps(message)) == message
    call = AssistantMessage(tool_calls=[ToolCall(id="x", name="f", arguments='"\udfff"')])
    assert loads(dumps({"m": [call]})) == {"m": [call]}


def test_ext_header_matches_msgpack() -> None:
    """The header written without a packer is the one msgpack writes, at every size class."""
    for size in (0, 1, 2, 3, 4, 8, 15, 16, 17, 255, 256, 65535, 65536, 70000):
        data = bytes(size)
        assert _ext(_ENCODED, data) == msgpack.packb(msgpack.ExtType(_ENCODED, data))


def test_encode_and_decode_are_given_together() -> None:
    """One without the other is refused when registering."""
    with pytest.raises(SerializationError, match="both encode and decode"):
        Serde().register(Pair, encode=lambda p: [p.left, p.right])
    with pytest.raises(SerializationError, match="both encode and decode"):
        Serde().register(Pair, decode=lambda stored: Pair(*stored))


def test_a_custom_codec_round_trips_and_nests() -> None:
    """A user type with its own codec stores as one frame, nested ones each as one."""
    s = Serde()
    _pair_codec(s)
    value = Pair(Pair(1, (2, 3)), {"k": Pair("a", None)})
    assert s.loads(s.dumps(value)) == value


def test_encoded_values_keep_the_depth_limit() -> None:
    """Nested encoded values count as frames: up to the limit they round-trip, past it
    dumps refuses with the depth message."""
    s = Serde()
    _pair_codec(s)
    chain: Any = None
    for _ in range(MAX_DEPTH):
        chain = Pair(chain, 0)
    assert s.loads(s.dumps(chain)) == chain
    for _ in range(5):
        chain = Pair(chain, 0)
    with pytest.raises(SerializationError, match=rf"more than {MAX_DEPTH} levels deep"):
        s.dumps(chain)
    cyclic = Pair(None, 0)
    cyclic.left = [cyclic]
    with pytest.raises(SerializationError, match="contains itself"):
        s.dumps(cyclic)


def test_damaged_encoded_values_are_refused_clearly() -> None:
    """A frame whose fields do not fit the class, or that names a type registered without
    a decoder, raises SerializationError naming the class."""
    bad = [
        _ext(_ENCODED, msgpack.packb(["graphagent.AssistantMessage", ["x", "id"]])),
        _ext(_ENCODED, msgpack.packb(["graphagent.AssistantMessage", ["", "i", {}, [["a"]]]])),
        _ext(_ENCODED, msgpack.packb(["graphagent.UserMessage", "text"])),
        _ext(_ENCODED, msgpack.packb(["graphagent.AgentRecord", [1, 2]])),
        _ext(_ENCODED, msgpack.packb(["graphagent.ToolCall", [1, 2, 3]])),
    ]
    for blob in bad:
        with pytest.raises(SerializationError, match="no longer fits its class"):
            loads(blob)
    plain = Serde(base=None)
    plain.register(Pair, name="tests.Pair")
    coded = Serde(base=None)
    _pair_codec(coded)
    with pytest.raises(SerializationError, match="registered here without one"):
        plain.loads(coded.dumps(Pair(1, 2)))


def test_a_class_that_gains_a_codec_still_reads_its_old_frames() -> None:
    """Values stored as a dataclass frame load once the class is registered with a codec
    under the same name (how the library's types moved to flat frames)."""
    before = Serde(base=None)
    before.register(Pair, name="tests.Pair")
    blob = before.dumps({"p": Pair(1, [2])})
    assert _frames(blob) == [_DATACLASS]
    after = Serde(base=None)
    _pair_codec(after)
    assert after.loads(blob) == {"p": Pair(1, [2])}


_DEEP_READER = """
import msgpack
from checkpoint.errors import SerializationError
from checkpoint.serde import _ENCODED, loads

data = msgpack.packb([])
for _ in range(5_000):
    data = msgpack.packb(msgpack.ExtType(_ENCODED, msgpack.packb(
        ["graphagent.AssistantMessage", ["", "i", {"x": msgpack.ExtType(_ENCODED, data)}, []]]
    )))
try:
    loads(data)
    print("loaded")
except SerializationError as exc:
    print("refused" if "100 levels deep" in str(exc) else str(exc))
"""


def test_deeply_nested_encoded_frames_are_refused_by_a_reader() -> None:
    """Tampered bytes nesting 5,000 encoded frames raise instead of overflowing the C
    stack (a child process: the failure would be a crash)."""
    out = subprocess.run(
        [sys.executable, "-c", _DEEP_READER], capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "refused", out.stderr[-2000:]
