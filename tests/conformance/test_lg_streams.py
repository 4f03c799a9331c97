"""Stream modes: ``subgraphs=True``, ``"debug"``, ``"messages"`` from any node, ``"custom"``
from any node and tool.

Ported from LangGraph's libs/langgraph/tests/test_pregel.py (test_subgraph_checkpoint_true,
test_stream_subgraphs_during_execution, test_in_one_fan_out_state_graph_defer_node's debug
stream, test_get_stream_writer, test_stream_messages_dedupe_inputs) and
test_pregel_async.py, on every saver, sync and async. Differences (docs/coming-from.md): a
parent's own updates are streamed when its step completes, after its subgraphs' events
(LangGraph streams each task's update as the task finishes); a ``"messages"`` event's
metadata is ``{"node", "path"}`` (an agent's: ``{"agent", "node"}``).
"""

from __future__ import annotations

import asyncio
import operator
import threading
from typing import Annotated, Any, TypedDict

import pytest
from _support import thread

from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, Command, StateGraph, get_stream_writer, interrupt
from graphagent.messages import AssistantMessage, UserMessage
from graphagent.models import FakeChatModel


class Inner(TypedDict):
    my_key: Annotated[str, operator.add]
    my_other_key: str


class Outer(TypedDict):
    my_key: str


def _inner_loop(saver: CheckpointSaver) -> Any:
    inner = StateGraph(Inner)
    inner.add_node("inner_1", lambda s: {"my_key": " got here", "my_other_key": s["my_key"]})
    inner.add_node("inner_2", lambda s: {"my_key": " and there"})
    inner.add_edge("inner_1", "inner_2").set_entry_point("inner_1").set_finish_point("inner_2")
    g = StateGraph(Outer).add_node("inner", inner.compile()).add_edge(START, "inner")
    g.add_conditional_edges("inner", lambda s: "inner" if s["my_key"].count("there") < 2 else END)
    return g.compile(saver)


def _names(events: list[Any]) -> list[Any]:
    """Namespaces without their task ids."""
    return [(tuple(p.split(":")[0] for p in ns), *rest) for ns, *rest in events]


# a subgraph without a saver of its own starts from its parent's state each time (LangGraph's
# default); test_subgraph_checkpoint_true's inner graph keeps its state across calls, which
# graphagent refuses (docs/coming-from.md), so the second call reads the parent's value
_EXPECTED = [
    (("inner",), {"inner_1": {"my_key": " got here", "my_other_key": ""}}),
    (("inner",), {"inner_2": {"my_key": " and there"}}),
    ((), {"inner": {"my_key": " got here and there"}}),
    (("inner",), {"inner_1": {"my_key": " got here", "my_other_key": " got here and there"}}),
    (("inner",), {"inner_2": {"my_key": " and there"}}),
    ((), {"inner": {"my_key": " got here and there got here and there"}}),
]


# origin: langgraph tests/test_pregel.py::test_subgraph_checkpoint_true (the stream)
def test_stream_subgraphs(saver: CheckpointSaver) -> None:
    app = _inner_loop(saver)
    events = list(app.stream({"my_key": ""}, thread(), subgraphs=True))
    assert _names(events) == _EXPECTED
    first, second = events[0][0][0], events[3][0][0]
    assert first.startswith("inner:") and second.startswith("inner:") and first != second


# origin: langgraph tests/test_pregel_async.py::test_subgraph_checkpoint_true
async def test_stream_subgraphs_async(saver: CheckpointSaver) -> None:
    app = _inner_loop(saver)
    events = [e async for e in app.astream({"my_key": ""}, thread(), subgraphs=True)]
    assert _names(events) == _EXPECTED


