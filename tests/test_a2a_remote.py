"""Calling remote A2A agents (``A2aRemoteAgent``) served by the SDK's own server classes."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from _a2a_helpers import BASE, ScriptedExecutor, scripted_app

from checkpoint import MemorySaver
from graphagent.a2a import A2aAgentError, A2aRemoteAgent, a2a_app
from graphagent.agent import (
    AgentTool,
    LlmRoutingAgent,
    ParallelAgent,
    ReactAgent,
    SequentialAgent,
)
from graphagent.errors import GraphAgentError
from graphagent.graph import Command
from graphagent.messages import AssistantMessage, ImagePart, ToolCall, UserMessage
from graphagent.models import FakeChatModel


@pytest.fixture
def executor() -> ScriptedExecutor:
    return ScriptedExecutor()


@pytest.fixture
def remote(executor: ScriptedExecutor) -> Iterator[A2aRemoteAgent]:
    http = httpx.AsyncClient(transport=httpx.ASGITransport(scripted_app(executor)))
    agent = A2aRemoteAgent(BASE, httpx_client=http)
    yield agent
    agent.close()


def test_the_card_names_the_agent_and_an_answer_comes_back(
    remote: A2aRemoteAgent, executor: ScriptedExecutor
) -> None:
    """The name and description come from the card; call() returns the streamed answer;
    the thread id is the remote contextId, and the answer says which task it came from."""
    assert (remote.name, remote.description) == ("concierge", "Books tables.")
    answer = remote.call("hello", thread_id="t-42")
    assert answer.text == "Bonjour"
    assert executor.seen[-1]["context_id"] == "t-42" and executor.seen[-1]["text"] == "hello"
    assert answer.metadata["a2a"]["task_id"] == executor.seen[-1]["task_id"]
    assert answer.metadata["a2a"]["context_id"] == "t-42"


def test_the_answer_streams_as_message_chunks(remote: A2aRemoteAgent) -> None:
    """stream(mode="messages") yields the remote artifact chunks as they arrive."""
    pieces = [c.text for c, _ in remote.stream("hello", mode="messages")]
    assert pieces == ["Bon", "jour"]


async def test_async_calls_work_from_any_loop(remote: A2aRemoteAgent) -> None:
    """acall runs on the caller's loop (the client itself lives on its own loop)."""
    assert (await remote.acall("hello", thread_id="t-a")).text == "Bonjour"
    pieces = [c.text async for c, _ in remote.astream("hello", mode="messages")]
    assert pieces == ["Bon", "jour"]


def test_a_remote_question_pauses_the_local_thread_and_resumes_the_remote_task(
    remote: A2aRemoteAgent, executor: ScriptedExecutor
) -> None:
    """Remote input-required becomes a local interrupt with the remote question; the
    local answer goes back on the same remote task and finishes it."""
    out = remote.invoke("book a table", thread_id="t-book")
    (question,) = out["__interrupt__"]
    assert question.value == {"question": "Which day?"}
    asked_task = executor.seen[-1]["task_id"]
    done = remote.invoke(Command(resume="Friday"), thread_id="t-book")
    assert done["messages"][-1].text == "Booked for Friday."
    last = executor.seen[-1]
    assert (last["task_id"], last["resumed"], last["text"]) == (asked_task, True, "Friday")
    assert remote.call("hello", thread_id="t-book").text == "Bonjour"  # the thread goes on


def test_a_structured_answer_goes_back_as_a_data_part(
    remote: A2aRemoteAgent, executor: ScriptedExecutor
) -> None:
    """A resume value that is not text is sent as a data part."""
    remote.invoke("book it", thread_id="t-data")
    remote.invoke(Command(resume={"day": "Friday", "people": 4}), thread_id="t-data")
    assert executor.seen[-1]["data"] == 1 and executor.seen[-1]["resumed"]


