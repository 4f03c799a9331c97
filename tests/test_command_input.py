"""``Command(goto=..., update=...)`` as run input, as LangGraph takes it: the update lands
in a checkpoint of its own and the goto nodes join what the thread runs next."""

from __future__ import annotations

import operator
import uuid
from typing import Any

import pytest

from checkpoint.base import CheckpointSaver
from graphagent.errors import InvalidRouteError, UserError
from graphagent.graph import END, START, Command, StateGraph, interrupt


def _graph(saver: CheckpointSaver | None, **compile_kw: Any) -> Any:
    def node(name: str) -> Any:
        return lambda s: {"log": [name]}

    g = StateGraph({"log": operator.add, "note": lambda a, b: b})
    g.add_node("a", node("a")).add_node("b", node("b")).add_node("c", node("c"))
    g.add_edge(START, "a").add_conditional_edges("a", lambda s: "b", ["b", "c"])
    g.add_edge("b", END).add_edge("c", END)
    return g.compile(saver=saver, **compile_kw)


def _thread() -> dict[str, Any]:
    return {"thread_id": uuid.uuid4().hex}


def test_goto_and_update_at_a_breakpoint(saver: CheckpointSaver) -> None:
    """At a breakpoint, the update is applied and the goto node runs with the paused one."""
    app = _graph(saver, interrupt_before=["b"])
    config = _thread()
    app.invoke({"log": []}, config)
    assert app.get_state(config).next == ("b",)
    out = app.invoke(Command(update={"note": "redirected"}, goto="c"), config)
    assert out == {"log": ["a", "b", "c"], "note": "redirected"}
    sources = [s.metadata["source"] for s in app.get_state_history(config)]
    assert sources[:2] == ["loop", "update"]


def test_goto_pauses_again_and_keeps_its_node(saver: CheckpointSaver) -> None:
    """A goto step that pauses resumes with the goto node still due."""
    g = StateGraph({"log": operator.add})
    g.add_node("a", lambda s: {"log": ["a"]})
    g.add_node("ask", lambda s: {"log": [f"ask:{interrupt('ok?')}"]})
    g.add_edge(START, "a").add_conditional_edges("a", lambda s: END, [END, "ask"])
    g.add_edge("ask", END)
    app = g.compile(saver=saver)
    config = _thread()
    app.invoke({"log": []}, config)
    app.invoke(Command(goto="ask"), config)
    assert [i.value for i in app.get_state(config).interrupts] == ["ok?"]
    assert app.invoke(Command(resume="yes"), config)["log"] == ["a", "ask:yes"]


def test_goto_on_a_new_thread_and_without_a_saver(saver: CheckpointSaver) -> None:
    """With nothing saved, Command(goto=) starts the run at that node."""
    assert _graph(saver).invoke(Command(goto="c", update={"log": []}), _thread()) == {"log": ["c"]}
    assert _graph(None).invoke(Command(goto=["b", "c"], update={"log": []})) == {"log": ["b", "c"]}


def test_bad_command_input_is_refused_clearly() -> None:
    """An unknown goto node and an empty Command name the problem."""
    with pytest.raises(InvalidRouteError, match="'nowhere', not a node"):
        _graph(None).invoke(Command(goto="nowhere"))
    with pytest.raises(UserError, match="resume=, goto= or update="):
        _graph(None).invoke(Command())
