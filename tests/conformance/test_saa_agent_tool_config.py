"""What a sub-agent sees of its caller's run, ported from Spring AI Alibaba's
spring-ai-alibaba-agent-framework/src/test/java/com/alibaba/cloud/ai/graph/agent/
AgentToolConfigPropagationTest.java, plus the same question for composite agents.

graphagent names the sub-thread ``"<caller thread>/<agent name>"`` (Spring AI Alibaba:
``"<thread>_<agent>"``); the tests assert graphagent's form.
"""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver
from graphagent.agent import AgentTool, ReactAgent, SequentialAgent, before_model
from graphagent.config import RunnableConfig
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel
from graphagent.tools import ToolContext


def _capturing_child(seen: list[RunnableConfig], saver: CheckpointSaver | None) -> ReactAgent:
    @before_model
    def capture(state: Any, config: RunnableConfig) -> None:
        seen.append(config)

    return ReactAgent(
        name="child_agent",
        model=FakeChatModel(["child response"] * 3),
        hooks=[capture],
        saver=saver,
        description="answers for the parent",
    )


def _parent_config() -> RunnableConfig:
    return RunnableConfig(thread_id="parent-thread", metadata={"business_key": "business-value"})


# origin: spring-ai-alibaba AgentToolConfigPropagationTest::
# shouldOverrideAgentMetadataAndPreserveBusinessMetadata (the sub-thread and the answer)
def test_agent_tool_runs_child_on_derived_thread() -> None:
    seen: list[RunnableConfig] = []
    child = _capturing_child(seen, MemorySaver())
    ctx = ToolContext(config=_parent_config(), tool_call_id="c1")
    assert AgentTool(child).call('{"input": "hello"}', ctx) == "child response"
    assert seen[0].thread_id == "parent-thread/child_agent"
    assert (
        child.graph.get_state(thread_id="parent-thread/child_agent").values["messages"][0].text
        == "hello"
    )


# origin: spring-ai-alibaba AgentToolConfigPropagationTest::
# shouldOverrideAgentMetadataAndPreserveBusinessMetadata (business metadata kept)
def test_agent_tool_preserves_business_metadata() -> None:
    seen: list[RunnableConfig] = []
    child = _capturing_child(seen, MemorySaver())
    AgentTool(child).call('{"input": "hello"}', ToolContext(config=_parent_config()))
    assert seen[0].metadata["business_key"] == "business-value"


# origin: spring-ai-alibaba AgentToolConfigPropagationTest (through a real parent agent run)
def test_agent_tool_metadata_from_parent_run(saver: CheckpointSaver) -> None:
    seen: list[RunnableConfig] = []
    child = _capturing_child(seen, None)
    parent = ReactAgent(
        name="parent",
        model=FakeChatModel(
            [
                AssistantMessage(
                    tool_calls=[ToolCall(id="a1", name="child_agent", arguments='{"input": "x"}')]
                ),
                "parent done",
            ]
        ),
        tools=[AgentTool(child)],
        saver=saver,
    )
    parent.call("go", config={"thread_id": "p1", "metadata": {"user_id": "ada"}})
    assert seen and seen[0].metadata["user_id"] == "ada"


# origin: spring-ai-alibaba AgentToolConfigPropagationTest::
# shouldIncludeContextInInvocationFailureMessage
def test_agent_tool_failure_names_the_agent() -> None:
    @before_model
    def failing(state: Any) -> None:
        raise RuntimeError("boom")

    child = ReactAgent(
        name="failing_child_agent",
        model=FakeChatModel(["unused"]),
        hooks=[failing],
        saver=MemorySaver(),
        description="fails",
    )
    with pytest.raises(RuntimeError, match="boom") as info:
        AgentTool(child).call('{"input": "hello"}', ToolContext(config=_parent_config()))
    text = "".join([str(info.value), *getattr(info.value, "__notes__", [])])
    assert "failing_child_agent" in text
    assert "parent-thread" in text and "hello" in text


# origin: spring-ai-alibaba CompiledSubGraphTest::testCompiledSubgraphReceivesParentContext,
# for composite agents: every sub-agent node sees the run's config (thread, metadata)
def test_sequential_sub_agents_see_run_metadata(saver: CheckpointSaver) -> None:
    seen: list[RunnableConfig] = []
    child = _capturing_child(seen, None)
    first = ReactAgent(name="first", model=FakeChatModel(["first answer"]))
    seq = SequentialAgent("seq", [first, child], saver=saver)
    seq.invoke("hi", config={"thread_id": "s1", "metadata": {"tenant": "acme"}})
    assert seen[0].metadata["tenant"] == "acme"
    assert seen[0].thread_id == "s1"
