"""AgentTool: what a sub-agent's tools see of the caller (issue 14 item 8)."""

from __future__ import annotations

import asyncio

import pytest

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver
from graphagent.agent import AgentTool, ReactAgent
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FakeChatModel
from graphagent.tools import ToolContext, tool


def _who_child(seen: list[ToolContext], **kwargs: object) -> ReactAgent:
    @tool
    def whoami(ctx: ToolContext) -> str:
        """Say who the user is."""
        seen.append(ctx)
        return f"{ctx.metadata.get('user_id')}@{ctx.context.get('tenant')}"

    call = AssistantMessage(tool_calls=[ToolCall(id="w1", name="whoami", arguments="{}")])
    return ReactAgent(
        name="child",
        model=FakeChatModel([call, "done"]),
        tools=[whoami],
        description="finds out who is asking",
        **kwargs,  # type: ignore[arg-type]
    )


def _parent(child: ReactAgent, saver: CheckpointSaver | None, **kwargs: object) -> ReactAgent:
    delegate = AssistantMessage(
        tool_calls=[ToolCall(id="p1", name="child", arguments='{"input": "who?"}')]
    )
    return ReactAgent(
        name="parent",
        model=FakeChatModel([delegate, "parent done"]),
        tools=[AgentTool(child)],
        saver=saver,
        **kwargs,  # type: ignore[arg-type]
    )


def test_sub_agent_tools_see_caller_metadata_and_tool_context(saver: CheckpointSaver) -> None:
    """A tool two levels down reads the caller's user id (metadata) and tenant (tool_context)."""
    seen: list[ToolContext] = []
    parent = _parent(_who_child(seen), saver, tool_context={"tenant": "acme"})
    final = parent.invoke("go", {"thread_id": "t-meta", "metadata": {"user_id": "ada"}})
    assert seen[0].metadata["user_id"] == "ada"
    assert seen[0].context["tenant"] == "acme"
    assert final["messages"][-2].content == "done"  # the child's answer, as the tool result


def test_per_run_tool_context_reaches_the_sub_agent() -> None:
    """A tool_context given for one run (configurable) is passed on like the agent's own."""
    seen: list[ToolContext] = []
    parent = _parent(_who_child(seen), None)
    parent.invoke("go", {"configurable": {"tool_context": {"tenant": "run-tenant"}}})
    assert seen[0].context["tenant"] == "run-tenant"


def test_sub_agent_own_tool_context_overrides_the_callers() -> None:
    """The sub-agent's own values win; the caller's other keys are still there."""
    seen: list[ToolContext] = []
    child = _who_child(seen, tool_context={"tenant": "child-tenant"})
    parent = _parent(child, None, tool_context={"tenant": "acme", "region": "eu"})
    parent.invoke("go", {"metadata": {"user_id": "ada"}})
    assert dict(seen[0].context) == {"tenant": "child-tenant", "region": "eu"}


def test_async_sub_agent_gets_the_same() -> None:
    """acall passes metadata and tool_context too."""
    seen: list[ToolContext] = []
    child = _who_child(seen, saver=MemorySaver())
    parent = _parent(child, MemorySaver(), tool_context={"tenant": "acme"})
    asyncio.run(parent.ainvoke("go", {"thread_id": "t-async", "metadata": {"user_id": "bo"}}))
    assert (seen[0].metadata["user_id"], seen[0].context["tenant"]) == ("bo", "acme")
    # the sub-thread is named after the caller's thread
    assert seen[0].config.thread_id == "t-async/child"


def test_sub_agent_does_not_inherit_per_request_settings() -> None:
    """Only metadata and tool_context cross over; other configurable keys stay with the caller."""
    seen: list[ToolContext] = []
    parent = _parent(_who_child(seen), None)
    parent.invoke("go", {"configurable": {"something": "caller only"}})
    assert "something" not in seen[0].config.configurable


def test_async_failure_is_annotated() -> None:
    """The sub-agent's error keeps its type and gains a note naming agent, thread and task."""

    @tool
    def broken() -> str:
        """Breaks."""
        raise RuntimeError("never reached")

    child = ReactAgent(
        name="kid",
        model=FakeChatModel([]),  # no scripted answer: the model itself fails
        description="fails",
    )
    ctx = ToolContext(config={"thread_id": "th-9"})
    with pytest.raises(Exception) as info:
        asyncio.run(AgentTool(child).acall('{"input": "sum it up"}', ctx))
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert "'kid'" in notes and "'th-9'" in notes and "sum it up" in notes
