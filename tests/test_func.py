"""Durable functions beyond LangGraph's suite: replay order errors, resuming after a
failure, parallel questions, async-only savers, tasks inside graph nodes, streams, the
thread API and drawings."""

from __future__ import annotations

import asyncio
import threading
import uuid
from typing import Any

import pytest

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver
from checkpoint.redis.aio import AsyncRedisSaver
from graphagent.errors import GraphInterrupt, TaskReplayError, UserError
from graphagent.func import Entrypoint, entrypoint, task
from graphagent.graph import END, START, Command, ReplaceStrategy, StateGraph, interrupt


def _thread() -> dict[str, Any]:
    return {"thread_id": uuid.uuid4().hex}


def test_a_replay_calling_tasks_in_another_order_names_the_first_mismatch() -> None:
    """Recorded results are matched by call order and name: a resumed run that calls
    another task at a recorded place fails, naming the call and both tasks."""
    order = {"first": "fetch"}

    @task
    def fetch() -> str:
        return "fetched"

    @task
    def parse() -> str:
        return "parsed"

    @entrypoint(saver=MemorySaver())
    def flow(_: int) -> str:
        fetch().result()
        got = (fetch if order["first"] == "fetch" else parse)().result()
        return got + interrupt("go on?")

    config = _thread()
    flow.invoke(0, config)
    order["first"] = "parse"
    with pytest.raises(TaskReplayError) as caught:
        flow.invoke(Command(resume="!"), config)
    message = str(caught.value)
    assert "call #2" in message and "'parse'" in message and "'fetch'" in message
    assert "same order" in message


def test_a_failed_run_continues_with_invoke_none_running_only_what_did_not_finish(
    saver: CheckpointSaver,
) -> None:
    """A task raising ends the run; ``invoke(None)`` reruns the function: the tasks that
    finished are replayed, the failed one runs again."""
    runs: list[str] = []
    flaky = {"fail": True}

    @task
    def step(name: str) -> str:
        runs.append(name)
        if name == "c" and flaky["fail"]:
            raise ConnectionError("network down")
        return name.upper()

    @entrypoint(saver=saver)
    def flow(names: list[str]) -> list[str]:
        return [step(n).result() for n in names]

    config = _thread()
    with pytest.raises(ConnectionError):
        flow.invoke(["a", "b", "c"], config)
    flaky["fail"] = False
    assert flow.invoke(None, config) == ["A", "B", "C"]
    assert runs == ["a", "b", "c", "c"]


def test_parallel_tasks_asking_at_once_ask_together(saver: CheckpointSaver) -> None:
    """Two tasks running at once both call ``interrupt()``: the run pauses with both
    questions, and one ``Command(resume={id: answer})`` answers both."""
    both_asking = threading.Barrier(2, timeout=10)

    @task
    def approve(item: str) -> str:
        both_asking.wait()
        return f"{item}:{interrupt(f'approve {item}?')}"

    @entrypoint(saver=saver)
    def flow(items: list[str]) -> list[str]:
        return [f.result() for f in [approve(i) for i in items]]

    config = _thread()
    paused = flow.invoke(["x", "y"], config)
    questions = paused["__interrupt__"]
    assert sorted(q.value for q in questions) == ["approve x?", "approve y?"]
    state = flow.get_state(config)
    assert sorted(q.value for q in state.interrupts) == ["approve x?", "approve y?"]
    both_asking.reset()
    answers = {q.id: q.value.split()[1].rstrip("?") * 2 for q in questions}
    done = flow.invoke(Command(resume=answers), config)
    assert done == ["x:xx", "y:yy"]


async def test_a_sync_entrypoint_stores_through_an_async_only_saver(
    redis_url: str, redis_prefix: str
) -> None:
    """Under ``ainvoke`` a sync entrypoint's tasks run in worker threads; their results
    reach an async-only saver (AsyncRedisSaver) through the run's event loop. An async
    entrypoint's tasks await the saver directly."""
    saver = AsyncRedisSaver.from_url(redis_url, prefix=redis_prefix)
    runs: list[int] = []

    @task
    def square(i: int) -> int:
        runs.append(i)
        return i * i

    @entrypoint(saver=saver)
    def flow(n: int) -> list[int]:
        done = [square(i).result() for i in range(n)]
        return [*done, interrupt("more?")]

    @task
    async def asquare(i: int) -> int:
        runs.append(i)
        return i * i

    @entrypoint(saver=saver)
    async def aflow(n: int) -> list[int]:
        done = [await asquare(i) for i in range(n)]
        return [*done, interrupt("more?")]

    try:
        for each in (flow, aflow):
            runs.clear()
            config = _thread()
            await each.ainvoke(3, config)
            head = await saver.aget(config["thread_id"])
            assert head is not None and len({w.task for w in head.pending_writes}) >= 3
            assert await each.ainvoke(Command(resume=9), config) == [0, 1, 4, 9]
            assert runs == [0, 1, 2]
    finally:
        await saver.aclose()


