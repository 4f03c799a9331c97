"""Graphs inside graphs: interrupts, breakpoints and resumes that cross levels (issue 12).

A subgraph node, or a compiled graph invoked inside a node, runs nested in the parent's
run: its pauses pause the parent's thread and a resume continues it where it stood.
Every test runs on every saver.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import uuid
from typing import Annotated, Any, TypedDict

import pytest

from checkpoint.base import CheckpointSaver
from graphagent.errors import UserError
from graphagent.graph import END, START, AppendStrategy, Command, StateGraph, interrupt
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.tools import ToolCallingManager, tool


class Log(TypedDict):
    # AppendStrategy (not operator.add): a subgraph hands up what it appended
    log: Annotated[list[str], AppendStrategy()]


def _thread() -> dict[str, Any]:
    return {"thread_id": uuid.uuid4().hex}


class Calls(list[str]):
    """Records which nodes ran; ``node(name, ask)`` builds one (asking when ``ask``)."""

    def node(self, name: str, ask: str | None = None) -> Any:
        def run(state: Any) -> dict[str, Any]:
            self.append(name)
            if ask is None:
                return {"log": [name]}
            return {"log": [f"{name}:{interrupt(ask)}"]}

        return run


def _fan(calls: Calls, **asks: str) -> Any:
    """START -> (each of asks, in parallel) -> END, as a compiled subgraph without a saver."""
    g = StateGraph(Log)
    for name, ask in asks.items():
        g.add_node(name, calls.node(name, ask)).add_edge(START, name).add_edge(name, END)
    return g.compile()


def _line(calls: Calls, *nodes: tuple[str, Any], saver: Any = None, **kw: Any) -> Any:
    g = StateGraph(Log)
    previous = START
    for name, fn in nodes:
        g.add_node(name, calls.node(name, fn) if fn is None or isinstance(fn, str) else fn)
        g.add_edge(previous, name)
        previous = name
    return g.add_edge(previous, END).compile(saver, **kw)


# -- item 2: interrupt() in a subgraph node ---------------------------------------------------


def test_two_sub_nodes_interrupting_in_one_step_resume_by_path(saver: CheckpointSaver) -> None:
    """Both questions are pending, keyed by task path; each answer reaches its own node."""
    calls = Calls()
    app = _line(calls, ("sub", _fan(calls, a="a?", b="b?")), saver=saver)
    config = _thread()
    out = app.invoke({"log": []}, config)
    pending = app.get_state(config).interrupts
    assert pending == out["__interrupt__"]
    assert [(i.value, i.node, i.path) for i in pending] == [
        ("a?", "a", ("sub", "a")),
        ("b?", "b", ("sub", "b")),
    ]
    a, b = pending
    # the order of the answers does not matter: they are keyed by id, delivered by path
    assert app.invoke(Command(resume={b.id: "B", a.id: "A"}), config) == {"log": ["a:A", "b:B"]}
    assert sorted(calls) == ["a", "a", "b", "b"]


def test_two_sub_nodes_answered_one_at_a_time(saver: CheckpointSaver) -> None:
    """Answering one of two questions by id finishes its node; the other is asked again
    (same id), and the finished node does not run again when that one is answered."""
    calls = Calls()
    app = _line(calls, ("sub", _fan(calls, a="a?", b="b?")), saver=saver)
    config = _thread()
    app.invoke({"log": []}, config)
    a, b = app.get_state(config).interrupts
    out = app.invoke(Command(resume={a.id: "A"}), config)
    assert [i.id for i in out["__interrupt__"]] == [b.id]
    assert app.get_state(config).interrupts == (b,)
    assert app.invoke(Command(resume={b.id: "B"}), config) == {"log": ["a:A", "b:B"]}
    assert sorted(calls) == ["a", "a", "b", "b", "b"]


def test_subgraph_resumes_in_place(saver: CheckpointSaver) -> None:
    """Nodes the subgraph finished before it paused do not run again on resume."""
    calls = Calls()
    child = _line(calls, ("first", None), ("ask", "ok?"), ("last", None))
    app = _line(calls, ("before", None), ("child", child), ("after", None), saver=saver)
    config = _thread()
    app.invoke({"log": []}, config)
    assert calls == ["before", "first", "ask"]
    assert app.get_state(config).values == {"log": ["before"]}
    out = app.invoke(Command(resume="yes"), config)
    assert out == {"log": ["before", "first", "ask:yes", "last", "after"]}
    assert calls == ["before", "first", "ask", "ask", "last", "after"]


def test_doubly_nested_interrupt_asks_twice(saver: CheckpointSaver) -> None:
    """Two levels down, a node asking twice gets each answer once, with the full path."""
    calls = Calls()

    def twice(state: Any) -> dict[str, Any]:
        calls.append("twice")
        return {"log": [f"{interrupt('one?')}{interrupt('two?')}"]}

    inner = _line(calls, ("twice", twice))
    middle = _line(calls, ("m", None), ("inner", inner))
    app = _line(calls, ("outer", middle), saver=saver)
    config = _thread()
    app.invoke({"log": []}, config)
    [first] = app.get_state(config).interrupts
    assert (first.value, first.path) == ("one?", ("outer", "inner", "twice"))
    [second] = app.invoke(Command(resume="1"), config)["__interrupt__"]
    assert (second.value, second.path) == ("two?", ("outer", "inner", "twice"))
    assert app.invoke(Command(resume="2"), config) == {"log": ["m", "12"]}
    assert calls == ["m", "twice", "twice", "twice"]


def test_subgraph_looping_to_the_same_node_asks_again(saver: CheckpointSaver) -> None:
    """An answer belongs to one step: the same sub-node asking in a later step asks anew."""
    calls = Calls()
    g = StateGraph(Log).add_node("ask", calls.node("ask", "more?"))
    g.add_edge(START, "ask")
    g.add_conditional_edges("ask", lambda s: END if len(s["log"]) >= 2 else "ask")
    app = _line(calls, ("loop", g.compile()), saver=saver)
    config = _thread()
    app.invoke({"log": []}, config)
    assert app.invoke(Command(resume="x"), config)["__interrupt__"][0].value == "more?"
    assert app.invoke(Command(resume="y"), config) == {"log": ["ask:x", "ask:y"]}


# -- item 3: breakpoints inside a subgraph ----------------------------------------------------


def test_interrupt_before_inside_a_subgraph_pauses_the_parent(saver: CheckpointSaver) -> None:
    """The parent's thread pauses at the subgraph's breakpoint; invoke(None) goes on inside."""
    calls = Calls()
    child = _line(calls, ("s1", None), ("s2", None), interrupt_before=["s2"])
    app = _line(calls, ("child", child), ("after", None), saver=saver)
    config = _thread()
    assert app.invoke({"log": []}, config) == {"log": []}
    assert app.get_state(config).next == ("child",)
    assert app.invoke(None, config) == {"log": ["s1", "s2", "after"]}
    assert calls == ["s1", "s2", "after"]


def test_interrupt_after_inside_a_subgraph_sees_the_parents_update(
    saver: CheckpointSaver,
) -> None:
    """update_state on the paused parent reaches the subgraph when it continues."""
    seen: list[list[str]] = []
    calls = Calls()

    def look(state: Any) -> dict[str, Any]:
        seen.append(list(state["log"]))
        return {"log": ["look"]}

    child = _line(calls, ("s1", None), ("look", look), interrupt_after=["s1"])
    app = _line(calls, ("child", child), saver=saver)
    config = _thread()
    app.invoke({"log": ["in"]}, config)
    app.update_state(config, {"log": ["edit"]})
    assert app.invoke(None, config) == {"log": ["in", "edit", "s1", "look"]}
    assert seen == [["in", "edit", "s1"]]
    assert calls == ["s1"]


def test_breakpoint_in_a_subgraph_needs_a_saver_on_the_parent() -> None:
    """Without a saver on the parent, a nested breakpoint is refused with the fix named."""
    child = _line(Calls(), ("s1", None), interrupt_before=["s1"])
    app = _line(Calls(), ("child", child))
    with pytest.raises(UserError, match="parent graph needs a saver"):
        app.invoke({"log": []})


# -- item 4: a compiled graph invoked inside a node -------------------------------------------


def test_graph_invoked_in_a_node_inherits_the_thread(saver: CheckpointSaver) -> None:
    """sub.invoke() in a node pauses the parent's thread and resumes inside the sub-run."""
    calls = Calls()
    sub = _line(calls, ("first", None), ("ask", "go?"))

    def node(state: Any, config: Any) -> dict[str, Any]:
        done = sub.invoke({"log": []}, config)  # the node's config: the same thread
        again = sub.invoke({"log": ["2nd"]})  # no config: still nested, its own position
        return {"log": [*done["log"], *again["log"]]}

    app = StateGraph(Log).add_node("node", node).add_edge(START, "node").add_edge("node", END)
    app = app.compile(saver)
    config = _thread()
    [q1] = app.invoke({"log": []}, config)["__interrupt__"]
    [q2] = app.invoke(Command(resume="a"), config)["__interrupt__"]
    assert q1.path == ("node", "ask") and q2.path == ("node", "#1", "ask")
    out = app.invoke(Command(resume="b"), config)
    assert out == {"log": ["first", "ask:a", "2nd", "first", "ask:b"]}
    assert calls.count("first") == 2


