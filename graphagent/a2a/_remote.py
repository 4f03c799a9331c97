"""``A2aRemoteAgent``: a remote A2A agent, used as a local one.

Its graph is two nodes. ``remote`` sends the conversation's last message to the remote
agent (the run's thread id is the remote ``contextId``) and streams the answer's
artifact chunks as this agent's message chunks. When the remote task asks for input,
``remote`` keeps the task in the private ``"__a2a"`` key and ``ask`` pauses the local
thread with the remote question; the local answer goes back to ``remote``, which sends
it on the same remote task.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from typing import Any

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import AgentCard, Message, Role, SendMessageRequest, StreamResponse, TaskState

from checkpoint import MemorySaver
from checkpoint.base import CheckpointSaver
from graphagent.a2a._errors import A2aAgentError
from graphagent.a2a._loop import LoopThread
from graphagent.a2a._parts import data_of, data_part, text_of, to_parts
from graphagent.agent import BaseAgent
from graphagent.config import RunnableConfig
from graphagent.graph import (
    END,
    START,
    AppendStrategy,
    MergeStrategy,
    OverAllState,
    ReplaceStrategy,
    StateGraph,
    interrupt,
)
from graphagent.messages import AssistantMessage, UserMessage
from graphagent.messages import Message as LocalMessage
from graphagent.models import AssistantChunk

__all__ = ["A2aRemoteAgent"]

PENDING = "__a2a"
_DONE = {TaskState.TASK_STATE_COMPLETED}
_ASKING = {TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED}
_FAILED = {
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_REJECTED,
    TaskState.TASK_STATE_CANCELED,
}


class _Reply:
    """What one remote task said, gathered from its events."""

    def __init__(self) -> None:
        self.task_id = ""
        self.context_id = ""
        self.state = TaskState.TASK_STATE_UNSPECIFIED
        self.status_parts: list[Any] = []
        self.artifacts: dict[str, str] = {}  # artifact id -> its text, in arrival order
        self.reasoning: dict[str, str] = {}  # the same, for artifacts named "reasoning"
        self.direct: str | None = None  # a reply as a Message, with no task

    def answer(self) -> str:
        if self.direct is not None:
            return self.direct
        texts = [t for t in self.artifacts.values() if t]
        return texts[-1] if texts else text_of(self.status_parts)


class A2aRemoteAgent(BaseAgent):
    """A remote A2A agent, usable wherever a local agent is: called on its own, as a
    sub-agent of ``SequentialAgent``, ``ParallelAgent`` or ``LlmRoutingAgent``, or as a
    tool through ``AgentTool``.

    It sends the conversation's last message (text, images, files) and streams the
    answer. The run's ``thread_id`` is the remote ``contextId``, so the remote agent
    keeps the conversation. A remote task that asks for input pauses the local thread
    (``interrupt``) with the remote question; resuming it (``Command(resume=answer)``)
    sends the answer on the same remote task.

    Args:
        url: the remote agent's base URL (its card is read from
            ``<url>/.well-known/agent-card.json``).
        name: the agent's name here (default: the name on its card, read now).
        description: shown to routers and tools (default: the card's).
        saver: keeps local pauses (default: in memory).
        headers: sent with every request (e.g. ``{"Authorization": "Bearer ..."}``); with
            ``httpx_client``, set them on that client instead.
        timeout: seconds to wait for any one read.
        httpx_client: an ``httpx.AsyncClient`` to use instead of one of its own (for
            tests: ``httpx.ASGITransport(app)`` reaches an app in the process).

    Raises:
        A2aAgentError: the card cannot be read (when ``name`` is not given).

    Example:
        >>> remote = A2aRemoteAgent("http://127.0.0.1:9", name="weather")  # nothing sent yet
        >>> remote.name
        'weather'
        >>> remote.close()
    """

    def __init__(
        self,
        url: str,
        name: str | None = None,
        *,
        description: str | None = None,
        saver: CheckpointSaver | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        httpx_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self._headers = dict(headers or {})
        self._timeout = timeout
        self._given_http = httpx_client
        self._http: httpx.AsyncClient | None = None
        self._client: Client | None = None
        self._card: AgentCard | None = None
        self._lock = threading.Lock()
        self._loop: LoopThread | None = None
        self.name = name or "remote"
        if name is None:
            card = self._on_loop().run(self._read_card())
            self.name = card.name
        self.description = description or (self._card.description if self._card else "")
        self.graph = self._build().compile(saver or MemorySaver(), name=self.name, agent=self)

    # -- the graph ---------------------------------------------------------------------

    def _build(self) -> StateGraph:
        g = StateGraph(
            {
                "messages": AppendStrategy(),
                "structured_response": ReplaceStrategy(),
                "results": MergeStrategy(),
                PENDING: ReplaceStrategy(),
            }
        )
        g.add_node("remote", self._send_sync, kind="agent", afn=self._send_async)
        g.add_node("ask", self._ask)
        g.add_edge(START, "remote")
        g.add_conditional_edges("remote", self._next, {"ask": "ask", "end": END})
        g.add_edge("ask", "remote")
        return g

    @staticmethod
    def _next(state: OverAllState) -> str:
        return "ask" if state.get(PENDING) else "end"

    def _ask(self, state: OverAllState) -> dict[str, Any]:
        pending = dict(state[PENDING])
        data = pending.get("data")
        question = data[0] if isinstance(data, list) and len(data) == 1 else data
        answer = interrupt(question if question is not None else pending["question"])
        return {PENDING: {**pending, "answer": answer}}

    def _send_sync(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        return self._on_loop().run(self._send(state, config))

    async def _send_async(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        return await self._on_loop().arun(self._send(state, config))

    # -- talking to the remote agent ---------------------------------------------------

    def _on_loop(self) -> LoopThread:
        with self._lock:
            if self._loop is None:
                self._loop = LoopThread(f"a2a-{self.name}")
            return self._loop

    def _fault(self, what: str, exc: BaseException | None = None, **kw: Any) -> A2aAgentError:
        why = f": {type(exc).__name__}: {exc}" if exc is not None else ""
        return A2aAgentError(
            f"remote A2A agent {self.name!r} at {self.url}: {what}{why}",
            agent=self.name,
            url=self.url,
            **kw,
        )

    def _http_client(self) -> httpx.AsyncClient:
        if self._given_http is not None:
            return self._given_http
        if self._http is None:
            self._http = httpx.AsyncClient(headers=self._headers, timeout=self._timeout)
        return self._http

    async def _read_card(self) -> AgentCard:
        if self._card is None:
            try:
                resolver = A2ACardResolver(self._http_client(), self.url)
                self._card = await resolver.get_agent_card(
                    http_kwargs={"headers": self._headers} if self._headers else None
                )
            except Exception as exc:
                raise self._fault("cannot read its agent card", exc) from exc
        return self._card

    async def _connect(self) -> Client:
        if self._client is None:
            card = await self._read_card()
            config = ClientConfig(streaming=True, httpx_client=self._http_client())
            try:
                self._client = ClientFactory(config).create(card)
            except ValueError as exc:
                raise self._fault("its card offers no transport this client speaks", exc) from exc
        return self._client

    def _outgoing(self, state: OverAllState, config: RunnableConfig) -> Message:
        pending = state.get(PENDING) or {}
        message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex)
        if config.thread_id:
            message.context_id = config.thread_id
        if pending:
            message.task_id = pending["task_id"]
            message.context_id = pending["context_id"]
            answer = pending.get("answer")
            message.parts.append(
                data_part(answer)
                if not isinstance(answer, str)
                else to_parts(UserMessage(answer))[0]
            )
            return message
        last = _last(state.get("messages", ()))
        message.parts.extend(to_parts(last))
        return message

    async def _send(self, state: OverAllState, config: RunnableConfig) -> dict[str, Any]:
        client = await self._connect()
        request = SendMessageRequest(message=self._outgoing(state, config))
        reply, answer_id = _Reply(), f"a2a-{uuid.uuid4().hex}"
        try:
            async for event in client.send_message(request):
                self._take(event, reply, config, answer_id)
        except A2aAgentError:
            raise
        except Exception as exc:
            raise self._fault("the message failed", exc) from exc
        return self._outcome(reply, answer_id)

    def _take(self, event: StreamResponse, reply: _Reply, config: RunnableConfig, key: str) -> None:
        if event.HasField("message"):
            reply.direct = text_of(event.message.parts)
            self._emit(config, reply.direct, key)
            reply.state = TaskState.TASK_STATE_COMPLETED
        elif event.HasField("task"):
            task = event.task
            reply.task_id, reply.context_id, reply.state = (
                task.id,
                task.context_id,
                task.status.state,
            )
            reply.status_parts = list(task.status.message.parts)
            for artifact in task.artifacts:  # a whole task (no streaming): its artifacts
                kept = reply.reasoning if artifact.name == "reasoning" else reply.artifacts
                kept.setdefault(artifact.artifact_id, text_of(artifact.parts))
        elif event.HasField("status_update"):
            update = event.status_update
            reply.task_id, reply.context_id = update.task_id, update.context_id
            reply.state = update.status.state
            reply.status_parts = list(update.status.message.parts)
        elif event.HasField("artifact_update"):
            update = event.artifact_update
            text = text_of(update.artifact.parts)
            aid = update.artifact.artifact_id
            thinking = update.artifact.name == "reasoning" or aid in reply.reasoning
            kept = reply.reasoning if thinking else reply.artifacts
            kept[aid] = (kept.get(aid, "") if update.append else "") + text
            self._emit(config, text, key, thinking=thinking)

    def _emit(self, config: RunnableConfig, text: str, key: str, thinking: bool = False) -> None:
        if text and config.emit is not None:
            chunk = (
                AssistantChunk(reasoning=text, id=key)
                if thinking
                else AssistantChunk(content=text, id=key)
            )
            config.emit("messages", (chunk, {"agent": self.name, "node": "remote"}))

    def _outcome(self, reply: _Reply, key: str) -> dict[str, Any]:
        state_name = TaskState.Name(reply.state)
        where = {"task_id": reply.task_id or None, "state": state_name}
        if reply.state in _ASKING:
            pending = {
                "task_id": reply.task_id,
                "context_id": reply.context_id,
                "question": text_of(reply.status_parts),
                "data": data_of(reply.status_parts) or None,
            }
            return {PENDING: pending}
        if reply.state in _FAILED:
            said = text_of(reply.status_parts) or "no reason given"
            raise self._fault(f"task {reply.task_id} ended {state_name}: {said}", **where)
        if reply.state not in _DONE:
            raise self._fault(f"the reply ended with task {reply.task_id} {state_name}", **where)
        meta = {
            "a2a": {"agent": self.name, "task_id": reply.task_id, "context_id": reply.context_id}
        }
        thought = "".join(reply.reasoning.values())
        answer = AssistantMessage(reply.answer(), id=key, metadata=meta, reasoning=thought)
        return {"messages": [answer], PENDING: None}

    # -- closing -----------------------------------------------------------------------

    async def _aclose_client(self) -> None:
        self._client = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def close(self) -> None:
        """Close the connections and stop the client's loop thread."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.run(self._aclose_client())
            loop.stop()

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            await loop.arun(self._aclose_client())
            loop.stop()

    def __enter__(self) -> A2aRemoteAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> A2aRemoteAgent:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<A2aRemoteAgent {self.name!r} at {self.url}>"


def _last(messages: Any) -> LocalMessage:
    listed = list(messages)
    if not listed:
        return UserMessage("")
    last = listed[-1]
    if isinstance(last, UserMessage):
        return last
    return UserMessage(last.content)  # an earlier agent's answer, said to this one
