"""Key strategies and PlantUML drawings, ported from Spring AI Alibaba's graph core tests
(spring-ai-alibaba-graph-core/src/test/java/com/alibaba/cloud/ai/graph/...: the Java file
named per test) and the strategies' documented behaviour (state/strategy/AppendStrategy,
MergeStrategy).

Deliberate differences (docs/coming-from.md): removal is by value (``RemoveValue(x)``),
not by a Java ``RemoveIdentifier`` comparator; a ``MergeStrategy`` key reads as ``{}``
before its first write.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from typing import Any

import pytest
from pydantic import BaseModel

from checkpoint.base import CheckpointSaver
from graphagent.errors import InvalidUpdateError
from graphagent.graph import (
    END,
    START,
    AppendStrategy,
    Change,
    MergeStrategy,
    RemoveValue,
    ReplaceAll,
    ReplaceStrategy,
    StateGraph,
)

# -- AppendStrategy ----------------------------------------------------------------------


# origin: AppendStrategyMutationRegressionTest.java (issue 4757)
def test_single_value_append_does_not_change_the_old_list() -> None:
    """Appending one value returns a new list; the old one is untouched."""
    old = ["question"]
    merged = AppendStrategy().merge(old, "user-answer")
    assert old == ["question"] and merged == ["question", "user-answer"] and merged is not old


# origin: state/strategy/AppendStrategy.java (allowDuplicate = false)
def test_append_without_duplicates() -> None:
    """``allow_duplicates=False`` skips items already in the list or earlier in the update,
    and reports only the items it appended."""
    strategy = AppendStrategy(allow_duplicates=False)
    merged, change = strategy.merge_change(["a", "b"], ["b", "c", "c", "d"])
    assert merged == ["a", "b", "c", "d"] and change == Change("append", ["c", "d"])
    assert strategy.merge(["a"], "a") == ["a"]
    assert repr(strategy) == "AppendStrategy(allow_duplicates=False)"


# origin: state/strategy/AppendStrategy.java (RemoveIdentifier)
def test_remove_by_value() -> None:
    """``RemoveValue(x)`` removes the first item equal to ``x``, alone or among new items."""
    strategy = AppendStrategy()
    assert strategy.merge(["a", "b", "a"], RemoveValue("a")) == ["b", "a"]
    merged, change = strategy.merge_change(["a", "b"], [RemoveValue("b"), "c", RemoveValue("z")])
    assert merged == ["a", "c"] and change.kind == "reset"
    assert strategy.merge([{"id": 1}, {"id": 2}], RemoveValue({"id": 1})) == [{"id": 2}]


# origin: state/strategy/AppendStrategy.java (ReplaceAllWith)
def test_replace_all() -> None:
    """``ReplaceAll(items)`` makes the list ``items``; items after it in the update append."""
    strategy = AppendStrategy()
    assert strategy.merge(["a", "b"], ReplaceAll(["x"])) == ["x"]
    assert strategy.merge(["a"], [ReplaceAll(["x"]), "y"]) == ["x", "y"]
    assert strategy.merge(["a"], ReplaceAll()) == []


def test_markers_on_a_messages_key_keep_messages() -> None:
    """On a messages key the markers work too, and what stays is messages."""
    from graphagent.messages import UserMessage

    strategy = AppendStrategy(messages=True)
    merged = strategy.merge([UserMessage("a", id="1")], [ReplaceAll(["fresh"])])
    assert [m.text for m in merged] == ["fresh"] and isinstance(merged[0], UserMessage)


def test_markers_in_a_graph_on_every_saver(saver: CheckpointSaver) -> None:
    """Removal, replacement and no-duplicate appends through a graph are stored as the new
    list on every saver, sync and async; a paused step keeps the markers it wrote."""
    from graphagent.graph import interrupt

    g = StateGraph({"tags": AppendStrategy(allow_duplicates=False), "items": AppendStrategy()})
    g.add_node("tag", lambda s: {"tags": ["x", "y", "x"], "items": RemoveValue("b")})
    g.add_node("ask", lambda s: {"items": ReplaceAll([interrupt("replace with?")])})
    app = g.add_edge(START, "tag").add_edge("tag", "ask").add_edge("ask", END).compile(saver=saver)
    thread = uuid.uuid4().hex
    app.invoke({"tags": ["x"], "items": ["a", "b", "c"]}, thread_id=thread)
    assert app.get_state(thread_id=thread).values == {"tags": ["x", "y"], "items": ["a", "c"]}
    from graphagent.graph import Command

    out = asyncio.run(app.ainvoke(Command(resume="z"), thread_id=thread))
    assert out == {"tags": ["x", "y"], "items": ["z"]}
    assert app.get_state(thread_id=thread).values == out


# -- MergeStrategy -----------------------------------------------------------------------


@dataclasses.dataclass
class Profile:
    name: str | None = None
    tags: dict[str, Any] | None = None


class Settings(BaseModel):
    theme: str | None = None
    size: int | None = None
    extra: dict[str, Any] | None = None


# origin: state/strategy/MergeStrategy.java (null handling)
def test_merge_none_keeps_the_old_value() -> None:
    """A ``None`` update keeps the old value; a first write takes the update as it is."""
    strategy = MergeStrategy()
    assert strategy.merge({"a": 1}, None) == {"a": 1}
    assert strategy.merge(None, {"a": 1}) == {"a": 1}
    assert strategy.merge(None, 5) == 5


# origin: state/strategy/MergeStrategy.java (scalars)
def test_merge_scalars_replace() -> None:
    """Values without fields (numbers, text, lists) of one type replace."""
    strategy = MergeStrategy()
    assert strategy.merge(1, 2) == 2
    assert strategy.merge("a", "b") == "b"
    assert strategy.merge([1], [2]) == [2]


# origin: state/strategy/MergeStrategy.java (object fields)
def test_merge_dataclasses_field_by_field() -> None:
    """A dataclass update keeps the old fields it leaves ``None``; nested dicts merge."""
    merged = MergeStrategy().merge(Profile("ada", {"a": 1}), Profile(None, {"b": 2}))
    assert merged == Profile("ada", {"a": 1, "b": 2})


def test_merge_pydantic_models_field_by_field() -> None:
    """A pydantic update merges the same way and stays a model."""
    old = Settings(theme="dark", size=12, extra={"x": 1})
    merged = MergeStrategy().merge(old, Settings(size=14, extra={"y": 2}))
    assert merged == Settings(theme="dark", size=14, extra={"x": 1, "y": 2})
    assert old.size == 12


# origin: state/strategy/MergeStrategy.java ("Cannot merge incompatible types")
def test_merge_of_different_types_is_refused() -> None:
    """A dict into a dataclass, a list into a dict, text into a number: each refused."""
    strategy = MergeStrategy()
    with pytest.raises(TypeError, match="dict"):
        strategy.merge(Profile("a"), {"name": "b"})
    with pytest.raises(TypeError, match="takes a dict"):
        strategy.merge({"a": 1}, [1])
    with pytest.raises(TypeError, match="str into int"):
        strategy.merge(1, "2")


def test_merge_strategy_in_a_graph(saver: CheckpointSaver) -> None:
    """A dataclass-valued key merged by two nodes in one step, stored on every saver."""
    from checkpoint import serde

    serde.register(Profile, name=f"test.Profile.{uuid.uuid4().hex}")
    g = StateGraph({"profile": MergeStrategy()})
    g.add_node("a", lambda s: {"profile": Profile(name="ada")})
    g.add_node("b", lambda s: {"profile": Profile(tags={"role": "admin"})})
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    app = g.compile(saver=saver)
    thread = uuid.uuid4().hex
    out = app.invoke({"profile": Profile(tags={"team": "x"})}, thread_id=thread)
    assert out["profile"] == Profile("ada", {"team": "x", "role": "admin"})
    assert app.get_state(thread_id=thread).values == out
    bad = StateGraph({"p": MergeStrategy()}).add_node("n", lambda s: {"p": [1]})
    with pytest.raises(InvalidUpdateError, match=r"node 'n'.*'p'"):
        bad.add_edge(START, "n").add_edge("n", END).compile().invoke({"p": {"a": 1}})


# -- default strategy --------------------------------------------------------------------


# origin: DefaultKeyStrategyTest.java::testDefaultKeyStrategyIsReplace
def test_unnamed_keys_replace_by_default() -> None:
    """Keys no strategy names replace; new keys are added, others unchanged."""
    g = StateGraph().add_node("n", lambda s: {"key1": "new_value1", "key3": "new_value3"})
    app = g.add_edge(START, "n").add_edge("n", END).compile()
    assert app.invoke({"key1": "original_value1", "key2": "original_value2"}) == {
        "key1": "new_value1",
        "key2": "original_value2",
        "key3": "new_value3",
    }


# origin: DefaultKeyStrategyTest.java::testExplicitStrategyOverridesDefault
def test_named_strategy_wins_over_the_default() -> None:
    """A named key keeps its strategy whatever the default says."""
    g = StateGraph({"append_key": AppendStrategy()}, default_strategy=ReplaceStrategy())
    g.add_node("n", lambda s: {"append_key": "_appended", "replace_key": "replaced"})
    app = g.add_edge(START, "n").add_edge("n", END).compile()
    assert app.invoke({"replace_key": "original"}) == {
        "append_key": ["_appended"],
        "replace_key": "replaced",
    }


# origin: KeyStrategyFactoryBuilderTest.java::buildTest (defaultStrategy)
def test_default_strategy_for_unnamed_keys() -> None:
    """``default_strategy=AppendStrategy()`` makes every unnamed key append, parallel
    writers included; a named key keeps its own strategy."""
    g = StateGraph({"prop1": ReplaceStrategy()}, default_strategy=AppendStrategy())
    g.add_node("a", lambda s: {"log": "a", "prop1": "test"})
    g.add_node("b", lambda s: {"log": ["b"]})
    g.add_edge(START, "a").add_edge(START, "b").add_edge("a", END).add_edge("b", END)
    out = g.compile().invoke({"log": ["start"], "input": "test1"})
    assert out == {"log": ["start", "a", "b"], "prop1": "test", "input": ["test1"]}


def test_default_strategy_reaches_a_subgraph_parent() -> None:
    """A subgraph's writes to a parent key without a named strategy use the parent's
    default (appended items go up as items)."""
    sub = StateGraph({"log": AppendStrategy()}).add_node("s", lambda s: {"log": "sub"})
    sub_app = sub.add_edge(START, "s").add_edge("s", END).compile()
    parent = StateGraph(default_strategy=AppendStrategy()).add_node("sub", sub_app)
    app = parent.add_edge(START, "sub").add_edge("sub", END).compile()
    assert app.invoke({"log": ["p"]})["log"] == ["p", "sub"]


def test_default_strategy_must_be_a_strategy() -> None:
    """Something that cannot merge is refused when the graph is built."""
    with pytest.raises(TypeError, match="not a key strategy"):
        StateGraph(default_strategy=42)


# -- PlantUML ----------------------------------------------------------------------------


def _plantuml_lines(app: Any) -> list[str]:
    return app.draw("plantuml").splitlines()


# origin: StateGraphRepresentationTest.java::testSimpleGraph
def test_plantuml_simple_graph() -> None:
    """A PlantUML document: START and END circles, one box per node, one arrow per edge,
    nodes named by ids and labelled by name."""
    g = StateGraph()
    for name in ("agent_3", "agent_1", "agent_2"):
        g.add_node(name, lambda s: None)
    g.add_edge(START, "agent_1").add_edge("agent_2", END)
    g.add_edge("agent_1", "agent_3").add_edge("agent_3", "agent_2")
    lines = _plantuml_lines(g.compile(name="Graph Diagram"))
    assert lines[0] == "@startuml" and lines[-1] == "@enduml"
    assert 'title "Graph Diagram"' in lines
    assert any(line.startswith('circle "START" as ga_start') for line in lines)
    assert any(line.startswith('circle "END" as ga_end') for line in lines)
    for name in ("agent_1", "agent_2", "agent_3"):
        assert any(line.startswith(f'rectangle "{name}" as n_{name} ') for line in lines)
    edges = [line for line in lines if "-->" in line]
    assert edges == [
        "ga_start --> n_agent_1",
        "n_agent_3 --> n_agent_2",
        "n_agent_1 --> n_agent_3",
        "n_agent_2 --> ga_end",
    ]


# origin: StateGraphRepresentationTest.java::testCorrectionProcessGraph
def test_plantuml_conditional_edges_are_dotted_and_labelled() -> None:
    """Conditional edges are dotted, with their path map's keys as labels."""
    g = StateGraph().add_node("evaluate_result", lambda s: None)
    g.add_node("agent_review", lambda s: None)
    g.add_edge("agent_review", "evaluate_result").add_edge(START, "evaluate_result")
    g.add_conditional_edges(
        "evaluate_result",
        lambda s: "OK",
        {"OK": END, "ERROR": "agent_review"},
    )
    lines = _plantuml_lines(g.compile())
    assert "n_evaluate_result ..> ga_end : OK" in lines
    assert "n_evaluate_result ..> n_agent_review : ERROR" in lines
    assert "n_agent_review --> n_evaluate_result" in lines