# origin: langgraph tests/test_pregel.py::test_stream_subgraphs_during_execution (modes list)
def test_stream_subgraphs_with_several_modes(saver: CheckpointSaver) -> None:
    app = _inner_loop(saver)
    events = _names(list(app.stream({"my_key": ""}, thread(), subgraphs=True, mode=["values"])))
    assert events[0] == ((), "values", {"my_key": ""})
    assert events[1] == (("inner",), "values", {"my_key": ""})
    assert events[2] == (("inner",), "values", {"my_key": " got here", "my_other_key": ""})
    assert events[-1] == ((), "values", {"my_key": " got here and there got here and there"})


# origin: langgraph tests/test_pregel.py::test_subgraph_checkpoint_true_interrupt (the
# pause of a subgraph, streamed)
def test_stream_subgraphs_pause_and_resume(saver: CheckpointSaver) -> None:
    class S(TypedDict):
        bar: str

    sub = StateGraph(S).add_node("ask", lambda s: {"bar": s["bar"] + interrupt("baz?")})
    sub = sub.add_edge(START, "ask").add_edge("ask", END).compile()
    app = StateGraph(S).add_node("node", sub).add_edge(START, "node").add_edge("node", END)
    app = app.compile(saver)
    config = thread()
    events = list(app.stream({"bar": "hi "}, config, subgraphs=True))
    assert [ns for ns, _ in events] == [()]
    assert [i.value for i in events[0][1]["__interrupt__"]] == ["baz?"]
    resumed = _names(list(app.stream(Command(resume="x"), config, subgraphs=True)))
    assert resumed == [(("node",), {"ask": {"bar": "hi x"}}), ((), {"node": {"bar": "hi x"}})]


def _fan_out(saver: CheckpointSaver) -> Any:
    g = StateGraph({"docs": operator.add})
    g.add_node("one", lambda s: {"docs": ["doc1"]}).add_node("two", lambda s: {"docs": ["doc2"]})
    g.add_node("qa", lambda s: {"answer": ",".join(s["docs"])})
    g.add_edge(START, "one").add_edge(START, "two").add_edge(["one", "two"], "qa")
    return g.add_edge("qa", END).compile(saver)


# origin: langgraph tests/test_pregel.py::test_in_one_fan_out_state_graph_defer_node (debug)
def test_debug_stream(saver: CheckpointSaver) -> None:
    app = _fan_out(saver)
    config = thread()
    events = list(app.stream({"docs": []}, config, mode="debug"))
    kinds = [(e["type"], e["step"], e["payload"].get("name")) for e in events]
    assert kinds == [
        ("checkpoint", 0, None),  # the input checkpoint
        ("task", 1, "one"),
        ("task", 1, "two"),
        ("task_result", 1, "one"),
        ("task_result", 1, "two"),
        ("checkpoint", 1, None),
        ("task", 2, "qa"),
        ("task_result", 2, "qa"),
        ("checkpoint", 2, None),
    ]
    assert all(isinstance(e["timestamp"], str) for e in events)
    task, result = events[1]["payload"], events[3]["payload"]
    assert task["id"] == result["id"] and task["input"] == {"docs": []}
    assert result == {
        "id": task["id"],
        "name": "one",
        "path": ("one",),
        "error": None,
        "result": {"docs": ["doc1"]},
        "interrupts": [],
    }
    # checkpoints chain by parent id, and the next step's task ids are the ones it runs
    cps = [e["payload"] for e in events if e["type"] == "checkpoint"]
    assert [c["parent_id"] for c in cps[1:]] == [c["checkpoint_id"] for c in cps[:-1]]
    assert cps[1]["next"] == ("qa",) and cps[1]["tasks"][0]["id"] == events[6]["payload"]["id"]
    assert cps[-1]["values"] == {"docs": ["doc1", "doc2"], "answer": "doc1,doc2"}
    assert cps[-1]["checkpoint_id"] == app.get_state(config).checkpoint_id
    assert cps[1]["metadata"]["source"] == "loop"


