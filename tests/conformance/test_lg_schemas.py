"""State, input, output and node schemas; pydantic and dataclass state. Ported from
LangGraph's libs/langgraph/tests/test_pregel.py and test_pydantic.py (origin named per test).

The list key is named ``log`` where LangGraph's tests say ``messages``: graphagent's
``messages`` key turns text into messages (tested on its own below).

Deliberate difference (docs/coming-from.md): a node with no annotation (or annotated with
the graph's own TypedDict) gets the read-only state mapping; a node annotated with a
pydantic model or a dataclass gets its own copy built from the state, as in LangGraph.
"""

from __future__ import annotations

import asyncio
import operator
import uuid
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel, Field, ValidationError

from checkpoint.base import CheckpointSaver
from graphagent.errors import InvalidUpdateError
from graphagent.graph import END, START, AppendStrategy, Command, StateGraph
from graphagent.messages import UserMessage


def _line(g: StateGraph, *names: str) -> StateGraph:
    previous = START
    for name in names:
        g.add_edge(previous, name)
        previous = name
    return g.add_edge(previous, END)


class State(TypedDict):
    hello: str
    bye: str
    log: Annotated[list[Any], AppendStrategy()]


class Output(TypedDict):
    log: list[Any]


class StateForA(TypedDict):
    hello: str
    log: Annotated[list[Any], AppendStrategy()]


class StateForB(TypedDict):
    bye: str
    now: int


class StateForC(TypedDict):
    hello: str
    now: int


class Slice(BaseModel):
    hello: str


def _custom_output_graph(seen: list[Any]) -> Any:
    def node_a(state: StateForA) -> None:
        seen.append(("a", dict(state)))

    def node_b(state: StateForB) -> dict[str, Any]:
        seen.append(("b", dict(state)))
        return {"now": 123, "hello": "again"}

    def node_c(state: StateForC) -> None:
        seen.append(("c", dict(state)))

    g = StateGraph(State, output_schema=Output)
    g.add_node("a", node_a).add_node("b", node_b).add_node("c", node_c)
    return _line(g, "a", "b", "c").compile()


# origin: langgraph tests/test_pregel.py::test_node_schemas_custom_output
def test_node_schemas_and_custom_output() -> None:
    """Each node sees only its annotated keys (``now`` is no state key, yet flows from b
    to c); the run returns only the output schema's keys."""
    seen: list[Any] = []
    app = _custom_output_graph(seen)
    out = app.invoke({"hello": "there", "bye": "world", "log": ["hello"]})
    assert out == {"log": ["hello"]}
    assert seen == [
        ("a", {"hello": "there", "log": ["hello"]}),
        ("b", {"bye": "world"}),
        ("c", {"hello": "again", "now": 123}),
    ]


# origin: langgraph tests/test_pregel.py::test_node_schemas_custom_output (input_schema part)
def test_input_schema_drops_other_keys_and_streams_as_usual() -> None:
    """Input keys outside the input schema are dropped; updates stream as written."""

    class In(TypedDict):
        hello: str
        bye: str
        log: list[Any]

    seen: list[Any] = []

    def node_b(state: StateForB) -> dict[str, Any]:
        seen.append(dict(state))
        return {"now": 123, "hello": "again"}

    g = StateGraph(State, input_schema=In, output_schema=Output).add_node("b", node_b)
    app = _line(g, "b").compile()
    events = list(app.stream({"hello": "there", "bye": "w", "log": ["m"], "now": 345}))
    assert events == [{"b": {"now": 123, "hello": "again"}}]
    assert seen == [{"bye": "w"}]  # not the 345 the caller passed
    assert list(app.stream({"hello": "x", "bye": "y", "log": []}, mode="values")) == [
        {"log": []},
        {"log": []},
    ]


def test_output_schema_on_every_saver(saver: CheckpointSaver) -> None:
    """The output schema shapes what invoke returns; the checkpoint keeps the whole state."""
    seen: list[Any] = []
    g = StateGraph(State, output_schema=Output)
    g.add_node("b", lambda s: {"hello": "again"})
    app = _line(g, "b").compile(saver=saver)
    thread = uuid.uuid4().hex
    assert app.invoke({"hello": "h", "bye": "b", "log": ["m"]}, thread_id=thread) == {"log": ["m"]}
    assert app.get_state(thread_id=thread).values == {
        "hello": "again",
        "bye": "b",
        "log": ["m"],
    }
    out = asyncio.run(app.ainvoke({"log": ["n"]}, thread_id=thread))
    assert out == {"log": ["m", "n"]} and seen == []