def test_a_failed_remote_task_raises_naming_the_agent(remote: A2aRemoteAgent) -> None:
    """A remote task that ends failed raises A2aAgentError (a GraphAgentError) naming the
    remote agent, its URL, the state and the remote's own words."""
    with pytest.raises(A2aAgentError) as caught:
        remote.call("fail")
    err = caught.value
    assert isinstance(err, GraphAgentError)
    assert "'concierge'" in str(err) and BASE in str(err)
    assert "TASK_STATE_FAILED" in str(err) and "the database is down" in str(err)
    assert (err.agent, err.state) == ("concierge", "TASK_STATE_FAILED") and err.task_id


def test_a_reply_that_ends_unfinished_raises(remote: A2aRemoteAgent) -> None:
    """A reply that ends with the task still working is an error, not an empty answer."""
    with pytest.raises(A2aAgentError, match="TASK_STATE_WORKING"):
        remote.call("stuck")


def test_an_unreachable_agent_raises_naming_it() -> None:
    """No server at the URL: the error names the agent's URL and what failed."""
    with pytest.raises(A2aAgentError, match=r"127\.0\.0\.1:9.*cannot read its agent card"):
        A2aRemoteAgent("http://127.0.0.1:9", timeout=2)
    named = A2aRemoteAgent("http://127.0.0.1:9", name="ghost", timeout=2)
    with pytest.raises(A2aAgentError, match="remote A2A agent 'ghost'"):
        named.call("hi")
    named.close()


def test_inside_a_sequential_agent_it_gets_the_last_message(
    remote: A2aRemoteAgent, executor: ScriptedExecutor
) -> None:
    """A SequentialAgent passes the previous agent's answer on; the run's thread id is
    the remote contextId; both answers land in the conversation."""
    planner = ReactAgent(name="planner", model=FakeChatModel(["book it for two"]))
    flow = SequentialAgent("flow", [planner, remote], saver=MemorySaver())
    out = flow.invoke("plan dinner", thread_id="t-seq")
    (question,) = out["__interrupt__"]
    assert executor.seen[-1]["text"] == "book it for two"
    assert executor.seen[-1]["context_id"] == "t-seq"
    assert question.value == {"question": "Which day?"}
    done = flow.invoke(Command(resume="Saturday"), thread_id="t-seq")
    texts = [m.text for m in done["messages"]]
    assert texts == ["plan dinner", "book it for two", "Booked for Saturday."]


def test_as_a_parallel_branch_and_a_routing_target(executor: ScriptedExecutor) -> None:
    """It runs as a ParallelAgent branch and as an LlmRoutingAgent target."""
    app = scripted_app(executor)
    with A2aRemoteAgent(
        BASE, httpx_client=httpx.AsyncClient(transport=httpx.ASGITransport(app))
    ) as remote:
        local = ReactAgent(name="local", description="Says hi.", model=FakeChatModel(["Hi"]))
        both = ParallelAgent("both", [local, remote]).call("hello")
        assert "Bonjour" in both.text and "Hi" in both.text
        router = LlmRoutingAgent("router", FakeChatModel(["concierge"]), [local, remote])
        assert router.call("hello").text == "Bonjour"


def test_as_a_tool_through_agent_tool(remote: A2aRemoteAgent, executor: ScriptedExecutor) -> None:
    """AgentTool(remote) gives a local model the remote agent as a tool."""
    call = ToolCall(id="c1", name="concierge", arguments='{"input": "hello"}')
    model = FakeChatModel([AssistantMessage(tool_calls=[call]), "The concierge says Bonjour."])
    boss = ReactAgent(name="boss", model=model, tools=[AgentTool(remote)], saver=MemorySaver())
    assert boss.call("ask the concierge", thread_id="t-tool").text == "The concierge says Bonjour."
    tool_result = boss.get_state(thread_id="t-tool").values["messages"][2]
    assert tool_result.text == "Bonjour"
    assert executor.seen[-1]["context_id"] == "t-tool/concierge"


