"""The agent's bookkeeping lives in one private, typed key (``"__agent"``): kept and
checkpointed, never shown in run output, stream events, views or ``threads show``;
hooks answer tool calls through it; threads saved with the old layout are refused."""

from __future__ import annotations

import time
from typing import Any

import pytest

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver, CheckpointWrite, new_checkpoint_id
from graphagent.agent import (
    AgentRecord,
    HumanInTheLoopHook,
    ReactAgent,
    ToolCallLimitHook,
    answer_tool_calls,
    before_model,
)
from graphagent.errors import InvalidUpdateError, SerializationError
from graphagent.graph import END, START, Command, StateGraph
from graphagent.messages import AssistantMessage, ToolCall, ToolResponseMessage, UserMessage
from graphagent.models import FakeChatModel
from graphagent.tools import tool

OLD_KEYS = ("model_calls", "run_model_calls", "tool_calls", "run_tool_calls", "run_finished")


@tool
def search(query: str) -> str:
    """Search."""
    return f"results for {query}"


def calls(*items: tuple[str, str, str]) -> AssistantMessage:
    return AssistantMessage(tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in items])


def test_output_hides_the_record_and_the_state_keeps_it() -> None:
    """invoke() output has no bookkeeping keys; the thread's state holds a typed record."""
    model = FakeChatModel([calls(("1", "search", '{"query": "a"}')), "done", "again"])
    agent = ReactAgent(name="a", model=model, tools=[search], saver=MemorySaver())
    out = agent.invoke("go", thread_id="t")
    assert set(out) == {"messages"}
    assert agent.call("more", thread_id="t").text == "again"
    record = agent.get_state(thread_id="t").values["__agent"]
    assert isinstance(record, AgentRecord)
    assert (record.model_calls, dict(record.tool_calls)) == (3, {"search": 1})
    assert (record.run_model_calls, dict(record.run_tool_calls)) == (1, {})
    assert not any(k in agent.get_state(thread_id="t").values for k in OLD_KEYS)


def test_stream_events_hide_the_record() -> None:
    """Neither "values" nor "updates" events carry private keys."""
    model = FakeChatModel([calls(("1", "search", '{"query": "a"}')), "done"])
    agent = ReactAgent(name="a", model=model, tools=[search])
    for event in agent.stream("go", mode=["values", "updates"]):
        mode, payload = event
        shown = payload if mode == "values" else next(iter(payload.values())) or {}
        assert not any(k.startswith("__") for k in shown), event


def test_hooks_read_the_counts() -> None:
    """A hook reads the run's and the thread's counts with AgentRecord.of(state)."""
    seen: list[tuple[int, int]] = []

    @before_model
    def count(state: Any, config: Any) -> None:
        record = AgentRecord.of(state)
        seen.append((record.run_model_calls, record.model_calls))

    model = FakeChatModel([calls(("1", "search", '{"query": "a"}')), "done", "two"])
    agent = ReactAgent(name="a", model=model, tools=[search], hooks=[count], saver=MemorySaver())
    agent.call("one", thread_id="t")
    agent.call("two", thread_id="t")
    assert seen == [(0, 0), (1, 1), (0, 2)]


def test_rejected_call_is_answered_through_the_record(saver: CheckpointSaver) -> None:
    """A rejection answers the call without touching the assistant message."""
    model = FakeChatModel([calls(("1", "search", '{"query": "a"}')), "ok"])
    hitl = HumanInTheLoopHook(approval_on={"search": "costs money"})
    agent = ReactAgent(name="a", model=model, tools=[search], hooks=[hitl], saver=saver)
    agent.call("go", thread_id="h")
    asked = agent.get_state(thread_id="h").values["messages"][-1]
    agent.call(Command(resume={"1": {"type": "reject", "reason": "no"}}), thread_id="h")
    messages = agent.get_state(thread_id="h").values["messages"]
    assert messages[1] == asked  # the model's message as it was
    assert all("answers" not in m.metadata for m in messages)
    assert isinstance(messages[2], ToolResponseMessage)
    assert messages[2].content == "The user rejected this call: no"
    assert dict(AgentRecord.of(agent.get_state(thread_id="h").values).answers) == {}


def test_limit_hook_answers_without_rewriting_the_message() -> None:
    """ToolCallLimitHook blocks a call through the record; the conversation is only appended."""
    model = FakeChatModel(
        [calls(("1", "search", '{"query": "a"}'), ("2", "search", '{"query": "b"}')), "ok"]
    )
    agent = ReactAgent(
        name="a",
        model=model,
        tools=[search],
        hooks=[ToolCallLimitHook(1)],
        saver=MemorySaver(),
    )
    agent.call("go", thread_id="t")
    messages = agent.get_state(thread_id="t").values["messages"]
    assert all("answers" not in m.metadata for m in messages)
    assert [m.content for m in messages if isinstance(m, ToolResponseMessage)] == [
        "results for a",
        "Not run: the run limit of 1 calls to tools was reached.",
    ]
    # every step after the input appended to the messages: no rewrite of the history
    sources = [s.metadata.get("nodes") for s in agent.get_state_history(thread_id="t")]
    assert sources[-1] is None and all(s for s in sources[:-1])


