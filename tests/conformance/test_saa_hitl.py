"""Human in the loop on agents, nested agents and tools, on every saver.

Ported from Spring AI Alibaba's
spring-ai-alibaba-agent-framework/src/test/java/com/alibaba/cloud/ai/graph/agent/hooks/hip/
HumanInTheLoopTest.java (a real model there; a scripted FakeChatModel here), extended to the
nested agents of issue 12 item 2 and the interrupting tool of item 1.

Deliberate difference (docs/coming-from.md): every pending call is decided in one resume; a
partial answer is refused with a UserError and the thread stays paused, where Spring AI
Alibaba asks again for the calls left undecided.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from checkpoint.base import CheckpointSaver
from graphagent.agent import (
    AgentTool,
    HumanInTheLoopHook,
    LlmRoutingAgent,
    LoopAgent,
    ParallelAgent,
    ReactAgent,
    SequentialAgent,
)
from graphagent.errors import UserError
from graphagent.graph import Command, interrupt
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel
from graphagent.tools import tool


def _call(name: str, arguments: str, call_id: str) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


class Tools:
    """Three tools that record what ran (SAA's poem / weather / tool1..3)."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        ran = self.ran

        @tool
        def poem(topic: str) -> str:
            """Write a short poem."""
            ran.append(f"poem({topic})")
            return f"a poem about {topic}"

        @tool
        def weather(city: str) -> str:
            """The weather in a city."""
            ran.append(f"weather({city})")
            return f"sunny in {city}"

        @tool
        def notes(text: str) -> str:
            """Keep a note."""
            ran.append(f"notes({text})")
            return "noted"

        self.all = [poem, weather, notes]


def _agent(
    saver: CheckpointSaver | None,
    tools: Tools,
    script: list[AssistantMessage | str],
    approve: tuple[str, ...] = ("poem",),
    name: str = "single_agent",
) -> tuple[ReactAgent, FakeChatModel]:
    model = FakeChatModel(script)
    agent = ReactAgent(
        name=name,
        model=model,
        tools=tools.all,
        hooks=[HumanInTheLoopHook(approval_on={t: f"confirm {t}" for t in approve})],
        saver=saver,
        description=f"{name}: writes poems",
    )
    return agent, model


def _tool_results(model: FakeChatModel, call_index: int) -> list[str]:
    return [m.text for m in model.calls[call_index].messages if m.role == "tool"]


def _poem_call(call_id: str = "c1") -> AssistantMessage:
    return AssistantMessage(tool_calls=[_call("poem", '{"topic": "spring"}', call_id)])


def _tid() -> str:
    return uuid.uuid4().hex


# origin: spring-ai-alibaba HumanInTheLoopTest::testApproved
def test_approved(saver: CheckpointSaver) -> None:
    tools = Tools()
    agent, _model = _agent(saver, tools, [_poem_call(), "Here is your poem."])
    t = _tid()
    agent.call("Write a poem", thread_id=t)
    [pause] = agent.graph.get_state(thread_id=t).interrupts
    [request] = pause.value["action_requests"]
    assert (request["id"], request["name"], request["arguments"]) == (
        "c1",
        "poem",
        {"topic": "spring"},
    )
    assert request["description"] == "confirm poem"
    assert tools.ran == []
    reply = agent.call(Command(resume={"c1": {"type": "approve"}}), thread_id=t)
    assert reply.text == "Here is your poem."
    assert tools.ran == ["poem(spring)"]
    assert agent.graph.get_state(thread_id=t).interrupts == ()


# origin: spring-ai-alibaba HumanInTheLoopTest::testRejected
def test_rejected(saver: CheckpointSaver) -> None:
    tools = Tools()
    agent, model = _agent(saver, tools, [_poem_call(), "Understood, no poem."])
    t = _tid()
    agent.call("Write a poem", thread_id=t)
    reply = agent.call(Command(resume={"c1": {"type": "reject", "reason": "no"}}), thread_id=t)
    assert reply.text == "Understood, no poem."
    assert tools.ran == []
    assert _tool_results(model, 1) == ["The user rejected this call: no"]


# origin: spring-ai-alibaba HumanInTheLoopTest::testEdited
def test_edited(saver: CheckpointSaver) -> None:
    tools = Tools()
    agent, model = _agent(saver, tools, [_poem_call(), "Edited poem done."])
    t = _tid()
    agent.call("Write a poem", thread_id=t)
    edit = {"type": "edit", "arguments": {"topic": "autumn"}}
    assert agent.call(Command(resume={"c1": edit}), thread_id=t).text == "Edited poem done."
    assert tools.ran == ["poem(autumn)"]
    assert _tool_results(model, 1) == ["a poem about autumn"]


# origin: spring-ai-alibaba HumanInTheLoopTest::testMultipleToolcallsInAssistantMessage
def test_multiple_tool_calls_in_one_message(saver: CheckpointSaver) -> None:
    tools = Tools()
    both = AssistantMessage(
        tool_calls=[
            _call("poem", '{"topic": "sea"}', "p1"),
            _call("weather", '{"city": "Beijing"}', "w1"),
        ]
    )
    agent, _model = _agent(saver, tools, [both, "Poem and weather."], ("poem", "weather"))
    t = _tid()
    agent.call("poem and weather", thread_id=t)
    [pause] = agent.graph.get_state(thread_id=t).interrupts
    assert [r["id"] for r in pause.value["action_requests"]] == ["p1", "w1"]
    # graphagent: a partial answer is refused and the thread stays paused (SAA asks again)
    with pytest.raises(UserError, match="w1"):
        agent.call(Command(resume={"p1": {"type": "approve"}}), thread_id=t)
    assert agent.graph.get_state(thread_id=t).interrupts == (pause,)
    assert tools.ran == []
    decisions = {"p1": {"type": "approve"}, "w1": {"type": "approve"}}
    assert agent.call(Command(resume=decisions), thread_id=t).text == "Poem and weather."
    assert sorted(tools.ran) == ["poem(sea)", "weather(Beijing)"]


# origin: spring-ai-alibaba HumanInTheLoopTest::testMultipleRoundAssistantMessages
def test_multiple_rounds_each_ask(saver: CheckpointSaver) -> None:
    tools = Tools()
    script: list[AssistantMessage | str] = [
        AssistantMessage(tool_calls=[_call("poem", '{"topic": "rain"}', "r1")]),
        AssistantMessage(tool_calls=[_call("weather", '{"city": "Beijing"}', "r2")]),
        "Done both.",
    ]
    agent, _model = _agent(saver, tools, script, ("poem", "weather"))
    t = _tid()
    agent.call("two rounds", thread_id=t)
    assert agent.graph.get_state(thread_id=t).interrupts[0].value["action_requests"][0]["id"] == (
        "r1"
    )
    agent.call(Command(resume=[{"type": "approve"}]), thread_id=t)
    [pause] = agent.graph.get_state(thread_id=t).interrupts
    assert pause.value["action_requests"][0]["id"] == "r2"
    assert tools.ran == ["poem(rain)"]
    assert agent.call(Command(resume=["approve"]), thread_id=t).text == "Done both."
    assert tools.ran == ["poem(rain)", "weather(Beijing)"]


# origin: spring-ai-alibaba HumanInTheLoopTest::testMultipleToolsWithMixedDecisions
def test_mixed_decisions(saver: CheckpointSaver) -> None:
    tools = Tools()
    three = AssistantMessage(
        tool_calls=[
            _call("poem", '{"topic": "a"}', "t1"),
            _call("weather", '{"city": "b"}', "t2"),
            _call("notes", '{"text": "c"}', "t3"),
        ]
    )
    agent, model = _agent(saver, tools, [three, "Mixed."], ("poem", "weather", "notes"))
    t = _tid()
    agent.call("all tools", thread_id=t)
    decisions = {
        "t1": {"type": "approve"},
        "t2": {"type": "edit", "arguments": {"city": "newValue"}},
        "t3": {"type": "reject", "reason": "not allowed"},
    }
    assert agent.call(Command(resume=decisions), thread_id=t).text == "Mixed."
    assert sorted(tools.ran) == ["poem(a)", "weather(newValue)"]
    assert _tool_results(model, 1) == [
        "a poem about a",
        "sunny in newValue",
        "The user rejected this call: not allowed",
    ]


# origin: spring-ai-alibaba HumanInTheLoopTest (unlisted tools run without asking)
def test_unlisted_tool_in_same_turn_runs_after_decision(saver: CheckpointSaver) -> None:
    tools = Tools()
    turn = AssistantMessage(
        tool_calls=[_call("notes", '{"text": "x"}', "n1"), _call("poem", '{"topic": "y"}', "p1")]
    )
    agent, _model = _agent(saver, tools, [turn, "ok"])
    t = _tid()
    agent.call("go", thread_id=t)
    assert tools.ran == []  # the unlisted call waits for the decision on the listed one
    agent.call(Command(resume={"p1": "approve"}), thread_id=t)
    assert sorted(tools.ran) == ["notes(x)", "poem(y)"]


# -- nested agents (issue 12 item 2) ------------------------------------------------------


def _nested_case(saver: CheckpointSaver, kind: str) -> tuple[Any, Tools, FakeChatModel]:
    tools = Tools()
    inner, model = _agent(None, tools, [_poem_call("n1"), "Poem written."], name="poet")
    if kind == "sequential":
        plain = ReactAgent(name="intro", model=FakeChatModel(["Hello."]))
        outer: Any = SequentialAgent("seq", [plain, inner], saver=saver)
    elif kind == "parallel":
        other = ReactAgent(name="other", model=FakeChatModel(["Other answer."]))
        outer = ParallelAgent("par", [inner, other], saver=saver)
    elif kind == "loop":
        outer = LoopAgent("loop", inner, max_iterations=1, saver=saver)
    else:
        router = FakeChatModel(['["poet"]'])
        other = ReactAgent(name="other", model=FakeChatModel(["x"]), description="other")
        outer = LlmRoutingAgent("router", router, [inner, other], saver=saver)
    return outer, tools, model


# origin: spring-ai-alibaba HumanInTheLoopTest::testApproved, inside each composite agent
@pytest.mark.parametrize("kind", ["sequential", "parallel", "loop", "routing"])
def test_hitl_inside_composite_agent_pauses_outer_thread(saver: CheckpointSaver, kind: str) -> None:
    outer, tools, _ = _nested_case(saver, kind)
    t = _tid()
    outer.invoke("Write a poem", thread_id=t)
    [pause] = outer.graph.get_state(thread_id=t).interrupts
    assert pause.value["action_requests"][0]["id"] == "n1"
    assert tools.ran == []


# origin: spring-ai-alibaba HumanInTheLoopTest::testApproved, resumed through each composite
@pytest.mark.parametrize("kind", ["sequential", "parallel", "loop", "routing"])
def test_hitl_inside_composite_agent_resumes(saver: CheckpointSaver, kind: str) -> None:
    outer, tools, _model = _nested_case(saver, kind)
    t = _tid()
    outer.invoke("Write a poem", thread_id=t)
    outer.invoke(Command(resume={"n1": {"type": "approve"}}), thread_id=t)
    assert tools.ran == ["poem(spring)"]
    assert outer.graph.get_state(thread_id=t).interrupts == ()
    assert "Poem written." in [
        m.text for m in outer.graph.get_state(thread_id=t).values["messages"]
    ] or "Poem written." in str(outer.graph.get_state(thread_id=t).values.get("results"))


# origin: spring-ai-alibaba HumanInTheLoopTest::testApproved with the agent as an AgentTool
def test_hitl_inside_agent_tool_resumes(saver: CheckpointSaver) -> None:
    tools = Tools()
    inner, _ = _agent(None, tools, [_poem_call("n1"), "Poem written."], name="poet")
    boss_model = FakeChatModel(
        [
            AssistantMessage(tool_calls=[_call("poet", '{"input": "a poem"}', "a1")]),
            "The poet delivered.",
        ]
    )
    boss = ReactAgent(name="boss", model=boss_model, tools=[AgentTool(inner)], saver=saver)
    t = _tid()
    boss.call("get me a poem", thread_id=t)
    [pause] = boss.graph.get_state(thread_id=t).interrupts
    assert pause.value["action_requests"][0]["id"] == "n1"
    reply = boss.call(Command(resume={"n1": {"type": "approve"}}), thread_id=t)
    assert reply.text == "The poet delivered."
    assert tools.ran == ["poem(spring)"]
    assert _tool_results(boss_model, 1) == ["Poem written."]


# -- interrupt() inside a tool (issue 12 item 1) ---------------------------------------------


def _asking_tool_agent(saver: CheckpointSaver) -> tuple[ReactAgent, FakeChatModel]:
    @tool
    def transfer(amount: int) -> str:
        """Move money; asks a human first."""
        answer = interrupt({"question": f"transfer {amount}?"})
        return f"transferred {amount}" if answer == "yes" else "cancelled by the user"

    model = FakeChatModel(
        [AssistantMessage(tool_calls=[_call("transfer", '{"amount": 5}', "x1")]), "All done."]
    )
    return ReactAgent(name="bank", model=model, tools=[transfer], saver=saver), model


# origin: langgraph tests/test_pregel.py::test_interrupt_task_functional (a tool asks) /
# spring-ai-alibaba HumanInTheLoopTest (the tool, not a hook, pauses)
def test_interrupt_inside_tool_pauses_and_resumes(saver: CheckpointSaver) -> None:
    agent, model = _asking_tool_agent(saver)
    t = _tid()
    agent.call("send 5", thread_id=t)
    [pause] = agent.graph.get_state(thread_id=t).interrupts
    assert pause.value == {"question": "transfer 5?"}
    assert len(model.calls) == 1  # the model was not told "tool failed"
    assert agent.call(Command(resume="yes"), thread_id=t).text == "All done."
    assert _tool_results(model, 1) == ["transferred 5"]


# -- resuming from elsewhere and asynchronously -----------------------------------------------


# origin: spring-ai-alibaba HumanInTheLoopTest::testApproved, resumed by another "process"
# (a second saver on the same storage, a freshly built agent)
def test_resume_from_another_process(saver: CheckpointSaver, make_saver: Any) -> None:
    tools = Tools()
    first, _ = _agent(saver, tools, [_poem_call(), "unused"])
    t = _tid()
    first.call("Write a poem", thread_id=t)
    second, model = _agent(make_saver(), tools, ["Resumed elsewhere."])
    assert second.graph.get_state(thread_id=t).interrupts[0].value["action_requests"][0]["id"] == (
        "c1"
    )
    assert second.call(Command(resume={"c1": "approve"}), thread_id=t).text == (
        "Resumed elsewhere."
    )
    assert tools.ran == ["poem(spring)"]
    assert _tool_results(model, 0) == ["a poem about spring"]


# origin: spring-ai-alibaba HumanInTheLoopTest::testApproved (async twin)
async def test_approved_async(saver: CheckpointSaver) -> None:
    tools = Tools()
    agent, _model = _agent(saver, tools, [_poem_call(), "Async poem."])
    t = _tid()
    await agent.acall("Write a poem", thread_id=t)
    assert (await agent.graph.aget_state(thread_id=t)).interrupts
    reply = await agent.acall(Command(resume={"c1": {"type": "approve"}}), thread_id=t)
    assert reply.text == "Async poem."
    assert tools.ran == ["poem(spring)"]


# origin: spring-ai-alibaba HumanInTheLoopTest::testRejected (a wrong decision changes nothing)
def test_bad_decision_is_refused_and_thread_stays_paused(saver: CheckpointSaver) -> None:
    tools = Tools()
    agent, _model = _agent(saver, tools, [_poem_call(), "ok"])
    t = _tid()
    agent.call("Write a poem", thread_id=t)
    before = agent.graph.get_state(thread_id=t)
    with pytest.raises(UserError, match="approve, edit or reject"):
        agent.call(Command(resume={"c1": {"type": "maybe"}}), thread_id=t)
    after = agent.graph.get_state(thread_id=t)
    assert (after.checkpoint_id, after.interrupts) == (before.checkpoint_id, before.interrupts)
    assert agent.call(Command(resume={"c1": "approve"}), thread_id=t).text == "ok"