# origin: StateGraphRepresentationTest.java::testWithParallelBranch
def test_plantuml_parallel_branch_and_join() -> None:
    """A fan-out and a join draw one arrow per source."""
    g = StateGraph()
    for name in ("A", "A1", "A2", "B"):
        g.add_node(name, lambda s: None)
    g.add_edge(START, "A").add_edge("A", "A1").add_edge("A", "A2")
    g.add_edge(["A1", "A2"], "B").add_edge("B", END)
    lines = _plantuml_lines(g.compile())
    for edge in ("n_A --> n_A1", "n_A --> n_A2", "n_A1 --> n_B", "n_A2 --> n_B"):
        assert edge in lines


# origin: StateGraphRepresentationTest.java::testSubGraph
def test_plantuml_subgraph_is_a_box_holding_its_nodes() -> None:
    """A subgraph node is a box holding its own nodes; edges attach at its START/END."""
    inner = StateGraph().add_node("foo1", lambda s: None).add_node("foo2", lambda s: None)
    sub = inner.add_edge(START, "foo1").add_edge("foo1", "foo2").add_edge("foo2", END).compile()
    g = StateGraph().add_node("main1", lambda s: None).add_node("subgraph1", sub)
    g.add_edge(START, "main1").add_edge("main1", "subgraph1").add_edge("subgraph1", END)
    text = g.compile().draw("plantuml")
    assert 'rectangle "subgraph1" as n_subgraph1 #' in text and text.count("{") == 1
    assert "  n_subgraph1__n_foo1 --> n_subgraph1__n_foo2" in text
    assert "n_main1 --> n_subgraph1__ga_start" in text
    assert "n_subgraph1__ga_end --> ga_end" in text


def test_plantuml_escapes_names_and_notes_open_routers() -> None:
    """Quotes in names cannot end a label; a router with no path map points at an
    "any node" box with a note saying why."""
    g = StateGraph().add_node('say "hi"', lambda s: None).add_node("r", lambda s: None)
    g.add_edge(START, "r").add_conditional_edges("r", lambda s: 'say "hi"')
    g.add_edge('say "hi"', END)
    text = g.compile().draw("plantuml")
    assert "rectangle \"say ''hi''\" as n_say__hi_ " in text
    assert "n_r ..> ga_any" in text and "note right of ga_any" in text


def test_plantuml_agent_graph_shows_kinds_tools_and_the_edge_key() -> None:
    """An agent's graph shows node kinds, its tools and the key of its edge labels."""
    from graphagent.agent import ReactAgent
    from graphagent.models import FakeChatModel
    from graphagent.tools import tool

    @tool
    def weather(city: str) -> str:
        """Weather for a city."""
        return "sunny"

    agent = ReactAgent(name="a", model=FakeChatModel(["hi"]), tools=[weather])
    text = agent.graph.draw("plantuml")
    assert "<size:10>weather</size>" in text and "legend right" in text
