"""Compiled subgraphs, ported from Spring AI Alibaba's spring-ai-alibaba-graph-core/src/test/
java/com/alibaba/cloud/ai/graph/CompiledSubGraphTest.java, on every saver.

Spring AI Alibaba resumes with ``updateState`` then ``stream(null, config.withResume())``;
graphagent continues a paused thread with ``invoke(None, config)`` (docs/coming-from.md).
"""

from __future__ import annotations

import uuid
from typing import Any

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver
from graphagent.config import RunnableConfig
from graphagent.graph import END, START, AppendStrategy, ReplaceStrategy, StateGraph


def _schema() -> dict[str, Any]:
    return {
        "newAttribute": ReplaceStrategy(),
        # Spring AI Alibaba's "messages" holds plain strings; graphagent's "messages" key
        # coerces to messages unless told not to (docs/coming-from.md, Differences).
        "messages": AppendStrategy(messages=False),
        "resume_subgraph": ReplaceStrategy(),
    }


def _node(message: str, key: str | None = None) -> Any:
    def run(state: Any) -> dict[str, Any]:
        extra = state.get(key, "") if key else ""
        return {"messages": f"[{message}{extra}]"}

    return run


def _line(names: list[tuple[str, Any]], **compile_kw: Any) -> Any:
    g = StateGraph(_schema())
    previous = START
    for name, fn in names:
        g.add_node(name, fn).add_edge(previous, name)
        previous = name
    return g.add_edge(previous, END).compile(**compile_kw)


def _sub(**compile_kw: Any) -> Any:
    return _line(
        [
            ("NODE3.1", _node("NODE3.1")),
            ("NODE3.2", _node("NODE3.2")),
            ("NODE3.3", _node("NODE3.3")),
            ("NODE3.4", _node("NODE3.4", "newAttribute")),
        ],
        interrupt_after=["NODE3.2"],
        **compile_kw,
    )


