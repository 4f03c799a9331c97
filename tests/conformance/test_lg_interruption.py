"""interrupt(), Command(resume=...) and static breakpoints, on every saver.

Ported from LangGraph's libs/langgraph/tests/test_interruption.py and the interrupt tests of
libs/langgraph/tests/test_pregel.py. Where a peer test reads ``result["__interrupt__"]``, the
resume behaviour is checked through ``get_state().interrupts`` and the ``__interrupt__`` key
has tests of its own (issue 12 item 9), so each test exercises one thing.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from _support import Calls, chain, thread

from checkpoint.base import CheckpointSaver
from graphagent.errors import GraphAgentError
from graphagent.graph import (
    END,
    START,
    Command,
    Interrupt,
    ReplaceStrategy,
    StateGraph,
    interrupt,
)


class Text(TypedDict):
    my_key: Annotated[str, operator.add]


def _two_questions(state: Text) -> dict[str, Any]:
    one = interrupt({"value": 1})
    two = interrupt({"value": 2})
    return {"my_key": f" {one} {two}"}


def _single(saver: CheckpointSaver, fn: Any, schema: Any = Text, **kw: Any) -> Any:
    g = StateGraph(schema).add_node("node", fn).add_edge(START, "node").add_edge("node", END)
    return g.compile(saver, **kw)


# origin: langgraph tests/test_interruption.py::test_interruption_without_state_updates
# graphagent's history has no empty pre-input checkpoint: 2, 3, 4 where LangGraph has 3, 4, 5.
def test_interruption_without_state_updates(saver: CheckpointSaver) -> None:
    g = StateGraph(TypedDict("S", {"input": str}))  # type: ignore[operator]
    for name in ("step_1", "step_2", "step_3"):
        g.add_node(name, lambda s: None)
    g.add_edge(START, "step_1").add_edge("step_1", "step_2").add_edge("step_2", "step_3")
    app = g.add_edge("step_3", END).compile(saver, interrupt_after="*")
    config = thread()
    app.invoke({"input": "hello world"}, config)
    assert app.get_state(config).next == ("step_2",)
    assert len(app.get_state_history(config)) == 2
    app.invoke(None, config)
    assert app.get_state(config).next == ("step_3",)
    assert len(app.get_state_history(config)) == 3
    app.invoke(None, config)
    assert app.get_state(config).next == ()
    assert len(app.get_state_history(config)) == 4


# origin: langgraph tests/test_interruption.py::test_interruption_without_state_updates_async
async def test_interruption_without_state_updates_async(saver: CheckpointSaver) -> None:
    async def noop(state: Any) -> None:
        return None

    g = StateGraph(TypedDict("S", {"input": str}))  # type: ignore[operator]
    for name in ("step_1", "step_2", "step_3"):
        g.add_node(name, noop)
    g.add_edge(START, "step_1").add_edge("step_1", "step_2").add_edge("step_2", "step_3")
    app = g.add_edge("step_3", END).compile(saver, interrupt_after="*")
    config = thread()
    await app.ainvoke({"input": "hello world"}, config)
    assert (await app.aget_state(config)).next == ("step_2",)
    await app.ainvoke(None, config)
    assert (await app.aget_state(config)).next == ("step_3",)
    await app.ainvoke(None, config)
    assert (await app.aget_state(config)).next == ()
    assert len(await app.aget_state_history(config)) == 4


# origin: langgraph tests/test_pregel.py::test_interrupt_multiple (resume_style="null")
def test_interrupt_multiple_resume_in_order(saver: CheckpointSaver) -> None:
    app = _single(saver, _two_questions)
    config = thread()
    app.invoke({"my_key": "DE"}, config)
    [first] = app.get_state(config).interrupts
    assert first.value == {"value": 1}
    app.invoke(Command(resume="answer 1"), config)
    [second] = app.get_state(config).interrupts
    assert second.value == {"value": 2}
    assert second.id != first.id
    assert app.invoke(Command(resume="answer 2"), config) == {"my_key": "DE answer 1 answer 2"}
    assert app.get_state(config).interrupts == ()


# origin: langgraph tests/test_pregel.py::test_interrupt_multiple (resume_style="map")
def test_interrupt_multiple_resume_by_id(saver: CheckpointSaver) -> None:
    app = _single(saver, _two_questions)
    config = thread()
    app.invoke({"my_key": "DE"}, config)
    first = app.get_state(config).interrupts[0]
    app.invoke(Command(resume={first.id: "answer 1"}), config)
    second = app.get_state(config).interrupts[0]
    assert app.invoke(Command(resume={second.id: "answer 2"}), config) == {
        "my_key": "DE answer 1 answer 2"
    }


# origin: langgraph tests/test_pregel.py::test_interrupt_multiple (Command with update=)
def test_resume_with_update_applies_the_update(saver: CheckpointSaver) -> None:
    app = _single(saver, _two_questions)
    config = thread()
    app.invoke({"my_key": "DE"}, config)
    app.invoke(Command(resume="answer 1", update={"my_key": " foofoo"}), config)
    assert app.get_state(config).values == {"my_key": "DE foofoo"}
    assert app.invoke(Command(resume="answer 2"), config) == {
        "my_key": "DE foofoo answer 1 answer 2"
    }


# origin: langgraph tests/test_pregel.py::test_interrupt_multiple (stream events)
def test_interrupt_is_a_stream_event(saver: CheckpointSaver) -> None:
    app = _single(saver, _two_questions)
    config = thread()
    events = list(app.stream({"my_key": "DE"}, config))
    assert len(events) == 1
    [pending] = events[0]["__interrupt__"]
    assert isinstance(pending, Interrupt) and pending.value == {"value": 1}
    events = list(app.stream(Command(resume="answer 1"), config))
    assert events[0]["__interrupt__"][0].value == {"value": 2}
    values = list(app.stream(Command(resume="answer 2"), config, mode="values"))
    assert values[-1] == {"my_key": "DE answer 1 answer 2"}


# origin: langgraph tests/test_pregel.py::test_interrupt_stream_mode_values
def test_interrupt_stream_mode_values(saver: CheckpointSaver) -> None:
    app = _single(saver, _two_questions)
    config = thread()
    events = list(app.stream({"my_key": "DE"}, config, mode="values"))
    assert events[0] == {"my_key": "DE"}
    assert events[-1]["__interrupt__"][0].value == {"value": 1}


# origin: langgraph tests/test_pregel.py::test_node_before_interrupt_resume_graph_api
def test_invoke_returns_interrupt(saver: CheckpointSaver) -> None:
    app = _single(saver, _two_questions)
    config = thread()
    result = app.invoke({"my_key": "DE"}, config)
    assert result["my_key"] == "DE"
    [pending] = result["__interrupt__"]
    assert pending.value == {"value": 1}
    assert app.get_state(config).interrupts == (pending,)
    # the node asks a second question after the first is answered
    [second] = app.invoke(Command(resume={pending.id: "x"}), config)["__interrupt__"]
    assert second.value == {"value": 2}
    assert "__interrupt__" not in app.invoke(Command(resume="y"), config)


# origin: langgraph tests/test_pregel.py::test_interrupt_loop
def test_interrupt_loop(saver: CheckpointSaver) -> None:
    def ask_age(state: dict[str, Any]) -> dict[str, Any]:
        question = "How old are you?"
        for _ in range(10):
            value = interrupt(question)
            if value.isdigit() and int(value) >= 18:
                return {"age": int(value)}
            question = "invalid response"
        return {}

    app = _single(saver, ask_age, schema=None)
    config = thread()
    app.invoke({"other": ""}, config)
    assert app.get_state(config).interrupts[0].value == "How old are you?"
    app.invoke(Command(resume="13"), config)
    assert app.get_state(config).interrupts[0].value == "invalid response"
    app.invoke(Command(resume="15"), config)
    assert app.get_state(config).interrupts[0].value == "invalid response"
    updates = list(app.stream(Command(resume="19"), config))
    assert updates == [{"node": {"age": 19}}]


# origin: langgraph tests/test_pregel.py::test_multiple_interrupt_state_persistence
def test_multiple_interrupt_state_persistence(saver: CheckpointSaver) -> None:
    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"steps": [interrupt("First interrupt"), interrupt("Second interrupt")]}

    app = _single(saver, node, schema={"steps": lambda a, b: a + b})
    config = thread()
    app.invoke({"steps": []}, config)
    assert app.get_state(config).values == {"steps": []}
    app.invoke(Command(resume="step1"), config)
    assert app.get_state(config).values == {"steps": []}
    assert app.invoke(Command(resume="step2"), config)["steps"] == ["step1", "step2"]
    assert app.get_state(config).values["steps"] == ["step1", "step2"]


# origin: langgraph tests/test_pregel.py::test_node_before_interrupt_resume_graph_api
def test_node_before_interrupt_resume(saver: CheckpointSaver) -> None:
    def setup(state: dict[str, Any]) -> dict[str, Any]:
        return {"topics": [f"topic {i + 1}" for i in range(len(state["topics"]))]}

    def ask(state: dict[str, Any]) -> dict[str, Any]:
        return {"answers": [interrupt(f"Whats the answer for {t}?") for t in state["topics"]]}

    g = StateGraph({"answers": lambda a, b: a + b}).add_node("setup", setup).add_node("ask", ask)
    app = g.add_edge(START, "setup").add_edge("setup", "ask").add_edge("ask", END).compile(saver)
    config = thread()
    app.invoke({"topics": ["a", "b"], "answers": []}, config)
    assert [i.value for i in app.get_state(config).interrupts] == ["Whats the answer for topic 1?"]
    app.invoke(Command(resume="answer1"), config)
    assert [i.value for i in app.get_state(config).interrupts] == ["Whats the answer for topic 2?"]
    assert app.invoke(Command(resume="answer2"), config) == {
        "topics": ["topic 1", "topic 2"],
        "answers": ["answer1", "answer2"],
    }


# origin: langgraph tests/test_pregel.py::test_multiple_nodes_before_interrupt_resume_graph_api
def test_multiple_nodes_before_interrupt_resume(saver: CheckpointSaver) -> None:
    def ask(state: dict[str, Any]) -> dict[str, Any]:
        return {"answer": interrupt(f"Result so far is {state['value']}. What next?")}

    g = StateGraph().add_node("step_a", lambda s: {"value": s["value"] + 1})
    g.add_node("step_b", lambda s: {"value": s["value"] * 2}).add_node("ask", ask)
    g.add_edge(START, "step_a").add_edge("step_a", "step_b").add_edge("step_b", "ask")
    app = g.add_edge("ask", END).compile(saver)
    config = thread()
    app.invoke({"value": 5, "answer": ""}, config)
    assert app.get_state(config).interrupts[0].value == "Result so far is 12. What next?"
    assert app.invoke(Command(resume="continue"), config) == {"value": 12, "answer": "continue"}


# origin: langgraph tests/test_pregel.py::test_node_before_multiple_interrupt_cycles_graph_api
async def test_node_before_multiple_interrupt_cycles_async(saver: CheckpointSaver) -> None:
    async def multi(state: dict[str, Any]) -> dict[str, Any]:
        return {"data": f"{interrupt('First question?')},{interrupt('Second question?')}"}

    g = StateGraph().add_node("prepare", lambda s: {"count": s["count"] + 10})
    g.add_node("multi", multi).add_edge(START, "prepare").add_edge("prepare", "multi")
    app = g.add_edge("multi", END).compile(saver)
    config = thread()
    await app.ainvoke({"count": 0, "data": ""}, config)
    assert (await app.aget_state(config)).interrupts[0].value == "First question?"
    await app.ainvoke(Command(resume="first_answer"), config)
    assert (await app.aget_state(config)).interrupts[0].value == "Second question?"
    result = await app.ainvoke(Command(resume="second_answer"), config)
    assert result == {"count": 10, "data": "first_answer,second_answer"}


def _parallel_humans(saver: CheckpointSaver) -> Any:
    def human(key: str) -> Any:
        def ask(state: dict[str, Any]) -> dict[str, Any]:
            return {key: interrupt({"text_to_revise": state[key]})}

        return ask

    g = StateGraph().add_node("human_node_1", human("text_1"))
    g.add_node("human_node_2", human("text_2"))
    g.add_edge(START, "human_node_1").add_edge(START, "human_node_2")
    return g.add_edge("human_node_1", END).add_edge("human_node_2", END).compile(saver)


# origin: langgraph tests/test_pregel.py::test_null_resume_disallowed_with_multiple_interrupts
def test_single_resume_refused_with_multiple_interrupts(saver: CheckpointSaver) -> None:
    app = _parallel_humans(saver)
    config = thread()
    app.invoke({"text_1": "original text 1", "text_2": "original text 2"}, config)
    pending = app.get_state(config).interrupts
    assert len(pending) == 2
    with pytest.raises(GraphAgentError, match="pending interrupts"):
        app.invoke(Command(resume="singular resume"), config)
    answers = {i.id: f"resume for prompt: {i.value['text_to_revise']}" for i in pending}
    assert app.invoke(Command(resume=answers), config) == {
        "text_1": "resume for prompt: original text 1",
        "text_2": "resume for prompt: original text 2",
    }


# origin: langgraph tests/test_pregel.py::test_parallel_interrupts (one answer at a time)
def test_parallel_interrupts_answered_one_by_one(saver: CheckpointSaver) -> None:
    app = _parallel_humans(saver)
    config = thread()
    app.invoke({"text_1": "a", "text_2": "b"}, config)
    first, second = app.get_state(config).interrupts
    out = app.invoke(Command(resume={first.id: "A"}), config)
    # the answered task finished (its write is in the paused run's output); the other asks again
    assert out["text_1"] == "A"
    assert [i.value for i in out["__interrupt__"]] == [{"text_to_revise": "b"}]
    state = app.get_state(config)
    assert [i.id for i in state.interrupts] == [second.id]
    assert state.values == {"text_1": "a", "text_2": "b"}  # pending until the step commits
    assert state.next == ("human_node_2",)
    assert app.invoke(Command(resume={second.id: "B"}), config) == {"text_1": "A", "text_2": "B"}


# origin: langgraph tests/test_pregel.py::test_parallel_interrupts (answered ids are refused)
def test_answered_interrupt_id_is_refused_later(saver: CheckpointSaver) -> None:
    app = _parallel_humans(saver)
    config = thread()
    app.invoke({"text_1": "a", "text_2": "b"}, config)
    first, _ = app.get_state(config).interrupts
    app.invoke(Command(resume={first.id: "A"}), config)
    with pytest.raises(GraphAgentError, match="not pending"):
        app.invoke(Command(resume={first.id: "again"}), config)


# origin: langgraph tests/test_pregel_async.py::test_parallel_interrupts (async, one at a time)
async def test_parallel_interrupts_answered_one_by_one_async(saver: CheckpointSaver) -> None:
    app = _parallel_humans(saver)
    config = thread()
    await app.ainvoke({"text_1": "a", "text_2": "b"}, config)
    first, second = (await app.aget_state(config)).interrupts
    out = await app.ainvoke(Command(resume={second.id: "B"}), config)
    assert [i.id for i in out["__interrupt__"]] == [first.id]
    assert await app.ainvoke(Command(resume={first.id: "A"}), config) == {
        "text_1": "A",
        "text_2": "B",
    }


# origin: langgraph tests/test_pregel.py::test_pending_writes_resume
def test_successful_sibling_does_not_rerun_on_resume(saver: CheckpointSaver) -> None:
    calls = Calls()

    def ask(state: Any) -> dict[str, Any]:
        calls.append("ask")
        return {"value": [interrupt("ok?")]}

    g = StateGraph({"value": operator.add}).add_node("one", calls.node("one")).add_node("ask", ask)
    g.add_edge(START, "one").add_edge(START, "ask")
    app = g.add_edge("one", END).add_edge("ask", END).compile(saver)
    config = thread()
    app.invoke({"value": []}, config)
    assert calls == ["one", "ask"] or calls == ["ask", "one"]
    assert sorted(app.invoke(Command(resume="yes"), config)["value"]) == ["one", "yes"]
    assert calls.count("one") == 1 and calls.count("ask") == 2


# origin: langgraph tests/test_pregel.py::test_command_with_static_breakpoints
def test_command_resume_passes_static_breakpoint(saver: CheckpointSaver) -> None:
    g = StateGraph({"foo": ReplaceStrategy()})
    g.add_node("node1", lambda s: {"foo": s["foo"] + "|node-1"})
    g.add_node("node2", lambda s: {"foo": s["foo"] + "|node-2"})
    g.add_edge(START, "node1").add_edge("node1", "node2").add_edge("node2", END)
    app = g.compile(saver, interrupt_before=["node1"])
    config = thread()
    app.invoke({"foo": "abc"}, config)
    assert app.get_state(config).next == ("node1",)
    assert app.invoke(Command(resume="node1"), config) == {"foo": "abc|node-1|node-2"}


# origin: langgraph tests/test_pregel.py::test_invoke_checkpoint_two (interrupt_before + None)
def test_interrupt_before_then_continue(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = chain(saver, calls, [("a", None), ("b", None), ("c", None)], interrupt_before=["b"])
    config = thread()
    assert app.invoke({"value": []}, config) == {"value": ["a"]}
    assert app.get_state(config).next == ("b",)
    assert app.invoke(None, config) == {"value": ["a", "b", "c"]}
    assert calls == ["a", "b", "c"]


# origin: langgraph tests/test_pregel.py (interrupt_after on a loop of nodes)
def test_interrupt_after_pauses_after_each_listed_node(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = chain(saver, calls, [("a", None), ("b", None), ("c", None)], interrupt_after=["a", "b"])
    config = thread()
    app.invoke({"value": []}, config)
    assert (calls, app.get_state(config).next) == (["a"], ("b",))
    app.invoke(None, config)
    assert (calls, app.get_state(config).next) == (["a", "b"], ("c",))
    assert app.invoke(None, config) == {"value": ["a", "b", "c"]}


# origin: langgraph tests/test_pregel.py::test_interrupt_subgraph (a node with no edge out)
# graphagent refuses a node with no path to END when the graph is built (LangGraph ends
# the branch silently): a deliberate difference, see docs/coming-from.md.
def test_node_without_path_to_end_is_refused_at_compile() -> None:
    from graphagent.errors import GraphValidationError

    g = StateGraph().add_node("foo", lambda s: None).add_edge(START, "foo")
    with pytest.raises(GraphValidationError, match="no path to END"):
        g.compile()
