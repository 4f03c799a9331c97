"""Interrupt ids are unique per ask, and an answer naming an id that is not pending is
refused by name, on every saver (issue 30 item 5)."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import CheckpointSaver
from graphagent.errors import UserError
from graphagent.graph import END, START, Command, CompiledGraph, StateGraph, interrupt


def _asking_loop(saver: CheckpointSaver, rounds: int = 3) -> CompiledGraph:
    """One node that asks a question each time it runs, looping ``rounds`` times."""

    def ask(state: Any) -> dict[str, Any]:
        answer = interrupt(f"round {len(state.get('answers', []))}?")
        return {"answers": [*state.get("answers", []), answer]}

    g = StateGraph().add_node("ask", ask).add_edge(START, "ask")
    g.add_conditional_edges("ask", lambda s: "ask" if len(s["answers"]) < rounds else END)
    return g.compile(saver=saver)


def test_a_node_asking_again_gets_a_new_id(saver: CheckpointSaver) -> None:
    """The same node asking in a later step (a loop) asks with a new id each time."""
    app = _asking_loop(saver)
    cfg = {"thread_id": "loop"}
    app.invoke({"answers": []}, cfg)
    seen = []
    for round_ in range(3):
        (pending,) = app.get_state(cfg).interrupts
        seen.append(pending.id)
        app.invoke(Command(resume={pending.id: f"yes {round_}"}), cfg)
    assert len(set(seen)) == 3, seen
    assert app.get_state(cfg).values["answers"] == ["yes 0", "yes 1", "yes 2"]


def test_a_replayed_answer_is_refused_by_id(saver: CheckpointSaver) -> None:
    """Sending the same Command(resume={id: ...}) twice answers one question only: the
    second names the id as not pending and changes nothing."""
    app = _asking_loop(saver)
    cfg = {"thread_id": "replay"}
    app.invoke({"answers": []}, cfg)
    (first,) = app.get_state(cfg).interrupts
    answer = Command(resume={first.id: "yes"})
    app.invoke(answer, cfg)
    before = app.get_state(cfg)
    (second,) = before.interrupts
    with pytest.raises(UserError, match=rf"{first.id}.*not pending") as info:
        app.invoke(answer, cfg)
    assert second.id in str(info.value)  # the error names what is pending instead
    after = app.get_state(cfg)
    assert after.checkpoint_id == before.checkpoint_id and after.values == before.values
    assert after.interrupts == before.interrupts


def test_a_stale_id_beside_pending_ones_is_refused(saver: CheckpointSaver) -> None:
    """With two questions pending, an answer that also names an answered id is refused."""

    def asker(name: str) -> Any:
        def node(state: Any) -> dict[str, Any]:
            return {name: interrupt(f"{name}?")}

        return node

    g = StateGraph().add_node("x", asker("x")).add_node("y", asker("y"))
    g.add_edge(START, "x").add_edge(START, "y").add_edge("x", "z").add_edge("y", "z")
    g.add_node("z", asker("z")).add_edge("z", END)
    app = g.compile(saver=saver)
    cfg = {"thread_id": "two"}
    app.invoke({}, cfg)
    both = app.get_state(cfg).interrupts
    app.invoke(Command(resume={i.id: i.node for i in both}), cfg)
    (z,) = app.get_state(cfg).interrupts
    assert z.id not in {i.id for i in both}
    with pytest.raises(UserError, match=f"{both[0].id}.*not pending"):
        app.invoke(Command(resume={z.id: "z", both[0].id: "again"}), cfg)
    assert app.invoke(Command(resume={z.id: "zz"}), cfg)["z"] == "zz"


def test_a_dict_answer_to_one_question_still_works(saver: CheckpointSaver) -> None:
    """An answer that is itself a dict (keys that are not interrupt ids) answers the one
    pending question, as before."""
    g = StateGraph().add_node("a", lambda s: {"got": interrupt("decisions?")})
    app = g.add_edge(START, "a").add_edge("a", END).compile(saver=saver)
    cfg = {"thread_id": "dict"}
    app.invoke({}, cfg)
    decisions = {"call_1": {"type": "approve"}, "toolu_2": {"type": "reject"}}
    assert app.invoke(Command(resume=decisions), cfg)["got"] == decisions