def test_tasks_inside_a_graph_node_are_replayed_when_the_node_resumes(
    saver: CheckpointSaver,
) -> None:
    """A task called from a ``StateGraph`` node keeps its result the same way: the node
    that paused after it runs again on resume, and the task is not called again."""
    runs: list[int] = []

    @task
    def lookup(x: int) -> int:
        runs.append(x)
        return x + 100

    def node(state: Any) -> dict[str, Any]:
        found = lookup(state["x"]).result()
        ok = interrupt(f"use {found}?")
        return {"y": found if ok else None}

    g = StateGraph({"x": ReplaceStrategy(), "y": ReplaceStrategy()})
    app = g.add_node("node", node).add_edge(START, "node").add_edge("node", END).compile(saver)
    config = _thread()
    app.invoke({"x": 1}, config)
    assert app.invoke(Command(resume=True), config) == {"x": 1, "y": 101}
    assert runs == [1]


def test_stream_modes() -> None:
    """``values`` is the return value; ``custom`` carries what tasks and the function
    write; a list of modes yields pairs; an unknown mode is refused."""

    @task
    def shout(word: str, writer: Any) -> str:
        writer({"heard": word})
        return word.upper()

    @entrypoint()
    def flow(words: list[str], *, writer: Any) -> list[str]:
        writer("starting")
        return [shout(w).result() for w in words]

    assert list(flow.stream(["a"], mode="values")) == [["A"]]
    assert list(flow.stream(["a", "b"], mode="custom")) == [
        "starting",
        {"heard": "a"},
        {"heard": "b"},
    ]
    assert list(flow.stream(["a"], mode=["updates", "values"])) == [
        ("updates", {"shout": "A"}),
        ("updates", {"flow": ["A"]}),
        ("values", ["A"]),
    ]
    with pytest.raises(UserError, match="unknown stream mode"):
        list(flow.stream(["a"], mode="everything"))


def test_thread_api(saver: CheckpointSaver) -> None:
    """State, history and deletion of a thread, with values being return values."""

    @entrypoint(saver=saver)
    def count(n: int, *, previous: int | None = None) -> int:
        return (previous or 0) + n

    config = _thread()
    count.invoke(2, config)
    count.invoke(3, config)
    assert count.get_state(config).values == 5
    history = count.get_state_history(config)
    assert [s.values for s in history] == [5, 2, 2, None]  # newest first; inputs between
    assert [s.metadata["source"] for s in history] == ["loop", "input", "loop", "input"]
    count.delete_thread(config)
    assert not count.get_state(config).exists
    with pytest.raises(UserError, match="as_node"):
        count.update_state(config, 1, as_node="elsewhere")


def test_what_cannot_be_an_entrypoint_is_refused_at_decoration() -> None:
    """No input parameter, or a parameter the run cannot fill: a clear error at once."""
    with pytest.raises(UserError, match="first parameter"):

        @entrypoint()
        def nothing() -> None: ...

    with pytest.raises(UserError, match="'mode' has no default"):

        @entrypoint()
        def odd(inputs: Any, mode: str) -> None: ...

    with pytest.raises(UserError, match="generator"):

        @task
        def many() -> Any:
            yield 1


async def test_an_async_entrypoint_under_invoke_runs_and_refuses_a_running_loop() -> None:
    """``invoke`` runs an async entrypoint to its end; from inside an event loop it says
    to use ``ainvoke``."""

    @entrypoint()
    async def flow(x: int) -> int:
        await asyncio.sleep(0)
        return x + 1

    assert await asyncio.to_thread(flow.invoke, 1) == 2
    with pytest.raises(UserError, match="ainvoke"):
        flow.invoke(1)


