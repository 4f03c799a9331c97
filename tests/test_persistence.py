"""Threads through a saver: resume, multi-turn memory, history, forks, interrupts, failures.

Every test runs against MemorySaver and a real Redis.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from checkpoint.base import CheckpointSaver
from graphagent.config import RunnableConfig
from graphagent.errors import CheckpointConflictError, EmptyInputError, UserError
from graphagent.graph import (
    END,
    START,
    AppendStrategy,
    Command,
    OverAllState,
    StateGraph,
    interrupt,
)
from graphagent.messages import AssistantMessage, UserMessage


def echo_graph(saver: CheckpointSaver) -> Any:
    def reply(state: OverAllState) -> dict[str, Any]:
        last = state["messages"][-1]
        return {
            "messages": [AssistantMessage(f"echo: {last.text}")],
            "turns": state.get("turns", 0) + 1,
        }

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    return g.add_edge(START, "reply").add_edge("reply", END).compile(saver=saver)


def texts(values: dict[str, Any]) -> list[str]:
    return [m.text for m in values["messages"]]


def test_second_invoke_continues_the_thread(saver: CheckpointSaver) -> None:
    """New input merges into the thread's latest state through the key strategies."""
    app = echo_graph(saver)
    cfg = {"thread_id": "u42"}
    app.invoke({"messages": [UserMessage("hi")]}, cfg)
    out = app.invoke({"messages": [UserMessage("again")]}, cfg)
    assert texts(out) == ["hi", "echo: hi", "again", "echo: again"]
    assert out["turns"] == 2
    fresh = app.invoke({"messages": [UserMessage("other")]}, {"thread_id": "u43"})
    assert texts(fresh) == ["other", "echo: other"]


def test_without_thread_id_nothing_is_saved(saver: CheckpointSaver) -> None:
    """A run without a thread id starts fresh every time."""
    app = echo_graph(saver)
    app.invoke({"messages": [UserMessage("a")]})
    out = app.invoke({"messages": [UserMessage("b")]})
    assert texts(out) == ["b", "echo: b"]


def test_resume_from_another_process(saver: CheckpointSaver, make_saver: Any) -> None:
    """A new saver and a newly compiled graph (another process) continue the same thread."""
    echo_graph(saver).invoke({"messages": [UserMessage("one")]}, {"thread_id": "t"})
    other = echo_graph(make_saver())
    out = other.invoke({"messages": [UserMessage("two")]}, {"thread_id": "t"})
    assert texts(out) == ["one", "echo: one", "two", "echo: two"]
    assert type(out["messages"][1]) is AssistantMessage


def test_get_state_and_history(saver: CheckpointSaver) -> None:
    """get_state shows the latest values; history is newest first with limit and before."""
    app = echo_graph(saver)
    cfg = {"thread_id": "h"}
    app.invoke({"messages": [UserMessage("a")]}, cfg)
    app.invoke({"messages": [UserMessage("b")]}, cfg)
    state = app.get_state(cfg)
    assert texts(state.values)[-1] == "echo: b" and state.next == ()
    assert state.created_at is not None and state.metadata["source"] == "loop"
    history = app.get_state_history(cfg)
    assert [h.metadata["source"] for h in history] == ["loop", "input", "loop", "input"]
    assert [h.step for h in history] == [3, 2, 1, 0]
    assert history[1].next == ("reply",)
    assert [h.checkpoint_id for h in app.get_state_history(cfg, limit=2)] == [
        h.checkpoint_id for h in history[:2]
    ]
    older = app.get_state_history(cfg, before=history[1].checkpoint_id)
    assert [h.step for h in older] == [1, 0]


def test_update_state_and_fork_from_history(saver: CheckpointSaver) -> None:
    """update_state on the head continues; on an old checkpoint it forks, history intact."""
    app = echo_graph(saver)
    cfg = {"thread_id": "f"}
    app.invoke({"messages": [UserMessage("a")]}, cfg)
    app.invoke({"messages": [UserMessage("b")]}, cfg)
    first_answer = app.get_state_history(cfg)[2]
    assert texts(first_answer.values) == ["a", "echo: a"]

    forked = app.update_state(first_answer.config, {"messages": [UserMessage("c")]}, as_node=START)
    assert app.get_state(cfg).next == ("reply",)
    out = app.invoke(None, {"thread_id": "f"})
    assert texts(out) == ["a", "echo: a", "c", "echo: c"]
    assert forked.checkpoint_id is not None
    # the original line is still there
    old_head = [h for h in app.get_state_history(cfg) if texts(h.values)[-1] == "echo: b"]
    assert old_head and texts(old_head[0].values) == ["a", "echo: a", "b", "echo: b"]


