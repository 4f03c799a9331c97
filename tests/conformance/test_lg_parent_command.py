"""``Command(graph=Command.PARENT)``: a subgraph's node updates and routes its parent.

Ported from LangGraph's libs/langgraph/tests/test_parent_command.py and the parent-command
tests of libs/langgraph/tests/test_pregel.py / test_pregel_async.py, on every saver, sync
and async. Differences (docs/coming-from.md): the parent node declares where the command
may route (``destinations=``), and a node with no parent raises ``InvalidUpdateError``
(LangGraph lets its ``ParentCommand`` escape).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import pytest
from _support import thread

from checkpoint.base import CheckpointSaver
from graphagent.errors import InvalidUpdateError
from graphagent.graph import END, START, Command, StateGraph, interrupt


class Dialog(TypedDict):
    dialog_state: Annotated[list[str], operator.add]


def _goto_parent_graph(saver: CheckpointSaver | None) -> Any:
    sub = StateGraph(Dialog)
    sub.add_node("node_a_child", lambda s: {"dialog_state": ["a_child_state"]})
    sub.add_node(
        "node_b_child",
        lambda s: Command(
            graph=Command.PARENT, goto="node_b_parent", update={"dialog_state": ["b_child_state"]}
        ),
    )
    sub.add_edge(START, "node_a_child").add_edge("node_a_child", "node_b_child")
    sub.add_edge("node_b_child", END)
    main = StateGraph(Dialog)
    main.add_node("node_b_parent", lambda s: {"dialog_state": ["node_b_parent"]})
    main.add_node("subgraph_node", sub.compile(), destinations=("node_b_parent",))
    main.add_edge(START, "subgraph_node").add_edge("node_b_parent", END)
    return main.compile(saver)


# origin: langgraph tests/test_pregel.py::test_parent_command_goto
def test_parent_command_goto(saver: CheckpointSaver) -> None:
    app = _goto_parent_graph(saver)
    config = thread()
    assert app.invoke({"dialog_state": ["init_state"]}, config) == {
        "dialog_state": ["init_state", "b_child_state", "node_b_parent"]
    }
    # the subgraph's own write before the command stays in the subgraph
    history = app.get_state_history(config)
    assert [s.metadata.get("nodes") for s in history][:2] == [["node_b_parent"], ["subgraph_node"]]


# origin: langgraph tests/test_pregel_async.py::test_parent_command_goto
async def test_parent_command_goto_async(saver: CheckpointSaver) -> None:
    app = _goto_parent_graph(saver)
    assert await app.ainvoke({"dialog_state": ["init_state"]}, thread()) == {
        "dialog_state": ["init_state", "b_child_state", "node_b_parent"]
    }


# origin: langgraph tests/test_parent_command.py::test_parent_command_from_nested_subgraph
@pytest.mark.parametrize("jump", [0, 1, 2])
def test_parent_command_from_graph_invoked_in_node(jump: int) -> None:
    class Parent(TypedDict):
        jump_from_idx: int

    class Child(TypedDict):
        jump: bool

    child = StateGraph(Child)
    child.add_node(
        "node", lambda s: Command(graph=Command.PARENT, goto="parent_second") if s["jump"] else None
    )
    child.add_edge(START, "node").add_edge("node", END)
    child_0, child_1 = child.compile(), child.compile()

    def parent_first(state: Any) -> Any:
        child_0.invoke({"jump": state["jump_from_idx"] == 1})
        assert state["jump_from_idx"] != 1, "the command ends the node at child_0"
        child_1.invoke({"jump": state["jump_from_idx"] == 2})
        assert state["jump_from_idx"] != 2, "the command ends the node at child_1"
        return {"jump_from_idx": state["jump_from_idx"]}

    seconds: list[int] = []
    parent = StateGraph(Parent)
    parent.add_node("parent_first", parent_first, destinations=["parent_second"])
    parent.add_node("parent_second", lambda s: seconds.append(1))
    parent.add_edge(START, "parent_first").add_edge("parent_second", END)
    app = parent.compile()
    assert app.invoke({"jump_from_idx": jump}) == {"jump_from_idx": jump}
    assert seconds == ([1] if jump else [])


# origin: langgraph tests/test_pregel.py::test_parent_command_goto_deeply_nested
def test_parent_command_goes_to_the_immediate_parent(saver: CheckpointSaver) -> None:
    def say(word: str) -> Any:
        return lambda s: {"dialog_state": [word]}

    sub_sub = StateGraph(Dialog)
    sub_sub.add_node(
        "sub_sub_child",
        lambda s: Command(
            graph=Command.PARENT, goto="sub_child_3", update={"dialog_state": ["sub_sub_child"]}
        ),
    )
    sub_sub.add_edge(START, "sub_sub_child").add_edge("sub_sub_child", END)
    sub = StateGraph(Dialog)
    sub.add_node("sub_child_1", say("sub_child_1"))
    sub.add_node("sub_child_2", sub_sub.compile(), destinations=("sub_child_3",))
    sub.add_node("sub_child_3", say("sub_child_3"))
    sub.add_edge(START, "sub_child_1").add_edge("sub_child_1", "sub_child_2")
    sub.add_edge("sub_child_3", END)
    main = StateGraph(Dialog)
    main.add_node("child_1", say("child_1")).add_node("child_2", sub.compile())
    main.add_edge(START, "child_1").add_edge("child_1", "child_2").add_edge("child_2", END)
    app = main.compile(saver)
    # as in LangGraph, a plain operator.add key hands the parent the subgraph's whole list
    # (its input included); AppendStrategy() would hand up only the appended items
    assert app.invoke({"dialog_state": ["init"]}, thread()) == {
        "dialog_state": [
            "init",
            "child_1",
            "init",
            "child_1",
            "sub_child_1",
            "sub_sub_child",
            "sub_child_3",
        ]
    }


# origin: langgraph tests/test_pregel.py::test_parent_command (update of a key only the
# parent has)
def test_parent_command_updates_a_key_the_subgraph_lacks(saver: CheckpointSaver) -> None:
    class Child(TypedDict):
        messages: Annotated[list[str], operator.add]

    class Parent(TypedDict):
        messages: Annotated[list[str], operator.add]
        user_name: str

    sub = StateGraph(Child)
    sub.add_node("tool", lambda s: Command(update={"user_name": "Meow"}, graph=Command.PARENT))
    sub.add_edge(START, "tool").add_edge("tool", END)
    parent = StateGraph(Parent).add_node("alice", sub.compile())
    app = parent.add_edge(START, "alice").add_edge("alice", END).compile(saver)
    config = thread()
    assert app.invoke({"messages": ["get user name"]}, config) == {
        "messages": ["get user name"],
        "user_name": "Meow",
    }
    state = app.get_state(config)
    assert (state.next, state.metadata["source"], state.step) == ((), "loop", 1)


# origin: langgraph tests/test_pregel.py::test_timeout_with_parent_command (no parent)
def test_parent_command_without_a_parent_is_refused(saver: CheckpointSaver) -> None:
    g = StateGraph({"value": operator.add})
    g.add_node("parent_cmd", lambda s: Command(graph=Command.PARENT, goto="test_cmd"))
    app = g.add_edge(START, "parent_cmd").add_edge("parent_cmd", END).compile(saver)
    with pytest.raises(InvalidUpdateError, match="not as a node of a parent graph"):
        app.invoke({"value": ["start"]}, thread())


# graphagent: a graph name other than Command.PARENT is refused, naming the choices
def test_unknown_command_graph_is_refused() -> None:
    g = StateGraph().add_node("a", lambda s: Command(graph="elsewhere", goto="b"))
    app = g.add_edge(START, "a").add_edge("a", END).compile()
    with pytest.raises(InvalidUpdateError, match=r"Command\.PARENT"):
        app.invoke({"x": 1})


# origin: langgraph tests/test_pregel.py::test_interrupt_subgraph + parent command (a
# subgraph that paused hands off after the answer)
async def test_parent_command_after_resume_async(saver: CheckpointSaver) -> None:
    def decide(state: Any) -> Any:
        answer = interrupt("who?")
        return Command(graph=Command.PARENT, goto=answer, update={"dialog_state": [answer]})

    sub = StateGraph(Dialog).add_node("decide", decide)
    sub.add_edge(START, "decide").add_edge("decide", END)
    main = StateGraph(Dialog)
    main.add_node("router", sub.compile(), destinations=("billing", "support"))
    main.add_node("billing", lambda s: {"dialog_state": ["billing ran"]})
    main.add_node("support", lambda s: {"dialog_state": ["support ran"]})
    main.add_edge(START, "router").add_edge("billing", END).add_edge("support", END)
    app = main.compile(saver)
    config = thread()
    paused = await app.ainvoke({"dialog_state": []}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["who?"]
    assert await app.ainvoke(Command(resume="support"), config) == {
        "dialog_state": ["support", "support ran"]
    }


# origin: langgraph tests/test_pregel.py::test_parent_command (an agent used as a node hands
# off to a sibling: the supervisor/handoff pattern)
def test_agent_used_as_node_hands_off_to_its_parent(saver: CheckpointSaver) -> None:
    from graphagent.agent import ReactAgent, after_model
    from graphagent.models import FakeChatModel

    @after_model
    def hand_off(state: Any, config: Any) -> Any:
        reply = state["messages"][-1].text
        if reply.startswith("transfer to "):
            return Command(graph=Command.PARENT, goto=reply.removeprefix("transfer to "))
        return None

    triage_model = FakeChatModel(["transfer to billing"])
    triage = ReactAgent(name="triage", model=triage_model, hooks=[hand_off])
    billing = ReactAgent(name="billing", model=FakeChatModel(["your bill is 3 EUR"]))
    g = StateGraph({"messages": operator.add})
    g.add_node("triage", triage, destinations=("billing",))
    g.add_node("billing", billing)
    app = g.add_edge(START, "triage").add_edge("billing", END).compile(saver)
    out = app.invoke({"messages": ["what do I owe?"]}, thread())
    texts = [getattr(m, "text", m) for m in out["messages"]]
    assert texts[-1] == "your bill is 3 EUR"
    assert "transfer to billing" not in texts  # the handoff ended triage's run


# origin: langgraph tests/test_pregel.py::test_parent_command (a tool returns the command:
# the handoff tools of a multi-agent supervisor)
async def test_handoff_tool_of_an_agent_used_as_node(saver: CheckpointSaver) -> None:
    from graphagent.agent import ReactAgent
    from graphagent.messages import AssistantMessage, ToolCall
    from graphagent.models import FakeChatModel
    from graphagent.tools import tool

    @tool
    def transfer_to_billing(reason: str) -> Any:
        """Hand the conversation to the billing agent."""
        return Command(graph=Command.PARENT, goto="billing", update={"messages": [reason]})

    call = ToolCall(id="c1", name="transfer_to_billing", arguments='{"reason": "a bill"}')
    triage = ReactAgent(
        name="triage",
        model=FakeChatModel([AssistantMessage(tool_calls=[call])]),
        tools=[transfer_to_billing],
    )
    billing = ReactAgent(name="billing", model=FakeChatModel(["your bill is 3 EUR"]))
    g = StateGraph({"messages": operator.add})
    g.add_node("triage", triage, destinations=("billing",)).add_node("billing", billing)
    app = g.add_edge(START, "triage").add_edge("billing", END).compile(saver)
    out = await app.ainvoke({"messages": ["what do I owe?"]}, thread())
    texts = [getattr(m, "text", m) for m in out["messages"]]
    assert texts[:2] == ["what do I owe?", "a bill"]
    assert texts[-1] == "your bill is 3 EUR"


# graphagent: a tool's Command.PARENT in an agent run on its own is refused, named
def test_handoff_tool_of_an_agent_on_its_own_is_refused() -> None:
    from graphagent.agent import ReactAgent
    from graphagent.messages import AssistantMessage, ToolCall
    from graphagent.models import FakeChatModel
    from graphagent.tools import tool

    @tool
    def transfer(reason: str) -> Any:
        """Hand off."""
        return Command(graph=Command.PARENT, goto="billing")

    call = ToolCall(id="c1", name="transfer", arguments='{"reason": "x"}')
    agent = ReactAgent(
        name="solo", model=FakeChatModel([AssistantMessage(tool_calls=[call])]), tools=[transfer]
    )
    with pytest.raises(InvalidUpdateError, match="not as a node of a parent graph"):
        agent.invoke("hi")
