"""Durability modes, ported from LangGraph's libs/langgraph/tests/test_pregel.py and
test_pregel_async.py (tests parametrized on ``durability``: sync, async, exit).

``"exit"`` stores a run once, when it ends, pauses or fails; ``"sync"`` stores each step as
it commits; ``"async"`` stores each step while the next one runs. Every test runs on every
saver, through ``invoke`` and ``ainvoke``.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from _support import thread

from checkpoint.base import CheckpointSaver
from graphagent.errors import UserError
from graphagent.graph import END, START, Command, Send, StateGraph, interrupt

Run = Callable[..., Any]


class State(TypedDict):
    log: Annotated[list[str], operator.add]


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Run:
    """``invoke`` or ``ainvoke`` with a durability, by parameter."""
    if request.param == "sync":
        return lambda app, value, config, mode: app.invoke(value, config, durability=mode)
    return lambda app, value, config, mode: asyncio.run(app.ainvoke(value, config, durability=mode))


def _chain(saver: CheckpointSaver, ask: bool = False, fail: list[bool] | None = None) -> Any:
    def node(name: str) -> Callable[[Any], dict[str, Any]]:
        def fn(state: Any) -> dict[str, Any]:
            if name == "b" and ask:
                return {"log": [f"b:{interrupt('go?')}"]}
            if name == "c" and fail:
                raise RuntimeError("c failed")
            return {"log": [name]}

        return fn

    g = StateGraph(State)
    for name in ("a", "b", "c"):
        g.add_node(name, node(name))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    return g.compile(saver=saver)


# origin: langgraph tests/test_pregel_async.py::test_send_dedupe_on_resume
# (len(history) == (6 if durability != "exit" else 2)) and test_subgraph_durability_inherited
@pytest.mark.parametrize("mode", ["sync", "async", "exit"])
def test_history_by_durability(saver: CheckpointSaver, run: Run, mode: str) -> None:
    """sync and async store every step; exit stores the input and the end."""
    app = _chain(saver)
    cfg = thread()
    assert run(app, {"log": []}, cfg, mode) == {"log": ["a", "b", "c"]}
    history = app.get_state_history(cfg)
    sources = [s.metadata["source"] for s in history]
    assert sources == (["loop", "input"] if mode == "exit" else ["loop"] * 3 + ["input"])
    assert history[0].values == {"log": ["a", "b", "c"]} and history[0].next == ()
    if mode == "exit":
        assert history[0].parent_id == history[-1].checkpoint_id
        assert history[0].metadata["nodes"] == ["a", "b", "c"]


def test_exit_durability_pause_stores_the_steps_before_it(saver: CheckpointSaver, run: Run) -> None:
    """A run under exit that pauses stores what it did so far; the resume continues."""
    app = _chain(saver, ask=True)
    cfg = thread()
    out = run(app, {"log": []}, cfg, "exit")
    assert out["log"] == ["a"] and out["__interrupt__"][0].value == "go?"
    state = app.get_state(cfg)
    assert state.values == {"log": ["a"]} and state.next == ("b",)
    assert len(app.get_state_history(cfg)) == 2
    assert run(app, Command(resume="yes"), cfg, "exit") == {"log": ["a", "b:yes", "c"]}
    assert len(app.get_state_history(cfg)) == 3


def test_exit_durability_failure_keeps_the_finished_steps(saver: CheckpointSaver, run: Run) -> None:
    """A run under exit that fails stores its finished steps: continuing reruns the rest."""
    fail = [True]
    app = _chain(saver, fail=fail)
    cfg = thread()
    with pytest.raises(RuntimeError, match="c failed"):
        run(app, {"log": []}, cfg, "exit")
    assert app.get_state(cfg).values == {"log": ["a", "b"]}
    fail.clear()
    assert run(app, None, cfg, "exit") == {"log": ["a", "b", "c"]}


def test_exit_durability_fan_out(saver: CheckpointSaver, run: Run) -> None:
    """A Send fan-out under exit: one checkpoint for the run, results in order."""

    class S(TypedDict):
        xs: list[int]
        ys: Annotated[list[int], operator.add]

    g = StateGraph(S).add_node("sq", lambda s: {"ys": [s["x"] ** 2]})
    g.add_conditional_edges(START, lambda s: [Send("sq", {"x": x}) for x in s["xs"]])
    app = g.add_edge("sq", END).compile(saver=saver, durability="exit")
    cfg = thread()
    assert run(app, {"xs": [1, 2, 3]}, cfg, None)["ys"] == [1, 4, 9]
    assert len(app.get_state_history(cfg)) == 2


def test_unknown_durability_is_refused() -> None:
    """A durability that is not a mode names the modes."""
    g = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a")
    app = g.add_edge("a", END).compile()
    with pytest.raises(UserError, match="'sync', 'async', 'exit'"):
        app.invoke({"log": []}, durability="eventually")
    with pytest.raises(UserError, match="durability"):
        g.compile(durability="never")


def test_async_durability_waits_for_its_last_write(saver: CheckpointSaver, run: Run) -> None:
    """Under async a run returns once its last step is stored; a resume finds every step."""
    app = _chain(saver, ask=True)
    cfg = thread()
    out = run(app, {"log": []}, cfg, "async")
    assert out["log"] == ["a"] and app.get_state(cfg).next == ("b",)
    assert run(app, Command(resume="ok"), cfg, "async") == {"log": ["a", "b:ok", "c"]}
    assert [s.metadata["source"] for s in app.get_state_history(cfg)] == ["loop"] * 3 + ["input"]


def test_async_durability_write_failure_ends_the_run(saver: CheckpointSaver) -> None:
    """A step's write that fails under async ends the run at its next write, with the
    saver's error; the thread keeps what was stored before."""
    from graphagent.errors import CheckpointConflictError

    app = _chain(saver)
    cfg = thread()
    app.invoke({"log": []}, cfg)
    calls: list[str] = []

    def node_b(state: Any) -> dict[str, Any]:
        calls.append("b")
        # another writer moves the thread's head while this run's step-a write is out
        app.update_state(cfg, {"log": ["other"]})
        return {"log": ["b"]}

    g = StateGraph(State).add_node("a", lambda s: {"log": ["a"]}).add_node("b", node_b)
    g.add_node("c", lambda s: {"log": ["c"]})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    racer = g.compile(saver=saver)
    with pytest.raises(CheckpointConflictError):
        racer.invoke({"log": []}, cfg, durability="async")
    # whichever write lost the race, the run's later steps were never stored
    assert app.get_state(cfg).values["log"].count("c") == 1
