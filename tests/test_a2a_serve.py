"""Serving an agent over A2A (``a2a_app``), checked with the SDK's own client."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from _a2a_helpers import BASE, chunks, final_state, sdk_client, send, status_text, user
from a2a.helpers import get_data_parts, new_data_part
from a2a.types import Part, TaskState
from a2a.utils.errors import A2AError
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection

from checkpoint import CheckpointSaver, MemorySaver
from graphagent.a2a import a2a_app
from graphagent.agent import HumanInTheLoopHook, ReactAgent
from graphagent.messages import AssistantMessage, ImagePart, ToolCall
from graphagent.models import FakeChatModel, FunctionChatModel

DONE = TaskState.TASK_STATE_COMPLETED
ASKING = TaskState.TASK_STATE_INPUT_REQUIRED


def send_email(to: str) -> str:
    """Send an email to someone."""
    return f"sent to {to}"


def count_turns(messages: list[Any], tools: Any) -> str:
    said = [m.text for m in messages if m.role == "user"]
    return f"turn {len(said)}: {said[-1]}"


def careful(saver: CheckpointSaver | None = None) -> ReactAgent:
    call = ToolCall(id="c1", name="send_email", arguments='{"to": "bob"}')
    return ReactAgent(
        name="mailer",
        description="Sends email, with a human's approval.",
        model=FakeChatModel([AssistantMessage(tool_calls=[call]), "Mailed bob."] * 3),
        tools=[send_email],
        hooks=[HumanInTheLoopHook(approval_on={"send_email": "mail leaves the company"})],
        saver=saver,
    )


async def test_the_card_names_the_agent_its_interface_and_skills() -> None:
    """The card is at the well-known path: name, version, JSON-RPC and HTTP+JSON at the URL,
    streaming, default modes, and one skill per tool (one for the agent without tools)."""
    app = a2a_app(careful(), "http://agents.example:8000", version="2.1.0")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
    assert card["name"] == "mailer" and card["version"] == "2.1.0"
    assert card["description"] == "Sends email, with a human's approval."
    assert card["supportedInterfaces"] == [
        {
            "url": "http://agents.example:8000",
            "protocolBinding": binding,
            "protocolVersion": "1.0",
        }
        for binding in ("JSONRPC", "HTTP+JSON")
    ]
    assert card["capabilities"]["streaming"] is True
    assert "text/plain" in card["defaultInputModes"] and card["defaultOutputModes"] == [
        "text/plain"
    ]
    assert [(s["id"], s["description"]) for s in card["skills"]] == [
        ("send_email", "Send an email to someone.")
    ]
    bare = a2a_app(ReactAgent(name="echo bot", model=FakeChatModel(["hi"])), BASE)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(bare), base_url=BASE) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
    assert [s["id"] for s in card["skills"]] == ["echo-bot"]


async def test_the_answer_streams_as_artifact_chunks_of_one_artifact() -> None:
    """SendStreamingMessage: submitted, working, the answer in appended chunks, completed."""
    agent = ReactAgent(name="echo", model=FakeChatModel(["Hello there, friend."]))
    async with sdk_client(a2a_app(agent, BASE)) as client:
        events = await send(client, user("hi"))
    assert events[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
    assert final_state(events) == DONE
    pieces = chunks(events)
    assert len(pieces) > 2 and "".join(pieces) == "Hello there, friend."
    updates = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert len({u.artifact.artifact_id for u in updates}) == 1
    assert [u.append for u in updates] == [False] + [True] * (len(updates) - 1)
    assert updates[-1].last_chunk


async def test_send_message_without_streaming_returns_the_finished_task() -> None:
    """SendMessage (no streaming): one task, completed, its artifact holding the answer."""
    agent = ReactAgent(name="echo", model=FakeChatModel(["Just the answer."]))
    async with sdk_client(a2a_app(agent, BASE), streaming=False) as client:
        (event,) = await send(client, user("hi"))
    assert event.task.status.state == DONE
    text = "".join(p.text for a in event.task.artifacts for p in a.parts)
    assert text == "Just the answer."


async def test_the_context_id_is_the_thread_so_a_conversation_goes_on() -> None:
    """A second message with the same contextId continues the thread; another starts over.
    The stored thread is namespaced: a2a:<server>:<owner digest>:<contextId>."""
    saver = MemorySaver()
    agent = ReactAgent(name="counter", model=FunctionChatModel(count_turns), saver=saver)
    async with sdk_client(a2a_app(agent, BASE)) as client:
        first = await send(client, user("one", context_id="ctx-1"))
        second = await send(client, user("two", context_id="ctx-1"))
        other = await send(client, user("three", context_id="ctx-2"))
    assert "".join(chunks(first)) == "turn 1: one"
    assert "".join(chunks(second)) == "turn 2: two"
    assert "".join(chunks(other)) == "turn 1: three"
    assert second[0].task.context_id == "ctx-1"
    threads = saver.threads()
    assert len(threads) == 2 and all(t.startswith("a2a:counter:") for t in threads)
    assert {t.rsplit(":", 1)[1] for t in threads} == {"ctx-1", "ctx-2"}


async def test_a_pause_for_a_human_asks_and_the_next_message_on_the_task_resumes() -> None:
    """A HITL pause ends the message input-required with the question (text and data);
    "approve" on the same taskId resumes the run to its answer."""
    async with sdk_client(a2a_app(careful(), BASE)) as client:
        asked = await send(client, user("mail bob", context_id="c-hitl"))
        assert final_state(asked) == ASKING
        question = status_text(asked)
        assert "send_email" in question and '"to": "bob"' in question
        assert "mail leaves the company" in question and "reject <reason>" in question
        status = [e for e in asked if e.HasField("status_update")][-1].status_update.status
        (data,) = get_data_parts(list(status.message.parts))
        assert data["action_requests"][0]["name"] == "send_email"
        task_id = asked[0].task.id
        done = await send(client, user("approve", context_id="c-hitl", task_id=task_id))
    assert final_state(done) == DONE and "".join(chunks(done)) == "Mailed bob."
    assert {e.status_update.task_id for e in done if e.HasField("status_update")} == {task_id}


async def test_reject_with_a_reason_and_answers_that_do_not_fit() -> None:
    """ "reject <reason>" reaches the hook; a message that answers nothing keeps the task
    input-required and says why."""
    saver = MemorySaver()
    agent = careful(saver)
    async with sdk_client(a2a_app(agent, BASE)) as client:
        asked = await send(client, user("mail bob", context_id="c-rej"))
        task_id = asked[0].task.id
        again = await send(client, user("maybe later?", context_id="c-rej", task_id=task_id))
        assert final_state(again) == ASKING
        assert status_text(again).startswith("That did not answer the question (not an answer")
        done = await send(client, user("reject too expensive", context_id="c-rej", task_id=task_id))
    assert final_state(done) == DONE
    (thread,) = saver.threads()
    tool_results = [
        m.text for m in agent.get_state(thread_id=thread).values["messages"] if m.role == "tool"
    ]
    assert any("too expensive" in t for t in tool_results)


async def test_a_data_part_answers_as_json() -> None:
    """The decisions can come as a data part instead of words."""
    async with sdk_client(a2a_app(careful(), BASE)) as client:
        asked = await send(client, user("mail bob", context_id="c-data"))
        decision = new_data_part([{"type": "approve"}])
        answer = user(context_id="c-data", task_id=asked[0].task.id, parts=[decision])
        done = await send(client, answer)
    assert final_state(done) == DONE and "".join(chunks(done)) == "Mailed bob."


async def test_a_new_task_on_a_context_that_waits_is_refused_naming_the_task() -> None:
    """While a context waits on task T, a message opening another task is rejected, and
    the rejection names T."""
    async with sdk_client(a2a_app(careful(), BASE)) as client:
        asked = await send(client, user("mail bob", context_id="c-wait"))
        other = await send(client, user("approve", context_id="c-wait"))
    assert final_state(other) == TaskState.TASK_STATE_REJECTED
    assert asked[0].task.id in status_text(other)


async def test_an_exception_in_the_agent_fails_the_task_naming_the_error() -> None:
    """The task ends TASK_STATE_FAILED with a message naming the error, not a bare
    JSON-RPC internal error."""

    def broken(messages: Any, tools: Any) -> str:
        raise RuntimeError("the inventory service is down")

    agent = ReactAgent(name="shop", model=FunctionChatModel(broken))
    async with sdk_client(a2a_app(agent, BASE)) as client:
        events = await send(client, user("buy milk"))
    assert final_state(events) == TaskState.TASK_STATE_FAILED
    said = status_text(events)
    assert "shop failed" in said and "RuntimeError" in said and "inventory service is down" in said


async def test_a_finished_task_refuses_further_messages_clearly() -> None:
    """A message on a completed task is refused, naming its terminal state."""
    agent = ReactAgent(name="echo", model=FakeChatModel(["one", "two"]))
    async with sdk_client(a2a_app(agent, BASE)) as client:
        done = await send(client, user("hi"))
        with pytest.raises(A2AError, match="terminal state: TASK_STATE_COMPLETED"):
            await send(client, user("again", task_id=done[0].task.id))


class _HeaderUser(AuthenticationBackend):
    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, SimpleUser] | None:
        name = conn.headers.get("x-user")
        return (AuthCredentials(["authenticated"]), SimpleUser(name)) if name else None


async def test_callers_reach_only_their_own_contexts() -> None:
    """Two authenticated users sending the same contextId get two threads: neither sees
    the other's conversation."""
    saver = MemorySaver()
    agent = ReactAgent(name="counter", model=FunctionChatModel(count_turns), saver=saver)
    app = a2a_app(agent, BASE)
    app.add_middleware(AuthenticationMiddleware, backend=_HeaderUser())
    async with sdk_client(app, headers={"x-user": "ann"}) as ann:
        await send(ann, user("ann's secret", context_id="shared"))
        again = await send(ann, user("and more", context_id="shared"))
    async with sdk_client(app, headers={"x-user": "bob"}) as bob:
        theirs = await send(bob, user("hello", context_id="shared"))
    assert "".join(chunks(again)) == "turn 2: and more"
    assert "".join(chunks(theirs)) == "turn 1: hello"
    assert len(saver.threads()) == 2


