"""What a pause looks like in the stream and the output, and ``update_state`` at a breakpoint.

Ported from LangGraph's libs/langgraph/tests/test_pregel.py
(test_in_one_fan_out_state_graph_waiting_edge_via_branch, test_interrupt_multiple,
test_parallel_interrupts, test_state_graph_packets / "edit the answer, then end") and
test_pregel_async.py, on every saver, sync and async. Differences (docs/coming-from.md):
graphagent refuses input keys a typed schema lacks, and an update written at a breakpoint
is passed by ``invoke(None)`` as LangGraph's is.
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, TypedDict

import pytest
from _support import thread

from checkpoint.base import CheckpointSaver
from graphagent.errors import InvalidUpdateError
from graphagent.graph import END, START, Command, StateGraph, interrupt


class Query(TypedDict, total=False):
    query: str
    answer: str
    docs: Annotated[list[str], lambda x, y: sorted(operator.add(x, y))]


def _fan_out(saver: CheckpointSaver, **compile_kw: Any) -> Any:
    def retriever_two(state: Any) -> dict[str, Any]:
        time.sleep(0.01)
        return {"docs": ["doc3", "doc4"]}

    g = StateGraph(Query)
    g.add_node("rewrite_query", lambda s: {"query": f"query: {s['query']}"})
    g.add_node("analyzer_one", lambda s: {"query": f"analyzed: {s['query']}"})
    g.add_node("retriever_one", lambda s: {"docs": ["doc1", "doc2"]})
    g.add_node("retriever_two", retriever_two)
    g.add_node("qa", lambda s: {"answer": ",".join(s["docs"])})
    g.set_entry_point("rewrite_query")
    g.add_edge("rewrite_query", "analyzer_one").add_edge("analyzer_one", "retriever_one")
    g.add_edge("rewrite_query", "retriever_two")
    g.add_edge(["retriever_one", "retriever_two"], "qa").set_finish_point("qa")
    return g.compile(saver, **compile_kw)


_RUN = [
    {"rewrite_query": {"query": "query: what is weather in sf"}},
    {"analyzer_one": {"query": "analyzed: query: what is weather in sf"}},
    {"retriever_two": {"docs": ["doc3", "doc4"]}},
    {"retriever_one": {"docs": ["doc1", "doc2"]}},
]


# origin: langgraph tests/test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge
# (interrupt_after)
def test_static_breakpoint_after_shows_in_the_stream(saver: CheckpointSaver) -> None:
    app = _fan_out(saver, interrupt_after=["retriever_one"])
    config = thread()
    assert list(app.stream({"query": "what is weather in sf"}, config)) == [
        *_RUN,
        {"__interrupt__": ()},
    ]
    assert list(app.stream(None, config)) == [{"qa": {"answer": "doc1,doc2,doc3,doc4"}}]


# origin: langgraph tests/test_pregel.py::test_in_one_fan_out_state_graph_waiting_edge
# (interrupt_before, then update_state without as_node)
def test_update_at_a_breakpoint_is_written_as_the_last_node(saver: CheckpointSaver) -> None:
    app = _fan_out(saver, interrupt_before=["qa"])
    config = thread()
    assert list(app.stream({"query": "what is weather in sf"}, config)) == [
        *_RUN,
        {"__interrupt__": ()},
    ]
    app.update_state(config, {"docs": ["doc5"]})
    state = app.get_state(config)
    assert state.values == {
        "query": "analyzed: query: what is weather in sf",
        "docs": ["doc1", "doc2", "doc3", "doc4", "doc5"],
    }
    assert state.next == ("qa",)
    assert [t.name for t in state.tasks] == ["qa"]
    assert (state.metadata["source"], state.metadata["nodes"]) == ("update", ["retriever_one"])
    assert list(app.stream(None, config)) == [{"qa": {"answer": "doc1,doc2,doc3,doc4,doc5"}}]


# origin: langgraph tests/test_pregel_async.py::test_in_one_fan_out_state_graph_waiting_edge
async def test_update_at_a_breakpoint_async(saver: CheckpointSaver) -> None:
    app = _fan_out(saver, interrupt_before=["qa"])
    config = thread()
    events = [e async for e in app.astream({"query": "what is weather in sf"}, config)]
    assert events[-1] == {"__interrupt__": ()}
    await app.aupdate_state(config, {"docs": ["doc5"]})
    assert [e async for e in app.astream(None, config)] == [
        {"qa": {"answer": "doc1,doc2,doc3,doc4,doc5"}}
    ]


def _agent_like(saver: CheckpointSaver) -> Any:
    class S(TypedDict):
        messages: Annotated[list[str], operator.add]

    g = StateGraph(S)
    g.add_node("agent", lambda s: {"messages": ["call: search"]})
    g.add_node("tools", lambda s: {"messages": ["search result"]})
    g.add_edge(START, "agent")
    g.add_conditional_edges(
        "agent", lambda s: "tools" if s["messages"][-1].startswith("call:") else END
    )
    g.add_edge("tools", END)
    return g.compile(saver, interrupt_before=["tools"])


# origin: langgraph tests/test_pregel.py::test_state_graph_packets (edit the answer, then end)
def test_edit_the_answer_then_end(saver: CheckpointSaver) -> None:
    app = _agent_like(saver)
    config = thread()
    app.invoke({"messages": ["hi"]}, config)
    assert app.get_state(config).next == ("tools",)
    app.update_state(config, {"messages": ["a final answer"]})
    state = app.get_state(config)
    assert state.next == () and state.metadata["nodes"] == ["agent"]
    assert app.invoke(None, config) == {"messages": ["hi", "call: search", "a final answer"]}


# origin: langgraph tests/test_pregel.py::test_state_graph_packets (edit the tool call)
def test_edit_at_a_breakpoint_keeps_the_route_and_passes_it(saver: CheckpointSaver) -> None:
    app = _agent_like(saver)
    config = thread()
    app.invoke({"messages": ["hi"]}, config)
    app.update_state(config, {"messages": ["call: search better"]})
    assert app.get_state(config).next == ("tools",)
    assert list(app.stream(None, config)) == [{"tools": {"messages": ["search result"]}}]


# graphagent: two nodes wrote the breakpoint's checkpoint: which one an edit stands for is
# ambiguous (LangGraph: "Ambiguous update, specify as_node")
def test_update_at_a_breakpoint_after_a_parallel_step_needs_as_node(
    saver: CheckpointSaver,
) -> None:
    g = StateGraph({"log": operator.add})
    g.add_node("a", lambda s: {"log": ["a"]}).add_node("b", lambda s: {"log": ["b"]})
    g.add_node("c", lambda s: {"log": ["c"]})
    g.add_edge(START, "a").add_edge(START, "b").add_edge(["a", "b"], "c").add_edge("c", END)
    app = g.compile(saver, interrupt_before=["c"])
    config = thread()
    app.invoke({"log": []}, config)
    with pytest.raises(InvalidUpdateError, match="as_node"):
        app.update_state(config, {"log": ["x"]})
    app.update_state(config, {"log": ["x"]}, as_node="b")
    assert app.invoke(None, config) == {"log": ["a", "b", "x", "c"]}


def _ask_and_finish(saver: CheckpointSaver) -> Any:
    g = StateGraph({"log": operator.add})
    g.add_node("done", lambda s: {"log": ["done"]})
    g.add_node("ask", lambda s: {"log": [f"ask:{interrupt('ok?')}"]})
    g.add_edge(START, "done").add_edge(START, "ask")
    return g.add_edge("done", END).add_edge("ask", END).compile(saver)


# origin: langgraph tests/test_pregel.py::test_parallel_interrupts (the paused output)
def test_paused_output_includes_finished_writes(saver: CheckpointSaver) -> None:
    app = _ask_and_finish(saver)
    config = thread()
    out = app.invoke({"log": ["in"]}, config)
    assert out["log"] == ["in", "done"]
    assert [i.value for i in out["__interrupt__"]] == ["ok?"]
    assert app.get_state(config).values == {"log": ["in"]}  # pending until the step commits
    # the committed step merges in node-name order (a deliberate difference)
    assert app.invoke(Command(resume="yes"), config) == {"log": ["in", "ask:yes", "done"]}


# origin: langgraph tests/test_pregel.py::test_interrupt_multiple (values stream at a pause)
def test_paused_values_events(saver: CheckpointSaver) -> None:
    app = _ask_and_finish(saver)
    config = thread()
    events = list(app.stream({"log": ["in"]}, config, mode="values"))
    asked = app.get_state(config).interrupts
    assert events == [
        {"log": ["in"]},
        {"log": ["in"], "__interrupt__": asked},  # the pause carries the state
        {"log": ["in", "done"]},  # then the finished node's write
    ]
    assert list(app.stream(Command(resume="yes"), config, mode="values")) == [
        {"log": ["in"]},
        {"log": ["in", "ask:yes", "done"]},
    ]


# origin: langgraph tests/test_pregel_async.py::test_interrupt_multiple
async def test_interrupt_multiple_values_async(saver: CheckpointSaver) -> None:
    class S(TypedDict):
        my_key: Annotated[str, operator.add]

    def node(state: Any) -> dict[str, Any]:
        return {"my_key": interrupt({"value": 1}) + " " + interrupt({"value": 2})}

    app = StateGraph(S).add_node("node", node).add_edge(START, "node").add_edge("node", END)
    app = app.compile(saver)
    config = thread()
    [first] = [e async for e in app.astream({"my_key": "DE"}, config)]
    [asked] = first["__interrupt__"]
    assert asked.value == {"value": 1}
    resume = Command(resume={asked.id: "answer 1"}, update={"my_key": " foofoo "})
    [second] = [e async for e in app.astream(resume, config)]
    [asked2] = second["__interrupt__"]
    assert asked2.value == {"value": 2}
    events = [e async for e in app.astream(Command(resume="answer 2"), config, mode="values")]
    assert events == [{"my_key": "DE foofoo "}, {"my_key": "DE foofoo answer 1 answer 2"}]


# origin: langgraph tests/test_pregel.py (no values event for an input that writes nothing)
def test_no_values_event_for_an_input_that_writes_nothing(saver: CheckpointSaver) -> None:
    g = StateGraph({"log": operator.add})
    g.add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a").add_edge("a", END)
    app = g.compile(saver)
    assert list(app.stream({}, thread(), mode="values")) == [{"log": ["a"]}]
    assert list(app.stream({"log": []}, thread(), mode="values")) == [{"log": []}, {"log": ["a"]}]
