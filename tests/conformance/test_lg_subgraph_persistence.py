"""A graph invoked from inside another graph's node, ported from LangGraph's
libs/langgraph/tests/test_subgraph_persistence.py, on every saver.

LangGraph's "stateless" subgraph (compiled without a checkpointer) inherits the running
thread and saver just enough to pause and resume (issue 12 item 4). Its "stateful"
``compile(checkpointer=True)`` has no graphagent counterpart and is refused at compile;
``checkpointer=False`` is the same as no saver.
"""

from __future__ import annotations

import uuid
from typing import Any, TypedDict

import pytest

from checkpoint.base import CheckpointSaver
from graphagent.errors import GraphAgentError
from graphagent.graph import END, START, AppendStrategy, Command, StateGraph, interrupt
from graphagent.messages import AssistantMessage, UserMessage


class Parent(TypedDict):
    result: str


def _inner(ask: bool, **compile_kw: Any) -> Any:
    def process(state: Any) -> dict[str, Any]:
        if ask:
            interrupt("continue?")
        return {"messages": [AssistantMessage(f"Processing: {state['messages'][-1].text}")]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("process", process)
    g.add_edge(START, "process")
    if ask:
        g.add_node("respond", lambda s: {"messages": [AssistantMessage("Done")]})
        g.add_edge("process", "respond").add_edge("respond", END)
    else:
        g.add_edge("process", END)
    return g.compile(**compile_kw)


def _parent(saver: CheckpointSaver, inner: Any, seen: list[list[str]]) -> Any:
    topics = ["apples", "bananas"]

    def call_inner(state: Any) -> dict[str, Any]:
        topic = topics[len(seen) % 2]
        resp = inner.invoke({"messages": [UserMessage(f"tell me about {topic}")]})
        seen.append([m.text for m in resp["messages"]])
        return {"result": resp["messages"][-1].text}

    g = StateGraph(Parent).add_node("call_inner", call_inner).add_edge(START, "call_inner")
    return g.add_edge("call_inner", END).compile(saver)


def _config() -> dict[str, Any]:
    return {"configurable": {"thread_id": uuid.uuid4().hex}}


# origin: langgraph tests/test_subgraph_persistence.py::test_stateless_interrupt_resume
def test_stateless_interrupt_resume(saver: CheckpointSaver) -> None:
    seen: list[list[str]] = []
    parent = _parent(saver, _inner(ask=True), seen)
    config = _config()
    parent.invoke({"result": ""}, config)
    assert [i.value for i in parent.get_state(config).interrupts] == ["continue?"]
    assert parent.invoke(Command(resume=True), config) == {"result": "Done"}


# origin: langgraph tests/test_subgraph_persistence.py::test_stateless_state_resets
def test_stateless_state_resets(saver: CheckpointSaver) -> None:
    seen: list[list[str]] = []
    parent = _parent(saver, _inner(ask=False), seen)
    config = _config()
    assert parent.invoke({"result": ""}, config) == {"result": "Processing: tell me about apples"}
    assert parent.invoke({"result": ""}, config) == {"result": "Processing: tell me about bananas"}
    assert seen == [
        ["tell me about apples", "Processing: tell me about apples"],
        ["tell me about bananas", "Processing: tell me about bananas"],
    ]


# origin: langgraph tests/test_subgraph_persistence.py::test_stateless_state_resets_with_interrupt
def test_stateless_state_resets_with_interrupt(saver: CheckpointSaver) -> None:
    seen: list[list[str]] = []
    parent = _parent(saver, _inner(ask=True), seen)
    config = _config()
    for _ in range(2):
        parent.invoke({"result": ""}, config)
        assert parent.get_state(config).interrupts[0].value == "continue?"
        assert parent.invoke(Command(resume=True), config) == {"result": "Done"}
    assert seen == [
        ["tell me about apples", "Processing: tell me about apples", "Done"],
        ["tell me about bananas", "Processing: tell me about bananas", "Done"],
    ]


# origin: langgraph tests/test_subgraph_persistence.py::test_checkpointer_false_no_persistence
def test_checkpointer_false_no_persistence(saver: CheckpointSaver) -> None:
    seen: list[list[str]] = []
    parent = _parent(saver, _inner(ask=False, checkpointer=False), seen)
    config = _config()
    parent.invoke({"result": ""}, config)
    assert parent.invoke({"result": ""}, config) == {"result": "Processing: tell me about bananas"}
    assert seen[1] == ["tell me about bananas", "Processing: tell me about bananas"]


# origin: langgraph tests/test_subgraph_persistence.py::test_stateful_state_accumulates
# graphagent has no stateful checkpointer=True subgraphs: compile() refuses it clearly,
# naming the way that works (a saver and a thread of the subgraph's own, tested below).
# checkpointer=False is the same as no saver: nothing is checkpointed, on any thread.
def test_checkpointer_true_is_refused_clearly() -> None:
    g = StateGraph().add_node("n", lambda s: None).add_edge(START, "n").add_edge("n", END)
    with pytest.raises(GraphAgentError, match=r"checkpointer=True.*saver of its own"):
        g.compile(checkpointer=True)
    with pytest.raises(GraphAgentError, match=r"takes a CheckpointSaver .*got str"):
        g.compile(saver="memory")  # type: ignore[arg-type]
    never = StateGraph({"n": lambda a, b: a + b}).add_node("n", lambda s: {"n": 1})
    app = never.add_edge(START, "n").add_edge("n", END).compile(checkpointer=False)
    assert app.saver is None
    assert app.invoke({"n": 0}, {"thread_id": "t"}) == {"n": 1}
    assert app.invoke({"n": 0}, {"thread_id": "t"}) == {"n": 1}  # nothing kept
    with pytest.raises(GraphAgentError, match="needs a saver"):
        app.get_state({"thread_id": "t"})


# origin: langgraph tests/test_subgraph_persistence.py::
# test_child_with_own_thread_id_keeps_namespace
def test_child_with_own_thread_id_keeps_its_thread(saver: CheckpointSaver) -> None:
    child = StateGraph().add_node("n", lambda s: {"count": (s.get("count") or 0) + 1})
    child = child.add_edge(START, "n").add_edge("n", END).compile(saver)
    child_config = {"configurable": {"thread_id": uuid.uuid4().hex}}

    def parent_node(state: Any) -> dict[str, Any]:
        child.invoke({}, config=child_config)
        return {"result": "ok"}

    parent = StateGraph(Parent).add_node("p", parent_node).add_edge(START, "p")
    parent = parent.add_edge("p", END).compile(saver)
    parent_config = _config()
    parent.invoke({"result": ""}, parent_config)
    assert child.get_state(child_config).values["count"] == 1
    parent.invoke({"result": ""}, parent_config)
    assert child.get_state(child_config).values["count"] == 2
    assert parent.get_state(parent_config).values == {"result": "ok"}
