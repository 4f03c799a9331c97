"""What an agent streams is what it stores: each tool message streamed in ``"messages"``
mode carries the id it has on the thread afterwards (a client can match a streamed message
to the stored one, and replace it in place, by id)."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint import CheckpointSaver
from graphagent import ReactAgent
from graphagent.agent import HumanInTheLoopHook, ToolInterceptor, ToolRequest
from graphagent.agent._interceptors import ToolHandler
from graphagent.graph import Command
from graphagent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graphagent.models import FakeChatModel
from graphagent.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
def wipe() -> str:
    """Wipe the disk."""
    return "wiped"


class Passing(ToolInterceptor):
    """Lets every call through unchanged."""

    def intercept_tool_call(
        self, request: ToolRequest, handler: ToolHandler
    ) -> ToolResponseMessage:
        return handler(request)


def _model() -> FakeChatModel:
    calls = [
        ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}'),
        ToolCall(id="c2", name="add", arguments='{"a": 3, "b": 4}'),
        ToolCall(id="c3", name="nope", arguments="{}"),
    ]
    return FakeChatModel([AssistantMessage(tool_calls=calls), AssistantMessage("3 and 7")])


def _tool_ids(messages: list[Any]) -> dict[str, str]:
    return {m.tool_call_id: m.id for m in messages if isinstance(m, ToolResponseMessage)}


@pytest.mark.parametrize("interceptors", [[], [Passing()]], ids=["plain", "intercepted"])
async def test_streamed_tool_messages_have_their_stored_ids(
    saver: CheckpointSaver, interceptors: list[Any]
) -> None:
    """Sync and async, with and without interceptors, failures included: the streamed
    tool messages are the stored ones, id for id."""
    for use_async in (False, True):
        thread = f"ids-{use_async}"
        agent = ReactAgent(
            name="calc", model=_model(), tools=[add], interceptors=interceptors, saver=saver
        )
        if use_async:
            streamed = [m async for m, _ in agent.astream("sum", thread_id=thread, mode="messages")]
        else:
            streamed = [m for m, _ in agent.stream("sum", thread_id=thread, mode="messages")]
        stored = agent.get_state(thread_id=thread).values["messages"]
        assert set(_tool_ids(streamed)) == {"c1", "c2", "c3"}
        assert _tool_ids(streamed) == _tool_ids(stored)
        by_id = {m.id: m for m in stored}
        for m in streamed:
            if isinstance(m, ToolResponseMessage):
                assert by_id[m.id] == m


def test_a_rejected_calls_streamed_answer_has_its_stored_id(saver: CheckpointSaver) -> None:
    """A call a human rejected is answered without running; that answer too is streamed
    under the id it is stored with."""
    model = FakeChatModel(
        [
            AssistantMessage(tool_calls=[ToolCall(id="w1", name="wipe")]),
            AssistantMessage("I did not wipe it."),
        ]
    )
    agent = ReactAgent(
        name="ops",
        model=model,
        tools=[wipe],
        hooks=[HumanInTheLoopHook(approval_on={"wipe": "destructive"})],
        saver=saver,
    )
    list(agent.stream("wipe it", thread_id="rej", mode="messages"))
    resume = Command(resume={"w1": {"type": "reject", "reason": "no"}})
    streamed = [m for m, _ in agent.stream(resume, thread_id="rej", mode="messages")]
    stored = agent.get_state(thread_id="rej").values["messages"]
    assert "w1" in _tool_ids(streamed)
    assert _tool_ids(streamed) == _tool_ids(stored)


def test_streamed_answer_chunks_carry_the_stored_answers_ids(saver: CheckpointSaver) -> None:
    """Every model chunk streamed carries the id of the answer it adds up to, as stored."""
    agent = ReactAgent(name="calc", model=_model(), tools=[add], saver=saver)
    streamed = [m for m, _ in agent.stream("sum", thread_id="chunks", mode="messages")]
    stored = agent.get_state(thread_id="chunks").values["messages"]
    answers = [m.id for m in stored if isinstance(m, AssistantMessage)]
    chunk_ids = [m.id for m in streamed if not isinstance(m, ToolResponseMessage)]
    assert len(answers) == 2 and list(dict.fromkeys(chunk_ids)) == answers
