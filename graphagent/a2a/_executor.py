"""The served side: one A2A task runs the agent on the thread its contextId names.

- the contextId is the thread: the stored id is ``a2a:<server>:<owner digest>:<contextId>``
  (``graphagent._internal.tenancy``), so a caller reaches only its own contexts;
- the answer streams as artifact chunks, one artifact per answer of the model (and its
  reasoning, when the model gives one, in an artifact named ``"reasoning"`` before it);
- a pause for a human ends the message in ``TASK_STATE_INPUT_REQUIRED`` with the
  question (text, and each question itself as a data part); the next message on that
  task is the human's answer, in the words ``graphagent chat`` takes or as a data part.
  Which task asked is kept in the metadata of the thread's checkpoints (each run writes
  ``a2a_task_id`` there), so a restarted server on a lasting saver still knows it;
- an exception ends the task in ``TASK_STATE_FAILED`` with a message naming it.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Part, Task, TaskState, TaskStatus

from graphagent._internal.answers import ANSWER_HELP, approval_requests, parse_answer
from graphagent._internal.tenancy import ThreadNamespace
from graphagent.a2a._parts import data_of, data_part, text_of, user_message
from graphagent.agent import BaseAgent
from graphagent.graph import Command, Interrupt
from graphagent.messages import AssistantMessage
from graphagent.models import AssistantChunk

__all__ = ["TASK_KEY", "AgentExecutorFor", "owner_of"]

TASK_KEY = "a2a_task_id"
"""The run metadata key (and so checkpoint metadata key) naming the A2A task of a run."""

_log = logging.getLogger("graphagent.a2a")


def owner_of(context: RequestContext) -> str:
    """Whose contexts these are: the authenticated user, else every anonymous caller."""
    user = context.call_context.user
    if user.is_authenticated:
        return f"user:{user.user_name}"
    return "anonymous"


def _question_text(questions: tuple[Interrupt, ...]) -> str:
    lines = []
    for q in questions:
        requests = approval_requests(q.value)
        if requests is None:
            shown = q.value if isinstance(q.value, str) else json.dumps(q.value, default=str)
            lines.append(shown)
            continue
        for r in requests:
            why = f" ({r['description']})" if r.get("description") else ""
            args = json.dumps(r.get("arguments", {}), default=str)
            lines.append(f"approve the call {r.get('name')}({args}){why}?")
        lines.append(f"Answer on this task: {ANSWER_HELP}.")
    return "\n".join(lines)


async def _piece(
    updater: TaskUpdater, kind: str, key: str, text: str, sent: dict[str, str]
) -> None:
    """One streamed piece of an answer's text (``kind="answer"``) or of its reasoning
    (an artifact named ``"reasoning"``), appended to that answer's artifact."""
    await updater.add_artifact(
        [Part(text=text)],
        artifact_id=f"{kind}-{key}",
        name=kind,
        append=key in sent,
        last_chunk=False,
    )
    sent[key] = sent.get(key, "") + text


class AgentExecutorFor(AgentExecutor):
    """Runs ``agent`` for the SDK's request handler (see the module's docstring)."""

    def __init__(self, agent: BaseAgent, threads: ThreadNamespace) -> None:
        self.agent = agent
        self.threads = threads

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Run the agent on the message (see the module's docstring)."""
        task_id, context_id = str(context.task_id), str(context.context_id)
        updater = TaskUpdater(event_queue, task_id, context_id)
        if context.current_task is None:
            history = [context.message] if context.message is not None else []
            status = TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)
            task = Task(id=task_id, context_id=context_id, status=status, history=history)
            await event_queue.enqueue_event(task)
        thread = self.threads.stored(owner_of(context), context_id)
        config = {"thread_id": thread}
        parts = list(context.message.parts) if context.message is not None else []
        before = await self.agent.graph.aget_state(config)
        payload: Any = user_message(parts)
        if before.interrupts:
            # the run that paused wrote its task into the checkpoint: it survives restarts
            asked = before.metadata.get(TASK_KEY)
            if asked is not None and asked != task_id:
                why = (
                    f"context {context_id} is waiting for an answer on task {asked}: send the "
                    "answer there (with that taskId)"
                )
                await updater.reject(updater.new_agent_message([Part(text=why)]))
                return
            try:
                payload = Command(resume=self._answer(parts, before.interrupts[0]))
            except ValueError as exc:
                again = f"That did not answer the question ({exc}).\n"
                again += _question_text(before.interrupts)
                message = [Part(text=again), *(data_part(q.value) for q in before.interrupts)]
                await updater.requires_input(updater.new_agent_message(message))
                return
        await updater.start_work()
        await self._run(payload, thread, updater)

    @staticmethod
    def _answer(parts: list[Part], question: Interrupt) -> Any:
        data = data_of(parts)
        if data:
            return data[0]
        return parse_answer(text_of(parts), question)

    async def _run(self, payload: Any, thread: str, updater: TaskUpdater) -> None:
        streamed: dict[str, str] = {}  # answer id -> its text sent so far
        thought: dict[str, str] = {}  # answer id -> its reasoning sent so far
        try:
            config = {"thread_id": thread, "metadata": {TASK_KEY: updater.task_id}}
            async for item, _info in self.agent.astream(payload, config, mode="messages"):
                if not isinstance(item, (AssistantChunk, AssistantMessage)):
                    continue
                if item.reasoning:
                    await _piece(updater, "reasoning", str(item.id), item.reasoning, thought)
                if item.content:
                    await _piece(updater, "answer", str(item.id), item.content, streamed)
            after = await self.agent.graph.aget_state({"thread_id": thread})
        except Exception as exc:
            _log.warning("A2A task %s failed: %s", updater.task_id, type(exc).__name__)
            why = f"{self.agent.name} failed: {type(exc).__name__}: {exc}"
            await updater.failed(updater.new_agent_message([Part(text=why)]))
            return
        if after.interrupts:
            question = [Part(text=_question_text(after.interrupts))]
            question.extend(data_part(q.value) for q in after.interrupts)
            await updater.requires_input(updater.new_agent_message(question))
            return
        await self._last_chunk(after.values, streamed, updater)
        await updater.complete()

    @staticmethod
    async def _last_chunk(values: Any, streamed: dict[str, str], updater: TaskUpdater) -> None:
        """Close the answer's artifact; an answer nothing streamed (a tool's direct
        result) is sent whole."""
        answer = None
        for message in reversed(values.get("messages", ())):
            if isinstance(message, AssistantMessage):
                answer = message
                break
        key = str(answer.id) if answer is not None else ""
        if answer is not None and answer.content and key not in streamed:
            parts = [Part(text=answer.content)]
            await updater.add_artifact(
                parts, artifact_id=f"answer-{key}", name="answer", last_chunk=True
            )
        elif streamed:
            last = next(reversed(streamed))
            await updater.add_artifact(
                [Part(text="")], artifact_id=f"answer-{last}", append=True, last_chunk=True
            )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Mark the task canceled (the SDK has already stopped its run)."""
        updater = TaskUpdater(event_queue, str(context.task_id), str(context.context_id))
        await updater.cancel()