def test_images_travel_as_raw_parts(remote: A2aRemoteAgent, executor: ScriptedExecutor) -> None:
    """A user message's image is sent as a raw part with its media type."""
    remote.call(UserMessage("what is this?", parts=[ImagePart(data=b"\x89PNG")]))
    parts = executor.seen[-1]["parts"]
    assert parts[0].text == "what is this?"
    assert (parts[1].raw, parts[1].media_type) == (b"\x89PNG", "image/png")


def test_graphagent_to_graphagent_with_a_human_in_between() -> None:
    """Both directions at once: a local A2aRemoteAgent calls an agent served with a2a_app
    whose human-in-the-loop question reaches the local thread; "approve" locally goes
    back on the remote task and the remote run finishes."""
    from graphagent.agent import HumanInTheLoopHook

    def send_email(to: str) -> str:
        """Send an email."""
        return f"sent to {to}"

    call = ToolCall(id="c1", name="send_email", arguments='{"to": "bob"}')
    served = ReactAgent(
        name="mailer",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "Mailed bob."]),
        tools=[send_email],
        hooks=[HumanInTheLoopHook(approval_on={"send_email": "mail leaves the company"})],
    )
    app = a2a_app(served, BASE)
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app))
    with A2aRemoteAgent(BASE, httpx_client=http) as remote:
        out = remote.invoke("mail bob", thread_id="t-hitl")
        (question,) = out["__interrupt__"]
        assert question.value["action_requests"][0]["name"] == "send_email"
        from graphagent._internal.answers import parse_answer

        decision = parse_answer("approve", question)  # what `graphagent chat` would send
        done = remote.invoke(Command(resume=decision), thread_id="t-hitl")
    assert done["messages"][-1].text == "Mailed bob."


def test_a_server_without_streaming_is_asked_with_send_message(executor: ScriptedExecutor) -> None:
    """A card without streaming: the finished task's artifacts are the answer, and a
    remote question still pauses the local thread."""
    app = scripted_app(executor, streaming=False)
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app))
    with A2aRemoteAgent(BASE, httpx_client=http) as remote:
        assert remote.call("hello").text == "Bonjour"
        out = remote.invoke("book", thread_id="t-ns")
        assert out["__interrupt__"][0].value == {"question": "Which day?"}
        done = remote.invoke(Command(resume="Monday"), thread_id="t-ns")
        assert done["messages"][-1].text == "Booked for Monday."


def test_closing_stops_the_client_thread(executor: ScriptedExecutor) -> None:
    """close() stops the loop thread the client lived on; nothing of it is left running."""
    import threading

    http = httpx.AsyncClient(transport=httpx.ASGITransport(scripted_app(executor)))
    remote = A2aRemoteAgent(BASE, name="closing", httpx_client=http)
    assert remote.call("hello").text == "Bonjour"
    assert any(t.name == "a2a-closing" for t in threading.enumerate())
    remote.close()
    assert not any(t.name == "a2a-closing" for t in threading.enumerate())
    remote.close()  # twice is fine


def test_reasoning_crosses_the_wire() -> None:
    """A served agent's reasoning streams in an artifact named "reasoning" before its
    answer; A2aRemoteAgent streams it as reasoning chunks and keeps it on the answer."""
    thinker = ReactAgent(
        name="thinker",
        model=FakeChatModel([AssistantMessage("42.", reasoning="Six times seven.")]),
    )
    http = httpx.AsyncClient(transport=httpx.ASGITransport(a2a_app(thinker, BASE)))
    with A2aRemoteAgent(BASE, httpx_client=http) as remote:
        streamed = [c for c, _ in remote.stream("what is it?", thread_id="t-r", mode="messages")]
        answer = remote.get_state(thread_id="t-r").values["messages"][-1]
    assert "".join(c.reasoning for c in streamed) == "Six times seven."
    assert "".join(c.content for c in streamed) == "42."
    first_answer = next(i for i, c in enumerate(streamed) if c.content)
    assert all(c.reasoning for c in streamed[:first_answer])
    assert (answer.text, answer.reasoning) == ("42.", "Six times seven.")
