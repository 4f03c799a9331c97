"""Reasoning and its signatures kept across a tool round and a resumed thread, ported
from Spring AI Alibaba's spring-ai-alibaba-agent-framework/src/test/java/com/alibaba/
cloud/ai/graph/agent/ReactAgentThoughtSignatureStateTransferTest.java.

Spring AI Alibaba keeps DeepSeek's reasoning on ``DeepSeekAssistantMessage`` and Gemini's
thought signatures in the message's properties; graphagent keeps the reasoning on
``AssistantMessage.reasoning`` and provider signatures in ``metadata`` (Anthropic's
signed blocks in ``metadata["thinking_blocks"]``). Here on every saver.
"""

from __future__ import annotations

from typing import Any

from checkpoint.base import CheckpointSaver
from graphagent.agent import ReactAgent
from graphagent.messages import AssistantMessage, Message, ToolCall, UserMessage
from graphagent.models import FunctionChatModel
from graphagent.tools import tool

SIGNATURES = [bytes([21, 22, 23, 24]), bytes([31, 32, 33, 34])]


@tool
def read_skill(input: str) -> str:
    """Read a skill."""
    return "skill-content"


@tool
def search_skill(input: str) -> str:
    """Search the skills."""
    return "search-content"


def _tool_round_answer(messages: list[Message]) -> AssistantMessage:
    answer = next(m for m in messages if isinstance(m, AssistantMessage) and m.tool_calls)
    assert answer.reasoning == "I need both skills."
    assert list(answer.metadata["thought_signatures"]) == SIGNATURES
    return answer


def test_should_preserve_thought_signatures_across_tool_round_with_a_saver(
    saver: CheckpointSaver,
) -> None:
    """shouldPreserveThoughtSignaturesAcrossToolRoundWithMemorySaver: the model sees its
    tool-calling answer, reasoning and signatures intact, after the tool round and again
    on the next turn of the thread (read back from the saver)."""
    calls: list[str] = []

    def model(messages: list[Message], tools: Any) -> Any:
        calls.append("call")
        if len(calls) == 1:
            return AssistantMessage(
                "",
                reasoning="I need both skills.",
                metadata={"thought_signatures": SIGNATURES},
                tool_calls=[
                    ToolCall(id="call-1", name="read_skill", arguments='{"input": "x"}'),
                    ToolCall(id="call-2", name="search_skill", arguments='{"input": "x"}'),
                ],
            )
        _tool_round_answer(messages)
        assert [m.role for m in messages].count("tool") == 2
        return "done" if len(calls) == 2 else "continued"

    agent = ReactAgent(
        name="thought_signature_agent",
        model=FunctionChatModel(model),
        tools=[read_skill, search_skill],
        saver=saver,
    )
    assert agent.call("Read the skill before answering.", thread_id="sig").text == "done"
    assert agent.call("Continue with the saved context.", thread_id="sig").text == "continued"
    assert len(calls) == 3


def test_should_not_drop_reasoning_of_an_assistant_message_given_as_input() -> None:
    """shouldNotDowngradeAssistantMessageSubclassesWhenRestoringThoughtSignatures: an
    answer with reasoning and signatures, passed in as input, reaches the model as it
    was."""
    seen: list[AssistantMessage] = []

    def model(messages: list[Message], tools: Any) -> str:
        seen.extend(m for m in messages if isinstance(m, AssistantMessage))
        return "ok"

    given = AssistantMessage(
        "Need reasoning",
        reasoning="reasoning-content",
        metadata={"thought_signatures": [{"data": [1, 2, 3]}]},
    )
    agent = ReactAgent(name="thought_signature_subclass_agent", model=FunctionChatModel(model))
    assert agent.call([UserMessage("Start"), given, UserMessage("Continue")]).text == "ok"
    (passed,) = seen
    assert passed.reasoning == "reasoning-content"
    assert passed.metadata["thought_signatures"] == [{"data": [1, 2, 3]}]
