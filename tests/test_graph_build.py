"""compile() validation: every problem named, with the node and the fix."""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from pydantic import BaseModel

from graphagent.errors import GraphValidationError, UserError
from graphagent.graph import END, START, AppendStrategy, StateGraph


def noop(state: object) -> None:
    return None


def compile_error(g: StateGraph) -> str:
    with pytest.raises(GraphValidationError) as info:
        g.compile()
    return str(info.value)


def test_unknown_edge_target_is_named() -> None:
    """An edge to a node that was never added names that node and how to add it."""
    g = StateGraph().add_node("a", noop).add_edge(START, "a").add_edge("a", "b")
    assert "unknown node 'b'" in compile_error(g)
    assert "add_node('b'" in compile_error(g)


def test_duplicate_and_reserved_names() -> None:
    """Adding a node twice, or naming one like START/END, fails at compile."""
    g = StateGraph().add_node("a", noop).add_node("a", noop).add_node(START, noop)
    g.add_edge(START, "a").add_edge("a", END)
    msg = compile_error(g)
    assert "added twice" in msg
    assert "reserved" in msg


def test_unreachable_node() -> None:
    """A node with no way in from START is reported."""
    g = StateGraph().add_node("a", noop).add_node("island", noop)
    g.add_edge(START, "a").add_edge("a", END).add_edge("island", END)
    assert "'island' is unreachable from START" in compile_error(g)


def test_no_path_to_end() -> None:
    """A node that can never reach END is reported with the fix."""
    g = StateGraph().add_node("a", noop).add_node("b", noop)
    g.add_edge(START, "a").add_edge("a", END).add_edge(START, "b")
    msg = compile_error(g)
    assert "'b' has no path to END" in msg


def test_conditional_path_map_target_must_exist() -> None:
    """A path map pointing at a missing node names the key and the node."""
    g = StateGraph().add_node("a", noop).add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "x", {"x": END, "y": "ghost"})
    msg = compile_error(g)
    assert "path 'y'" in msg and "'ghost'" in msg


def test_no_entry_point() -> None:
    """A graph without an edge from START says how to add one."""
    g = StateGraph().add_node("a", noop).add_edge("a", END)
    assert "no entry point" in compile_error(g)


def test_all_problems_reported_at_once() -> None:
    """Several problems come in one error, not one per compile attempt."""
    g = StateGraph().add_node("a", noop).add_edge(START, "a").add_edge("a", "x")
    g.add_edge("a", "y")
    msg = compile_error(g)
    assert "'x'" in msg and "'y'" in msg


def test_unknown_interrupt_node() -> None:
    """Breakpoints on nodes that don't exist are rejected."""
    g = StateGraph().add_node("a", noop).add_edge(START, "a").add_edge("a", END)
    with pytest.raises(GraphValidationError, match="interrupt_before: unknown node 'zzz'"):
        g.compile(interrupt_before=["zzz"])


def test_async_router_rejected() -> None:
    """Routers must be plain functions; the error says where to do async work."""

    async def router(state: object) -> str:
        return END

    g = StateGraph().add_node("a", noop).add_edge(START, "a")
    g.add_conditional_edges("a", router, [END])
    assert "router must be a plain function" in compile_error(g)


def test_destinations_declare_command_paths() -> None:
    """A node that routes only by Command(goto=...) compiles when it declares destinations."""
    g = StateGraph().add_node("a", noop, destinations=(END,)).add_edge(START, "a")
    app = g.compile()
    assert app.graph.has_edge("a", END)


def test_typed_schemas() -> None:
    """TypedDict and pydantic schemas read strategies from Annotated metadata."""

    class TD(TypedDict):
        items: Annotated[list[int], AppendStrategy()]
        total: Annotated[int, operator.add]
        name: str

    class PM(BaseModel):
        items: Annotated[list[int], AppendStrategy()] = []
        total: Annotated[int, operator.add] = 0
        name: str = "x"

    for schema in (TD, PM):
        g = StateGraph(schema)
        g.add_node("a", lambda s: {"items": [1], "total": 2})
        g.add_node("b", lambda s: {"items": [3], "total": 5, "name": "done"})
        app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile()
        out = app.invoke({"items": [0], "total": 1, "name": "n"})
        assert out == {"items": [0, 1, 3], "total": 8, "name": "done"}


