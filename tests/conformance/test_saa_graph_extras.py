"""Spring AI Alibaba graph-core extras, ported from its tests
(spring-ai-alibaba-graph-core/src/test/java/com/alibaba/cloud/ai/graph/..., the Java file
named per test): ``interruptBeforeEdge``, ``NodeAggregationStrategy.ANY_OF``, executors
for parallel branches, an uncompiled ``StateGraph`` as a node.

Deliberate differences (docs/coming-from.md): the aggregation is declared on the join
(``add_edge(sources, target, aggregation="any_of")``) and executors on the node or the
compiled graph, not per run in the ``RunnableConfig``; an uncompiled graph given as a node
is compiled and runs nested (with its own strategies), not inlined into the parent.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import uuid
from typing import Any

import pytest

from checkpoint.base import CheckpointSaver
from graphagent.errors import GraphValidationError, InvalidRouteError
from graphagent.graph import END, START, AppendStrategy, Command, Send, StateGraph, interrupt


def _log(name: str) -> Any:
    return lambda state: {"messages": [name]}


def _edge_graph(saver: CheckpointSaver | None, **compile_kw: Any) -> Any:
    g = StateGraph({"messages": AppendStrategy(messages=False)})
    g.add_node("A", _log("A")).add_node("B", _log("B")).add_node("C", _log("C"))
    g.add_conditional_edges("B", lambda s: s["messages"][-1], {"A": "A", "C": "C", END: END})
    g.add_edge(START, "A").add_edge("A", "B").add_edge("C", END)
    return g.compile(saver=saver, interrupt_after=["B"], **compile_kw)


# -- interrupt_before_edge ---------------------------------------------------------------


# origin: InterruptionTest.java::interruptBeforeEdgeEvaluation
def test_interrupt_before_edge_routes_on_the_edited_state(saver: CheckpointSaver) -> None:
    """Paused after B, B's router has not run (it would fail on "B"); an edit makes it
    route to C when the run continues, on every saver."""
    app = _edge_graph(saver, interrupt_before_edge=True)
    thread = uuid.uuid4().hex
    events = list(app.stream({"messages": []}, thread_id=thread))
    assert [e for e in events if "__interrupt__" not in e] == [
        {"A": {"messages": ["A"]}},
        {"B": {"messages": ["B"]}},
    ]
    assert app.get_state(thread_id=thread).next == ()
    app.update_state({"thread_id": thread}, {"messages": ["C"]})
    assert list(app.stream(None, thread_id=thread)) == [{"C": {"messages": ["C"]}}]
    assert app.get_state(thread_id=thread).values["messages"] == ["A", "B", "C", "C"]


def test_interrupt_before_edge_async(saver: CheckpointSaver) -> None:
    """The same under ``ainvoke`` and ``aupdate_state``."""
    app = _edge_graph(saver, interrupt_before_edge=True)
    thread = uuid.uuid4().hex

    async def run() -> dict[str, Any]:
        await app.ainvoke({"messages": []}, thread_id=thread)
        await app.aupdate_state({"thread_id": thread}, {"messages": [END]})
        return await app.ainvoke(None, thread_id=thread)

    assert asyncio.run(run())["messages"] == ["A", "B", END]


def test_without_interrupt_before_edge_the_router_runs_at_the_pause(
    saver: CheckpointSaver,
) -> None:
    """The default routes before pausing: here the router fails on "B" there and then."""
    app = _edge_graph(saver)
    with pytest.raises(InvalidRouteError, match="'B'"):
        app.invoke({"messages": []}, thread_id=uuid.uuid4().hex)


def test_continuing_unedited_takes_the_edge_on_the_state_as_it_is(saver: CheckpointSaver) -> None:
    """Continuing without an edit takes the edge then: a router that loops back to A."""
    g = StateGraph({"messages": AppendStrategy(messages=False), "n": lambda a, b: a + b})
    g.add_node("A", lambda s: {"messages": ["A"], "n": 1}).add_node("B", _log("B"))
    g.add_conditional_edges("B", lambda s: "A" if s["n"] < 2 else END, ["A", END])
    g.add_edge(START, "A").add_edge("A", "B")
    app = g.compile(saver=saver, interrupt_after=["B"], interrupt_before_edge=True)
    thread = uuid.uuid4().hex
    app.invoke({"messages": [], "n": 0}, thread_id=thread)
    app.invoke(None, thread_id=thread)  # routes to A, pauses after B again
    assert app.invoke(None, thread_id=thread) == {"messages": ["A", "B", "A", "B"], "n": 2}


def test_interrupt_before_edge_in_a_subgraph(saver: CheckpointSaver) -> None:
    """A subgraph paused after B takes B's edge on resume, with the parent's edit."""
    g = StateGraph({"messages": AppendStrategy(messages=False)})
    g.add_node("A", _log("A")).add_node("B", _log("B")).add_node("C", _log("C"))
    g.add_conditional_edges("B", lambda s: s["route"], {"C": "C", "stop": END})
    g.add_edge(START, "A").add_edge("A", "B").add_edge("C", END)
    sub = g.compile(interrupt_after=["B"], interrupt_before_edge=True)
    parent = StateGraph({"messages": AppendStrategy(messages=False)})
    parent.add_node("sub", sub).add_node("after", _log("after"))
    parent.add_edge(START, "sub").add_edge("sub", "after").add_edge("after", END)
    app = parent.compile(saver=saver)
    thread = uuid.uuid4().hex
    app.invoke({"messages": [], "route": "?"}, thread_id=thread)
    app.update_state({"thread_id": thread}, {"route": "C"})
    out = app.invoke(None, thread_id=thread)
    assert out["messages"] == ["A", "B", "C", "after"]


# -- any_of ------------------------------------------------------------------------------


def _racing(fast: Any, slow: Any) -> Any:
    g = StateGraph({"messages": AppendStrategy(messages=False)})
    g.add_node("fastNode", fast).add_node("slowNode1", slow).add_node("slowNode2", slow)
    g.add_node("merge", _log("merge"))
    for name in ("fastNode", "slowNode1", "slowNode2"):
        g.add_edge(START, name)
    g.add_edge(["fastNode", "slowNode1", "slowNode2"], "merge", aggregation="any_of")
    return g.add_edge("merge", END)


# origin: StateGraphParallelTest.java::testParallelNodeAggregationStrategyAnyOf
def test_any_of_takes_the_first_branch_to_finish() -> None:
    """The step ends with the first racer: the slow ones are still blocked when the run
    returns, and neither their updates nor their edges count."""
    release = threading.Event()
    finished: list[str] = []

    def slow(state: Any) -> dict[str, Any]:
        release.wait(10)
        finished.append("slow")
        return {"messages": ["slow"]}

    app = _racing(_log("fastNode"), slow).compile()
    assert 'n_slowNode1 -->|"any of"| n_merge' in app.draw("mermaid")
    try:
        out = app.invoke({"messages": []})
        assert out == {"messages": ["fastNode", "merge"]}
        assert finished == []  # the run did not wait for them
    finally:
        release.set()


# origin: StateGraphParallelTest.java::testParallelNodeAggregationStrategyAllOf (and Default)
def test_all_of_is_the_default() -> None:
    """Without ``any_of`` every branch counts, and merge runs once."""
    g = StateGraph({"messages": AppendStrategy(messages=False)})
    for name in ("node1", "node2", "node3"):
        g.add_node(name, _log(name)).add_edge(START, name).add_edge(name, "merge")
    g.add_node("merge", _log("merge")).add_edge("merge", END)
    assert g.compile().invoke({"messages": []})["messages"] == ["node1", "node2", "node3", "merge"]


def test_any_of_under_ainvoke_cancels_the_losers() -> None:
    """Under ``ainvoke`` the losers are cancelled, not left running."""
    cancelled: list[str] = []

    async def fast(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"messages": ["fastNode"]}

    async def slow(state: Any) -> dict[str, Any]:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return {"messages": ["slow"]}

    app = _racing(fast, slow).compile()
    out = asyncio.run(app.ainvoke({"messages": []}))
    assert out == {"messages": ["fastNode", "merge"]} and cancelled == ["slow", "slow"]


def test_any_of_skips_failures_and_fails_only_when_all_fail() -> None:
    """A racer that fails does not end the race; the race fails when every racer fails."""

    def boom(state: Any) -> dict[str, Any]:
        raise RuntimeError("provider down")

    app = _racing(boom, _log("slowNode")).compile()
    assert app.invoke({"messages": []})["messages"] == ["slowNode", "merge"]
    with pytest.raises(RuntimeError, match="provider down"):
        _racing(boom, boom).compile().invoke({"messages": []})


def test_any_of_on_every_saver(saver: CheckpointSaver) -> None:
    """Only the winner's step is checkpointed: the thread's history names one racer."""
    app = _racing(_log("fastNode"), lambda s: threading.Event().wait(0.5) or {}).compile(
        saver=saver
    )
    thread = uuid.uuid4().hex
    app.invoke({"messages": []}, thread_id=thread)
    history = app.get_state_history(thread_id=thread)
    assert [h.metadata.get("nodes") for h in history][:2] == [["merge"], ["fastNode"]]
    assert history[0].values["messages"] == ["fastNode", "merge"]


def _sent_race(worker: Any, other: Any) -> Any:
    """A router sends three tasks of ``worker``, a racer of an any_of join with ``other``."""
    g = StateGraph({"messages": AppendStrategy(messages=False)})
    g.add_node("worker", worker).add_node("other", other).add_node("merge", _log("merge"))
    fan = [Send("worker", {"n": n}) for n in (1, 2, 3)]
    g.add_conditional_edges(START, lambda s: fan, ["worker"])
    g.add_edge(["worker", "other"], "merge", aggregation="any_of").add_edge("merge", END)
    return g.add_edge(START, "other")


@pytest.mark.parametrize("how", ["sync", "async"])
def test_any_of_races_each_send_task_of_a_racer(how: str, saver: CheckpointSaver) -> None:
    """Send tasks of a racing node race one by one (with the join's other racers): the
    first to finish wins, merge runs once on its update alone, the others are dropped."""
    release = threading.Event()

    def worker(arg: Any) -> dict[str, Any]:
        if arg["n"] != 2:
            release.wait(10)
        return {"messages": [f"worker{arg['n']}"]}

    async def aworker(arg: Any) -> dict[str, Any]:
        if arg["n"] != 2:
            await asyncio.sleep(10)
        return {"messages": [f"worker{arg['n']}"]}

    def other(state: Any) -> dict[str, Any]:
        release.wait(10)
        return {"messages": ["other"]}

    app = _sent_race(worker if how == "sync" else aworker, other).compile(saver=saver)
    thread = uuid.uuid4().hex
    try:
        if how == "sync":
            out = app.invoke({"messages": []}, thread_id=thread)
        else:
            out = asyncio.run(app.ainvoke({"messages": []}, thread_id=thread))
    finally:
        release.set()
    assert out == {"messages": ["worker2", "merge"]}
    assert app.get_state_history(thread_id=thread)[1].metadata["nodes"] == ["worker"]


def test_any_of_with_one_racer_in_the_step_is_a_plain_edge() -> None:
    """A racer that runs in a step of its own leads to the target like any edge."""
    g = StateGraph({"messages": AppendStrategy(messages=False)})
    g.add_node("a", _log("a")).add_node("b", _log("b")).add_node("t", _log("t"))
    g.add_edge(START, "a").add_edge(["a", "b"], "t", aggregation="any_of").add_edge("t", END)
    g.add_conditional_edges(START, lambda s: [], {})  # b is reachable only in principle
    with pytest.raises(GraphValidationError, match="'b' is unreachable"):
        g.compile()
    g2 = StateGraph({"messages": AppendStrategy(messages=False)})
    g2.add_node("a", _log("a")).add_node("t", _log("t"))
    g2.add_edge(START, "a").add_edge(["a"], "t", aggregation="any_of").add_edge("t", END)
    assert g2.compile().invoke({"messages": []})["messages"] == ["a", "t"]


def test_aggregation_is_checked() -> None:
    """An unknown aggregation and a node racing in two joins are refused at compile."""
    g = StateGraph().add_node("a", lambda s: None).add_node("b", lambda s: None)
    g.add_edge(START, "a").add_edge(["a"], "b", aggregation="first").add_edge("b", END)
    with pytest.raises(GraphValidationError, match=r"'all_of'.*'any_of'"):
        g.compile()
    g2 = StateGraph().add_node("a", lambda s: None).add_node("b", lambda s: None)
    g2.add_node("c", lambda s: None).add_edge(START, "a")
    g2.add_edge(["a"], "b", aggregation="any_of").add_edge(["a"], "c", aggregation="any_of")
    with pytest.raises(GraphValidationError, match="races for both"):
        g2.add_edge("b", END).add_edge("c", END).compile()


def test_an_interrupt_in_a_racer_pauses_the_step(saver: CheckpointSaver) -> None:
    """A racer that asks a question wins the race (it did not fail): the run pauses, and
    the answer lets it finish."""

    def ask(state: Any) -> dict[str, Any]:
        return {"messages": [f"asked:{interrupt('ok?')}"]}

    app = _racing(ask, lambda s: threading.Event().wait(0.3) or {"messages": ["slow"]})
    graph = app.compile(saver=saver)
    thread = uuid.uuid4().hex
    graph.invoke({"messages": []}, thread_id=thread)
    assert graph.get_state(thread_id=thread).interrupts[0].value == "ok?"


# -- executors ---------------------------------------------------------------------------


def _threads_graph(seen: dict[str, str], **node_executor: Any) -> StateGraph:
    def node(name: str) -> Any:
        def run(state: Any) -> dict[str, Any]:
            seen[name] = threading.current_thread().name
            return {"messages": [name]}

        return run

    g = StateGraph({"messages": AppendStrategy(messages=False)})
    for name in ("a", "b", "c"):
        g.add_node(name, node(name), executor=node_executor.get(name))
        g.add_edge(START, name).add_edge(name, END)
    return g


# origin: StateGraphParallelTest.java (addParallelNodeExecutor)
def test_a_node_runs_parallel_branches_on_its_own_executor() -> None:
    """A node's executor runs it when it runs beside others; the rest use the default."""
    mine = concurrent.futures.ThreadPoolExecutor(2, thread_name_prefix="mine")
    seen: dict[str, str] = {}
    try:
        app = _threads_graph(seen, a=mine).compile()
        assert app.invoke({"messages": []}) == {"messages": ["a", "b", "c"]}
        assert seen["a"].startswith("mine") and not seen["b"].startswith("mine")
        seen.clear()
        asyncio.run(app.ainvoke({"messages": []}))
        assert seen["a"].startswith("mine")
    finally:
        mine.shutdown()


def test_a_graph_executor_for_every_node_without_its_own() -> None:
    """``compile(executor=...)`` covers the nodes that name none; a node's own wins."""
    graph_pool = concurrent.futures.ThreadPoolExecutor(3, thread_name_prefix="graphpool")
    mine = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="mine")
    seen: dict[str, str] = {}
    try:
        app = _threads_graph(seen, c=mine).compile(executor=graph_pool)
        app.invoke({"messages": []})
        names = sorted(seen.values())
        # the waiting thread may take back a call no worker started; none ran elsewhere
        assert all(n.startswith(("graphpool", "mine", "MainThread")) for n in names)
        assert seen["c"].startswith(("mine", "MainThread"))
    finally:
        graph_pool.shutdown()
        mine.shutdown()


