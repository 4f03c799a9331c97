"""Send fan-out, deferred nodes, Overwrite, sequences, bulk updates and managed keys,
ported from LangGraph's libs/langgraph/tests/test_pregel.py and test_pregel_async.py.

LangGraph's tests use a graph whose whole state is one list (``StateGraph(Annotated[list,
operator.add])``); graphagent's state is always a mapping, so they keep the list under
``"items"``. Persistence tests run on every saver, through ``invoke`` and ``ainvoke``.
"""

from __future__ import annotations

import asyncio
import operator
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypedDict

import pytest
from _support import thread

from checkpoint.base import CheckpointSaver
from graphagent.errors import GraphValidationError, InvalidRouteError, InvalidUpdateError, UserError
from graphagent.graph import (
    END,
    START,
    Command,
    IsLastStep,
    Overwrite,
    RemainingSteps,
    Send,
    StateGraph,
    interrupt,
)


class Items(TypedDict):
    items: Annotated[list[Any], operator.add]


Run = Callable[..., Any]


def sorted_add(x: list[str], y: list[str]) -> list[str]:
    return sorted(operator.add(x, y))


class DocsState(TypedDict, total=False):
    query: str
    answer: str
    docs: Annotated[list[str], sorted_add]


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest) -> Run:
    """``invoke`` or ``ainvoke`` (driven to its end here), by parameter."""
    if request.param == "sync":
        return lambda app, value, config=None: app.invoke(value, config)
    return lambda app, value, config=None: asyncio.run(app.ainvoke(value, config))


class Node:
    """LangGraph's test node: appends its name, or ``name|arg`` when run by a Send."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.__name__ = name
        self.ticks = 0

    def __call__(self, state: Any) -> Any:
        self.ticks += 1
        if isinstance(state, Mapping) and "goto" in state:  # a Send carrying a Command's goto
            return Command(update={"items": [f"{self.name}|{state['label']}"]}, goto=state["goto"])
        if isinstance(state, (int, str)):
            return {"items": [f"{self.name}|{state}"]}
        return {"items": [self.name]}


def _map_reduce(saver: CheckpointSaver | None, n: int) -> Any:
    class S(TypedDict):
        subjects: list[str]
        jokes: Annotated[list[str], operator.add]

    g = StateGraph(S)
    g.add_node("joke", lambda s: {"jokes": [f"joke about {s['subject']}"]})
    g.add_conditional_edges(START, lambda s: [Send("joke", {"subject": x}) for x in s["subjects"]])
    g.add_edge("joke", END)
    return g.compile(saver=saver)


# origin: langgraph types.py Send docstring (the map-reduce example) and
# tests/test_pregel.py::test_concurrent_emit_sends (results in the order sent)
def test_send_map_reduce_in_order_on_every_saver(saver: CheckpointSaver, run: Run) -> None:
    """Each Send is its own task; results merge in the order the sends were made."""
    app = _map_reduce(saver, 12)
    cfg = thread()
    subjects = [f"s{i}" for i in range(12)]
    out = run(app, {"subjects": subjects}, cfg)
    assert out["jokes"] == [f"joke about {s}" for s in subjects]
    assert app.get_state(cfg).values["jokes"] == out["jokes"]
    assert app.get_state(cfg).next == ()


# origin: langgraph tests/test_pregel.py::test_cond_edge_after_send
def test_cond_edge_after_send(run: Run) -> None:
    """A Send target's own conditional edge runs once after the fan-out step."""

    def send_for_fun(state: Any) -> list[Send]:
        return [Send("2", state["items"]), Send("2", state["items"])]

    def route_to_three(state: Any) -> Literal["3"]:
        return "3"

    g = StateGraph(Items)
    for name in ("1", "2", "3"):
        g.add_node(Node(name))
    g.add_edge(START, "1").add_conditional_edges("1", send_for_fun)
    g.add_conditional_edges("2", route_to_three).add_edge("3", END)
    assert run(g.compile(), {"items": ["0"]}) == {"items": ["0", "1", "2", "2", "3"]}