# origin: langgraph tests/test_pregel_async.py (debug stream of a paused step)
async def test_debug_stream_of_a_pause_async(saver: CheckpointSaver) -> None:
    g = StateGraph({"log": operator.add})
    g.add_node("done", lambda s: {"log": ["done"]}).add_node("ask", lambda s: interrupt("ok?"))
    g.add_edge(START, "done").add_edge(START, "ask")
    app = g.add_edge("done", END).add_edge("ask", END).compile(saver)
    events = [e async for e in app.astream({"log": []}, thread(), mode="debug")]
    results = {e["payload"]["name"]: e["payload"] for e in events if e["type"] == "task_result"}
    assert results["done"]["result"] == {"log": ["done"]}
    assert [i.value for i in results["ask"]["interrupts"]] == ["ok?"]


# origin: langgraph tests/test_pregel.py::test_get_stream_writer
def test_custom_from_any_node_and_tool(saver: CheckpointSaver) -> None:
    from graphagent.tools import tool

    @tool
    def lookup(city: str) -> str:
        """Look a city up."""
        get_stream_writer()({"tool": city})
        return "sunny"

    def node(state: Any) -> dict[str, Any]:
        get_stream_writer()({"node": "start"})
        return {"weather": lookup.call('{"city": "Paris"}')}

    app = StateGraph().add_node("node", node).add_edge(START, "node").add_edge("node", END)
    app = app.compile(saver)
    assert list(app.stream({"weather": ""}, thread(), mode="custom")) == [
        {"node": "start"},
        {"tool": "Paris"},
    ]
    # outside a "custom" stream the writer drops what it is given
    assert app.invoke({"weather": ""}, thread()) == {"weather": "sunny"}


# origin: langgraph tests/test_pregel.py::test_get_stream_writer (inside a subgraph, streamed
# with subgraphs=True: the event carries the subgraph's namespace)
def test_custom_from_a_subgraph_node_carries_its_namespace(saver: CheckpointSaver) -> None:
    """get_stream_writer() and config.writer in a subgraph's node write under the
    subgraph's namespace; the parent's own node writes under the root's."""

    def inner(state: Any, config: Any) -> dict[str, Any]:
        get_stream_writer()({"by": "get_stream_writer"})
        config.writer({"by": "config.writer"})
        return {"n": 1}

    sub = StateGraph().add_node("inner", inner).add_edge(START, "inner").add_edge("inner", END)
    g = StateGraph().add_node("child", sub.compile()).add_node("top", _write_top)
    app = g.add_edge(START, "child").add_edge("child", "top").add_edge("top", END).compile(saver)
    events = list(app.stream({"n": 0}, thread(), subgraphs=True, mode="custom"))
    assert _names(events) == [
        (("child",), {"by": "get_stream_writer"}),
        (("child",), {"by": "config.writer"}),
        ((), {"by": "top"}),
    ]
    assert events[0][0] == events[1][0]  # the same task id too
    # without subgraphs=True every custom event comes, without namespaces
    assert list(app.stream({"n": 0}, thread(), mode="custom")) == [
        {"by": "get_stream_writer"},
        {"by": "config.writer"},
        {"by": "top"},
    ]


def _write_top(state: Any) -> dict[str, Any]:
    get_stream_writer()({"by": "top"})
    return {}


def _fast_and_child(seen_fast: Any) -> Any:
    """A step of two tasks: ``fast`` returns at once; ``child`` runs a subgraph whose node
    waits (up to 5 s) until the caller has seen ``fast``'s update."""

    def inner(state: Any) -> dict[str, Any]:
        seen_fast.wait(5)
        return {"log": ["inner"]}

    sub = StateGraph({"log": operator.add}).add_node("inner", inner)
    child = sub.add_edge(START, "inner").add_edge("inner", END).compile()
    g = StateGraph({"log": operator.add}).add_node("fast", lambda s: {"log": ["fast"]})
    g.add_node("child", child).add_edge(START, "fast").add_edge(START, "child")
    return g.add_edge("fast", END).add_edge("child", END)


