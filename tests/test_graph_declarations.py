"""What the builder learns from annotations and arguments (issue 12 items 10-13, issue 16
item 5): declared destinations, Literal routers, empty strategy keys, message coercion,
model input, strategy arity, agents as nodes."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel

from graphagent.agent import ReactAgent
from graphagent.errors import GraphValidationError
from graphagent.graph import END, START, AppendStrategy, Command, MergeStrategy, StateGraph
from graphagent.messages import AssistantMessage, Message, UserMessage
from graphagent.models import FakeChatModel


def test_function_node_with_destinations_is_named_after_the_function() -> None:
    def planner(state: Any) -> Command:
        return Command(goto="step")

    g = StateGraph().add_node(planner, destinations=["step"]).add_edge(START, "planner")
    app = g.add_node("step", lambda s: {"done": True}).add_edge("step", END).compile()
    assert app.graph.edges["planner", "step"]["conditional"] is True
    assert app.invoke({}) == {"done": True}


def test_command_literal_union_declares_every_destination() -> None:
    def pick(state: Any) -> Command[Literal["a"]] | Command[Literal["b", "__end__"]]:
        return Command(goto="b")

    g = StateGraph().add_node(pick).add_node("a", lambda s: None).add_node("b", lambda s: None)
    app = g.add_edge(START, "pick").add_edge("a", END).add_edge("b", END).compile()
    assert {t for _, t in app.graph.out_edges("pick")} == {"a", "b", END}


def test_literal_router_targets_are_recorded_as_its_path_map() -> None:
    def route(state: Any) -> Literal["left", "right"]:
        return "right" if state["x"] else "left"

    g = StateGraph().add_node("start", lambda s: None)
    g.add_node("left", lambda s: {"went": "left"}).add_node("right", lambda s: {"went": "right"})
    g.add_edge(START, "start").add_conditional_edges("start", route)
    app = g.add_edge("left", END).add_edge("right", END).compile()
    assert {t for _, t in app.graph.out_edges("start")} == {"left", "right"}
    assert app.invoke({"x": 1})["went"] == "right"


def test_strategy_keys_read_empty_but_do_not_appear_unwritten() -> None:
    seen: list[Any] = []
    g = StateGraph({"log": AppendStrategy(), "meta": MergeStrategy()})
    g.add_node("n", lambda s: seen.extend([s["log"], s.get("meta"), "plain" in s]))
    app = g.add_edge(START, "n").add_edge("n", END).compile()
    assert app.invoke({}) == {}
    assert seen == [[], {}, False]


def test_messages_key_coerces_and_other_append_keys_do_not() -> None:
    g = StateGraph({"messages": AppendStrategy(), "log": AppendStrategy()})
    g.add_node("n", lambda s: {"messages": "again", "log": "text"})
    out = g.add_edge(START, "n").add_edge("n", END).compile().invoke({"messages": ["hi"]})
    assert all(isinstance(m, UserMessage) for m in out["messages"])
    assert out["log"] == ["text"]
    raw = StateGraph({"messages": AppendStrategy(messages=False)})
    raw.add_node("n", lambda s: {"messages": "x"}).add_edge(START, "n").add_edge("n", END)
    assert raw.compile().invoke({})["messages"] == ["x"]


def test_pydantic_input_keeps_only_the_fields_that_were_set() -> None:
    class State(BaseModel):
        foo: str | None = None
        bar: str = "default"

    g = StateGraph(State).add_node("n", lambda s: {"foo": (s["foo"] or "") + "!"})
    app = g.add_edge(START, "n").add_edge("n", END).compile()
    assert app.invoke(State(foo="a")) == {"foo": "a!", "bar": "default"}


def test_non_mapping_input_is_refused_with_the_fix() -> None:
    g = StateGraph().add_node("n", lambda s: None).add_edge(START, "n")
    app = g.add_edge("n", END).compile()
    with pytest.raises(Exception, match="dict of state keys"):
        app.invoke(["not", "a", "dict"])


def test_wrong_arity_strategies_are_refused_at_compile_naming_the_key() -> None:
    class Bad:
        def merge(self, new: Any) -> Any:
            return new

    g = StateGraph({"log": Bad(), "total": lambda new: new, "ok": lambda a, b: a + b})
    g.add_node("n", lambda s: None).add_edge(START, "n").add_edge("n", END)
    with pytest.raises(GraphValidationError) as info:
        g.compile()
    text = str(info.value)
    assert "'log'" in text and "'total'" in text and "'ok'" not in text


def test_an_agent_is_a_node() -> None:
    agent = ReactAgent(name="helper", model=FakeChatModel(["Hello!"]))
    g = StateGraph({"messages": AppendStrategy()}).add_node("helper", agent)
    app = g.add_edge(START, "helper").add_edge("helper", END).compile()
    assert app.graph.nodes["helper"]["kind"] == "subgraph"
    out = app.invoke({"messages": ["hi"]})
    assert all(isinstance(m, Message) for m in out["messages"])
    assert isinstance(out["messages"][-1], AssistantMessage)
    assert out["messages"][-1].text == "Hello!"