async def test_graph_ainvoked_in_an_async_node_inherits_the_thread(
    saver: CheckpointSaver,
) -> None:
    """The async twin: await sub.ainvoke() inside an async node."""
    sub = _line(Calls(), ("ask", "go?"))

    async def node(state: Any) -> dict[str, Any]:
        return {"log": (await sub.ainvoke({"log": []}))["log"]}

    app = StateGraph(Log).add_node("node", node).add_edge(START, "node").add_edge("node", END)
    app = app.compile(saver)
    config = _thread()
    out = await app.ainvoke({"log": []}, config)
    assert out["__interrupt__"][0].path == ("node", "ask")
    assert await app.ainvoke(Command(resume="ok"), config) == {"log": ["ask:ok"]}


def test_graph_invoked_on_another_thread_is_its_own_run(saver: CheckpointSaver) -> None:
    """A config naming another thread starts an independent run with its own checkpoints."""
    sub = _line(Calls(), ("s", None), saver=saver)
    other = _thread()

    def node(state: Any) -> dict[str, Any]:
        return {"log": sub.invoke({"log": ["x"]}, other)["log"]}

    app = StateGraph(Log).add_node("node", node).add_edge(START, "node").add_edge("node", END)
    app = app.compile(saver)
    assert app.invoke({"log": []}, _thread()) == {"log": ["x", "s"]}
    assert sub.get_state(other).values == {"log": ["x", "s"]}


