"""A2A across a server restart, and over the SDK's HTTP+JSON (REST) binding.

The task that asked a question is kept with the thread's checkpoint (its metadata), so a
restarted server on the same saver still knows which task may answer: a new task on a
waiting context is refused, and the asking task resumes, on every saver."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from _a2a_helpers import BASE, chunks, final_state, send, status_text, user
from a2a.client import ClientConfig, create_client
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import TaskState
from a2a.utils.constants import TransportProtocol

from checkpoint import CheckpointSaver
from graphagent.a2a import a2a_app
from graphagent.agent import HumanInTheLoopHook, ReactAgent
from graphagent.messages import AssistantMessage, ToolCall
from graphagent.models import FunctionChatModel

DONE = TaskState.TASK_STATE_COMPLETED
ASKING = TaskState.TASK_STATE_INPUT_REQUIRED


def send_email(to: str) -> str:
    """Send an email to someone."""
    return f"sent to {to}"


def mail_then_report(messages: list[Any], tools: Any) -> AssistantMessage:
    """Asks to mail bob, and reports once the tool answered (a model that keeps no
    position of its own, so a restarted server's copy answers the same)."""
    if messages[-1].role == "tool":
        return AssistantMessage("Mailed bob.")
    call = ToolCall(id="c1", name="send_email", arguments='{"to": "bob"}')
    return AssistantMessage(tool_calls=[call])


def careful(saver: CheckpointSaver | None) -> ReactAgent:
    return ReactAgent(
        name="mailer",
        model=FunctionChatModel(mail_then_report),
        tools=[send_email],
        hooks=[HumanInTheLoopHook(approval_on={"send_email": "mail leaves the company"})],
        saver=saver,
    )


class Recording(httpx.ASGITransport):
    """The in-process transport, keeping the path of every request."""

    def __init__(self, app: Any) -> None:
        super().__init__(app)
        self.paths: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        return await super().handle_async_request(request)


@asynccontextmanager
async def sdk_client(app: Any, bindings: list[str] | None = None) -> AsyncIterator[Any]:
    """The SDK's client on ``app``, speaking the ``bindings`` given (JSON-RPC by default)."""
    transport = Recording(app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE) as http:
        config = ClientConfig(httpx_client=http, supported_protocol_bindings=bindings or [])
        client = await create_client(BASE, config)
        client.paths = transport.paths
        yield client


async def test_the_asking_task_survives_a_restart_on_every_saver(saver: CheckpointSaver) -> None:
    """After a restart (a new app, a new agent object, the same saver and task store) a
    new task on the waiting context is refused naming the asking task, and "approve" on
    the asking task resumes the run to its answer."""
    tasks = InMemoryTaskStore()  # stands in for the SDK's database task store
    first = a2a_app(careful(saver), BASE, task_store=tasks)
    async with sdk_client(first) as client:
        asked = await send(client, user("mail bob", context_id="c-restart"))
    assert final_state(asked) == ASKING
    task_id = asked[0].task.id

    again = a2a_app(careful(saver), BASE, task_store=tasks)  # the restarted server
    async with sdk_client(again) as client:
        other = await send(client, user("approve", context_id="c-restart"))
        assert final_state(other) == TaskState.TASK_STATE_REJECTED
        assert task_id in status_text(other)
        done = await send(client, user("approve", context_id="c-restart", task_id=task_id))
    assert final_state(done) == DONE and "".join(chunks(done)) == "Mailed bob."


async def test_the_card_offers_json_rpc_and_http_json_and_both_answer() -> None:
    """The card lists JSON-RPC first and HTTP+JSON at the same URL; the SDK's client
    speaking only HTTP+JSON gets the same streamed answer and the same pause."""
    app = a2a_app(careful(None), BASE)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
    assert [(i["protocolBinding"], i["url"]) for i in card["supportedInterfaces"]] == [
        ("JSONRPC", BASE),
        ("HTTP+JSON", BASE),
    ]
    async with sdk_client(app, [TransportProtocol.HTTP_JSON.value]) as client:
        asked = await send(client, user("mail bob", context_id="c-rest"))
        assert final_state(asked) == ASKING and "send_email" in status_text(asked)
        done = await send(client, user("approve", context_id="c-rest", task_id=asked[0].task.id))
        paths = client.paths
    assert "/message:stream" in paths and "/" not in paths
    assert final_state(done) == DONE and "".join(chunks(done)) == "Mailed bob."
