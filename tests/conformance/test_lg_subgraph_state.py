"""Looking into subgraphs: ``StateSnapshot.tasks``, ``get_state(config, subgraphs=True)``
and ``update_state`` on a paused subgraph's own state (by its ``checkpoint_ns``).

Ported from LangGraph's libs/langgraph/tests/test_pregel.py
(test_subgraph_checkpoint_true_interrupt, test_nested_graph_state,
test_doubly_nested_graph_state) and test_pregel_async.py, on every saver, sync and async.
Difference (docs/coming-from.md): a subgraph keeps its own state only while it is paused
(it is stored with its parent's paused step), so the snapshot of a subgraph that finished
is not kept.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from _support import thread

from checkpoint.base import CheckpointSaver
from graphagent.config import RunnableConfig
from graphagent.errors import UserError
from graphagent.graph import END, START, Command, StateGraph, StateSnapshot, interrupt


class Sub(TypedDict):
    bar: str
    baz: str


class Parent(TypedDict):
    foo: str


def _invoked_subgraph(saver: CheckpointSaver) -> Any:
    """test_subgraph_checkpoint_true_interrupt's graphs: a subgraph invoked in a node."""
    sub = StateGraph(Sub)
    sub.add_node("subgraph_node_1", lambda s: {"baz": interrupt("Provide baz value")})
    sub.add_node("subgraph_node_2", lambda s: {"bar": s["bar"] + s["baz"]})
    sub.add_edge(START, "subgraph_node_1").add_edge("subgraph_node_1", "subgraph_node_2")
    subgraph = sub.add_edge("subgraph_node_2", END).compile()

    def node_2(state: Any) -> dict[str, Any]:
        return {"foo": subgraph.invoke({"bar": state["foo"]})["bar"]}

    g = StateGraph(Parent)
    g.add_node("node_1", lambda s: {"foo": "hi! " + s["foo"]}).add_node("node_2", node_2)
    g.add_edge(START, "node_1").add_edge("node_1", "node_2").add_edge("node_2", END)
    return g.compile(saver)


# origin: langgraph tests/test_pregel.py::test_subgraph_checkpoint_true_interrupt
def test_subgraph_state_of_a_graph_invoked_in_a_node(saver: CheckpointSaver) -> None:
    app = _invoked_subgraph(saver)
    config = thread()
    out = app.invoke({"foo": "foo"}, config)
    assert out["foo"] == "hi! foo"
    assert [i.value for i in out["__interrupt__"]] == ["Provide baz value"]
    state = app.get_state(config, subgraphs=True)
    [task] = state.tasks
    assert (task.name, task.path, task.interrupts) == ("node_2", ("node_2",), state.interrupts)
    assert isinstance(task.state, StateSnapshot)
    assert task.state.values == {"bar": "hi! foo"}
    assert task.state.next == ("subgraph_node_1",)
    assert task.state.interrupts == state.interrupts
    assert task.state.tasks[0].name == "subgraph_node_1"
    assert app.invoke(Command(resume="baz"), config) == {"foo": "hi! foobaz"}
    assert app.get_state(config, subgraphs=True).tasks == ()


# origin: langgraph tests/test_pregel_async.py::test_subgraph_checkpoint_true_interrupt
async def test_subgraph_state_async(saver: CheckpointSaver) -> None:
    app = _invoked_subgraph(saver)
    config = thread()
    await app.ainvoke({"foo": "foo"}, config)
    state = await app.aget_state(config, subgraphs=True)
    assert state.tasks[0].state.values == {"bar": "hi! foo"}
    sub_config = state.tasks[0].state.config
    assert (await app.aget_state(sub_config)).values == {"bar": "hi! foo"}
    assert await app.ainvoke(Command(resume="baz"), config) == {"foo": "hi! foobaz"}


class Inner(TypedDict):
    my_key: Annotated[str, operator.add]
    my_other_key: str


class Outer(TypedDict):
    my_key: str
    other_parent_key: str


def _nested(saver: CheckpointSaver) -> Any:
    """test_nested_graph_state's graphs: an inner graph added as a node, with a breakpoint."""
    inner = StateGraph(Inner)
    inner.add_node("inner_1", lambda s: {"my_key": "got here", "my_other_key": s["my_key"]})
    inner.add_node("inner_2", lambda s: {"my_key": " and there", "my_other_key": s["my_key"]})
    inner.add_edge("inner_1", "inner_2").set_entry_point("inner_1").set_finish_point("inner_2")
    g = StateGraph(Outer)
    g.add_node("outer_1", lambda s: {"my_key": "hi my value"})
    g.add_node("inner", inner.compile(interrupt_before=["inner_2"]))
    g.add_node("outer_2", lambda s: {"my_key": s["my_key"] + " and back again"})
    g.add_edge(START, "outer_1").add_edge("outer_1", "inner").add_edge("inner", "outer_2")
    return g.add_edge("outer_2", END).compile(saver)


# origin: langgraph tests/test_pregel.py::test_nested_graph_state
def test_nested_graph_state(saver: CheckpointSaver) -> None:
    app = _nested(saver)
    config = thread()
    app.invoke({"my_key": "my value"}, config)
    state = app.get_state(config)
    assert (state.values, state.next) == ({"my_key": "hi my value"}, ("inner",))
    [task] = state.tasks
    assert task.name == "inner"
    # without subgraphs=True: a config naming the subgraph, by namespace "inner:<task id>"
    assert isinstance(task.state, RunnableConfig)
    assert task.state.checkpoint_ns == f"inner:{task.id}"
    child = app.get_state(task.state)
    assert child.values == {"my_key": "hi my valuegot here", "my_other_key": "hi my value"}
    assert child.next == ("inner_2",) and child.at_breakpoint
    assert child.config.checkpoint_ns == task.state.checkpoint_ns
    deep = app.get_state(config, subgraphs=True)
    assert deep.tasks[0].state == child
    # the namespace without its task id names the same subgraph
    assert app.get_state({**config, "checkpoint_ns": "inner"}).values == child.values
    assert app.invoke(None, config) == {"my_key": "hi my valuegot here and there and back again"}


