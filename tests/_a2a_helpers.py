"""What the A2A tests share: the SDK's own client over an in-process app, and a plain
SDK agent (no graphagent inside) for the calling direction."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.helpers import get_message_text, new_data_part, new_task
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from starlette.applications import Starlette

BASE = "http://testserver"


@asynccontextmanager
async def sdk_client(
    app: Any, *, streaming: bool = True, headers: Any = None
) -> AsyncIterator[Client]:
    """The SDK's client, reaching ``app`` in this process."""
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming)
        client = await create_client(BASE, config)
        yield client


def user(text: str = "", *, context_id: str = "", task_id: str = "", parts: Any = None) -> Message:
    """A user message as an A2A client sends it."""
    return Message(
        role=Role.ROLE_USER,
        message_id=uuid.uuid4().hex,
        context_id=context_id,
        task_id=task_id,
        parts=parts if parts is not None else [Part(text=text)],
    )


async def send(client: Client, message: Message) -> list[StreamResponse]:
    """Every event the SDK's client yields for one message."""
    return [e async for e in client.send_message(SendMessageRequest(message=message))]


def final_state(events: list[StreamResponse]) -> int:
    """The task's last state in a run of events."""
    state = TaskState.TASK_STATE_UNSPECIFIED
    for e in events:
        if e.HasField("task"):
            state = e.task.status.state
        elif e.HasField("status_update"):
            state = e.status_update.status.state
    return state


def status_text(events: list[StreamResponse]) -> str:
    """The text of the last status message."""
    for e in reversed(events):
        message = None
        if e.HasField("status_update") and e.status_update.status.HasField("message"):
            message = e.status_update.status.message
        elif e.HasField("task") and e.task.status.HasField("message"):
            message = e.task.status.message
        if message is not None:
            return "".join(p.text for p in message.parts if p.HasField("text"))
    return ""


def chunks(events: list[StreamResponse]) -> list[str]:
    """The artifact chunks' texts, in order."""
    return [
        "".join(p.text for p in e.artifact_update.artifact.parts if p.HasField("text"))
        for e in events
        if e.HasField("artifact_update")
    ]


class ScriptedExecutor(AgentExecutor):
    """A plain SDK agent: streams "Bon" + "jour"; "book ..." asks which day first;
    "fail" fails saying why; "stuck" ends its reply still working; "quick" answers "ok"
    with one Message and no task."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        task_id, context_id = str(context.task_id), str(context.context_id)
        resumed = context.current_task is not None
        text = get_message_text(message)
        if text == "quick":  # a reply as one Message: no task at all
            reply = Message(
                role=Role.ROLE_AGENT,
                message_id=uuid.uuid4().hex,
                context_id=str(context.context_id),
                parts=[Part(text="ok")],
            )
            self.seen.append({"context_id": str(context.context_id), "text": text})
            await event_queue.enqueue_event(reply)
            return
        if not resumed:
            state = TaskState.TASK_STATE_SUBMITTED
            await event_queue.enqueue_event(new_task(task_id, context_id, state, history=[message]))
        updater = TaskUpdater(event_queue, task_id, context_id)
        data = [p for p in message.parts if p.HasField("data")]
        self.seen.append(
            {
                "context_id": context_id,
                "task_id": task_id,
                "text": text,
                "data": len(data),
                "resumed": resumed,
                "parts": list(message.parts),
            }
        )
        if text == "fail":
            await updater.failed(updater.new_agent_message([Part(text="the database is down")]))
            return
        if text.startswith("book") and not resumed:
            question = [Part(text="Which day?"), new_data_part({"question": "Which day?"})]
            await updater.requires_input(updater.new_agent_message(question))
            return
        if text == "stuck":
            await updater.start_work()
            return
        await updater.start_work()
        said = f"Booked for {text}." if resumed else "Bonjour"
        half = len(said) // 2
        await updater.add_artifact([Part(text=said[:half])], artifact_id="a1", name="answer")
        await updater.add_artifact(
            [Part(text=said[half:])], artifact_id="a1", append=True, last_chunk=True
        )
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, str(context.task_id), str(context.context_id)).cancel()


def scripted_app(
    executor: ScriptedExecutor, name: str = "concierge", *, streaming: bool = True
) -> Starlette:
    """The SDK's own server around ``executor``."""
    card = AgentCard(
        name=name,
        description="Books tables.",
        version="0.1.0",
        supported_interfaces=[
            AgentInterface(url=BASE, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="book", name="book", description="Book a table.", tags=["booking"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return Starlette(routes=routes)