# origin: spring-ai-alibaba CompiledSubGraphTest::testCompiledSubgraphReceivesParentContext
def test_compiled_subgraph_receives_parent_context() -> None:
    def child(state: Any, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": f"child:{config.metadata.get('request-id')}"}

    sub = _line([("child", child)])
    g = StateGraph(_schema())
    g.add_node("parent", lambda s: {"messages": "parent"}).add_node("subgraph", sub)
    g.add_node("after", lambda s, config: {"messages": f"after:{'child-only' in config.metadata}"})
    g.add_edge(START, "parent").add_edge("parent", "subgraph").add_edge("subgraph", "after")
    app = g.add_edge("after", END).compile()
    out = app.invoke({}, {"metadata": {"request-id": "context-value"}})
    assert out["messages"] == ["parent", "child:context-value", "after:False"]


def _parent(saver: CheckpointSaver, sub: Any, check_at: str) -> Any:
    nodes = [
        ("NODE1", _node("NODE1")),
        ("NODE2", _node("NODE2")),
        ("NODE3", sub),
        ("NODE4", _node("NODE4", "newAttribute" if check_at == "NODE4" else None)),
        ("NODE5", _node("NODE5", "newAttribute" if check_at == "NODE5" else None)),
    ]
    return _line(nodes, saver=saver)


# origin: spring-ai-alibaba CompiledSubGraphTest::
# testCompileSubGraphWithInterruptionSharingSaver
def test_subgraph_interruption_sharing_saver(saver: CheckpointSaver) -> None:
    app = _parent(saver, _sub(saver=saver), "NODE5")
    config = {"thread_id": uuid.uuid4().hex}
    app.invoke({}, config)
    assert app.get_state(config).next == ("NODE3",)
    app.update_state(config, {"newAttribute": "<myNewValue>"})
    out = app.invoke(None, config)
    assert out["messages"] == [
        "[NODE1]",
        "[NODE2]",
        "[NODE3.1]",
        "[NODE3.2]",
        "[NODE3.3]",
        "[NODE3.4<myNewValue>]",
        "[NODE4]",
        "[NODE5<myNewValue>]",
    ]


# origin: spring-ai-alibaba CompiledSubGraphTest::
# testCompileSubGraphWithInterruptionWithDifferentSaver
def test_subgraph_interruption_with_different_saver(saver: CheckpointSaver) -> None:
    app = _parent(saver, _sub(saver=MemorySaver()), "NODE4")
    config = {"thread_id": uuid.uuid4().hex}
    app.invoke({}, config)
    assert app.get_state(config).next == ("NODE3",)
    app.update_state(config, {"newAttribute": "<myNewValue>"})
    out = app.invoke(None, config)
    assert out["messages"] == [
        "[NODE1]",
        "[NODE2]",
        "[NODE3.1]",
        "[NODE3.2]",
        "[NODE3.3]",
        "[NODE3.4<myNewValue>]",
        "[NODE4<myNewValue>]",
        "[NODE5]",
    ]


# origin: spring-ai-alibaba CompiledSubGraphTest::
# testCompileSubGraphWithInterruptionSharingSaver
# (the subgraph without a breakpoint runs straight through inside the parent)
def test_subgraph_without_breakpoint_runs_through(saver: CheckpointSaver) -> None:
    sub = _line([("NODE3.1", _node("NODE3.1")), ("NODE3.2", _node("NODE3.2"))])
    app = _parent(saver, sub, "NODE5")
    config = {"thread_id": uuid.uuid4().hex}
    assert app.invoke({"newAttribute": "!"}, config)["messages"] == [
        "[NODE1]",
        "[NODE2]",
        "[NODE3.1]",
        "[NODE3.2]",
        "[NODE4]",
        "[NODE5!]",
    ]
    assert [s.metadata.get("nodes") for s in app.get_state_history(config)][:2] == [
        ["NODE5"],
        ["NODE4"],
    ]


# origin: spring-ai-alibaba CompiledSubGraphTest::
# testCompileSubGraphWithInterruptionUsingException
# (graphagent needs no SubGraphInterruptionException: the parent's own breakpoint does it)
def test_parent_breakpoint_before_subgraph_then_update_and_resume(saver: CheckpointSaver) -> None:
    sub = _line([("NODE3.1", _node("NODE3.1")), ("NODE3.2", _node("NODE3.2", "newAttribute"))])
    nodes = [
        ("NODE1", _node("NODE1")),
        ("NODE2", _node("NODE2")),
        ("NODE3", sub),
        ("NODE4", _node("NODE4")),
    ]
    app = _line(nodes, saver=saver, interrupt_after=["NODE2"])
    config = {"thread_id": uuid.uuid4().hex}
    app.invoke({}, config)
    assert app.get_state(config).next == ("NODE3",)
    app.update_state(config, {"newAttribute": "<v>"}, as_node="NODE2")
    assert app.invoke(None, config)["messages"] == [
        "[NODE1]",
        "[NODE2]",
        "[NODE3.1]",
        "[NODE3.2<v>]",
        "[NODE4]",
    ]


# origin: spring-ai-alibaba CompiledSubGraphTest::testNestedCompiledSubgraphFormIssue216
def test_nested_compiled_subgraph(saver: CheckpointSaver) -> None:
    subsub = _line([("foo1", _node("foo1")), ("foo2", _node("foo2")), ("foo3", _node("foo3"))])
    sub = _line([("bar1", _node("bar1")), ("subgraph2", subsub), ("bar2", _node("bar2"))])
    app = _line(
        [("main1", _node("main1")), ("subgraph1", sub), ("main2", _node("main2"))], saver=saver
    )
    config = {"thread_id": uuid.uuid4().hex}
    assert app.invoke({}, config)["messages"] == [
        "[main1]",
        "[bar1]",
        "[foo1]",
        "[foo2]",
        "[foo3]",
        "[bar2]",
        "[main2]",
    ]
    assert app.get_state(config).next == ()
