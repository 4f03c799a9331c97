"""Replay, fork and history, ported from LangGraph's libs/langgraph/tests/test_time_travel.py.

Replay = ``invoke(None, config_with_checkpoint_id)``; fork = ``update_state`` on an older
checkpoint, then ``invoke(None, fork_config)``. Every test runs on every saver.

Deliberate differences (docs/coming-from.md, "Differences from LangGraph"): the history has
no empty pre-input checkpoint (the input checkpoint already names the first node), and a
replay writes no extra "fork" checkpoint: the first checkpoint of the new branch is the
replayed step's own, whose parent is the checkpoint replayed from (unless the replay pauses
before finishing a step: then, as in LangGraph, a "fork" copy makes it the head).
"""

from __future__ import annotations

from typing import Any

from _support import Calls, ListState, chain, summary, thread

from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, Command, StateGraph, interrupt


def _abc(saver: CheckpointSaver, calls: Calls) -> Any:
    return chain(saver, calls, [("node_a", None), ("node_b", None)])


def _ask(saver: CheckpointSaver, calls: Calls) -> Any:
    return chain(
        saver, calls, [("node_a", None), ("ask_human", "What is your input?"), ("node_b", None)]
    )


def _before(app: Any, config: dict[str, Any], node: str) -> Any:
    """The oldest checkpoint whose next step is ``node`` (LangGraph's ``[...][-1]``)."""
    return [s for s in app.get_state_history(config) if s.next == (node,)][-1]