# -- item 14: async steps ---------------------------------------------------------------------


async def test_node_returning_an_awaitable_is_awaited_under_ainvoke() -> None:
    """A plain function returning a coroutine is awaited on the running loop."""

    async def work() -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"log": ["awaited"]}

    g = StateGraph(Log).add_node("a", lambda s: work()).add_edge(START, "a").add_edge("a", END)
    assert await g.compile().ainvoke({"log": []}) == {"log": ["awaited"]}


async def test_failing_async_node_cancels_its_siblings() -> None:
    """The failure surfaces at once; a sibling still running is cancelled, not awaited."""
    cancelled = asyncio.Event()

    async def slow(state: Any) -> dict[str, Any]:
        try:
            await asyncio.Event().wait()  # never set: only cancellation ends it
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return {}

    async def boom(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        raise ValueError("boom")

    g = StateGraph(Log).add_node("slow", slow).add_node("boom", boom)
    g.add_edge(START, "slow").add_edge(START, "boom").add_edge("slow", END).add_edge("boom", END)
    with pytest.raises(ValueError, match="boom"):
        await g.compile().ainvoke({"log": []})
    assert cancelled.is_set()


# -- item 15: one executor policy -------------------------------------------------------------


def _wide_fan_out() -> Any:
    """64 parallel subgraph nodes, each fanning out to 2 nodes (the pool has 16 workers)."""
    sub = StateGraph(Log).add_node("x", lambda s: {"log": ["x"]})
    sub.add_node("y", lambda s: {"log": ["y"]})
    child = sub.add_edge(START, "x").add_edge(START, "y").add_edge("x", END).add_edge("y", END)
    g = StateGraph(Log)
    for i in range(64):
        g.add_node(f"s{i:02}", child.compile()).add_edge(START, f"s{i:02}")
        g.add_edge(f"s{i:02}", END)
    return g.compile()


def test_nested_fan_outs_wider_than_the_pool_finish() -> None:
    """64 parallel subgraph nodes, each fanning out to 2 nodes, finish (the pool has 16)."""
    app = _wide_fan_out()
    box: list[dict[str, Any]] = []
    runner = threading.Thread(target=lambda: box.append(app.invoke({"log": []})), daemon=True)
    runner.start()
    runner.join(120)  # a safety net: before the fix this never returned
    assert box, "the run deadlocked"
    assert sorted(box[0]["log"]) == ["x"] * 64 + ["y"] * 64


def test_parallel_nested_runs_share_the_run_context_safely() -> None:
    """Nested runs on pool threads write the run's shared tables while others walk them.

    With a thread switch every microsecond, every run of this graph failed with
    "dictionary changed size during iteration" before the tables were locked.
    """
    app = _wide_fan_out()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for _ in range(3):
            assert sorted(app.invoke({"log": []})["log"]) == ["x"] * 64 + ["y"] * 64
    finally:
        sys.setswitchinterval(interval)


def test_tool_timeout_counts_from_the_tools_own_start() -> None:
    """With one worker, two tools that need each other both finish within their timeout."""
    ready = threading.Event()

    @tool
    def waiter() -> str:
        """Waits for the other tool."""
        return "waited" if ready.wait(30) else "never"

    @tool
    def setter() -> str:
        """Lets the other tool go."""
        ready.set()
        return "set"

    manager = ToolCallingManager(timeout=30, max_workers=1)
    calls = [ToolCall(id="1", name="waiter", arguments="{}")]
    calls.append(ToolCall(id="2", name="setter", arguments="{}"))
    message = AssistantMessage("", tool_calls=calls)
    result = manager.execute_tool_calls([], message, tools=[waiter, setter])
    assert [m.text for m in result.tool_responses] == ["waited", "set"]