def test_an_executor_by_worker_count_and_bad_values_refused() -> None:
    """A worker count makes a pool of that size; anything else is refused by name."""
    assert _threads_graph({}, a=2).compile(executor=4).invoke({"messages": []})
    with pytest.raises(GraphValidationError, match="node 'a': executor='many'"):
        _threads_graph({}, a="many").compile()
    with pytest.raises(GraphValidationError, match=r"compile\(executor=...\): executor=0"):
        _threads_graph({}).compile(executor=0)


# -- an uncompiled StateGraph as a node --------------------------------------------------


# origin: SubGraphTest.java (a StateGraph added as a node, with its own key strategies)
def test_uncompiled_state_graph_as_a_node(saver: CheckpointSaver) -> None:
    """An uncompiled graph runs as a subgraph with its own strategies; its appends reach
    the parent once; an interrupt in it pauses the parent's thread."""
    sub = StateGraph({"messages": AppendStrategy(messages=False, allow_duplicates=False)})
    sub.add_node("s1", lambda s: {"messages": ["x", "y"]})
    sub.add_node("s2", lambda s: {"messages": [f"answer:{interrupt('go?')}"]})
    sub.add_edge(START, "s1").add_edge("s1", "s2").add_edge("s2", END)
    parent = StateGraph({"messages": AppendStrategy(messages=False)})
    parent.add_node("p", _log("x")).add_node("sub", sub)
    parent.add_edge(START, "p").add_edge("p", "sub").add_edge("sub", END)
    app = parent.compile(saver=saver)
    thread = uuid.uuid4().hex
    app.invoke({"messages": []}, thread_id=thread)
    out = app.invoke(Command(resume="yes"), thread_id=thread)
    assert out["messages"] == ["x", "y", "answer:yes"]  # the sub kept "x" out: no duplicates
    assert "subgraph" in app.draw("mermaid")


def test_uncompiled_state_graph_problems_are_the_parents() -> None:
    """An uncompiled graph that cannot compile makes the parent's compile fail, naming it."""
    broken = StateGraph().add_node("s", lambda s: None).add_edge(START, "s")
    parent = StateGraph().add_node("sub", broken).add_edge(START, "sub").add_edge("sub", END)
    with pytest.raises(GraphValidationError, match="node 'sub' \\(an uncompiled StateGraph\\)"):
        parent.compile()