# origin: langgraph tests/test_pregel.py::test_concurrent_emit_sends
def test_concurrent_emit_sends(run: Run) -> None:
    """Sends from two routers and a plain target in one router: nodes due by their edges
    merge first, then the sends in the order made (by router node, then list order)."""

    def send_for_fun(state: Any) -> list[Any]:
        return [Send("2", 1), Send("2", 2), "3.1"]

    def send_for_profit(state: Any) -> list[Send]:
        return [Send("2", 3), Send("2", 4)]

    def route_to_three(state: Any) -> Literal["3"]:
        return "3"

    g = StateGraph(Items)
    for name in ("1", "1.1", "2", "3", "3.1"):
        g.add_node(Node(name))
    g.add_edge(START, "1").add_edge(START, "1.1")
    g.add_conditional_edges("1", send_for_fun).add_conditional_edges("1.1", send_for_profit)
    g.add_conditional_edges("2", route_to_three).add_edge("3", END).add_edge("3.1", END)
    assert run(g.compile(), {"items": ["0"]}) == {
        "items": ["0", "1", "1.1", "3.1", "2|1", "2|2", "2|3", "2|4", "3"]
    }


# origin: langgraph tests/test_pregel.py::test_send_sequences (a Send task that returns
# Command(goto=Send(...)): nested sends)
def test_nested_send_sequences(run: Run) -> None:
    """A Send task's Command(goto=Send(...)) sends again in the next step."""

    def send_for_fun(state: Any) -> list[Any]:
        return [
            Send("2", {"label": "a", "goto": Send("2", 3)}),
            Send("2", {"label": "b", "goto": Send("2", 4)}),
            "3.1",
        ]

    def route_to_three(state: Any) -> Literal["3"]:
        return "3"

    g = StateGraph(Items)
    for name in ("1", "2", "3", "3.1"):
        g.add_node(Node(name))
    g.add_edge(START, "1").add_conditional_edges("1", send_for_fun)
    g.add_conditional_edges("2", route_to_three).add_edge("3", END).add_edge("3.1", END)
    assert run(g.compile(), {"items": ["0"]}) == {
        "items": ["0", "1", "3.1", "2|a", "2|b", "2|3", "2|4", "3"]
    }


# origin: langgraph tests/test_pregel_async.py::test_send_dedupe_on_resume
def test_send_dedupe_on_resume(saver: CheckpointSaver, run: Run) -> None:
    """A Send task that asks pauses the fan-out; its finished siblings are kept as
    pending writes and not rerun on resume; only the asking task reruns."""
    two, flaky_ticks = Node("2"), []

    def flaky(state: Any) -> dict[str, Any]:
        flaky_ticks.append(state)
        answer = interrupt("Bahh")
        return {"items": [f"flaky|{state}|{answer}"]}

    def send_for_fun(state: Any) -> list[Any]:
        return [
            Send("2", {"label": "a", "goto": Send("2", 3)}),
            Send("2", {"label": "b", "goto": Send("flaky", 4)}),
            "3.1",
        ]

    def route_to_three(state: Any) -> Literal["3"]:
        return "3"

    g = StateGraph(Items)
    g.add_node(Node("1")).add_node(two).add_node(Node("3")).add_node(Node("3.1"))
    g.add_node("flaky", flaky)
    g.add_edge(START, "1").add_conditional_edges("1", send_for_fun)
    g.add_conditional_edges("2", route_to_three)
    g.add_edge("3", END).add_edge("3.1", END).add_edge("flaky", END)
    app = g.compile(saver=saver)
    cfg = thread()
    out = run(app, {"items": ["0"]}, cfg)
    (asked,) = out["__interrupt__"]
    assert asked.value == "Bahh" and asked.node == "flaky"
    assert two.ticks == 3 and flaky_ticks == [4]
    # graphagent: a Command's goto replaces the node's edges (coming-from.md), so "3"
    # runs once, after the second wave of sends, not after each wave as in LangGraph
    assert set(app.get_state(cfg).next) == {"2", "flaky"}
    out = run(app, Command(resume={asked.id: "ok"}), cfg)
    assert out == {"items": ["0", "1", "3.1", "2|a", "2|b", "2|3", "flaky|4|ok", "3"]}
    assert two.ticks == 3  # recovered from the pending writes, not rerun
    assert flaky_ticks == [4, 4]