async def test_images_and_files_reach_the_model_as_parts() -> None:
    """An A2A message's raw image and file URL parts become the user message's parts."""
    seen: list[Any] = []

    def look(messages: Any, tools: Any) -> str:
        seen.append(messages[-1])
        return "A pixel."

    agent = ReactAgent(name="eye", model=FunctionChatModel(look))
    parts = [
        Part(text="What is this?"),
        Part(raw=b"\x89PNG", media_type="image/png", filename="p.png"),
        Part(url="https://files.example/r.pdf", media_type="application/pdf", filename="r.pdf"),
    ]
    async with sdk_client(a2a_app(agent, BASE)) as client:
        events = await send(client, user(parts=parts))
    assert final_state(events) == DONE
    (message,) = seen
    assert message.text == "What is this?"
    assert message.parts[0] == ImagePart(data=b"\x89PNG", mime_type="image/png")
    assert (message.parts[1].url, message.parts[1].name) == ("https://files.example/r.pdf", "r.pdf")


def test_only_agents_are_served() -> None:
    """Serving something that is not an agent is refused, naming the fix."""
    from graphagent.errors import UserError

    with pytest.raises(UserError, match="wrap it in a ReactAgent"):
        a2a_app(send_email, BASE)  # type: ignore[arg-type]


async def test_a_running_task_can_be_canceled() -> None:
    """CancelTask on a task still running stops the run and leaves it canceled."""
    import asyncio

    from a2a.types import (
        CancelTaskRequest,
        GetTaskRequest,
        SendMessageConfiguration,
        SendMessageRequest,
    )

    started = asyncio.Event()

    class Slow(FakeChatModel):
        async def astream(self, messages: Any, **kw: Any) -> Any:  # type: ignore[override]
            started.set()
            await asyncio.sleep(30)
            yield  # pragma: no cover - never reached

    agent = ReactAgent(name="slow", model=Slow(["never"]))
    async with sdk_client(a2a_app(agent, BASE), streaming=False) as client:
        config = SendMessageConfiguration(return_immediately=True)
        request = SendMessageRequest(message=user("hi"), configuration=config)
        (first,) = [e async for e in client.send_message(request)]
        await asyncio.wait_for(started.wait(), 10)
        canceled = await client.cancel_task(CancelTaskRequest(id=first.task.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        again = await client.get_task(GetTaskRequest(id=first.task.id))
    assert again.status.state == TaskState.TASK_STATE_CANCELED
