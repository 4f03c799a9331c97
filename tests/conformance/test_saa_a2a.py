"""A remote A2A agent as a node of a parent graph, ported from Spring AI Alibaba's
spring-ai-alibaba-agent-framework/src/test/java/com/alibaba/cloud/ai/graph/agent/a2a/
A2aRemoteAgentResumeCheckpointTest.java (issue #4639).

Spring AI Alibaba's stub server answers with one A2A ``Message`` (no task); here the
remote is the official Python SDK's own server around a plain SDK agent that does the
same. Spring AI Alibaba sends the remote ``"<thread>_subgraph_<agent>"``; graphagent
sends the run's thread id as the remote ``contextId`` (the remote server keeps each
caller's contexts apart itself), and the tests assert graphagent's form.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import httpx
import pytest
from _a2a_helpers import BASE, ScriptedExecutor, scripted_app

from checkpoint import MemorySaver
from graphagent.a2a import A2aRemoteAgent
from graphagent.graph import END, START, AppendStrategy, ReplaceStrategy, StateGraph

AGENT_NAME = "qa_agent"


@pytest.fixture
def served() -> Iterator[tuple[ScriptedExecutor, A2aRemoteAgent]]:
    executor = ScriptedExecutor()
    http = httpx.AsyncClient(transport=httpx.ASGITransport(scripted_app(executor, AGENT_NAME)))
    with A2aRemoteAgent(BASE, name=AGENT_NAME, httpx_client=http) as remote:
        yield executor, remote


def _parent(remote: A2aRemoteAgent, saver: MemorySaver | None, *, pause: bool) -> object:
    g = StateGraph({"messages": AppendStrategy(), "prep_marker": ReplaceStrategy()})
    g.add_node("prep", lambda s: {"prep_marker": "ok", "messages": ["quick"]})
    g.add_node(AGENT_NAME, remote)
    g.add_edge(START, "prep").add_edge("prep", AGENT_NAME).add_edge(AGENT_NAME, END)
    return g.compile(saver=saver, interrupt_before=[AGENT_NAME] if pause else [])


def test_parent_interrupt_before_a2a_node_resume_with_parent_thread_id_succeeds(
    served: tuple[ScriptedExecutor, A2aRemoteAgent],
) -> None:
    """parentInterruptBeforeA2aNode_resumeWithParentThreadId_succeeds: the parent pauses
    before the remote node; resuming on the parent's thread calls the remote, whose
    one-Message reply becomes the answer; the remote got the parent's thread id."""
    executor, remote = served
    app = _parent(remote, MemorySaver(), pause=True)
    thread = f"conv-a2a-{uuid.uuid4().hex}"
    paused = app.invoke({}, {"thread_id": thread})  # type: ignore[attr-defined]
    assert app.get_state({"thread_id": thread}).next == (AGENT_NAME,)  # type: ignore[attr-defined]
    assert executor.seen == [] and paused["prep_marker"] == "ok"
    done = app.invoke(None, {"thread_id": thread})  # type: ignore[attr-defined]
    assert done["prep_marker"] == "ok" and done["messages"][-1].text == "ok"
    assert executor.seen[-1]["context_id"] == thread


def test_parent_without_saver_still_calls_with_its_thread_id(
    served: tuple[ScriptedExecutor, A2aRemoteAgent],
) -> None:
    """shareStateFalse_parentWithoutSaver_childWithSaver_stillNamespaces: a parent with
    no saver runs the remote node straight through, the thread id still sent."""
    executor, remote = served
    app = _parent(remote, None, pause=False)
    done = app.invoke({}, {"thread_id": "conv-a2a-nosaver"})  # type: ignore[attr-defined]
    assert done["messages"][-1].text == "ok"
    assert executor.seen[-1]["context_id"] == "conv-a2a-nosaver"