# origin: langgraph tests/test_pregel_async.py::test_send_react_interrupt (several Send
# tasks asking at once, answered one id at a time)
def test_interrupts_in_send_tasks_resume_by_id(saver: CheckpointSaver, run: Run) -> None:
    """Each Send task's interrupt has its own id and resumes with its own answer."""

    class S(TypedDict):
        names: list[str]
        answers: Annotated[list[str], operator.add]

    def ask(state: Any) -> dict[str, Any]:
        name = state["name"]
        return {"answers": [f"{name}={interrupt(f'age of {name}?')}"]}

    g = StateGraph(S).add_node("ask", ask)
    g.add_conditional_edges(START, lambda s: [Send("ask", {"name": n}) for n in s["names"]])
    app = g.add_edge("ask", END).compile(saver=saver)
    cfg = thread()
    out = run(app, {"names": ["ann", "bob", "cy"]}, cfg)
    asked = {i.value: i for i in out["__interrupt__"]}
    assert set(asked) == {"age of ann?", "age of bob?", "age of cy?"}
    assert {i.node for i in asked.values()} == {"ask"}
    assert len({i.id for i in asked.values()}) == 3
    answers = {asked[f"age of {n}?"].id: str(age) for n, age in (("ann", 30), ("bob", 40))}
    answers[asked["age of cy?"].id] = "50"
    out = run(app, Command(resume=answers), cfg)
    assert out["answers"] == ["ann=30", "bob=40", "cy=50"]


def test_send_to_a_subgraph(saver: CheckpointSaver, run: Run) -> None:
    """A Send may target a subgraph node: each task runs the subgraph on its arg, and an
    interrupt inside it resumes in that task only."""

    class Inner(TypedDict):
        x: int
        out: Annotated[list[str], operator.add]

    def double(s: Any) -> dict[str, Any]:
        if s["x"] == 2:
            return {"out": [f"2x{s['x']}={interrupt('ok?')}"]}
        return {"out": [f"2x{s['x']}={2 * s['x']}"]}

    sub = StateGraph(Inner).add_node("double", double).add_edge(START, "double")
    sub = sub.add_edge("double", END).compile()

    class Outer(TypedDict):
        xs: list[int]
        out: Annotated[list[str], operator.add]

    g = StateGraph(Outer).add_node("sub", sub)
    g.add_conditional_edges(START, lambda s: [Send("sub", {"x": x, "out": []}) for x in s["xs"]])
    app = g.add_edge("sub", END).compile(saver=saver)
    cfg = thread()
    out = run(app, {"xs": [1, 2, 3]}, cfg)
    (asked,) = out["__interrupt__"]
    assert asked.path[-1] == "double"
    out = run(app, Command(resume="yes"), cfg)
    assert out["out"] == ["2x1=2", "2x2=yes", "2x3=6"]


# origin: graphagent's durability rule for parallel branches, applied to Send tasks
# (langgraph tests/test_pregel.py::test_checkpoint_recovery, for pushed tasks)
def test_failed_fan_out_resumes_only_unfinished_tasks(saver: CheckpointSaver, run: Run) -> None:
    """A fan-out step that fails keeps its finished tasks as pending writes: continuing
    the thread reruns only the failed task."""
    calls: list[int] = []
    finished: set[int] = set()
    broken = {3}

    class S(TypedDict):
        xs: list[int]
        ys: Annotated[list[int], operator.add]

    def square(s: Any) -> dict[str, Any]:
        calls.append(s["x"])
        if s["x"] in broken:
            raise RuntimeError("flaky backend")
        finished.add(s["x"])
        return {"ys": [s["x"] ** 2]}

    g = StateGraph(S).add_node("square", square)
    g.add_conditional_edges(START, lambda s: [Send("square", {"x": x}) for x in s["xs"]])
    app = g.add_edge("square", END).compile(saver=saver)
    cfg = thread()
    with pytest.raises(RuntimeError, match="flaky"):
        run(app, {"xs": [1, 2, 3, 4, 5]}, cfg)
    assert 3 in calls  # (under ainvoke a failure cancels the tasks still running)
    before = set(finished)
    calls.clear()
    broken.clear()
    assert run(app, None, cfg)["ys"] == [1, 4, 9, 16, 25]
    assert 3 in calls and not before & set(calls)  # the finished tasks were not rerun


def test_send_to_unknown_node_is_refused(run: Run) -> None:
    """A Send naming no node fails the run with a message naming the known nodes."""
    g = StateGraph(Items).add_node("a", Node("a"))
    g.add_conditional_edges(START, lambda s: [Send("nope", 1)]).add_edge("a", END)
    with pytest.raises(InvalidRouteError, match=r"'nope'.*known nodes: a"):
        run(g.compile(), {"items": []})


