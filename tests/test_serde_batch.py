"""The batch decoder of stored messages (a cold read of a long log): whatever a batch holds,
it decodes each blob exactly as ``loads`` alone does, and says which values are shared."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from checkpoint.errors import SerializationError
from checkpoint.serde import Serde, _ext, default_serde
from graphagent.messages import (
    AssistantMessage,
    RemoveMessage,
    SystemMessage,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)

_ENCODED = 11


def frame(name: str, stored: Any) -> bytes:
    """One message frame as the serde stores it, written by hand."""
    return _ext(_ENCODED, msgpack.packb([name, stored], use_bin_type=True))


def same(a: Any, b: Any) -> bool:
    """The two values are the same object graph: type, fields, and pydantic's slots."""
    if type(a) is not type(b):
        return False
    if not hasattr(a, "__pydantic_fields_set__"):
        return bool(a == b)
    return (
        a.__dict__ == b.__dict__
        and {k: type(v) for k, v in a.__dict__.items()}
        == {k: type(v) for k, v in b.__dict__.items()}
        and a.__pydantic_fields_set__ == b.__pydantic_fields_set__
        and a.__pydantic_extra__ == b.__pydantic_extra__
        and a.__pydantic_private__ == b.__pydantic_private__
    )


U, A, S, R, T = (
    f"graphagent.{c.__name__}"
    for c in (UserMessage, AssistantMessage, SystemMessage, RemoveMessage, ToolResponseMessage)
)

# Stored shapes a batch can meet: what this library writes, what older versions wrote,
# and what only damaged or hand-written bytes hold (validation coerces or refuses those).
ODD_BUT_LOADABLE = [
    frame(U, ["hi", "u1", {}]),
    frame(U, ["hi", "u2", {"source": "cli", "n": 2}]),
    frame(U, ["hi", "u3", {"nested": {"list": [1, [2, 3]]}}]),
    frame(A, ["yes", "a1", {}, []]),
    frame(A, ["yes", "a2", {"usage": {"in": 3}}, []]),
    frame(A, ["yes", "a3", {}, [["c1", "tool", "{}"]]]),
    frame(A, ["yes", "a4", {}, [], "because"]),  # with reasoning
    frame(S, ["be brief", "s1", {}]),
    frame(R, ["", "r1", {}]),
    frame(T, ["42", "t1", {}, "c1", "tool"]),
    # a tuple inside: still read-only; a set inside: cannot be made read-only
    default_serde.dumps(UserMessage("hi", id="u4", metadata={"tags": ("a", "b")})),
    default_serde.dumps(UserMessage("hi", id="u5", metadata={"seen": {1, 2}})),
    frame("graphagent.ToolCall", ["c2", "tool", "{}"]),
]
REFUSED = [
    frame(U, [7, "u9", {}]),  # content not a text: validation refuses it
    frame(U, ["hi", "u9", {1: "x"}]),  # metadata keys not texts
    frame(U, ["hi", "u9"]),  # a field short
    frame(U, ["hi", "u9", {}, [], "extra"]),  # two fields too many
    frame(A, ["yes", "a9", {}, [["c1", "tool"]]]),  # a tool call short
    frame(A, ["yes", "a9", {}]),  # tool calls missing
    frame("graphagent.NoSuchMessage", ["hi", "x", {}]),
]


def loads_each(serde: Serde, blobs: list[bytes]) -> list[Any]:
    return [serde.loads(b) for b in blobs]


@pytest.mark.parametrize("order", ["as_listed", "reversed"])
def test_a_batch_decodes_every_shape_as_loads_does(order: str) -> None:
    """Each stored shape, among the commonest ones, comes back from ``loads_all`` as
    ``loads`` makes it alone: same class, fields, types of fields and pydantic slots."""
    blobs = ODD_BUT_LOADABLE if order == "as_listed" else ODD_BUT_LOADABLE[::-1]
    blobs = [frame(U, [f"q{i}", f"id{i}", {}]) for i in range(300)] + blobs
    batch = default_serde.loads_all(blobs)
    alone = loads_each(default_serde, blobs)
    assert len(batch) == len(alone)
    assert all(same(a, b) for a, b in zip(batch, alone, strict=True))


def test_a_batch_says_which_values_are_not_shared() -> None:
    """``loads_shared`` names exactly the values ``unshareable`` names (a message whose
    metadata could change in a caller's hands), without a pass over the others."""
    blobs = [*ODD_BUT_LOADABLE, frame(U, ["q", "x", {}])]
    values, positions = default_serde.loads_shared(blobs)
    assert positions == default_serde.unshareable(values)
    # u5's metadata holds a set, which cannot be made read-only
    assert [values[i].id for i in positions] == ["u5"]


@pytest.mark.parametrize("bad", REFUSED, ids=range(len(REFUSED)))
def test_a_bad_frame_in_a_batch_is_refused_as_loads_refuses_it(bad: bytes) -> None:
    """A damaged frame among good ones: the batch raises what ``loads`` raises for it."""
    blobs = [frame(U, ["q", "a", {}]), bad, frame(A, ["r", "b", {}, []])]
    with pytest.raises(SerializationError) as alone:
        default_serde.loads(bad)
    with pytest.raises(SerializationError) as batch:
        default_serde.loads_all(blobs)
    assert str(batch.value) == str(alone.value)