# origin: langgraph tests/test_pregel.py::test_nested_graph_state (update_state on the child)
def test_update_state_of_a_paused_subgraph(saver: CheckpointSaver) -> None:
    app = _nested(saver)
    config = thread()
    app.invoke({"my_key": "my value"}, config)
    sub_config = app.get_state(config).tasks[0].state
    app.update_state(sub_config, {"my_key": " (edited)", "my_other_key": "edited"})
    child = app.get_state(sub_config)
    assert child.values == {"my_key": "hi my valuegot here (edited)", "my_other_key": "edited"}
    assert child.next == ("inner_2",)
    assert app.get_state(config).values == {"my_key": "hi my value"}  # the parent's, as was
    assert app.get_state(config).metadata["source"] == "update"
    out = app.invoke(None, config)
    assert out["my_key"] == "hi my valuegot here (edited) and there and back again"


# origin: langgraph tests/test_pregel.py::test_nested_graph_state (update as a child node)
async def test_update_state_of_a_paused_subgraph_as_node_async(saver: CheckpointSaver) -> None:
    app = _nested(saver)
    config = thread()
    await app.ainvoke({"my_key": "my value"}, config)
    sub_config = (await app.aget_state(config)).tasks[0].state
    # written as inner_2: the subgraph's next step is inner_2's successors (its end)
    await app.aupdate_state(sub_config, {"my_key": " skipped"}, as_node="inner_2")
    assert (await app.aget_state(sub_config)).next == ()
    out = await app.ainvoke(None, config)
    assert out["my_key"] == "hi my valuegot here skipped and back again"


# origin: langgraph tests/test_pregel.py::test_doubly_nested_graph_state
def test_doubly_nested_subgraph_state(saver: CheckpointSaver) -> None:
    class S(TypedDict):
        my_key: str

    def ask(state: Any) -> dict[str, Any]:
        return {"my_key": state["my_key"] + interrupt("more?")}

    grandchild = StateGraph(S).add_node("grandchild_1", ask)
    grandchild = grandchild.add_edge(START, "grandchild_1").add_edge("grandchild_1", END)
    child = StateGraph(S).add_node("child_1", grandchild.compile())
    child = child.add_edge(START, "child_1").add_edge("child_1", END)
    g = StateGraph(S).add_node("parent_1", lambda s: {"my_key": "hi " + s["my_key"]})
    g.add_node("child", child.compile())
    app = g.add_edge(START, "parent_1").add_edge("parent_1", "child").add_edge("child", END)
    app = app.compile(saver)
    config = thread()
    app.invoke({"my_key": "my value"}, config)
    deep = app.get_state(config, subgraphs=True)
    child_state = deep.tasks[0].state
    assert child_state.values == {"my_key": "hi my value"}
    grandchild_state = child_state.tasks[0].state
    assert grandchild_state.values == {"my_key": "hi my value"}
    assert grandchild_state.next == ("grandchild_1",)
    assert [i.value for i in grandchild_state.interrupts] == ["more?"]
    ns = grandchild_state.config.checkpoint_ns
    assert [p.split(":")[0] for p in ns.split("|")] == ["child", "child_1"]
    app.update_state(grandchild_state.config, {"my_key": "edited"})
    assert app.invoke(Command(resume="!"), config) == {"my_key": "edited!"}


# graphagent: bad namespaces are refused with what to pass instead
def test_update_state_on_a_namespace_with_no_paused_subgraph(saver: CheckpointSaver) -> None:
    app = _nested(saver)
    config = thread()
    app.invoke({"my_key": "my value"}, config)
    with pytest.raises(UserError, match="does not name a subgraph"):
        app.update_state({**config, "checkpoint_ns": "outer_1"}, {"my_key": "x"})
    app.invoke(None, config)
    with pytest.raises(UserError, match="no subgraph paused"):
        app.update_state({**config, "checkpoint_ns": "inner"}, {"my_key": "x"})
    assert not app.get_state({**config, "checkpoint_ns": "inner"}).exists


# graphagent's deliberate difference (docs/coming-from.md, "A subgraph's own state is kept
# while it is paused"): a subgraph has no checkpoints of its own, so once it has finished
# neither get_state(subgraphs=True) nor the history shows its state; LangGraph keeps its
# checkpoints under the namespace (its history lists them)
def test_a_finished_subgraphs_state_is_not_kept(saver: CheckpointSaver) -> None:
    app = _nested(saver)
    config = thread()
    app.invoke({"my_key": "my value"}, config)
    paused = app.get_state(config, subgraphs=True)
    assert isinstance(paused.tasks[0].state, StateSnapshot)  # kept while paused
    ns_config = paused.tasks[0].state.config
    app.invoke(None, config)
    done = app.get_state(config, subgraphs=True)
    assert done.next == () and done.tasks == ()
    assert not app.get_state(ns_config).exists
    for snap in app.get_state_history(config):
        assert all(t.state is None for t in snap.tasks)
