"""The msgpack serde: round trips, registered types, clear refusals, no code on load."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import enum
import subprocess
import sys
import uuid
from typing import Any

import msgpack
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from checkpoint import serde as serde_module
from checkpoint.errors import SerializationError
from checkpoint.serde import MAX_DEPTH, Serde, base_serde, default_serde, dumps, loads
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
    | st.text(st.characters(exclude_categories=()) | st.characters(categories=["Cs"]))
    | st.binary()
    | st.datetimes()
    | st.uuids(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(
            st.text(st.characters(exclude_categories=()), max_size=5), inner, max_size=4
        )
    ),
    max_leaves=20,
)


@given(values)
@example({"caf\udce9.txt": ["\ud800", ("\ud83d\ude00", "\U0001f600")]})
def test_supported_values_round_trip(value: Any) -> None:
    """Arbitrary supported values survive dumps/loads unchanged, any str included (lone
    surrogates: os.listdir on undecodable names, json.loads('"\\ud800"'))."""
    assert loads(dumps(value)) == value


def nested(depth: int, wrap: Any = tuple) -> Any:
    """``depth`` containers inside one another (the innermost an empty tuple)."""
    value: Any = ()
    for _ in range(depth - 1):
        value = wrap([value]) if wrap is not list else [value]
    return value


@dataclasses.dataclass
class Node:
    child: Any


@pytest.mark.parametrize(
    "value",
    [
        nested(MAX_DEPTH + 1),
        nested(2_000),
        nested(2_000, list),
        nested(MAX_DEPTH + 1, frozenset),
    ],
    ids=["tuples-101", "tuples-2000", "lists-2000", "frozensets-101"],
)
def test_dumps_refuses_values_nested_past_the_limit(value: Any) -> None:
    """Too deep a value is a SerializationError naming the limit, never a RecursionError."""
    with pytest.raises(SerializationError, match=rf"more than {MAX_DEPTH} levels deep.*flatten"):
        dumps(value)


def test_dumps_refuses_deep_objects_and_values_that_contain_themselves() -> None:
    """Registered objects count as levels; a list holding itself is refused, not looped on."""
    s = Serde()
    s.register(Node)
    chain: Any = None
    for _ in range(MAX_DEPTH + 1):
        chain = Node(chain)
    with pytest.raises(SerializationError, match=f"{MAX_DEPTH} levels"):
        s.dumps(chain)
    loop: list[Any] = []
    loop.append((loop,))
    with pytest.raises(SerializationError, match="contains itself"):
        dumps(loop)


def test_values_up_to_the_limit_round_trip() -> None:
    """Exactly MAX_DEPTH levels, of any mix of containers, store and load."""
    value = nested(MAX_DEPTH)
    assert loads(dumps(value)) == value
    mixed: Any = "leaf"
    for i in range(MAX_DEPTH):
        mixed = ([mixed], (mixed,), {"k": mixed})[i % 3]
    assert loads(dumps(mixed)) == mixed
    s = Serde()
    s.register(Node)
    chain: Any = None
    for _ in range(MAX_DEPTH):
        chain = Node(chain)
    assert s.loads(s.dumps(chain)) == chain


_DEEP_READER = """
import sys, threading
import msgpack
from checkpoint.errors import SerializationError
from checkpoint.serde import loads

def blob(depth, code):
    data = msgpack.packb([])
    for _ in range(depth):
        inner = [f"graphagent.Node", msgpack.ExtType(code, data)] if code == 8 else None
        data = msgpack.packb(inner) if inner else data
        data = msgpack.packb(msgpack.ExtType(code, data))
    return data

outcomes = []
def read_all():
    for depth in (250, 5_000):
        for code in (1, 2, 8):
            try:
                loads(blob(depth, code))
                outcomes.append("loaded")
            except SerializationError as exc:
                outcomes.append("refused" if "100 levels deep" in str(exc) else str(exc))