# origin: langgraph tests/test_pregel.py::test_pydantic_state_mutation
def test_pydantic_node_gets_its_own_model() -> None:
    """A node annotated with the pydantic state gets a model it may change and return;
    the change never reaches the defaults or another run."""

    class Inner(BaseModel):
        a: int = 0

    class S(BaseModel):
        inner: Inner = Inner()
        outer: int = 0

    def my_node(state: S) -> S:
        state.inner.a = 5
        state.outer = 10
        return state

    app = StateGraph(S).add_node(my_node).add_edge(START, "my_node").add_edge("my_node", END)
    graph = app.compile()
    assert graph.invoke({"outer": 1}) == {"outer": 10, "inner": Inner(a=5)}
    assert graph.invoke({"outer": 2}) == {"outer": 10, "inner": Inner(a=5)}
    assert S().inner == Inner(a=0)

    class WithFactory(BaseModel):
        inner: Inner = Field(default_factory=Inner)
        outer: int = 0

    def node_b(state: WithFactory) -> WithFactory:
        state.inner.a = 5
        state.outer = 10
        return state

    g = StateGraph(WithFactory).add_node(node_b).add_edge(START, "node_b")
    assert g.add_edge("node_b", END).compile().invoke({"outer": 1}) == {
        "outer": 10,
        "inner": Inner(a=5),
    }


# origin: langgraph tests/test_pregel.py::test_pydantic_state_mutation_command
def test_command_update_takes_a_model() -> None:
    """``Command(update=Model)`` writes the model's set fields."""

    class Inner(BaseModel):
        a: int = 0

    class S(BaseModel):
        inner: Inner = Inner()
        outer: int = 0

    def my_node(state: S) -> Command:
        state.inner.a = 5
        state.outer = 10
        return Command(update=state)

    g = StateGraph(S).add_node(my_node).add_edge(START, "my_node").add_edge("my_node", END)
    assert g.compile().invoke({"outer": 1}) == {"outer": 10, "inner": Inner(a=5)}


# origin: langgraph tests/test_pregel.py::test_pydantic_state_update_command
def test_command_update_with_a_partial_model() -> None:
    """A model with only some fields set updates only those."""

    class S(BaseModel):
        foo: str | None = None
        bar: str | None = None

    g = StateGraph(S).add_node("node_a", lambda s: S(foo="foo"))
    g.add_node("node_b", lambda s: Command(update=S(bar="bar")))
    assert _line(g, "node_a", "node_b").compile().invoke(S()) == {"foo": "foo", "bar": "bar"}

    class Only(BaseModel):
        foo: str | None

    g2 = StateGraph(Only).add_node("node_a", lambda s: Command(update=Only(foo=None)))
    assert _line(g2, "node_a").compile().invoke({"foo": ""}) == {"foo": None}


def test_command_update_of_another_kind_is_refused() -> None:
    """``Command(update=42)`` names the node and what an update is."""
    g = StateGraph().add_node("n", lambda s: Command(update=42))  # type: ignore[arg-type]
    with pytest.raises(InvalidUpdateError, match=r"node 'n'.*dict of state keys"):
        _line(g, "n").compile().invoke({})


# origin: langgraph tests/test_pydantic.py::test_nested_pydantic_models
def test_pydantic_input_is_validated_and_nested_dicts_become_models() -> None:
    """Input for a pydantic state is validated per key: nested dicts become models,
    numbers in text become numbers, and a bad value raises before any node runs."""

    class Address(BaseModel):
        city: str
        zip: int

    class Person(BaseModel):
        name: str
        address: Address

    class S(BaseModel):
        person: Person
        tags: Annotated[list[str], operator.add] = []
        count: int = 0

    seen: list[Any] = []
    g = StateGraph(S).add_node("n", lambda s: seen.append(s["person"]) or {"tags": ["x"]})
    app = _line(g, "n").compile()
    out = app.invoke(
        {"person": {"name": "Ada", "address": {"city": "Paris", "zip": "75001"}}, "count": "3"}
    )
    assert isinstance(seen[0], Person) and isinstance(seen[0].address, Address)
    assert seen[0].address.zip == 75001 and out["count"] == 3 and out["tags"] == ["x"]
    with pytest.raises(ValidationError):
        app.invoke({"person": {"name": "Ada", "address": {"city": "Paris", "zip": "no"}}})
    assert len(seen) == 1


def test_pydantic_state_checkpoints_models(saver: CheckpointSaver) -> None:
    """A validated nested model is what the thread stores and reads back."""
    from checkpoint import serde

    class Point(BaseModel):
        x: int
        y: int

    serde.register(Point, name=f"test.Point.{uuid.uuid4().hex}")

    class S(BaseModel):
        point: Point | None = None

    g = StateGraph(S).add_node("n", lambda s: None)
    app = _line(g, "n").compile(saver=saver)
    thread = uuid.uuid4().hex
    app.invoke({"point": {"x": "1", "y": 2}}, thread_id=thread)
    assert app.get_state(thread_id=thread).values["point"] == Point(x=1, y=2)