# origin: langgraph tests/test_time_travel.py::test_replay_reruns_nodes_after_checkpoint
def test_replay_reruns_nodes_after_checkpoint(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = _abc(saver, calls)
    config = thread()
    assert app.invoke({"value": []}, config) == {"value": ["node_a", "node_b"]}
    before_b = _before(app, config, "node_b")
    calls.clear()
    assert app.invoke(None, before_b.config) == {"value": ["node_a", "node_b"]}
    assert calls == ["node_b"]


# origin: langgraph tests/test_time_travel.py::test_replay_from_final_checkpoint_is_noop
def test_replay_from_final_checkpoint_is_noop(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = chain(saver, calls, [("node_a", None)])
    config = thread()
    app.invoke({"value": []}, config)
    state = app.get_state(config)
    assert state.next == ()
    calls.clear()
    assert app.invoke(None, state.config) == {"value": ["node_a"]}
    assert calls == []


# origin: langgraph tests/test_time_travel.py::test_fork_reruns_with_modified_state
def test_fork_reruns_with_modified_state(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = _abc(saver, calls)
    config = thread()
    app.invoke({"value": []}, config)
    before_b = _before(app, config, "node_b")
    calls.clear()
    fork = app.update_state(before_b.config, {"value": ["x"]})
    assert app.invoke(None, fork) == {"value": ["node_a", "x", "node_b"]}
    assert calls == ["node_b"]


# origin: langgraph tests/test_time_travel.py::test_multiple_forks_from_same_checkpoint
def test_multiple_forks_from_same_checkpoint(saver: CheckpointSaver) -> None:
    app = _abc(saver, Calls())
    config = thread()
    app.invoke({"value": []}, config)
    before_b = _before(app, config, "node_b")
    one = app.invoke(None, app.update_state(before_b.config, {"value": ["fork1"]}))
    two = app.invoke(None, app.update_state(before_b.config, {"value": ["fork2"]}))
    assert one["value"] == ["node_a", "fork1", "node_b"]
    assert two["value"] == ["node_a", "fork2", "node_b"]


# origin: langgraph tests/test_time_travel.py::test_replay_from_before_interrupt_refires
def test_replay_from_before_interrupt_refires(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = _ask(saver, calls)
    config = thread()
    app.invoke({"value": []}, config)
    assert app.get_state(config).interrupts[0].value == "What is your input?"
    done = app.invoke(Command(resume="hello"), config)
    assert done == {"value": ["node_a", "ask_human:hello", "node_b"]}
    assert calls == ["node_a", "ask_human", "ask_human", "node_b"]
    replayed = app.invoke(None, _before(app, config, "ask_human").config)
    assert replayed["value"] == ["node_a"]
    assert calls.count("ask_human") == 3
    assert calls.count("node_a") == 1
    assert calls.count("node_b") == 1


# origin: langgraph tests/test_time_travel.py::test_replay_from_before_interrupt_refires
# (the "__interrupt__" part of the result)
def test_replay_from_before_interrupt_returns_interrupt(saver: CheckpointSaver) -> None:
    app = _ask(saver, Calls())
    config = thread()
    app.invoke({"value": []}, config)
    app.invoke(Command(resume="hello"), config)
    replayed = app.invoke(None, _before(app, config, "ask_human").config)
    assert replayed["__interrupt__"][0].value == "What is your input?"


# origin: langgraph tests/test_time_travel.py::test_replay_from_before_interrupt_then_resume
def test_replay_from_before_interrupt_then_resume(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = _ask(saver, calls)
    config = thread()
    app.invoke({"value": []}, config)
    app.invoke(Command(resume="old_answer"), config)
    original = summary(app.get_state_history(config))
    # graphagent: no empty pre-input checkpoint before the input one (a deliberate difference)
    assert original == [
        ("loop", (), {"value": ["node_a", "ask_human:old_answer", "node_b"]}),
        ("loop", ("node_b",), {"value": ["node_a", "ask_human:old_answer"]}),
        ("loop", ("ask_human",), {"value": ["node_a"]}),
        ("input", ("node_a",), {"value": []}),
    ]
    calls.clear()
    app.invoke(None, _before(app, config, "ask_human").config)
    assert calls == ["ask_human"]
    # the replay's interrupt is the thread's head now: resuming the thread continues it
    assert app.get_state(config).interrupts[0].value == "What is your input?"
    final = app.invoke(Command(resume="new_answer"), config)
    assert final["value"] == ["node_a", "ask_human:new_answer", "node_b"]
    history = summary(app.get_state_history(config))
    # the paused replay's "fork" copy of the replayed checkpoint (as in LangGraph) made it
    # the head; the new branch grows from there
    assert history[:3] == [
        ("loop", (), {"value": ["node_a", "ask_human:new_answer", "node_b"]}),
        ("loop", ("node_b",), {"value": ["node_a", "ask_human:new_answer"]}),
        ("fork", ("ask_human",), {"value": ["node_a"]}),
    ]
    assert history[3:] == original  # the old branch is kept as it was


# origin: langgraph tests/test_time_travel.py::test_replay_interrupt_stable_across_replays
def test_replay_interrupt_stable_across_replays(saver: CheckpointSaver) -> None:
    app = _ask(saver, Calls())
    config = thread()
    app.invoke({"value": []}, config)
    app.invoke(Command(resume="cached_answer"), config)
    before_ask = _before(app, config, "ask_human")
    results = [app.invoke(None, before_ask.config) for _ in range(3)]
    assert all(r["value"] == ["node_a"] for r in results)


# origin: langgraph tests/test_time_travel.py::test_fork_from_before_interrupt_refires
def test_fork_from_before_interrupt_refires(saver: CheckpointSaver) -> None:
    app = _ask(saver, Calls())
    config = thread()
    app.invoke({"value": []}, config)
    app.invoke(Command(resume="hello"), config)
    fork = app.update_state(_before(app, config, "ask_human").config, {"value": ["forked"]})
    app.invoke(None, fork)
    assert app.get_state(config).interrupts[0].value == "What is your input?"
    final = app.invoke(Command(resume="world"), fork)
    assert final == {"value": ["node_a", "forked", "ask_human:world", "node_b"]}


# origin: langgraph tests/test_time_travel.py::test_fork_from_interrupt_checkpoint_refires
def test_fork_from_interrupt_checkpoint_refires(saver: CheckpointSaver) -> None:
    app = _ask(saver, Calls())
    config = thread()
    app.invoke({"value": []}, config)
    paused = app.get_state(config)
    assert paused.interrupts
    app.invoke(Command(resume="hello"), config)
    fork = app.update_state(paused.config, {"value": ["forked"]})
    app.invoke(None, fork)
    assert app.get_state(config).interrupts
    final = app.invoke(Command(resume="different"), fork)
    assert "ask_human:different" in final["value"]


# origin: langgraph tests/test_time_travel.py::test_sequential_interrupts_fork_from_middle
def test_sequential_interrupts_fork_from_middle(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = chain(
        saver,
        calls,
        [("node_a", None), ("i1", "First question?"), ("i2", "Second question?"), ("node_b", None)],
    )
    config = thread()
    app.invoke({"value": []}, config)
    assert app.get_state(config).interrupts[0].value == "First question?"
    app.invoke(Command(resume="ans1"), config)
    assert app.get_state(config).interrupts[0].value == "Second question?"
    assert app.invoke(Command(resume="ans2"), config) == {
        "value": ["node_a", "i1:ans1", "i2:ans2", "node_b"]
    }
    before_i1 = _before(app, config, "i1")
    fork = app.update_state(_before(app, config, "i2").config, {"value": ["mid_fork"]})
    app.invoke(None, fork)
    assert app.get_state(config).interrupts[0].value == "Second question?"
    final = app.invoke(Command(resume="new_b"), fork)
    assert "i2:new_b" in final["value"] and "i1:ans1" in final["value"]
    calls.clear()
    app.invoke(None, before_i1.config)
    assert app.get_state(config).interrupts[0].value == "First question?"
    assert calls == ["i1"]


# origin: langgraph tests/test_time_travel.py::test_multiple_interrupts_in_one_node
def test_multiple_interrupts_in_one_node(saver: CheckpointSaver) -> None:
    def ask(state: ListState) -> dict[str, Any]:
        one = interrupt("First question?")
        two = interrupt("Second question?")
        return {"value": [f"a1:{one}", f"a2:{two}"]}

    g = StateGraph(ListState).add_node("ask", ask).add_node("after", lambda s: {"value": ["done"]})
    app = g.add_edge(START, "ask").add_edge("ask", "after").add_edge("after", END).compile(saver)
    config = thread()
    app.invoke({"value": []}, config)
    assert app.get_state(config).interrupts[0].value == "First question?"
    app.invoke(Command(resume="ans1"), app.get_state(config).config)
    assert app.get_state(config).interrupts[0].value == "Second question?"
    result = app.invoke(Command(resume="ans2"), app.get_state(config).config)
    assert result == {"value": ["a1:ans1", "a2:ans2", "done"]}


# origin: langgraph tests/test_time_travel.py::test_multiple_interrupts_in_one_node (replay)
def test_replay_before_node_with_two_interrupts_refires_first(saver: CheckpointSaver) -> None:
    def ask(state: ListState) -> dict[str, Any]:
        return {"value": [f"{interrupt('First question?')}-{interrupt('Second question?')}"]}

    app = StateGraph(ListState).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)
    app = app.compile(saver)
    config = thread()
    app.invoke({"value": []}, config)
    app.invoke(Command(resume="1"), config)
    app.invoke(Command(resume="2"), config)
    assert app.get_state(config).values == {"value": ["1-2"]}
    app.invoke(None, _before(app, config, "ask").config)
    assert app.get_state(config).interrupts[0].value == "First question?"


def _with_subgraph(saver: CheckpointSaver, calls: Calls, ask: str | None = None) -> Any:
    sub = chain(None, calls, [("step_a", ask), ("step_b", None)])
    g = StateGraph(ListState)
    g.add_node("parent_node", calls.node("parent_node"))
    g.add_node("subgraph_node", sub)
    g.add_node("post_process", calls.node("post_process"))
    g.add_edge(START, "parent_node").add_edge("parent_node", "subgraph_node")
    g.add_edge("subgraph_node", "post_process").add_edge("post_process", END)
    return g.compile(saver)


# origin: langgraph tests/test_time_travel.py::test_subgraph_replay_from_before
def test_subgraph_replay_from_before(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = _with_subgraph(saver, calls)
    config = thread()
    first = app.invoke({"value": []}, config)
    assert {"step_a", "step_b", "post_process"} <= set(first["value"])
    calls.clear()
    assert app.invoke(None, _before(app, config, "subgraph_node").config) == first
    assert calls == ["step_a", "step_b", "post_process"]


# origin: langgraph tests/test_time_travel.py::test_subgraph_fork_from_before
def test_subgraph_fork_from_before(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = _with_subgraph(saver, calls)
    config = thread()
    app.invoke({"value": []}, config)
    fork = app.update_state(_before(app, config, "subgraph_node").config, {"value": ["forked"]})
    calls.clear()
    result = app.invoke(None, fork)
    assert result["value"][:2] == ["parent_node", "forked"]
    assert {"step_a", "step_b", "post_process"} <= set(result["value"])
    assert calls == ["step_a", "step_b", "post_process"]


# origin: langgraph tests/test_time_travel.py::test_subgraph_interrupt_replay_from_parent
def test_subgraph_interrupt_replay_from_parent(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = _with_subgraph(saver, calls, ask="Provide input:")
    config = thread()
    app.invoke({"value": []}, config)
    assert app.get_state(config).interrupts[0].value == "Provide input:"
    done = app.invoke(Command(resume="first"), config)
    assert {"step_a:first", "step_b", "post_process"} <= set(done["value"])
    calls.clear()
    app.invoke(None, _before(app, config, "subgraph_node").config)
    assert calls == ["step_a"]
    assert app.get_state(config).interrupts[0].value == "Provide input:"
    final = app.invoke(Command(resume="second"), config)
    assert {"step_a:second", "step_b", "post_process"} <= set(final["value"])
    assert "step_a:first" not in final["value"]


# origin: langgraph tests/test_time_travel.py::test_update_state_with_none_values
def test_update_state_with_none_values(saver: CheckpointSaver) -> None:
    app = _ask(saver, Calls())
    config = thread()
    app.invoke({"value": []}, config)
    app.invoke(Command(resume="hello"), config)
    fork = app.update_state(_before(app, config, "ask_human").config, None)
    assert app.get_state(fork).values == {"value": ["node_a"]}
    assert app.get_state(fork).metadata["source"] == "update"
    app.invoke(None, fork)
    assert app.get_state(config).interrupts[0].value == "What is your input?"


# origin: langgraph tests/test_time_travel.py::test_copy_fork_creates_sibling_checkpoint
# graphagent writes no "fork" source: a fork is an ordinary "update" checkpoint whose parent
# is the older checkpoint (a deliberate difference).
def test_fork_is_an_update_checkpoint_on_the_old_parent(saver: CheckpointSaver) -> None:
    app = _abc(saver, Calls())
    config = thread()
    app.invoke({"value": []}, config)
    before_b = _before(app, config, "node_b")
    fork = app.update_state(before_b.config, {"value": ["x"]})
    forked = app.get_state(fork)
    assert forked.metadata["source"] == "update"
    assert forked.parent_id == before_b.checkpoint_id
    assert app.get_state(config).checkpoint_id == forked.checkpoint_id  # the head moved
    assert {s.metadata["source"] for s in app.get_state_history(config)} <= {
        "input",
        "loop",
        "update",
    }


# origin: langgraph tests/test_time_travel.py::test_replay_creates_branch_preserving_old_checkpoints
def test_replay_creates_branch_preserving_old_checkpoints(saver: CheckpointSaver) -> None:
    app = chain(saver, Calls(), [("node_a", None), ("node_b", None), ("node_c", None)])
    config = thread()
    app.invoke({"value": []}, config)
    old = app.get_state_history(config)
    assert len(old) == 4  # input + one per node: no empty pre-input checkpoint
    before_b = _before(app, config, "node_b")
    app.invoke(None, before_b.config)
    new = app.get_state_history(config)
    assert len(new) == len(old) + 2
    assert [s.checkpoint_id for s in new[2:]] == [s.checkpoint_id for s in old]
    # the new branch hangs off the replayed checkpoint, with no "fork" checkpoint between
    assert new[1].parent_id == before_b.checkpoint_id
    assert new[1].metadata["source"] == "loop"
    assert new[0].values == old[0].values


# origin: langgraph tests/test_time_travel.py::test_fork_creates_branch_preserving_old_checkpoints
def test_fork_creates_branch_preserving_old_checkpoints(saver: CheckpointSaver) -> None:
    app = chain(saver, Calls(), [("node_a", None), ("node_b", None), ("node_c", None)])
    config = thread()
    app.invoke({"value": []}, config)
    old = app.get_state_history(config)
    before_b = _before(app, config, "node_b")
    fork = app.update_state(before_b.config, {"value": ["x"]})
    app.invoke(None, fork)
    new = app.get_state_history(config)
    assert len(new) == len(old) + 3  # the update checkpoint, then node_b's and node_c's
    assert [s.checkpoint_id for s in new[3:]] == [s.checkpoint_id for s in old]
    assert new[0].values == {"value": ["node_a", "x", "node_b", "node_c"]}
    assert [s.metadata["source"] for s in new[:3]] == ["loop", "loop", "update"]


# origin: langgraph tests/test_time_travel.py::test_stateless_subgraph_starts_fresh_on_parent_replay
def test_stateless_subgraph_starts_fresh_on_parent_replay(saver: CheckpointSaver) -> None:
    seen: list[int] = []

    def count(state: dict[str, Any]) -> dict[str, Any]:
        seen.append(len(state.get("inner", []) or []))
        return {"inner": ["x"]}

    sub = StateGraph({"inner": lambda a, b: (a or []) + b}).add_node("count", count)
    sub_app = sub.add_edge(START, "count").add_edge("count", END).compile()

    def call(state: dict[str, Any]) -> dict[str, Any]:
        return {"runs": state.get("runs", 0) + len(sub_app.invoke({})["inner"])}

    g = StateGraph().add_node("before", lambda s: None).add_node("call", call)
    app = g.add_edge(START, "before").add_edge("before", "call").add_edge("call", END)
    app = app.compile(saver)
    config = thread()
    app.invoke({"runs": 0}, config)
    app.invoke({"runs": 10}, config)
    app.invoke(None, _before(app, config, "call").config)
    assert seen == [0, 0, 0]


# origin: langgraph tests/test_time_travel.py::
# test_subgraph_interrupt_replay_from_interrupt_checkpoint
def test_replay_from_the_interrupt_checkpoint_refires(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = _ask(saver, calls)
    config = thread()
    app.invoke({"value": []}, config)
    paused = app.get_state(config)
    app.invoke(Command(resume="first"), config)
    calls.clear()
    app.invoke(None, paused.config)
    assert calls == ["ask_human"]
    assert app.get_state(config).interrupts[0].value == "What is your input?"


# origin: langgraph tests/test_time_travel.py::
# test_parallel_subgraph_nodes_load_correct_state_on_replay
def test_parallel_subgraph_nodes_rerun_on_replay(saver: CheckpointSaver) -> None:
    calls = Calls()
    left = chain(None, calls, [("left_inner", None)])
    right = chain(None, calls, [("right_inner", None)])
    g = StateGraph(ListState).add_node("prep", calls.node("prep"))
    g.add_node("left", left).add_node("right", right)
    g.add_edge(START, "prep").add_edge("prep", "left").add_edge("prep", "right")
    app = g.add_edge("left", END).add_edge("right", END).compile(saver)
    config = thread()
    app.invoke({"value": []}, config)
    calls.clear()
    app.invoke(None, _fan(app, config))
    assert sorted(calls) == ["left_inner", "right_inner"]


def _fan(app: Any, config: dict[str, Any]) -> Any:
    return next(s for s in app.get_state_history(config) if s.next == ("left", "right")).config


# origin: langgraph tests/test_time_travel.py (async replay)
async def test_replay_async(saver: CheckpointSaver) -> None:
    calls = Calls()
    app = _abc(saver, calls)
    config = thread()
    await app.ainvoke({"value": []}, config)
    history = await app.aget_state_history(config)
    before_b = next(s for s in history if s.next == ("node_b",))
    calls.clear()
    assert await app.ainvoke(None, before_b.config) == {"value": ["node_a", "node_b"]}
    assert calls == ["node_b"]