def test_frames_that_do_not_align_are_refused() -> None:
    """Two frames whose payloads split one value between them (their concatenation is
    well-formed msgpack) are not read as anything: ``loads`` names the damage."""
    whole = msgpack.packb([U, ["hello there", "u1", {}]])
    cut = len(whole) // 2
    blobs = [_ext(_ENCODED, whole[:cut]), _ext(_ENCODED, whole[cut:])]
    with pytest.raises(SerializationError):
        default_serde.loads_all(blobs)


def test_read_metadata_is_read_only_and_the_message_frozen() -> None:
    """What a batch builds is as immutable as what ``loads`` builds: changing a message
    or its metadata raises, so a shared decoded message cannot be changed by a reader."""
    message = default_serde.loads_all([frame(U, ["hi", "u", {"k": [1]}])] * 2)[0]
    with pytest.raises(TypeError):
        message.metadata["k"] = 2
    with pytest.raises(TypeError):
        message.metadata["k"].append(2)
    with pytest.raises(Exception):  # noqa: B017 - pydantic's frozen-instance error
        message.content = "changed"
    assert message.model_copy(update={"content": "x"}).content == "x"
    assert dict(message.metadata) == {"k": [1]}


class Shout(UserMessage):
    """A user's subclass: stored under its own name, never mistaken for a user message."""


def test_a_subclass_and_a_class_registered_again_are_decoded_frame_by_frame() -> None:
    """A subclass registered under its own name decodes through its own registration;
    a layer that registers a library class again turns the batch decoder off for it."""
    mine = Serde()
    mine.register(Shout, name="tests.Shout")
    blobs = [mine.dumps(Shout("loud")), mine.dumps(UserMessage("quiet"))]
    got = mine.loads_all(blobs)
    assert [type(m) for m in got] == [Shout, UserMessage]
    assert all(same(a, b) for a, b in zip(got, loads_each(mine, blobs), strict=True))

    again = Serde()
    again.register(UserMessage, name="tests.User")
    blobs = [frame(U, ["hi", "u1", {}])] * 2
    with pytest.raises(SerializationError) as alone:
        again.loads(blobs[0])
    with pytest.raises(SerializationError) as batch:
        again.loads_all(blobs)
    assert str(batch.value) == str(alone.value)


def test_messages_stored_by_earlier_versions_load_in_a_batch() -> None:
    """Messages stored as model frames (before the flat encoding) load in a batch as
    alone, beside flat ones."""
    model = _ext(8, msgpack.packb([U, {"content": "old", "id": "o1", "metadata": {}}]))
    blobs = [model, frame(U, ["new", "n1", {}]), model]
    got = default_serde.loads_all(blobs)
    assert [m.content for m in got] == ["old", "new", "old"]
    assert all(same(a, b) for a, b in zip(got, loads_each(default_serde, blobs), strict=True))


def test_tool_calls_come_back_as_tool_calls() -> None:
    """A batch of assistant messages with tool calls rebuilds each call."""
    message = AssistantMessage("", tool_calls=[ToolCall(id="c", name="t", arguments="{}")])
    got = default_serde.loads_all([default_serde.dumps(message)] * 3)
    assert got == [message] * 3


def shape(value: Any) -> Any:
    """The types of ``value`` and of everything inside it (a message: its fields)."""
    if hasattr(value, "__pydantic_fields_set__"):
        return (type(value), {k: shape(v) for k, v in value.__dict__.items()})
    if isinstance(value, dict):
        return (type(value), {k: shape(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return (type(value), [shape(v) for v in value])
    return type(value)


def test_lists_and_tuples_inside_metadata_keep_their_types_in_a_batch() -> None:
    """A batch unpacks arrays as tuples: a list stored at any depth of the metadata still
    reads back as a (read-only) list and a tuple stored as a tuple, as ``loads`` reads
    them alone, and tool calls as tool calls."""
    metadata = {"a": [1, [2, {"b": [3, []]}]], "t": (1, [2]), "u": {"k": [4]}, "e": []}
    messages = [
        UserMessage("hi", id="u", metadata=metadata),
        AssistantMessage(
            "yes",
            id="a",
            metadata=metadata,
            tool_calls=[ToolCall(id="c", name="f", arguments="{}")],
        ),
        ToolResponseMessage("42", id="t", tool_call_id="c", name="f", metadata=metadata),
        SystemMessage("be brief", id="s", metadata=metadata),
    ]
    blobs = [default_serde.dumps(m) for m in messages] * 100
    batch = default_serde.loads_all(blobs)
    alone = loads_each(default_serde, blobs)
    assert batch == alone
    assert [shape(m) for m in batch] == [shape(m) for m in alone]
    assert type(batch[0].metadata["a"][1][1]["b"]) is type(alone[0].metadata["a"][1][1]["b"])
    assert type(batch[0].metadata["t"]) is tuple


def test_a_frame_with_bytes_after_its_value_is_refused_in_a_batch() -> None:
    """A frame holding one value and more bytes after it shifts the batch's frames after
    it: the batch is refused as ``loads`` refuses that frame alone."""
    extra = _ext(_ENCODED, msgpack.packb([U, ["hi", "u1", {}]]) + msgpack.packb(1))
    blobs = [frame(U, [f"q{i}", f"id{i}", {}]) for i in range(10)]
    blobs.insert(5, extra)
    with pytest.raises(SerializationError) as alone:
        default_serde.loads(extra)
    with pytest.raises(SerializationError) as batch:
        default_serde.loads_all(blobs)
    assert str(batch.value) == str(alone.value)