def test_command_input_goto_send(saver: CheckpointSaver, run: Run) -> None:
    """``Command(goto=Send(...))`` as input runs that task on the thread."""
    g = StateGraph(Items).add_node("a", Node("a")).add_edge(START, "a").add_edge("a", END)
    app = g.compile(saver=saver)
    cfg = thread()
    run(app, {"items": []}, cfg)
    assert run(app, Command(goto=[Send("a", 7), Send("a", 8)]), cfg) == {
        "items": ["a", "a|7", "a|8"]
    }


# origin: langgraph tests/test_pregel.py::test_in_one_fan_out_state_graph_defer_node
@pytest.mark.parametrize("waiting_edge", [False, True])
def test_defer_node_waits_for_every_branch(run: Run, waiting_edge: bool) -> None:
    """A deferred node runs once, after the longer branch too has finished."""

    g = StateGraph(DocsState)
    g.add_node("rewrite_query", lambda d: {"query": f"query: {d['query']}"})
    g.add_node("analyzer_one", lambda d: {"query": f"analyzed: {d['query']}"})
    g.add_node("retriever_one", lambda d: {"docs": ["doc1", "doc2"]})
    g.add_node("retriever_two", lambda d: {"docs": ["doc3", "doc4"]})
    g.add_node("qa", lambda d: {"answer": ",".join(d["docs"])}, defer=True)
    g.set_entry_point("rewrite_query")
    g.add_edge("rewrite_query", "retriever_one").add_edge("retriever_one", "analyzer_one")
    g.add_edge("analyzer_one", END)  # graphagent: every node has a path to END
    g.add_edge("rewrite_query", "retriever_two")
    if waiting_edge:
        g.add_edge(["retriever_one", "retriever_two"], "qa")
    else:
        g.add_edge("retriever_one", "qa").add_edge("retriever_two", "qa")
    app = g.set_finish_point("qa").compile()
    assert run(app, {"query": "what is weather in sf"}) == {
        "query": "analyzed: query: what is weather in sf",
        "docs": ["doc1", "doc2", "doc3", "doc4"],
        "answer": "doc1,doc2,doc3,doc4",
    }
    assert [*app.stream({"query": "what is weather in sf"})] == [
        {"rewrite_query": {"query": "query: what is weather in sf"}},
        {"retriever_one": {"docs": ["doc1", "doc2"]}},
        {"retriever_two": {"docs": ["doc3", "doc4"]}},
        {"analyzer_one": {"query": "analyzed: query: what is weather in sf"}},
        {"qa": {"answer": "doc1,doc2,doc3,doc4"}},
    ]


def test_defer_node_after_a_fan_out_of_uneven_branches(saver: CheckpointSaver, run: Run) -> None:
    """Map-reduce with branches of different lengths: the deferred collect step runs
    once, when every Send task and its follow-up are done."""

    class S(TypedDict):
        xs: list[int]
        log: Annotated[list[str], operator.add]
        total: int

    def work(s: Any) -> Command:
        nxt = "polish" if s["x"] % 2 else "collect"
        return Command(update={"log": [f"work{s['x']}"]}, goto=nxt)

    g = StateGraph(S)
    g.add_node("work", work, destinations=["polish", "collect"])
    g.add_node("polish", lambda s: {"log": ["polish"]})
    g.add_node("collect", lambda s: {"total": len(s["log"])}, defer=True)
    g.add_conditional_edges(START, lambda s: [Send("work", {"x": x}) for x in s["xs"]])
    g.add_edge("polish", "collect").add_edge("collect", END)
    app = g.compile(saver=saver)
    cfg = thread()
    out = run(app, {"xs": [1, 2, 3]}, cfg)
    assert out["log"] == ["work1", "work2", "work3", "polish"]
    assert out["total"] == 4
    steps = [s.metadata.get("nodes") for s in app.get_state_history(cfg)]
    assert steps.count(["collect"]) == 1


# origin: langgraph tests/test_pregel.py::test_overwrite_sequential
@pytest.mark.parametrize("as_json", [False, True])
def test_overwrite_sequential(saver: CheckpointSaver, run: Run, as_json: bool) -> None:
    """Overwrite sets an append key past its strategy."""

    class State(TypedDict):
        messages: Annotated[list[str], operator.add]

    def node_b(state: Any) -> dict[str, Any]:
        return {"messages": {"__overwrite__": ["b"]} if as_json else Overwrite(["b"])}

    g = StateGraph(State).add_node("node_a", lambda s: {"messages": ["a"]})
    g.add_node("node_b", node_b).add_edge(START, "node_a").add_edge("node_a", "node_b")
    app = g.add_edge("node_b", END).compile(saver=saver)
    cfg = thread()
    assert run(app, {"messages": ["START"]}, cfg) == {"messages": ["b"]}
    assert app.get_state(cfg).values == {"messages": ["b"]}