def test_networkx_view_is_a_copy() -> None:
    """CompiledGraph.graph exposes node kinds and edge attrs, and edits don't leak back."""
    g = StateGraph().add_node("a", noop).add_node("b", noop).add_edge(START, "a")
    g.add_conditional_edges("a", lambda s: "b", {"go": "b", "stop": END}).add_edge("b", END)
    app = g.compile()
    view = app.graph
    assert view.nodes["a"]["kind"] == "node"
    assert view.edges["a", "b"]["conditional"] is True
    assert view.edges["a", "b"]["label"] == "go"
    view.remove_node("a")
    assert "a" in app.graph


def test_the_compiled_graph_cannot_be_changed_afterwards() -> None:
    """Nothing can be written into a compiled graph: its saver, breakpoints and identity are
    the plan compile() froze; with_saver() makes another graph and leaves this one as it is."""
    from checkpoint import MemorySaver

    app = StateGraph().add_node("a", noop).add_edge(START, "a").add_edge("a", END).compile()
    for name, value in [("saver", MemorySaver()), ("agent", object()), ("name", "x")]:
        with pytest.raises(AttributeError):
            setattr(app, name, value)
    with pytest.raises(AttributeError):
        app.plan.saver = MemorySaver()  # type: ignore[misc]
    kept = app.with_saver(MemorySaver())
    assert app.saver is None and kept.saver is not None
    assert kept.plan.topology is app.plan.topology
    with pytest.raises(UserError, match="needs a saver"):
        app.get_state({"thread_id": "t"})


def test_stored_check_refuses_a_thread_on_every_way_in() -> None:
    """compile(stored_check=...) runs on the stored values before invoke, a resume and
    update_state continue a thread, and its message names the thread."""
    from checkpoint import MemorySaver
    from graphagent.errors import SerializationError

    seen: list[dict[str, Any]] = []

    def check(values: Any) -> str | None:
        seen.append(dict(values))
        return "stored by an old build" if values.get("old") else None

    g = StateGraph().add_node("a", lambda s: {"n": s.get("n", 0) + 1})
    app = g.add_edge(START, "a").add_edge("a", END).compile(MemorySaver(), stored_check=check)
    app.invoke({"n": 0}, {"thread_id": "t"})
    assert seen == []  # a new thread has nothing stored to check
    app.invoke({"n": 0}, {"thread_id": "t"})
    assert seen == [{"n": 1}]
    app.update_state({"thread_id": "t"}, {"old": True})
    for attempt in (
        lambda: app.invoke({"n": 0}, {"thread_id": "t"}),
        lambda: app.invoke(None, {"thread_id": "t"}),
        lambda: app.update_state({"thread_id": "t"}, {"old": False}),
        lambda: list(app.stream({"n": 0}, {"thread_id": "t"})),
    ):
        with pytest.raises(SerializationError, match="thread 't': stored by an old build"):
            attempt()
    assert app.get_state({"thread_id": "t"}).values["old"] is True


async def test_stored_check_refuses_under_ainvoke_too() -> None:
    """The async drivers run the same check."""
    from checkpoint import MemorySaver
    from graphagent.errors import SerializationError

    g = StateGraph().add_node("a", lambda s: {"n": 1}).add_edge(START, "a").add_edge("a", END)
    app = g.compile(MemorySaver(), stored_check=lambda v: "no" if v.get("n") else None)
    await app.ainvoke({}, {"thread_id": "t"})
    with pytest.raises(SerializationError, match="thread 't': no"):
        await app.ainvoke({}, {"thread_id": "t"})
    with pytest.raises(SerializationError, match="thread 't': no"):
        await app.aupdate_state({"thread_id": "t"}, {"n": 2})


def test_an_agent_compiles_its_identity_in() -> None:
    """An agent hands itself to compile(): its graph's plan names it (traces read it from
    there), and copying the agent with another saver keeps that identity."""
    from checkpoint import MemorySaver
    from graphagent.agent import ReactAgent
    from graphagent.models import FakeChatModel

    agent = ReactAgent(name="helper", model=FakeChatModel(["hi"]))
    assert agent.graph.plan.agent is agent
    assert agent.graph.plan.stored_check is not None
    other = agent.graph.with_saver(MemorySaver())
    assert other.plan.agent is agent and agent.graph.saver is None
