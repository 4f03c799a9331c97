"""Subgraphs that pause: interrupts and breakpoints inside nested graphs, on every saver.

Ported from the subgraph tests of LangGraph's libs/langgraph/tests/test_pregel.py
(test_interrupt_subgraph, test_nested_graph_interrupts_parallel,
test_doubly_nested_graph_interrupts, test_double_interrupt_subgraph, test_multi_resume,
test_multiple_subgraphs) and libs/langgraph/tests/test_time_travel.py.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from _support import thread

from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, Command, ReplaceStrategy, StateGraph, interrupt


class Baz(TypedDict):
    baz: str


class MyKey(TypedDict):
    my_key: Annotated[str, operator.add]


def _line(schema: Any, *nodes: tuple[str, Any], **compile_kw: Any) -> Any:
    g = StateGraph(schema)
    previous = START
    for name, fn in nodes:
        g.add_node(name, fn).add_edge(previous, name)
        previous = name
    return g.add_edge(previous, END).compile(**compile_kw)


# origin: langgraph tests/test_pregel.py::test_interrupt_subgraph
def test_interrupt_in_subgraph_node(saver: CheckpointSaver) -> None:
    child = _line(Baz, ("bar", lambda s: {"baz": interrupt("Please provide baz value:")}))
    app = _line(Baz, ("foo", lambda s: {"baz": "foo"}), ("bar", child), saver=saver)
    config = thread()
    app.invoke({"baz": ""}, config)
    assert app.get_state(config).interrupts[0].value == "Please provide baz value:"
    assert app.get_state(config).next == ("bar",)
    assert app.invoke(Command(resume="bar"), config) == {"baz": "bar"}
    assert app.get_state(config).interrupts == ()


# origin: langgraph tests/test_pregel.py::test_interrupt_subgraph (the pause itself)
def test_interrupt_in_subgraph_node_pauses_parent(saver: CheckpointSaver) -> None:
    child = _line(Baz, ("bar", lambda s: {"baz": interrupt("Please provide baz value:")}))
    app = _line(Baz, ("foo", lambda s: {"baz": "foo"}), ("bar", child), saver=saver)
    config = thread()
    app.invoke({"baz": ""}, config)
    state = app.get_state(config)
    assert state.values == {"baz": "foo"}
    assert state.next == ("bar",)
    assert [i.value for i in state.interrupts] == ["Please provide baz value:"]


# origin: langgraph tests/test_pregel.py::test_double_interrupt_subgraph (graph as node)
def test_double_interrupt_in_subgraph(saver: CheckpointSaver) -> None:
    child = _line(
        Baz,
        ("node_1", lambda s: {"baz": interrupt("interrupt node 1")}),
        ("node_2", lambda s: {"baz": interrupt("interrupt node 2")}),
    )
    app = _line(Baz, ("sub", child), saver=saver)
    config = thread()
    app.invoke({"baz": "test"}, config)
    assert app.get_state(config).interrupts[0].value == "interrupt node 1"
    app.invoke(Command(resume="123"), config)
    assert app.get_state(config).interrupts[0].value == "interrupt node 2"
    assert app.invoke(Command(resume="456"), config) == {"baz": "456"}


# origin: langgraph tests/test_pregel.py::test_double_interrupt_subgraph (compiled with a saver)
def test_double_interrupt_graph_on_its_own(saver: CheckpointSaver) -> None:
    app = _line(
        Baz,
        ("node_1", lambda s: {"baz": interrupt("interrupt node 1")}),
        ("node_2", lambda s: {"baz": interrupt("interrupt node 2")}),
        saver=saver,
    )
    config = thread()
    [event] = app.stream({"baz": "test"}, config)
    assert [i.value for i in event["__interrupt__"]] == ["interrupt node 1"]
    first, second = app.stream(Command(resume="123"), config)
    assert first == {"node_1": {"baz": "123"}}
    assert [i.value for i in second["__interrupt__"]] == ["interrupt node 2"]
    assert list(app.stream(Command(resume="456"), config)) == [{"node_2": {"baz": "456"}}]


# origin: langgraph tests/test_pregel.py::test_double_interrupt_subgraph (invoke in a node)
def test_double_interrupt_subgraph_invoked_in_node(saver: CheckpointSaver) -> None:
    child = _line(
        Baz,
        ("node_1", lambda s: {"baz": interrupt("interrupt node 1")}),
        ("node_2", lambda s: {"baz": interrupt("interrupt node 2")}),
    )
    app = _line(Baz, ("invoke_sub_agent", lambda s: child.invoke(dict(s))), saver=saver)
    config = thread()
    app.invoke({"baz": "test"}, config)
    assert app.get_state(config).interrupts[0].value == "interrupt node 1"
    app.invoke(Command(resume=True), config)
    assert app.get_state(config).interrupts[0].value == "interrupt node 2"
    assert list(app.stream(Command(resume="done"), config)) == [
        {"invoke_sub_agent": {"baz": "done"}}
    ]


def _parallel_inner(saver: CheckpointSaver, **compile_kw: Any) -> Any:
    class Inner(TypedDict):
        my_key: Annotated[str, operator.add]
        my_other_key: str

    inner = StateGraph(Inner)
    inner.add_node("inner_1", lambda s: {"my_key": "got here", "my_other_key": s["my_key"]})
    inner.add_node("inner_2", lambda s: {"my_key": " and there", "my_other_key": s["my_key"]})
    inner.add_edge("inner_1", "inner_2").set_entry_point("inner_1").set_finish_point("inner_2")
    g = StateGraph(MyKey)
    g.add_node("inner", inner.compile(interrupt_before=["inner_2"]))
    g.add_node("outer_1", lambda s: {"my_key": " and parallel"})
    g.add_node("outer_2", lambda s: {"my_key": " and back again"})
    g.add_edge(START, "inner").add_edge(START, "outer_1")
    g.add_edge(["inner", "outer_1"], "outer_2").set_finish_point("outer_2")
    return g.compile(saver, **compile_kw)


# origin: langgraph tests/test_pregel.py::test_nested_graph_interrupts_parallel
def test_nested_graph_interrupts_parallel(saver: CheckpointSaver) -> None:
    app = _parallel_inner(saver)
    config = thread()
    app.invoke({"my_key": ""}, config)
    assert app.get_state(config).next == ("inner",)
    assert app.invoke(None, config) == {"my_key": "got here and there and parallel and back again"}


# origin: langgraph tests/test_pregel.py::test_nested_graph_interrupts_parallel (updates stream)
def test_nested_graph_interrupts_parallel_sibling_not_rerun(saver: CheckpointSaver) -> None:
    app = _parallel_inner(saver)
    config = thread()
    first = list(app.stream({"my_key": ""}, config))
    assert {"outer_1": {"my_key": " and parallel"}} not in first[1:]
    second = list(app.stream(None, config))
    assert {"inner": {"my_key": "got here and there"}} in second
    assert {"outer_2": {"my_key": " and back again"}} in second
    assert not any("outer_1" in e and "__metadata__" not in e for e in second[1:])


# origin: langgraph tests/test_pregel.py::test_doubly_nested_graph_interrupts
def test_doubly_nested_graph_interrupts(saver: CheckpointSaver) -> None:
    class S(TypedDict):
        my_key: str

    grandchild = _line(
        S,
        ("grandchild_1", lambda s: {"my_key": s["my_key"] + " here"}),
        ("grandchild_2", lambda s: {"my_key": s["my_key"] + " and there"}),
        interrupt_before=["grandchild_2"],
    )
    child = _line(S, ("child_1", grandchild))
    app = _line(
        S,
        ("parent_1", lambda s: {"my_key": "hi " + s["my_key"]}),
        ("child", child),
        ("parent_2", lambda s: {"my_key": s["my_key"] + " and back again"}),
        saver=saver,
    )
    config = thread()
    app.invoke({"my_key": "my value"}, config)
    assert app.get_state(config).values == {"my_key": "hi my value"}
    assert app.get_state(config).next == ("child",)
    assert app.invoke(None, config) == {"my_key": "hi my value here and there and back again"}


# origin: langgraph tests/test_pregel.py::test_doubly_nested_graph_interrupts (interrupt())
def test_doubly_nested_interrupt_call(saver: CheckpointSaver) -> None:
    class S(TypedDict):
        my_key: str

    grandchild = _line(S, ("ask", lambda s: {"my_key": s["my_key"] + interrupt("more?")}))
    child = _line(S, ("child_1", grandchild))
    app = _line(S, ("parent_1", lambda s: {"my_key": "hi"}), ("child", child), saver=saver)
    config = thread()
    app.invoke({"my_key": ""}, config)
    assert app.get_state(config).interrupts[0].value == "more?"
    assert app.invoke(Command(resume=" there"), config) == {"my_key": "hi there"}


# origin: langgraph tests/test_pregel.py::test_multi_resume (two sub-nodes interrupt in one step)
def test_two_subgraph_nodes_interrupting_in_one_step(saver: CheckpointSaver) -> None:
    class Parent(TypedDict):
        answers: Annotated[list[str], operator.add]

    def asker(prompt: str) -> Any:
        return _line(Parent, ("ask", lambda s: {"answers": [f"{prompt}={interrupt(prompt)}"]}))

    g = StateGraph(Parent).add_node("left", asker("a")).add_node("right", asker("b"))
    g.add_edge(START, "left").add_edge(START, "right")
    app = g.add_edge("left", END).add_edge("right", END).compile(saver)
    config = thread()
    app.invoke({"answers": []}, config)
    pending = app.get_state(config).interrupts
    assert sorted(i.value for i in pending) == ["a", "b"]
    assert len({i.id for i in pending}) == 2
    result = app.invoke(Command(resume={i.id: i.value.upper() for i in pending}), config)
    assert result == {"answers": ["a=A", "b=B"]}


# origin: langgraph tests/test_pregel.py::test_multiple_subgraphs
def test_multiple_subgraphs_in_sequence(saver: CheckpointSaver) -> None:
    class S(TypedDict):
        a: int
        b: Annotated[list[int], operator.add]

    add_one = _line(S, ("add", lambda s: {"a": s["a"] + 1, "b": [s["a"] + 1]}))
    app = _line(S, ("one", add_one), ("two", add_one), saver=saver)
    config = thread()
    result = app.invoke({"a": 0, "b": []}, config)
    assert result["a"] == 2
    assert result["b"][-1] == 2


# origin: spring-ai-alibaba CompiledSubGraphTest::testNestedCompiledSubgraphFormIssue216 and
# langgraph tests/test_pregel.py::test_nested_graph (three levels, no saver)
def test_three_level_nesting_runs_in_order() -> None:
    class Log(TypedDict):
        log: Annotated[list[str], operator.add]

    def say(word: str) -> Any:
        return lambda s: {"log": [word]}

    inner = _line(Log, ("foo1", say("foo1")), ("foo2", say("foo2")), ("foo3", say("foo3")))
    mid = _line(Log, ("bar1", say("bar1")), ("sub2", inner), ("bar2", say("bar2")))
    app = _line(Log, ("main1", say("main1")), ("sub1", mid), ("main2", say("main2")))
    log = app.invoke({"log": []})["log"]
    ordered = [w for w in log if w != "main1" or log.index(w) == 0]
    assert ordered[0] == "main1" and log[-1] == "main2"
    assert [w for w in dict.fromkeys(log)] == [
        "main1",
        "bar1",
        "foo1",
        "foo2",
        "foo3",
        "bar2",
        "main2",
    ]


# origin: langgraph tests/test_pregel.py::test_state_graph_w_config_inherited_state_keys /
# issue 12 item 8 (subgraph keys the parent lacks)
def test_subgraph_private_keys_stay_in_subgraph(saver: CheckpointSaver) -> None:
    sub = StateGraph({"log": operator.add, "scratch": ReplaceStrategy()})
    sub.add_node("work", lambda s: {"log": ["sub"], "scratch": "private"})
    child = sub.add_edge(START, "work").add_edge("work", END).compile()
    parent = StateGraph({"log": operator.add}).add_node("child", child)
    app = parent.add_edge(START, "child").add_edge("child", END).compile(saver)
    config = thread()
    result = app.invoke({"log": []}, config)
    assert "scratch" not in result
    assert "scratch" not in app.get_state(config).values


# origin: langgraph tests/test_pregel.py (typed parent schema: subgraph output filtered)
def test_typed_parent_refuses_nothing_from_typed_subgraph_with_fewer_keys(
    saver: CheckpointSaver,
) -> None:
    class Parent(TypedDict):
        log: Annotated[list[str], operator.add]
        other: str

    class Child(TypedDict):
        log: Annotated[list[str], operator.add]

    child = _line(Child, ("work", lambda s: {"log": ["child"]}))
    app = _line(Parent, ("child", child), saver=saver)
    config = thread()
    assert app.invoke({"log": [], "other": "kept"}, config) == {"log": ["child"], "other": "kept"}
