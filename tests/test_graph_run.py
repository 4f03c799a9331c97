"""Running graphs: super-steps, merging, routing, limits, errors, streaming, subgraphs."""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from typing import Annotated, Any, TypedDict

import pytest

from checkpoint import MemorySaver
from graphagent.config import RunnableConfig
from graphagent.errors import (
    EmptyInputError,
    GraphRecursionError,
    InvalidRouteError,
    InvalidUpdateError,
    UserError,
)
from graphagent.graph import (
    END,
    START,
    AppendStrategy,
    Command,
    MergeStrategy,
    OverAllState,
    ReplaceStrategy,
    StateGraph,
)


def writer(name: str, key: str = "log") -> Any:
    def node(state: OverAllState) -> dict[str, Any]:
        return {key: [name]}

    return node


def test_linear_graph_and_state_is_read_only() -> None:
    """Nodes see a read-only snapshot and return partial updates."""
    seen: list[Any] = []

    def a(state: OverAllState) -> dict[str, Any]:
        seen.append((state["count"], state.get("missing", "dflt"), state.value("count")))
        with pytest.raises(TypeError):
            state["count"] = 5  # type: ignore[index]
        return {"count": state["count"] + 1}

    g = StateGraph().add_node("a", a).add_node("b", lambda s: {"count": s["count"] * 10})
    app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile()
    assert app.invoke({"count": 1}) == {"count": 20}
    assert seen == [(1, "dflt", 1)]


def test_node_receives_config() -> None:
    """A node taking two arguments gets the run's RunnableConfig with metadata."""
    got: list[RunnableConfig] = []

    def a(state: OverAllState, config: RunnableConfig) -> None:
        got.append(config)

    app = StateGraph().add_node("a", a).add_edge(START, "a").add_edge("a", END).compile()
    app.invoke({"x": 1}, {"metadata": {"user_id": "u7"}})
    assert got[0].metadata["user_id"] == "u7"


def test_fan_out_runs_concurrently_on_one_snapshot_and_merges_in_name_order() -> None:
    """Parallel nodes see the same state; their appends merge in node-name order."""
    barrier = threading.Barrier(2, timeout=5)
    seen: dict[str, Any] = {}

    def make(name: str) -> Any:
        def node(state: OverAllState) -> dict[str, Any]:
            seen[name] = list(state["log"])
            barrier.wait()  # both must be running at once
            return {"log": [name]}

        return node

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("zeta", make("zeta")).add_node("alpha", make("alpha"))
    g.add_edge(START, "zeta").add_edge(START, "alpha")
    g.add_edge("zeta", END).add_edge("alpha", END)
    out = g.compile().invoke({"log": ["in"]})
    assert out["log"] == ["in", "alpha", "zeta"]
    assert seen == {"alpha": ["in"], "zeta": ["in"]}


def test_conflicting_replace_updates_raise() -> None:
    """Two nodes replacing one key in one step is an InvalidUpdateError naming both."""
    g = StateGraph().add_node("a", lambda s: {"k": 1}).add_node("b", lambda s: {"k": 2})
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    with pytest.raises(InvalidUpdateError, match="'a' and 'b' both replaced key 'k'"):
        g.compile().invoke({"k": 0})


def test_reducer_keys_take_several_writes_per_step() -> None:
    """Callable and merge strategies combine parallel writes."""
    g = StateGraph({"total": operator.add, "meta": MergeStrategy()})
    g.add_node("a", lambda s: {"total": 1, "meta": {"a": 1}})
    g.add_node("b", lambda s: {"total": 2, "meta": {"b": 2}})
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    assert g.compile().invoke({"total": 10}) == {"total": 13, "meta": {"a": 1, "b": 2}}


def test_conditional_edges_with_path_map_and_loop() -> None:
    """A router loops until a condition routes to END."""
    g = StateGraph({"log": AppendStrategy()})
    g.add_node("work", writer("w"))
    g.add_edge(START, "work")
    g.add_conditional_edges(
        "work", lambda s: "again" if len(s["log"]) < 3 else "done", {"again": "work", "done": END}
    )
    assert g.compile().invoke({"log": []})["log"] == ["w", "w", "w"]