def test_answer_tool_calls_from_a_user_hook() -> None:
    """A user's hook can answer a pending call itself; the tool does not run."""
    ran: list[str] = []

    @tool
    def pay(amount: int) -> str:
        """Pay."""
        ran.append(f"pay {amount}")
        return "paid"

    from graphagent.agent import after_model
    from graphagent.agent._react import pending_tool_calls

    @after_model
    def veto(state: Any, config: Any) -> Any:
        _, pending = pending_tool_calls(state["messages"])
        big = {c.id: "Refused: too much." for c in pending if c.args["amount"] > 100}
        return answer_tool_calls(state, big) if big else None

    model = FakeChatModel(
        [calls(("1", "pay", '{"amount": 5}'), ("2", "pay", '{"amount": 500}')), "ok"]
    )
    ReactAgent(name="a", model=model, tools=[pay], hooks=[veto]).call("go")
    assert ran == ["pay 5"]
    results = [m.content for m in model.calls[1].messages if isinstance(m, ToolResponseMessage)]
    assert results == ["paid", "Refused: too much."]


def test_record_update_with_an_unknown_field_is_refused() -> None:
    """Writing a field the record lacks names the key and the fields."""

    @before_model
    def bad(state: Any, config: Any) -> Any:
        return {"__agent": {"model_cals": 1}}

    agent = ReactAgent(name="a", model=FakeChatModel(["x"]), hooks=[bad])
    with pytest.raises(InvalidUpdateError, match=r"'__agent'.*model_cals"):
        agent.call("go")


def _old_layout_thread(saver: CheckpointSaver, thread: str) -> None:
    """A thread as the layout before the record wrote it: one key per counter."""
    changes = {
        "messages": ("append", [UserMessage("hi"), AssistantMessage("hello")]),
        "model_calls": ("set", 1),
        "run_model_calls": ("set", 1),
        "tool_calls": ("set", {}),
        "run_tool_calls": ("set", {}),
        "run_finished": ("set", False),
        "structured_retries": ("set", 0),
    }
    write = CheckpointWrite(new_checkpoint_id(), None, 1, changes, (), {}, time.time())
    saver.put(thread, write, expected_head=None)


def test_old_layout_thread_is_refused_with_what_to_do(saver: CheckpointSaver) -> None:
    """A thread saved before the record fails clearly on run and update; it can be deleted."""
    _old_layout_thread(saver, "old")
    agent = ReactAgent(name="a", model=FakeChatModel(["x"]), saver=saver)
    with pytest.raises(SerializationError, match=r"thread 'old'.*older graphagent.*delete"):
        agent.call("again", thread_id="old")
    with pytest.raises(SerializationError, match="model_calls"):
        agent.graph.update_state({"thread_id": "old"}, {"messages": [UserMessage("x")]})
    assert [m.text for m in agent.get_state(thread_id="old").values["messages"]] == [
        "hi",
        "hello",
    ]  # still readable, nothing lost
    agent.delete_thread(thread_id="old")
    assert agent.call("again", thread_id="old").text == "x"


# -- private keys in any graph ------------------------------------------------------------


def test_private_keys_in_a_graph() -> None:
    """Nodes read and write private keys; output and events leave them out."""

    def a(state: Any) -> dict[str, Any]:
        return {"__seen": ["a"], "x": 1}

    def b(state: Any) -> dict[str, Any]:
        return {"x": state["x"] + len(state["__seen"])}

    g = StateGraph().add_node("a", a).add_node("b", b)
    app = g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END).compile()
    assert app.invoke({"x": 0}) == {"x": 2}
    events = list(app.stream({"x": 0}, mode=["updates", "values"]))
    assert ("updates", {"a": {"x": 1}}) in events
    assert all("__seen" not in (p if m == "values" else next(iter(p.values()))) for m, p in events)


def test_private_keys_stay_in_their_graph() -> None:
    """A subgraph neither sees its parent's private keys nor passes its own up."""
    seen: list[bool] = []

    def inner(state: Any) -> dict[str, Any]:
        seen.append("__p" in state)
        return {"__p": "inner", "x": state["x"] + 1}

    sub = StateGraph().add_node("inner", inner).add_edge(START, "inner").add_edge("inner", END)
    sub_app = sub.compile()

    def outer(state: Any) -> dict[str, Any]:
        return {"__p": "outer"}

    def check(state: Any) -> dict[str, Any]:
        return {"parent_p": state["__p"]}

    g = StateGraph().add_node("outer", outer).add_node("sub", sub_app)
    g.add_node("check", check).add_edge(START, "outer").add_edge("outer", "sub")
    g.add_edge("sub", "check").add_edge("check", END)
    out = g.compile().invoke({"x": 0})
    assert out == {"x": 1, "parent_p": "outer"} and seen == [False]


def test_record_update_changes_only_the_fields_named() -> None:
    """A partial update of the record changes the fields it names and keeps the others."""
    import dataclasses

    from graphagent.agent._record import AgentRecordStrategy

    full = AgentRecord(1, {"a": 1}, 2, {"b": 2}, True, 3, {"c": "x"})
    strategy = AgentRecordStrategy()
    for f in dataclasses.fields(AgentRecord):
        marker = object()
        merged = strategy.merge(full, {f.name: marker})
        for g in dataclasses.fields(AgentRecord):
            expected = marker if g is f else getattr(full, g.name)
            assert getattr(merged, g.name) is expected, (f.name, g.name)
    assert strategy.merge(full, AgentRecord()) == AgentRecord()
