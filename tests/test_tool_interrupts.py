"""interrupt() inside a tool pauses the run, whatever catches errors around the tool.

Control-flow signals derive from ``GraphBubbleUp`` (a ``BaseException``), so the tools
manager, interceptors, retry/fallback interceptors and hooks let them through.
"""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint.base import CheckpointSaver
from graphagent.agent import (
    ModelFallbackInterceptor,
    ModelRetryInterceptor,
    ReactAgent,
    ToolErrorInterceptor,
    ToolRetryInterceptor,
    before_model,
)
from graphagent.errors import GraphAgentError, GraphBubbleUp, GraphInterrupt
from graphagent.graph import Command, interrupt
from graphagent.messages import AssistantMessage, ToolCall, ToolResponseMessage
from graphagent.models import FakeChatModel
from graphagent.tools import ToolCallingManager, tool

ran: list[str] = []


@tool
def delete_file(path: str) -> str:
    """Delete a file, after a human approves."""
    answer = interrupt({"question": f"delete {path}?"})
    if answer != "yes":
        return f"not deleted: {answer}"
    ran.append(path)
    return f"deleted {path}"


def _call(*items: tuple[str, str, str]) -> AssistantMessage:
    return AssistantMessage(
        "", tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in items]
    )


def test_signals_are_not_exceptions() -> None:
    """`except Exception` (and `except GraphAgentError`) can never swallow an interrupt."""
    assert issubclass(GraphInterrupt, GraphBubbleUp)
    assert issubclass(GraphBubbleUp, BaseException)
    assert not issubclass(GraphInterrupt, Exception)
    assert not issubclass(GraphInterrupt, GraphAgentError)


@pytest.mark.parametrize(
    "extra",
    [
        [],
        [ToolErrorInterceptor(handle=(BaseException,))],
        [ToolRetryInterceptor(2, backoff=0.0, retry_on=(BaseException,))],
    ],
    ids=["plain", "error-interceptor", "retry-interceptor"],
)
def test_interrupt_in_tool_pauses_and_resumes(saver: CheckpointSaver, extra: list[Any]) -> None:
    ran.clear()
    model = FakeChatModel([_call(("c1", "delete_file", '{"path": "a.txt"}')), "done"])
    agent = ReactAgent(
        name="files", model=model, tools=[delete_file], interceptors=extra, saver=saver
    )
    first = agent.call("remove a.txt", thread_id="t1")
    state = agent.get_state(thread_id="t1")
    assert [i.value for i in state.interrupts] == [{"question": "delete a.txt?"}]
    assert ran == []
    # the model was not told the tool failed
    assert not any(
        isinstance(m, ToolResponseMessage) and "failed" in str(m.content)
        for m in state.values["messages"]
    )
    assert first is not None
    reply = agent.call(Command(resume="yes"), thread_id="t1")
    assert ran == ["a.txt"]
    assert reply.text == "done"
    tool_msgs = [
        m
        for m in agent.get_state(thread_id="t1").values["messages"]
        if isinstance(m, ToolResponseMessage)
    ]
    assert [m.content for m in tool_msgs] == ["deleted a.txt"]


def test_interrupt_passes_model_retry_and_fallback_interceptors(saver: CheckpointSaver) -> None:
    """A hook around the model that interrupts is not retried or sent to a fallback model."""
    asked: list[int] = []

    @before_model
    def gate(state: Any) -> Any:
        asked.append(1)
        interrupt("go on?")
        return None

    agent = ReactAgent(
        name="a",
        model=FakeChatModel(["answer"]),
        hooks=[gate],
        interceptors=[
            ModelRetryInterceptor(3, backoff=0.0, retry_on=(BaseException,)),
            ModelFallbackInterceptor(FakeChatModel(["fallback"]), retry_on=(BaseException,)),
        ],
        saver=saver,
    )
    agent.call("hi", thread_id="t2")
    assert agent.get_state(thread_id="t2").interrupts[0].value == "go on?"
    assert agent.call(Command(resume=True), thread_id="t2").text == "answer"


def test_standalone_manager_lets_interrupt_through() -> None:
    """Outside a graph, interrupt() in a tool reaches the caller as GraphInterrupt."""
    manager = ToolCallingManager()
    asked = _call(("c1", "delete_file", '{"path": "b"}'), ("c2", "delete_file", '{"path": "c"}'))
    with pytest.raises(GraphInterrupt):
        manager.execute_tool_calls([], asked, tools=[delete_file])