def test_router_fan_out_list_and_branches_with_their_own_edges() -> None:
    """A router returning a list fans out; each branch may hold several nodes."""
    g = StateGraph({"log": AppendStrategy()})
    for name in ("pick", "l1", "l2", "r1", "r2"):
        g.add_node(name, writer(name))
    g.add_edge(START, "pick")
    g.add_conditional_edges("pick", lambda s: ["left", "right"], {"left": "l1", "right": "r1"})
    g.add_edge("l1", "l2").add_edge("r1", "r2")
    g.add_conditional_edges("l2", lambda s: END, [END])
    g.add_edge("r2", END)
    assert g.compile().invoke({"log": []})["log"] == ["pick", "l1", "r1", "l2", "r2"]


def test_join_waits_for_all_sources_even_across_steps() -> None:
    """add_edge([a, b], c): c runs once, after both a and the longer branch b->b2 finish."""
    runs: list[str] = []
    g = StateGraph({"log": AppendStrategy()})
    for name in ("a", "b", "b2", "c"):

        def node(state: OverAllState, name: str = name) -> dict[str, Any]:
            runs.append(name)
            return {"log": [name]}

        g.add_node(name, node)
    g.add_edge(START, "a").add_edge(START, "b").add_edge("b", "b2")
    g.add_edge(["a", "b2"], "c").add_edge("c", END)
    out = g.compile().invoke({"log": []})
    assert out["log"] == ["a", "b", "b2", "c"]
    assert runs.count("c") == 1


def test_command_updates_and_routes_instead_of_edges() -> None:
    """Command(goto=...) replaces the node's own edges; Command(update=...) merges."""
    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", lambda s: Command(update={"log": ["a"]}, goto="c"), destinations=("c",))
    g.add_node("b", writer("b")).add_node("c", writer("c"))
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).add_edge("c", END)
    assert g.compile().invoke({"log": []})["log"] == ["a", "c"]


def test_command_goto_unknown_node() -> None:
    """A jump to a node that does not exist names it and lists the known nodes."""
    g = StateGraph().add_node("a", lambda s: Command(goto="nowhere"))
    app = g.add_edge(START, "a").add_edge("a", END).compile()
    with pytest.raises(InvalidRouteError, match="'nowhere'"):
        app.invoke({"x": 1})


def test_router_key_not_in_path_map() -> None:
    """A router returning an unmapped key is an error naming the key and the map."""
    g = StateGraph().add_node("a", lambda s: None).add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "sideways", {"up": END})
    with pytest.raises(InvalidRouteError, match="'sideways'"):
        g.compile().invoke({"x": 1})


def test_recursion_limit_raises_not_silently_stops() -> None:
    """An endless loop raises GraphRecursionError after recursion_limit super-steps."""
    count = {"n": 0}

    def spin(state: OverAllState) -> None:
        count["n"] += 1

    g = StateGraph().add_node("spin", spin).add_edge(START, "spin")
    g.add_conditional_edges("spin", lambda s: "spin", ["spin", END])
    with pytest.raises(GraphRecursionError, match="7 super-steps"):
        g.compile().invoke({"x": 0}, {"recursion_limit": 7})
    assert count["n"] == 7


def test_node_exception_propagates_as_itself_with_node_name() -> None:
    """A node's exception is not wrapped; it carries the node's name."""

    class Boom(Exception):
        pass

    def bad(state: OverAllState) -> None:
        raise Boom("kaput")

    app = StateGraph().add_node("bad", bad).add_edge(START, "bad").add_edge("bad", END).compile()
    with pytest.raises(Boom) as info:
        app.invoke({"x": 1})
    assert info.value.graphagent_node == "bad"  # type: ignore[attr-defined]


def test_bad_return_type_is_named() -> None:
    """A node returning something that is not an update says what it should return."""
    app = StateGraph().add_node("a", lambda s: 42).add_edge(START, "a").add_edge("a", END)
    with pytest.raises(InvalidUpdateError, match="node 'a' returned int"):
        app.compile().invoke({"x": 1})


def test_unknown_key_with_typed_schema() -> None:
    """Writing a key that a class schema lacks names the key and the schema's keys."""
    from typing import TypedDict

    class S(TypedDict):
        a: int

    app = StateGraph(S).add_node("n", lambda s: {"b": 1}).add_edge(START, "n")
    with pytest.raises(InvalidUpdateError, match="key 'b', which is not in the state schema S"):
        app.add_edge("n", END).compile().invoke({"a": 1})


def test_bad_input() -> None:
    """Non-dict input and None without a thread are clear errors."""
    app = StateGraph().add_node("a", lambda s: None).add_edge(START, "a").add_edge("a", END)
    compiled = app.compile()
    with pytest.raises(InvalidUpdateError, match="graph input must be a dict"):
        compiled.invoke("hello")
    with pytest.raises(EmptyInputError):
        compiled.invoke(None)
    with pytest.raises(UserError, match="invalid run config"):
        compiled.invoke({"a": 1}, {"threadid": "x"})