def test_a_task_outside_any_run_just_runs() -> None:
    """Outside an entrypoint a task returns a future of its result; nothing is kept."""

    @task
    def double(x: int) -> int:
        return 2 * x

    futures = [double(i) for i in range(5)]
    assert [f.result() for f in futures] == [0, 2, 4, 6, 8]
    with pytest.raises(GraphInterrupt):
        task(lambda: interrupt("?"), name="ask")().result()


def test_drawings_list_tasks_and_mark_what_a_run_did(saver: CheckpointSaver) -> None:
    """The node lists the tasks the code names; over a paused thread it shows the results
    kept and the task waiting; over a finished one what ran and what was replayed."""

    @task
    def fetch(i: int) -> int:
        return i

    @task
    def ask(q: str) -> str:
        return interrupt(q)  # type: ignore[no-any-return]

    @entrypoint(saver=saver)
    def flow(n: int) -> str:
        total = sum(f.result() for f in [fetch(i) for i in range(n)])
        return ask(f"total {total}?").result()

    assert isinstance(flow, Entrypoint) and flow.tasks == ("fetch", "ask")
    assert "[flow <entrypoint>: fetch, ask]" in flow.draw("ascii")
    config = _thread()
    flow.invoke(3, config)
    paused = flow.draw("svg", config=config)
    assert "\u2713 fetch \u00d73 kept" in paused and "\u23f8 ask waiting" in paused
    flow.invoke(Command(resume="yes"), config)
    done = flow.draw("svg", config=config)
    assert "fetch: \u21ba replayed \u00d73" in done and "ask: \u2713 ran \u00d71" in done
    with pytest.raises(UserError, match="SVG only"):
        flow.draw("ascii", config=config)


def test_messages_stream_from_an_agent_called_in_a_task() -> None:
    """A task that hands the run's config to an agent streams the agent's model tokens
    under ``"messages"``, between the updates."""
    from graphagent.agent import ReactAgent
    from graphagent.messages import AssistantMessage
    from graphagent.models import FakeChatModel

    agent = ReactAgent(name="helper", model=FakeChatModel(responses=[AssistantMessage("hi!")]))

    @task
    def ask(question: str, config: Any) -> str:
        return agent.invoke(question, config)["messages"][-1].text  # type: ignore[no-any-return]

    @entrypoint()
    def flow(question: str) -> str:
        return ask(question).result()

    events = list(flow.stream("hello", mode=["messages", "updates"]))
    tokens = "".join(payload[0].content for mode, payload in events if mode == "messages")
    assert tokens == "hi!"
    assert events[-2:] == [("updates", {"ask": "hi!"}), ("updates", {"flow": "hi!"})]


def test_queued_calls_are_dropped_when_the_function_stops() -> None:
    """At the end of the step, a call still queued (every worker busy) is cancelled if the
    function raised or paused, and run if it returned (it may have been started for its
    effect alone)."""
    import concurrent.futures

    from graphagent.graph._func._journal import Journal
    from graphagent.graph._func._settle import settle
    from graphagent.graph._func._task import TaskFuture

    ran: list[str] = []
    for stopped, expected in ((True, []), (False, ["queued"])):
        journal = Journal(None)
        queued: concurrent.futures.Future[None] = concurrent.futures.Future()  # never taken
        journal.started.append(TaskFuture(queued, lambda: ran.append("queued")))
        settle(journal, stopped)
        assert ran == expected
        ran.clear()


def test_the_functional_api_is_offered_by_graphagent_graph_too() -> None:
    """API.md's names work: ``graphagent.graph.entrypoint``, ``graphagent.graph.task`` and
    ``entrypoint.final`` are ``graphagent.func``'s, and a workflow written with them keeps
    its saved value apart from what it returns."""
    import graphagent.func
    import graphagent.graph

    for name in graphagent.func.__all__:
        assert getattr(graphagent.graph, name) is getattr(graphagent.func, name)
    assert graphagent.graph.entrypoint.final is graphagent.func.Final

    @graphagent.graph.task
    def double(x: int) -> int:
        return 2 * x

    @graphagent.graph.entrypoint(saver=MemorySaver())
    def tally(x: int, *, previous: int | None = None) -> Any:
        total = (previous or 0) + double(x).result()
        return graphagent.graph.entrypoint.final(value=f"total {total}", save=total)

    config = _thread()
    assert tally.invoke(1, config) == "total 2"
    assert tally.invoke(5, config) == "total 12"
    assert tally.get_state(config).values == "total 12"  # what it returned; 12 is kept