# origin: langgraph tests/test_pregel.py::test_overwrite_parallel
def test_overwrite_parallel(saver: CheckpointSaver, run: Run) -> None:
    """An overwrite in a step wins over its siblings' appends in that step."""

    class State(TypedDict):
        messages: Annotated[list[str], operator.add]

    g = StateGraph(State)
    g.add_node("node_a", lambda s: {"messages": ["a"]})
    g.add_node("node_b", lambda s: {"messages": Overwrite(["b"])})
    g.add_node("node_c", lambda s: {"messages": ["c"]})
    g.add_node("node_d", lambda s: {"messages": ["d"]})
    g.add_edge(START, "node_a").add_edge("node_a", "node_b").add_edge("node_a", "node_c")
    g.add_edge(["node_b", "node_c"], "node_d").add_edge("node_d", END)
    assert run(g.compile(saver=saver), {"messages": ["START"]}, thread()) == {
        "messages": ["b", "d"]
    }


# origin: langgraph tests/test_pregel.py::test_overwrite_parallel_error
def test_overwrite_parallel_error(run: Run) -> None:
    """Two overwrites of one key in one step are refused."""

    class State(TypedDict):
        messages: Annotated[list[str], operator.add]

    g = StateGraph(State).add_node("node_a", lambda s: {"messages": ["a"]})
    g.add_node("node_b", lambda s: {"messages": Overwrite(["b"])})
    g.add_node("node_c", lambda s: {"messages": Overwrite(["c"])})
    g.add_edge(START, "node_a").add_edge("node_a", "node_b").add_edge("node_a", "node_c")
    g.add_edge("node_b", END).add_edge("node_c", END)
    with pytest.raises(InvalidUpdateError, match="Overwrite"):
        run(g.compile(), {"messages": ["START"]})


# origin: langgraph tests/test_pregel.py::test_add_sequence
def test_add_sequence() -> None:
    """add_sequence adds the nodes and the edges between them, named or unnamed."""

    class State(TypedDict):
        foo: Annotated[list[str], operator.add]
        bar: str

    def step1(state: Any) -> dict[str, Any]:
        return {"foo": ["step1"], "bar": "baz"}

    def step2(state: Any) -> dict[str, Any]:
        return {"foo": ["step2"]}

    # graphagent: the problems are reported by compile(), all at once
    with pytest.raises(GraphValidationError, match="empty"):
        StateGraph(State).add_sequence([]).compile()
    with pytest.raises(GraphValidationError, match="added twice"):
        StateGraph(State).add_sequence([step1, step1]).add_edge(START, "step1").compile()
    app = StateGraph(State).add_sequence([step1, step2]).add_edge(START, "step1")
    app = app.add_edge("step2", END).compile()
    assert app.invoke({"foo": []}) == {"foo": ["step1", "step2"], "bar": "baz"}
    assert list(app.stream({"foo": []})) == [
        {"step1": {"foo": ["step1"], "bar": "baz"}},
        {"step2": {"foo": ["step2"]}},
    ]
    named = StateGraph(State).add_sequence([("meow1", step1), ("meow2", step2)])
    named_app = named.add_edge(START, "meow1").add_edge("meow2", END).compile()
    assert list(named_app.stream({"foo": []})) == [
        {"meow1": {"foo": ["step1"], "bar": "baz"}},
        {"meow2": {"foo": ["step2"]}},
    ]