# origin: langgraph tests/test_pregel.py::test_stream_subgraphs_during_execution (a task's
# update is streamed when the task finishes, not when its whole step does)
@pytest.mark.parametrize("how", ["sync", "async"])
def test_a_tasks_update_streams_when_it_finishes(saver: CheckpointSaver, how: str) -> None:
    """With subgraphs=True, a finished task's update comes while its sibling's subgraph
    still runs; each update comes once."""
    seen_fast = threading.Event()
    app = _fast_and_child(seen_fast).compile(saver)
    got: list[Any] = []

    def take(event: Any) -> None:
        got.append(event)
        if event == ((), {"fast": {"log": ["fast"]}}):
            seen_fast.set()

    if how == "sync":
        for event in app.stream({"log": []}, thread(), subgraphs=True):
            take(event)
    else:

        async def consume() -> None:
            async for event in app.astream({"log": []}, thread(), subgraphs=True):
                take(event)

        asyncio.run(consume())
    assert _names(got) == [
        ((), {"fast": {"log": ["fast"]}}),
        (("child",), {"inner": {"log": ["inner"]}}),
        ((), {"child": {"log": ["inner"]}}),
    ]


class Chat(TypedDict):
    messages: Annotated[list[Any], operator.add]


# origin: langgraph tests/test_pregel.py (a chat model called in a plain node streams tokens)
def test_messages_from_a_model_called_in_any_node(saver: CheckpointSaver) -> None:
    model = FakeChatModel(["hello there", "hello there"], chunk_size=4)

    def call_model(state: Any) -> dict[str, Any]:
        return {"messages": [model.generate(state["messages"])]}

    app = StateGraph(Chat).add_node("call_model", call_model)
    app = app.add_edge(START, "call_model").add_edge("call_model", END).compile(saver)
    events = list(app.stream({"messages": [UserMessage("hi")]}, thread(), mode="messages"))
    assert "".join(chunk.content for chunk, _ in events) == "hello there"
    # chunks only: the message the node wrote (the same id) is not sent again
    assert {type(chunk).__name__ for chunk, _ in events} == {"AssistantChunk"}
    assert len({chunk.id for chunk, _ in events}) == 1
    assert all(meta == {"node": "call_model", "path": ("call_model",)} for _, meta in events)
    # without a messages stream the model answers in one piece
    assert app.invoke({"messages": [UserMessage("hi")]}, thread())["messages"][-1].text == (
        "hello there"
    )


# origin: langgraph tests/test_pregel_async.py::test_stream_messages_dedupe_inputs
async def test_messages_a_node_writes_async(saver: CheckpointSaver) -> None:
    reply = AssistantMessage("written, not generated")

    def node(state: Any) -> dict[str, Any]:
        return {"messages": [reply]}

    app = StateGraph(Chat).add_node("node", node).add_edge(START, "node").add_edge("node", END)
    app = app.compile(saver)
    config = thread()
    events = [
        e async for e in app.astream({"messages": [UserMessage("hi")]}, config, mode="messages")
    ]
    assert events == [(reply, {"node": "node", "path": ("node",)})]
    # input messages are not streamed; a message written again (same id) is not either
    again = [e async for e in app.astream({"messages": []}, config, mode="messages")]
    assert again == [(reply, {"node": "node", "path": ("node",)})]


# origin: langgraph tests/test_pregel.py (messages from a model in a subgraph's node)
def test_messages_from_a_subgraph_node(saver: CheckpointSaver) -> None:
    model = FakeChatModel(["deep answer"], chunk_size=100)
    inner = StateGraph(Chat).add_node("think", lambda s: {"messages": [model.generate([])]})
    inner = inner.add_edge(START, "think").add_edge("think", END).compile()
    app = StateGraph(Chat).add_node("inner", inner).add_edge(START, "inner")
    app = app.add_edge("inner", END).compile(saver)
    events = list(app.stream({"messages": []}, thread(), mode="messages"))
    assert "".join(c.content for c, _ in events) == "deep answer"
    assert {meta["path"] for _, meta in events} == {("inner", "think")}