read_all()
threading.stack_size(512 * 1024)  # a small thread stack: the nesting must not need more
worker = threading.Thread(target=read_all)
worker.start()
worker.join()
print(" ".join(outcomes))
"""


def test_loading_deeply_nested_bytes_raises_instead_of_crashing() -> None:
    """Tampered bytes nesting 250 or 5,000 frames are refused, in a thread with a 512 KiB
    stack too. Runs in a child process: the bug was a SIGSEGV, which would kill pytest."""
    done = subprocess.run(
        [sys.executable, "-c", _DEEP_READER], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.split() == ["refused"] * 12, done.stdout


def test_a_fresh_serde_stores_the_library_messages_and_pauses() -> None:
    """MemorySaver(serde=Serde()) runs an agent with tools and a graph that pauses for a
    human: the library's own types live in the base registry every Serde includes."""
    from checkpoint import MemorySaver
    from graphagent.agent import ReactAgent
    from graphagent.graph import END, START, StateGraph, interrupt
    from graphagent.messages import UserMessage
    from graphagent.models import FakeChatModel

    def lookup(q: str) -> str:
        """Look it up."""
        return f"found {q}"

    call = AssistantMessage(
        "", tool_calls=(ToolCall(id="c1", name="lookup", arguments='{"q":"x"}'),)
    )
    saver = MemorySaver(serde=Serde())
    agent = ReactAgent(name="a", model=FakeChatModel([call, "done"]), tools=[lookup], saver=saver)
    agent.invoke("hi", {"thread_id": "t"})
    stored = saver.get("t")
    assert stored is not None
    kinds = [type(m) for m in stored.values["messages"]]
    assert kinds == [UserMessage, AssistantMessage, ToolResponseMessage, AssistantMessage]
    assert stored.values["messages"][1].tool_calls[0].name == "lookup"

    g = StateGraph()
    g.add_node("ask", lambda s: {"answer": interrupt({"question": ("ok?", 1)})})
    g.add_edge(START, "ask").add_edge("ask", END)
    app = g.compile(saver=MemorySaver(serde=Serde()))
    paused = app.invoke({"answer": None}, {"thread_id": "h"})
    assert paused["__interrupt__"][0].value == {"question": ("ok?", 1)}
    from graphagent.graph import Command

    assert app.invoke(Command(resume="yes"), {"thread_id": "h"})["answer"] == "yes"


def test_registries_are_layered() -> None:
    """A type registered on one Serde is known to it and to Serdes layered on it, not to
    others or to the process-wide one; library names cannot be taken over."""
    mine = Serde()
    mine.register(Point, name="app.Point")
    assert mine.loads(mine.dumps(Point(1, 2))) == Point(1, 2)
    on_top = Serde(base=mine)
    on_top.register(Color, name="app.Color")
    assert on_top.loads(on_top.dumps([Point(3, 4), Color.RED])) == [Point(3, 4), Color.RED]
    assert on_top.is_registered(AssistantMessage)  # the library's base is still underneath
    assert not mine.is_registered(Color)
    for other in (Serde(), default_serde):
        assert not other.is_registered(Point)
        with pytest.raises(SerializationError, match="not registered"):
            other.loads(mine.dumps(Point(1, 2)))
    with pytest.raises(SerializationError, match="already registered for graphagent"):
        mine.register(Weather, name="graphagent.UserMessage")
    bare = Serde(base=None)
    assert not bare.is_registered(AssistantMessage)


def test_types_registered_in_the_base_later_reach_every_serde() -> None:
    """A Serde made before a base registration sees it (the layers are merged again)."""

    @dataclasses.dataclass
    class Late:
        v: int

    made_before = Serde()
    assert not made_before.is_registered(Late)
    base_serde.register(Late, name="tests.Late")
    try:
        assert made_before.loads(made_before.dumps(Late(5))) == Late(5)
        assert default_serde.is_registered(Late)
    finally:
        # keep the process-wide base as the library left it
        base_serde._own.pop(Late)
        serde_module._registrations[0] += 1
