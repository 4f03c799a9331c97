"""The msgpack serde: round trips, registered types, clear refusals, no code on load."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import enum
import uuid
from typing import Any

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from checkpoint.errors import SerializationError
from checkpoint.serde import Serde, dumps, loads
from graphagent.messages import AssistantMessage, ToolCall, ToolResponseMessage


class Color(enum.Enum):
    RED = "red"


class Weather(BaseModel):
    city: str
    when: dt.datetime


@dataclasses.dataclass
class Point:
    x: int
    y: int


def test_builtin_types_round_trip() -> None:
    """tuples, sets, datetimes, UUIDs and bytes come back as themselves."""
    value = {
        "t": (1, "a"),
        "s": {1, 2},
        "f": frozenset({"x"}),
        "d": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc),
        "day": dt.date(2026, 1, 2),
        "td": dt.timedelta(days=1, seconds=3),
        "u": uuid.UUID(int=7),
        "b": b"\x00\xff",
        "n": None,
    }
    assert loads(dumps(value)) == value
    assert type(loads(dumps((1,)))) is tuple


def test_registered_types_come_back_as_themselves() -> None:
    """A registered pydantic model, enum or dataclass is restored as its class."""
    s = Serde()
    s.register(Weather)
    s.register(Color)
    s.register(Point)
    w = Weather(city="Oslo", when=dt.datetime(2026, 5, 1))
    out = s.loads(s.dumps({"w": w, "c": Color.RED, "p": Point(1, 2)}))
    assert out == {"w": w, "c": Color.RED, "p": Point(1, 2)}
    assert type(out["w"]) is Weather


def test_library_messages_with_tool_calls() -> None:
    """Assistant messages keep their tool calls through a round trip."""
    msg = AssistantMessage("", tool_calls=(ToolCall(id="c1", name="f", arguments='{"a":1}'),))
    back = loads(dumps([msg, ToolResponseMessage("ok", tool_call_id="c1", name="f")]))
    assert back[0] == msg and back[0].tool_calls[0].args == {"a": 1}


def test_unregistered_type_on_save_names_it_and_the_fix() -> None:
    """Storing an unknown class says which and how to register it."""

    class Secret:
        pass

    with pytest.raises(SerializationError, match=r"Secret.*checkpoint.serde.register"):
        dumps({"x": Secret()})
    with pytest.raises(SerializationError, match="register"):
        Serde().dumps(Color.RED)


def test_unregistered_type_on_load_names_it() -> None:
    """Loading a type this process has not registered is a clear error, not a dict."""
    s = Serde()
    s.register(Weather, name="app.Weather")
    blob = s.dumps(Weather(city="x", when=dt.datetime(2026, 1, 1)))
    with pytest.raises(SerializationError, match=r"'app\.Weather', which is not registered"):
        Serde().loads(blob)


def test_name_clash_is_refused() -> None:
    """Two classes under one stored name would load wrongly, so the second is refused."""
    s = Serde()
    s.register(Weather, name="w")
    with pytest.raises(SerializationError, match="already registered"):
        s.register(Point, name="w")


def test_loading_never_imports_or_runs_code() -> None:
    """A payload naming a module path is looked up in the registry only."""
    evil = msgpack.packb(
        msgpack.ExtType(8, msgpack.packb(["os.system", {"command": "echo pwned"}]))
    )
    with pytest.raises(SerializationError, match="not registered"):
        loads(evil)


@given(st.binary(max_size=200))
def test_corrupt_bytes_raise_serialization_error(blob: bytes) -> None:
    """Any bytes either decode or raise SerializationError; nothing else escapes."""
    with contextlib.suppress(SerializationError):
        loads(blob)


values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary()
    | st.datetimes()
    | st.uuids(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(values)
def test_supported_values_round_trip(value: Any) -> None:
    """Arbitrary supported values survive dumps/loads unchanged."""
    assert loads(dumps(value)) == value
