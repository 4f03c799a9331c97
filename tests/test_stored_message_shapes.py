"""Every message class, with every field it has, comes back from storage equal, typed and
immutable, whichever decoder builds it (``loads`` alone, a batch, a warm read), and a
stored shape the library does not write still goes through validation."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from checkpoint.base import CheckpointSaver
from checkpoint.errors import SerializationError
from checkpoint.serde import _ext, default_serde
from graphagent.graph import END, START, AppendStrategy, StateGraph
from graphagent.messages import (
    AssistantMessage,
    FilePart,
    ImagePart,
    Message,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)

_ENCODED = 11
_META = {"usage": {"input_tokens": 3, "output_tokens": 1}, "tags": ["a", 1], "n": None}
_CALLS = (
    ToolCall(id="c1", name="search", arguments='{"q": "x"}'),
    ToolCall(id="c2", name="add", arguments=""),
)
_PARTS = (
    ImagePart(data=b"\x89PNG...", mime_type="image/png"),
    ImagePart(url="https://example.com/a.jpg"),
    FilePart(data=b"%PDF-1.7", mime_type="application/pdf", name="a.pdf"),
    FilePart(url="https://example.com/b.txt"),
)

# each message class with every field set (and with none but its own)
EVERY_FIELD: list[Message] = [
    SystemMessage("be brief", id="s1", metadata=_META),
    UserMessage("look", id="u1", metadata=_META, parts=_PARTS),
    UserMessage("plain", id="u2"),
    AssistantMessage("yes", id="a1", metadata=_META, tool_calls=_CALLS, reasoning="because"),
    AssistantMessage("", id="a2", reasoning="thinking only"),
    AssistantMessage("calls", id="a3", tool_calls=_CALLS[:1]),
    AssistantMessage("text", id="a4", metadata={"finish_reason": "stop"}),
    ToolResponseMessage("2", id="t1", metadata=_META, tool_call_id="c1", name="add", parts=_PARTS),
    ToolResponseMessage("3", id="t2", tool_call_id="c2", name="add"),
    RemoveMessage("u1"),
]


def same(a: Any, b: Any) -> bool:
    """The same object graph: type, fields (in order, with their types) and pydantic's
    slots, through tool calls and parts."""
    if type(a) is not type(b):
        return False
    if isinstance(a, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if not hasattr(a, "__pydantic_fields_set__"):
        return bool(a == b)
    return (
        list(a.__dict__) == list(b.__dict__)
        and all(
            same(a.__dict__[k], b.__dict__[k]) or a.__dict__[k] == b.__dict__[k] for k in a.__dict__
        )
        and {k: type(v) for k, v in a.__dict__.items() if k != "metadata"}
        == {k: type(v) for k, v in b.__dict__.items() if k != "metadata"}
        and a.__pydantic_fields_set__ == b.__pydantic_fields_set__
        and a.__pydantic_extra__ == b.__pydantic_extra__
        and a.__pydantic_private__ == b.__pydantic_private__
    )


def frame(name: str, stored: Any) -> bytes:
    """One message frame as the serde stores it, written by hand."""
    return _ext(_ENCODED, msgpack.packb([name, stored], use_bin_type=True))


def test_every_class_with_every_field_comes_back_equal_and_typed() -> None:
    """Each message, alone and in a long batch of mixed messages, loads equal to what was
    stored, with tuples of tool calls and parts, each of its own class."""
    blobs = [default_serde.dumps(m) for m in EVERY_FIELD]
    alone = [default_serde.loads(b) for b in blobs]
    batch = default_serde.loads_all(blobs * 30)  # long enough for the batch decoder
    for i, message in enumerate(EVERY_FIELD):
        assert alone[i] == message, message.id
        for got in (alone[i], batch[i], batch[i + len(blobs) * 29]):
            assert same(got, alone[i]), message.id
            assert got.model_dump() == message.model_dump()
            assert list(got.__dict__) == list(message.__dict__)
            for name in ("tool_calls", "parts"):
                if hasattr(got, name):
                    held = getattr(got, name)
                    assert type(held) is tuple and held == getattr(message, name)
                    assert [type(x) for x in held] == [type(x) for x in getattr(message, name)]
                    assert same(held, getattr(alone[i], name))


def test_every_message_read_is_shared_safely() -> None:
    """A loaded message of every class (reasoning and parts included) is immutable, so a
    batch says it may be shared, and what a caller may try to change raises."""
    blobs = [default_serde.dumps(m) for m in EVERY_FIELD] * 30
    values, changeable = default_serde.loads_shared(blobs)
    assert changeable == []
    for value in [default_serde.loads(b) for b in blobs[: len(EVERY_FIELD)]] + values:
        assert default_serde.shareable(value)
        with pytest.raises(Exception, match="frozen"):
            value.content = "changed"
        if value.metadata:
            with pytest.raises(TypeError, match="read-only"):
                value.metadata["usage"] = {}
        if "tags" in value.metadata:
            with pytest.raises(TypeError, match="read-only"):
                value.metadata["tags"].append("x")
        for part in getattr(value, "parts", ()):
            with pytest.raises(Exception, match="frozen"):
                part.url = "https://elsewhere"


def _chat(saver: CheckpointSaver) -> Any:
    def reply(state: Any) -> dict[str, Any]:
        n = len(state["messages"])
        return {"messages": [AssistantMessage(f"answer {n}", metadata=_META, reasoning="r")]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    return g.add_edge(START, "reply").add_edge("reply", END).compile(saver=saver)


def test_a_caller_changing_what_it_read_changes_nothing_cached(saver: CheckpointSaver) -> None:
    """Messages with reasoning, parts, tool calls and metadata, read cold then warm from
    every saver: the warm read hands out the same messages (shared, not decoded again),
    and nothing a caller tries on them reaches the next read."""
    app = _chat(saver)
    app.invoke({"messages": EVERY_FIELD[:-1]}, {"thread_id": "t"})
    saver.read_cache.clear()  # type: ignore[attr-defined]
    first = saver.get("t")
    assert first is not None
    read = first.values["messages"]
    expected = [m.model_dump() for m in read]
    assert [m.model_dump() for m in read[:-1]] == [m.model_dump() for m in EVERY_FIELD[:-1]]
    for message in read:
        with pytest.raises(TypeError):
            message.metadata["k"] = 1
        with pytest.raises(Exception, match="frozen"):
            message.id = "other"
    read.clear()
    again = saver.get("t")
    assert again is not None
    assert [m.model_dump() for m in again.values["messages"]] == expected
    # the messages with reasoning and parts are held decoded (shared), not decoded again
    shared = [
        m
        for m in again.values["messages"]
        if getattr(m, "reasoning", "") or getattr(m, "parts", ())
    ]
    assert shared and all(default_serde.shareable(m) for m in shared)
    third = saver.get("t")
    assert third is not None
    assert all(
        a is b for a, b in zip(again.values["messages"], third.values["messages"], strict=True)
    )


U, A, T = (f"graphagent.{c.__name__}" for c in (UserMessage, AssistantMessage, ToolResponseMessage))
_PNG = ["image", "image/png", b"\x89PNG", None, None]

# shapes only damaged or hand-written bytes hold: validation coerces them, or refuses them
COERCED = [
    frame(U, ["hi", "u1", {}, [["image", "image/png", "text, not bytes", None, None]]]),
    frame(U, ["hi", "u2", {}, [["image", "", b"x", None, None]]]),  # mime left to default
    frame(A, ["yes", "a1", {}, [], ""]),  # reasoning stored though empty
]
REFUSED = [
    frame(A, ["yes", "a9", {}, [], 7]),  # reasoning not a text
    frame(A, ["yes", "a9", {}, [], "r", "extra"]),
    frame(U, ["hi", "u9", {}, [_PNG[:4]]]),  # a part short
    frame(U, ["hi", "u9", {}, [["video", "v/mp4", b"x", None, None]]]),  # no such part
    frame(U, ["hi", "u9", {}, [["image", "image/png", b"x", "https://x", None]]]),  # both
    frame(U, ["hi", "u9", {}, [["image", "image/png", None, None, None]]]),  # neither
    frame(U, ["hi", "u9", {}, "not parts"]),
    frame(T, ["1", "t9", {}, "c1", 5]),  # tool name not a text
    frame(T, ["1", "t9", {}, "c1", "f", [["file", "a/b", b"x", None, 3]]]),  # name not text
]


@pytest.mark.parametrize("blob", COERCED, ids=range(len(COERCED)))
def test_odd_shapes_are_validated_alike_alone_and_in_a_batch(blob: bytes) -> None:
    """A shape this library does not write is decoded by validation, to the same message
    alone and in a batch."""
    alone = default_serde.loads(blob)
    batch = default_serde.loads_all([frame(U, ["q", "x", {}])] * 300 + [blob])[-1]
    assert same(batch, alone)


@pytest.mark.parametrize("blob", REFUSED, ids=range(len(REFUSED)))
def test_odd_shapes_are_refused_alike_alone_and_in_a_batch(blob: bytes) -> None:
    """A shape validation refuses is refused, with the same error, alone and in a batch."""
    with pytest.raises(SerializationError) as alone:
        default_serde.loads(blob)
    with pytest.raises(SerializationError) as batch:
        default_serde.loads_all([frame(U, ["q", "x", {}])] * 300 + [blob])
    assert str(batch.value) == str(alone.value)


def test_metadata_that_cannot_be_made_read_only_is_left_as_stored() -> None:
    """Metadata holding a set beside a map is not made read-only in part: the message keeps
    plain, changeable metadata (and is decoded for each read), alone and in a batch."""
    message = UserMessage("hi", metadata={"usage": {"in": 1}, "seen": {1, 2}})
    blob = default_serde.dumps(message)
    for got in (default_serde.loads(blob), default_serde.loads_all([blob] * 300)[-1]):
        assert got == message
        assert type(got.metadata) is dict and type(got.metadata["usage"]) is dict
        assert not default_serde.shareable(got)