async def test_async_nodes_gathered() -> None:
    """Async nodes in one step run concurrently under ainvoke."""

    async def slow(name: str) -> dict[str, Any]:
        await asyncio.sleep(0.2)
        return {"log": [name]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", lambda s: slow("a")).add_node("b", lambda s: slow("b"))

    async def a(state: OverAllState) -> dict[str, Any]:
        return await slow("a")

    async def b(state: OverAllState) -> dict[str, Any]:
        return await slow("b")

    g = StateGraph({"log": AppendStrategy()}).add_node("a", a).add_node("b", b)
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    start = time.perf_counter()
    out = await g.compile().ainvoke({"log": []})
    assert out["log"] == ["a", "b"]
    assert time.perf_counter() - start < 0.35


async def test_async_runs_take_turns_step_by_step() -> None:
    """Runs served by one event loop interleave per super-step: a run whose steps never
    suspend (async nodes with nothing to await, an in-memory saver) still hands the loop
    to the others between its steps, so no conversation waits for another's whole turn."""
    order: list[str] = []

    def make(tag: str) -> Any:
        async def step(state: OverAllState) -> dict[str, Any]:
            order.append(tag)
            return {"n": state["n"] + 1}

        return step

    def graph(tag: str) -> Any:
        g = StateGraph({"n": ReplaceStrategy()}).add_node("step", make(tag))
        g.add_edge(START, "step")
        g.add_conditional_edges("step", lambda s: "step" if s["n"] < 5 else END)
        return g.compile(saver=MemorySaver())

    a, b = graph("a"), graph("b")
    await asyncio.gather(a.ainvoke({"n": 0}, thread_id="a"), b.ainvoke({"n": 0}, thread_id="b"))
    assert order == ["a", "b"] * 5


async def test_sync_nodes_and_tools_of_sixteen_async_runs_run_at_once() -> None:
    """Under ainvoke, sync nodes and sync tools go to graphagent's own pool (16 workers),
    not asyncio's default executor (sized from the core count: 6 on 2 cores), so sixteen
    conversations blocked in a sync call all make progress together. A barrier of 16
    breaks (after 10 s) unless all sixteen calls wait at it at the same time."""
    from graphagent.tools import tool

    nodes, tools = threading.Barrier(16, timeout=10), threading.Barrier(16, timeout=10)

    @tool
    def blocking(x: int) -> str:
        """Wait for the fifteen others."""
        tools.wait()
        return str(x)

    def node(state: OverAllState) -> dict[str, Any]:
        nodes.wait()
        return {"n": state["n"] + 1}

    g = StateGraph({"n": ReplaceStrategy()}).add_node("node", node)
    g.add_edge(START, "node").add_edge("node", END)
    app = g.compile()
    outs = await asyncio.gather(*(app.ainvoke({"n": i}) for i in range(16)))
    assert [o["n"] for o in outs] == list(range(1, 17))
    answers = await asyncio.gather(*(blocking.acall({"x": i}) for i in range(16)))
    assert answers == [str(i) for i in range(16)]


async def test_a_long_async_run_keeps_the_event_loop_responsive() -> None:
    """Between two super-steps the loop runs other work, however quick the steps are."""
    ticks = 0
    done = False

    async def ticker() -> None:
        nonlocal ticks
        while not done:
            ticks += 1
            await asyncio.sleep(0)

    async def step(state: OverAllState) -> dict[str, Any]:
        return {"n": state["n"] + 1}

    g = StateGraph({"n": ReplaceStrategy()}).add_node("step", step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: "step" if s["n"] < 40 else END)
    app = g.compile()
    tick = asyncio.ensure_future(ticker())
    await asyncio.sleep(0)
    out = await app.ainvoke({"n": 0}, {"recursion_limit": 100})
    done = True
    await tick
    assert out["n"] == 40
    assert ticks >= 40


def test_async_node_from_sync_invoke() -> None:
    """A sync invoke runs an async node on a private loop."""

    async def a(state: OverAllState) -> dict[str, Any]:
        await asyncio.sleep(0)
        return {"x": 2}

    app = StateGraph().add_node("a", a).add_edge(START, "a").add_edge("a", END).compile()
    assert app.invoke({"x": 1}) == {"x": 2}


def test_stream_modes() -> None:
    """updates, values, custom and debug modes, alone and as a list of pairs."""

    def a(state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        config.writer({"progress": 50})
        return {"n": state["n"] + 1}

    g = StateGraph().add_node("a", a).add_node("b", lambda s: {"n": s["n"] * 2})
    app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile()
    assert list(app.stream({"n": 1})) == [{"a": {"n": 2}}, {"b": {"n": 4}}]
    assert list(app.stream({"n": 1}, mode="values")) == [{"n": 1}, {"n": 2}, {"n": 4}]
    assert list(app.stream({"n": 1}, mode="custom")) == [{"progress": 50}]
    pairs = list(app.stream({"n": 1}, mode=["updates", "custom"]))
    assert pairs == [
        ("custom", {"progress": 50}),
        ("updates", {"a": {"n": 2}}),
        ("updates", {"b": {"n": 4}}),
    ]
    debug = list(app.stream({"n": 1}, mode="debug"))
    # LangGraph's shape; without a saver nothing is checkpointed, so no checkpoint events
    assert [d["type"] for d in debug] == ["task", "task_result", "task", "task_result"]
    assert debug[1]["payload"]["result"] == {"n": 2}
    assert debug[0]["payload"]["id"] == debug[1]["payload"]["id"]
    with pytest.raises(UserError, match="unknown stream mode"):
        list(app.stream({"n": 1}, mode="tokens"))


def test_custom_events_are_live() -> None:
    """A custom event reaches the caller while its node is still running."""
    release = threading.Event()

    def a(state: OverAllState, config: RunnableConfig) -> None:
        config.writer("started")
        assert release.wait(5), "the caller never saw the event while the node ran"

    app = StateGraph().add_node("a", a).add_edge(START, "a").add_edge("a", END).compile()
    for event in app.stream({"x": 1}, mode="custom"):
        assert event == "started"
        release.set()


async def test_astream_matches_stream() -> None:
    """astream yields the same events as stream."""
    g = StateGraph({"log": AppendStrategy()}).add_node("a", writer("a")).add_node("b", writer("b"))
    app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile()
    events = [e async for e in app.astream({"log": []}, mode=["updates", "values"])]
    assert events == list(app.stream({"log": []}, mode=["updates", "values"]))


def test_subgraph_as_node_applies_both_strategies() -> None:
    """A compiled graph is a node; its appends are appended once to the parent."""
    sub = StateGraph({"log": AppendStrategy(), "depth": operator.add})
    sub.add_node("s1", lambda s: {"log": ["s1"], "depth": 1})
    sub.add_node("s2", lambda s: {"log": ["s2"], "depth": 1})
    inner = sub.add_edge(START, "s1").add_edge("s1", "s2").add_edge("s2", END).compile()

    parent = StateGraph({"log": AppendStrategy()})
    parent.add_node("before", writer("before")).add_node("child", inner)
    parent.add_node("after", writer("after"))
    parent.add_edge(START, "before").add_edge("before", "child").add_edge("child", "after")
    app = parent.add_edge("after", END).compile()
    out = app.invoke({"log": ["in"], "depth": 0})
    assert out["log"] == ["in", "before", "s1", "s2", "after"]
    assert out["depth"] == 2
    assert app.graph.nodes["child"]["kind"] == "subgraph"


async def test_subgraph_async() -> None:
    """Subgraphs run under ainvoke too."""
    inner = StateGraph({"log": AppendStrategy()}).add_node("s", writer("s"))
    inner_app = inner.add_edge(START, "s").add_edge("s", END).compile()
    parent = StateGraph({"log": AppendStrategy()}).add_node("child", inner_app)
    app = parent.add_edge(START, "child").add_edge("child", END).compile()
    assert (await app.ainvoke({"log": []}))["log"] == ["s"]


def test_subgraph_keys_the_parent_lacks_stay_in_the_subgraph() -> None:
    """A subgraph's private keys are not written into a parent whose schema lacks them."""

    class Parent(TypedDict):
        log: Annotated[list[str], operator.add]

    class Child(TypedDict):
        log: Annotated[list[str], operator.add]
        scratch: str

    sub = StateGraph(Child).add_node("s", lambda s: {"log": ["s"], "scratch": "private"})
    inner = sub.add_edge(START, "s").add_edge("s", END).compile()
    parent = StateGraph(Parent).add_node("child", inner)
    app = parent.add_edge(START, "child").add_edge("child", END).compile()
    assert app.invoke({"log": []}) == {"log": ["s"]}