# origin: langgraph tests/test_pregel.py::test_bulk_state_updates
def test_bulk_state_updates(saver: CheckpointSaver) -> None:
    """Each super-step of a bulk update is one checkpoint; a super-step's writes merge as
    one step's (two replacing one key are refused)."""

    class State(TypedDict):
        foo: str
        baz: str

    g = StateGraph(State).add_node("node_a", lambda s: {"foo": "bar"})
    g.add_node("node_b", lambda s: {"baz": "qux"}).add_edge(START, "node_a")
    app = g.add_edge("node_a", "node_b").add_edge("node_b", END).compile(saver=saver)
    cfg = thread()
    app.bulk_update_state(cfg, [[({"foo": "bar"}, "node_a")]])
    app.bulk_update_state(cfg, [[({"foo": "updated"}, "node_a"), ({"baz": "new"}, "node_b")]])
    assert app.get_state(cfg).values == {"foo": "updated", "baz": "new"}
    assert len(app.get_state_history(cfg)) == 2

    cfg2 = thread()
    app.bulk_update_state(
        cfg2,
        [
            [{"values": {"foo": "bar"}, "as_node": "node_a"}],
            [({"foo": "updated"}, "node_a"), ({"baz": "new"}, "node_b")],
        ],
    )
    state = app.get_state(cfg2)
    assert state.values == {"foo": "updated", "baz": "new"}
    assert state.next == ("node_b",)  # node_a's edge, from the last super-step's writers
    assert len(app.get_state_history(cfg2)) == 2
    with pytest.raises(InvalidUpdateError, match="both replaced"):
        app.bulk_update_state(cfg2, [[({"foo": "error"}, None), ({"foo": "again"}, None)]])
    with pytest.raises(UserError, match="super-steps"):
        app.bulk_update_state(cfg2, [])
    with pytest.raises(UserError, match="super-steps"):
        app.bulk_update_state(cfg2, [[], []])


async def test_bulk_state_updates_async(saver: CheckpointSaver) -> None:
    """abulk_update_state writes the same checkpoints."""

    class State(TypedDict):
        foo: str

    g = StateGraph(State).add_node("node_a", lambda s: {"foo": "bar"}).add_edge(START, "node_a")
    app = g.add_edge("node_a", END).compile(saver=saver)
    cfg = thread()
    await app.abulk_update_state(cfg, [[({"foo": "x"}, "node_a")], [({"foo": "y"}, None)]])
    assert (await app.aget_state(cfg)).values == {"foo": "y"}
    assert len(await app.aget_state_history(cfg)) == 2


# origin: langgraph tests/test_managed_values.py (RemainingSteps) and the ReAct agent's
# "remaining_steps < 2" guard
def test_remaining_steps_and_is_last_step(run: Run) -> None:
    """Managed keys read the steps left; they are never stored or returned."""

    class State(TypedDict):
        seen: Annotated[list[tuple[int, bool]], operator.add]
        remaining_steps: RemainingSteps
        is_last_step: IsLastStep

    def loop(state: Any) -> dict[str, Any]:
        return {"seen": [(state["remaining_steps"], state["is_last_step"])], "remaining_steps": 99}

    def again(state: Any) -> str:
        return END if state["is_last_step"] or state["remaining_steps"] < 2 else "loop"

    g = StateGraph(State).add_node("loop", loop).add_edge(START, "loop")
    app = g.add_conditional_edges("loop", again).compile()
    out = run(app, {"seen": []}, {"recursion_limit": 4})
    assert out == {"seen": [(4, False), (3, False), (2, False), (1, True)]}


def test_fan_out_is_drawn_in_every_format_and_counted_in_the_overlay(
    saver: CheckpointSaver,
) -> None:
    """A router annotated -> list[Send] draws its edges as fan-out edges; the drawing of a
    thread's run counts the tasks on the edge and the node."""

    class S(TypedDict):
        xs: list[int]
        ys: Annotated[list[int], operator.add]

    def fan_out(state: Any) -> list[Send]:
        return [Send("sq", {"x": x}) for x in state["xs"]]

    g = StateGraph(S).add_node("sq", lambda s: {"ys": [s["x"] ** 2]})
    app = g.add_conditional_edges(START, fan_out, ["sq"]).add_edge("sq", END).compile(saver=saver)
    assert '==>|"Send"|' in app.draw("mermaid")
    assert "arrowhead=crow" in app.draw("dot") and 'label="Send"' in app.draw("dot")
    uml = app.draw("plantuml").splitlines()
    [fan] = [line for line in uml if "-[bold]->" in line]
    assert fan.endswith(" : Send")
    assert "  Send (thick arrow): fan-out: one task per Send" in uml
    plain = StateGraph(S).add_node("sq", lambda s: {}).add_edge(START, "sq").add_edge("sq", END)
    assert "-[bold]->" not in plain.compile().draw("plantuml")
    assert "legend" not in plain.compile().draw("plantuml")
    assert "START =>> sq  (Send)" in app.draw("ascii")
    assert "fan-out: one task per Send" in app.draw("svg")
    cfg = thread()
    app.invoke({"xs": [1, 2, 3]}, cfg)
    assert app.get_state_history(cfg)[0].metadata["tasks"] == {"sq": 3}
    overlay = app.draw("svg", config=cfg)
    assert "Send \u00d73" in overlay and "sq (node), ran 3 times" in overlay