def test_update_state_is_validated_against_a_pydantic_state(saver: CheckpointSaver) -> None:
    """update_state values are validated and coerced as input is (nested dicts become
    models, "7" becomes 7); a bad value is refused naming its key, and nothing is
    written; strategy keys take their update as is; bulk_update_state checks every write
    before it writes any."""
    from checkpoint import serde

    class Spot(BaseModel):
        x: int

    serde.register(Spot, name=f"test.Spot.{uuid.uuid4().hex}")

    class S(BaseModel):
        spot: Spot | None = None
        count: int = 0
        tags: Annotated[list[str], operator.add] = []

    app = _line(StateGraph(S).add_node("n", lambda s: None), "n").compile(saver=saver)
    thread = uuid.uuid4().hex
    app.invoke({"count": 1}, thread_id=thread)
    config = {"thread_id": thread}
    app.update_state(config, {"spot": {"x": "3"}, "count": "7", "tags": ["a"]})
    values = app.get_state(config).values
    assert values["spot"] == Spot(x=3) and values["count"] == 7 and values["tags"] == ["a"]
    before = len(app.get_state_history(config))
    with pytest.raises(InvalidUpdateError, match=r"update_state: count='many'.*nothing was"):
        app.update_state(config, {"count": "many", "tags": ["lost?"]})
    with pytest.raises(InvalidUpdateError, match=r"bulk_update_state: spot=\{'x': 'no'\}"):
        app.bulk_update_state(config, [[({"count": 8}, None)], [({"spot": {"x": "no"}}, None)]])
    assert len(app.get_state_history(config)) == before
    assert app.get_state(config).values == values


# origin: langgraph tests/test_pregel.py::test_command_pydantic_dataclass (dataclass state)
def test_dataclass_state() -> None:
    """A dataclass schema: defaults start the state, ``Annotated`` strategies merge, a
    node annotated with it gets an instance, and a dataclass instance is valid input."""

    @dataclass
    class S:
        items: Annotated[list[str], operator.add] = field(default_factory=list)
        name: str = "x"

    def node(state: S) -> dict[str, Any]:
        assert isinstance(state, S)
        return {"items": [state.name]}

    app = _line(StateGraph(S).add_node(node), "node").compile()
    assert app.invoke({}) == {"items": ["x"], "name": "x"}
    assert app.invoke(S(items=["a"], name="n")) == {"items": ["a", "n"], "name": "n"}
    with pytest.raises(InvalidUpdateError, match="not in the state schema"):
        _line(StateGraph(S).add_node("bad", lambda s: {"nope": 1}), "bad").compile().invoke({})


def test_dataclass_node_returning_a_dataclass() -> None:
    """A node may return an instance of the dataclass state: its fields are the update."""

    @dataclass
    class S:
        name: str = "x"
        count: int = 0

    app = _line(StateGraph(S).add_node("n", lambda s: S("y", s["count"] + 1)), "n").compile()
    assert app.invoke({"count": 1}) == {"name": "y", "count": 2}


def test_node_input_class_of_another_kind_on_a_typeddict_graph() -> None:
    """A pydantic input class on a TypedDict graph: the node gets a model of its keys."""
    seen: list[Any] = []

    def node(state: Slice) -> dict[str, Any]:
        seen.append(state)
        return {"hello": state.hello.upper()}

    app = _line(StateGraph(State).add_node(node), "node").compile()
    assert app.invoke({"hello": "hi", "bye": "b", "log": []})["hello"] == "HI"
    assert seen == [Slice(hello="hi")]


def test_async_node_with_input_class_and_runtime() -> None:
    """An async node with an input class and a runtime parameter gets both."""
    from graphagent.graph import Runtime

    async def node(state: StateForB, runtime: Runtime[Any]) -> dict[str, Any]:
        return {"bye": f"{sorted(state)}:{runtime.context}"}

    app = _line(StateGraph(State).add_node(node), "node").compile()
    out = asyncio.run(app.ainvoke({"hello": "h", "bye": "b", "log": []}, context="ctx"))
    assert out["bye"] == "['bye']:ctx"


def test_state_schema_keyword_and_twice_refused() -> None:
    """``state_schema=`` is LangGraph's name for the schema; passing both is an error."""
    from graphagent.errors import GraphValidationError

    app = _line(StateGraph(state_schema=StateForB).add_node("n", lambda s: {"now": 1}), "n")
    assert app.compile().invoke({"bye": "b"}) == {"bye": "b", "now": 1}
    with pytest.raises(GraphValidationError, match="once"):
        StateGraph(State, state_schema=State)


def test_messages_key_of_a_node_schema_keeps_message_coercion() -> None:
    """The graph's ``messages`` key coerces text to messages whatever node schemas say."""

    class S(TypedDict):
        messages: Annotated[list[Any], AppendStrategy()]

    app = _line(StateGraph(S).add_node("n", lambda s: {"messages": "hi"}), "n").compile()
    (message,) = app.invoke({"messages": []})["messages"]
    assert isinstance(message, UserMessage) and message.text == "hi"