def test_time_travel_replays_from_an_old_checkpoint(saver: CheckpointSaver) -> None:
    """invoke(None) with an old checkpoint_id runs again from there, as a new branch."""
    calls: list[int] = []

    def count(state: OverAllState) -> dict[str, Any]:
        calls.append(1)
        return {"n": state["n"] + 1}

    g = StateGraph().add_node("a", count).add_node("b", count)
    app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile(saver=saver)
    cfg = {"thread_id": "tt"}
    app.invoke({"n": 0}, cfg)
    after_a = next(h for h in app.get_state_history(cfg) if h.next == ("b",))
    out = app.invoke(None, after_a.config)
    assert out == {"n": 2} and len(calls) == 3
    assert app.get_state(cfg).parent_id == after_a.checkpoint_id


def test_interrupt_and_resume_with_command(saver: CheckpointSaver, make_saver: Any) -> None:
    """interrupt() pauses; get_state shows it; Command(resume=...) from elsewhere answers it."""

    def approve(state: OverAllState) -> dict[str, Any]:
        answer = interrupt({"question": "send?", "draft": state["draft"]})
        return {"sent": answer == "yes"}

    g = StateGraph().add_node("approve", approve)
    app = g.add_edge(START, "approve").add_edge("approve", END).compile(saver=saver)
    cfg = {"thread_id": "hitl"}
    out = app.invoke({"draft": "hello"}, cfg)
    assert "sent" not in out
    state = app.get_state(cfg)
    assert state.next == ("approve",)
    assert [i.value for i in state.interrupts] == [{"question": "send?", "draft": "hello"}]

    other = StateGraph().add_node("approve", approve)
    other_app = other.add_edge(START, "approve").add_edge("approve", END)
    resumed = other_app.compile(saver=make_saver()).invoke(Command(resume="yes"), cfg)
    assert resumed == {"draft": "hello", "sent": True}
    assert app.get_state(cfg).interrupts == ()


def test_several_interrupts_in_one_step(saver: CheckpointSaver) -> None:
    """Two nodes interrupting in one step are answered by id; a bare value is refused."""

    def asker(name: str) -> Any:
        def node(state: OverAllState) -> dict[str, Any]:
            return {name: interrupt(f"{name}?")}

        return node

    g = StateGraph().add_node("x", asker("x")).add_node("y", asker("y"))
    g.add_edge(START, "x").add_edge(START, "y").add_edge("x", END).add_edge("y", END)
    app = g.compile(saver=saver)
    cfg = {"thread_id": "multi"}
    app.invoke({"start": 1}, cfg)
    pending = app.get_state(cfg).interrupts
    assert sorted(i.value for i in pending) == ["x?", "y?"]
    with pytest.raises(UserError, match="2 pending interrupts"):
        app.invoke(Command(resume="both"), cfg)
    out = app.invoke(Command(resume={i.id: i.value.upper() for i in pending}), cfg)
    assert out == {"start": 1, "x": "X?", "y": "Y?"}


def test_node_asks_twice(saver: CheckpointSaver) -> None:
    """A node calling interrupt() twice gets each answer in turn across two resumes."""
    runs: list[int] = []

    def form(state: OverAllState) -> dict[str, Any]:
        runs.append(1)
        name = interrupt("name?")
        age = interrupt("age?")
        return {"profile": f"{name}:{age}"}

    app = StateGraph().add_node("form", form).add_edge(START, "form").add_edge("form", END)
    compiled = app.compile(saver=saver)
    cfg = {"thread_id": "twice"}
    compiled.invoke({"x": 0}, cfg)
    compiled.invoke(Command(resume="ada"), cfg)
    assert [i.value for i in compiled.get_state(cfg).interrupts] == ["age?"]
    out = compiled.invoke(Command(resume=36), cfg)
    assert out["profile"] == "ada:36" and len(runs) == 3


def test_interrupt_without_saver_is_a_clear_error() -> None:
    """interrupt() needs a saver and a thread; the error says so."""
    app = StateGraph().add_node("a", lambda s: {"v": interrupt("?")}).add_edge(START, "a")
    with pytest.raises(UserError, match="needs a saver and a thread_id"):
        app.add_edge("a", END).compile().invoke({"x": 1})


def test_resume_with_nothing_pending(saver: CheckpointSaver) -> None:
    """Resuming a thread that is not paused, or does not exist, is a clear error."""
    app = echo_graph(saver)
    with pytest.raises(EmptyInputError, match="nothing to resume"):
        app.invoke(Command(resume=1), {"thread_id": "nope"})
    app.invoke({"messages": [UserMessage("a")]}, {"thread_id": "done"})
    with pytest.raises(EmptyInputError, match="no pending interrupt"):
        app.invoke(Command(resume=1), {"thread_id": "done"})


def test_breakpoints_before_and_after(saver: CheckpointSaver) -> None:
    """interrupt_before/after pause at the node; invoke(None) continues past it once."""
    log: list[str] = []

    def node(name: str) -> Any:
        def run(state: OverAllState) -> dict[str, Any]:
            log.append(name)
            return {"log": [name]}

        return run

    g = StateGraph({"log": AppendStrategy()})
    for n in ("a", "b", "c"):
        g.add_node(n, node(n))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", "c").add_edge("c", END)
    app = g.compile(saver=saver, interrupt_before=["b"], interrupt_after=["c"])
    cfg = {"thread_id": "bp"}
    app.invoke({"log": []}, cfg)
    assert log == ["a"] and app.get_state(cfg).next == ("b",)
    app.invoke(None, cfg)
    assert log == ["a", "b", "c"]
    assert app.get_state(cfg).values["log"] == ["a", "b", "c"]
    with pytest.raises(UserError, match="need a saver and a thread_id"):
        app.invoke({"log": []})


