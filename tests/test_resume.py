"""Pausing and resuming a thread: interrupts, breakpoints, updates while paused (issue 12).

Every test runs on every saver.
"""

from __future__ import annotations

import operator
import uuid
from typing import Annotated, Any, TypedDict

from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, Command, Interrupt, StateGraph, interrupt


class Log(TypedDict):
    log: Annotated[list[str], operator.add]


def _thread() -> dict[str, Any]:
    return {"thread_id": uuid.uuid4().hex}


def _chain(saver: CheckpointSaver, *names: str, ask: str = "", **kw: Any) -> Any:
    """START -> names... -> END; the node named ``ask`` asks a question."""

    def node(name: str) -> Any:
        def run(state: Log) -> dict[str, Any]:
            if name == ask:
                return {"log": [f"{name}:{interrupt(f'{name}?')}"]}
            return {"log": [name]}

        return run

    g = StateGraph(Log)
    previous = START
    for name in names:
        g.add_node(name, node(name)).add_edge(previous, name)
        previous = name
    return g.add_edge(previous, END).compile(saver, **kw)


# -- item 9: interrupts where LangGraph users look ------------------------------------------


def test_invoke_returns_pending_interrupts(saver: CheckpointSaver) -> None:
    """A paused invoke() returns the state plus '__interrupt__'; a finished one does not."""
    app = _chain(saver, "a", "b", ask="b")
    config = _thread()
    out = app.invoke({"log": []}, config)
    assert out["log"] == ["a"]
    [pending] = out["__interrupt__"]
    assert isinstance(pending, Interrupt) and pending.value == "b?"
    assert app.get_state(config).interrupts == (pending,)
    done = app.invoke(Command(resume="yes"), config)
    assert done == {"log": ["a", "b:yes"]}


async def test_ainvoke_and_astream_show_interrupts(saver: CheckpointSaver) -> None:
    """The async twins show the interrupt the same way."""
    app = _chain(saver, "a", ask="a")
    config = _thread()
    out = await app.ainvoke({"log": []}, config)
    assert out["__interrupt__"][0].value == "a?"
    config = _thread()
    events = [e async for e in app.astream({"log": []}, config, mode="updates")]
    assert events[-1]["__interrupt__"][0].value == "a?"


def test_stream_yields_an_interrupt_event(saver: CheckpointSaver) -> None:
    """stream() ends with an {'__interrupt__': (...)} event in updates and values modes."""
    app = _chain(saver, "a", "b", ask="b")
    config = _thread()
    updates = list(app.stream({"log": []}, config, mode="updates"))
    assert updates[0] == {"a": {"log": ["a"]}}
    assert updates[-1]["__interrupt__"][0].value == "b?"
    config = _thread()
    values = list(app.stream({"log": []}, config, mode="values"))
    assert values[-2] == {"log": ["a"]}
    assert values[-1]["__interrupt__"][0].value == "b?"
    pairs = list(app.stream(Command(resume="ok"), config, mode=["updates", "values"]))
    assert all("__interrupt__" not in payload for _, payload in pairs)
    assert pairs[-1] == ("values", {"log": ["a", "b:ok"]})


# -- item 5: Command(resume=..., update=...) ------------------------------------------------


def test_resume_with_update_applies_it_before_the_node_reruns(saver: CheckpointSaver) -> None:
    """The update is merged first, so the resumed node sees it; it survives a second pause."""
    seen: list[list[str]] = []

    def ask(state: Log) -> dict[str, Any]:
        seen.append(list(state["log"]))
        first = interrupt("one?")
        second = interrupt("two?")
        return {"log": [f"{first}{second}"]}

    app = StateGraph(Log).add_node("ask", ask).add_edge(START, "ask").add_edge("ask", END)
    app = app.compile(saver)
    config = _thread()
    app.invoke({"log": ["in"]}, config)
    app.invoke(Command(resume="1", update={"log": ["fix"]}), config)
    assert app.get_state(config).values == {"log": ["in", "fix"]}
    assert app.get_state(config).interrupts[0].value == "two?"
    assert app.invoke(Command(resume="2"), config) == {"log": ["in", "fix", "12"]}
    assert seen == [["in"], ["in", "fix"], ["in", "fix"]]


# -- item 6: breakpoints and update_state ---------------------------------------------------


def test_update_state_at_a_breakpoint_then_continue_runs_the_node(
    saver: CheckpointSaver,
) -> None:
    """After update_state at an interrupt_before breakpoint, invoke(None) runs the node."""
    app = _chain(saver, "a", "b", "c", interrupt_before=["b"])
    config = _thread()
    assert app.invoke({"log": []}, config) == {"log": ["a"]}
    app.update_state(config, {"log": ["edited"]})
    assert app.get_state(config).next == ("b",)
    assert app.invoke(None, config) == {"log": ["a", "edited", "b", "c"]}


def test_command_resume_continues_past_a_static_breakpoint(saver: CheckpointSaver) -> None:
    """Command(resume=...) at an interrupt_before breakpoint runs the paused node."""
    app = _chain(saver, "a", "b", interrupt_before=["b"])
    config = _thread()
    app.invoke({"log": []}, config)
    assert app.invoke(Command(resume="go"), config) == {"log": ["a", "b"]}


def test_update_state_as_end_clears_next_and_interrupts(saver: CheckpointSaver) -> None:
    """update_state(config, None, as_node=END) ends the thread: no next, no interrupts."""
    app = _chain(saver, "a", "b", ask="b")
    config = _thread()
    app.invoke({"log": []}, config)
    app.update_state(config, None, as_node=END)
    state = app.get_state(config)
    assert (state.next, state.interrupts, state.values) == ((), (), {"log": ["a"]})
    assert app.invoke(None, config) == {"log": ["a"]}