def test_failed_step_keeps_last_good_checkpoint_and_finished_siblings(
    saver: CheckpointSaver,
) -> None:
    """A node that raises leaves the thread at its last checkpoint; siblings don't re-run."""
    runs = {"ok": 0, "flaky": 0}
    fail = threading.Event()
    fail.set()

    def ok(state: OverAllState) -> dict[str, Any]:
        runs["ok"] += 1
        return {"log": ["ok"]}

    def flaky(state: OverAllState) -> dict[str, Any]:
        runs["flaky"] += 1
        if fail.is_set():
            raise ConnectionError("service down")
        return {"log": ["flaky"]}

    g = StateGraph({"log": AppendStrategy()}).add_node("ok", ok).add_node("flaky", flaky)
    g.add_edge(START, "ok").add_edge(START, "flaky").add_edge("ok", END).add_edge("flaky", END)
    app = g.compile(saver=saver)
    cfg = {"thread_id": "crash"}
    with pytest.raises(ConnectionError):
        app.invoke({"log": ["in"]}, cfg)
    state = app.get_state(cfg)
    # "ok" finished and its work is kept, so only "flaky" is still to run
    assert state.values["log"] == ["in"] and state.next == ("flaky",)
    fail.clear()
    out = app.invoke(None, cfg)
    assert out["log"] == ["in", "flaky", "ok"]
    assert runs == {"ok": 1, "flaky": 2}


def test_two_writers_on_one_thread(saver: CheckpointSaver) -> None:
    """A run whose thread moved under it fails with CheckpointConflictError, losing nothing."""
    started = threading.Event()
    go_on = threading.Event()

    def slow(state: OverAllState) -> dict[str, Any]:
        started.set()
        assert go_on.wait(5)
        return {"messages": [AssistantMessage("slow")]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("slow", slow)
    slow_app = g.add_edge(START, "slow").add_edge("slow", END).compile(saver=saver)
    fast_app = echo_graph(saver)
    cfg = {"thread_id": "race"}
    fast_app.invoke({"messages": [UserMessage("first")]}, cfg)
    errors: list[BaseException] = []

    def run_slow() -> None:
        try:
            slow_app.invoke({"messages": []}, cfg)
        except BaseException as exc:
            errors.append(exc)

    # the slow run writes its input checkpoint first, then waits inside its node
    t = threading.Thread(target=run_slow)
    t.start()
    assert started.wait(5)
    fast_app.invoke({"messages": [UserMessage("second")]}, cfg)
    go_on.set()
    t.join(5)
    assert len(errors) == 1 and isinstance(errors[0], CheckpointConflictError)
    assert texts(fast_app.get_state(cfg).values)[-2:] == ["second", "echo: second"]


async def test_async_persistence(saver: CheckpointSaver) -> None:
    """ainvoke, aget_state, aget_state_history and aupdate_state work on a thread."""
    app = echo_graph(saver)
    cfg = RunnableConfig(thread_id="async")
    await app.ainvoke({"messages": [UserMessage("hi")]}, cfg)
    state = await app.aget_state(cfg)
    assert texts(state.values) == ["hi", "echo: hi"]
    assert len(await app.aget_state_history(cfg)) == 2
    await app.aupdate_state(cfg, {"messages": [UserMessage("note")]})
    assert texts((await app.aget_state(cfg)).values)[-1] == "note"
    await app.adelete_thread(cfg)
    assert (await app.aget_state(cfg)).values == {}


def test_state_api_needs_saver_and_thread() -> None:
    """get_state without a saver or thread id says what is missing."""
    g = StateGraph().add_node("a", lambda s: None).add_edge(START, "a").add_edge("a", END)
    with pytest.raises(UserError, match="needs a saver"):
        g.compile().get_state({"thread_id": "x"})
    from checkpoint import MemorySaver

    with pytest.raises(UserError, match="needs a thread_id"):
        g.compile(saver=MemorySaver()).get_state()


def test_langgraph_style_configurable_thread_id_is_honoured() -> None:
    """{"configurable": {"thread_id": ...}} keeps the thread, as LangGraph users write it."""
    from checkpoint import MemorySaver
    from graphagent.graph import END, START, AppendStrategy, StateGraph

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", lambda s: {"log": ["a"]}).add_edge(START, "a").add_edge("a", END)
    app = g.compile(saver=MemorySaver())
    app.invoke({"log": []}, {"configurable": {"thread_id": "lg"}})
    app.invoke({"log": []}, {"configurable": {"thread_id": "lg"}})
    assert app.get_state({"thread_id": "lg"}).values["log"] == ["a", "a"]
