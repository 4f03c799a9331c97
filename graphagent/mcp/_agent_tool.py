"""An agent as one MCP tool, ``ask_<agent>``: a message in, the answer out, by thread id."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

from mcp import types

from checkpoint import MemorySaver
from graphagent.agent._base import BaseAgent, last_answer
from graphagent.graph import Command
from graphagent.mcp._names import safe_name

__all__ = ["AgentTool"]

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to say to the agent."},
        "thread_id": {
            "type": "string",
            "description": "The conversation to continue (from an earlier answer); "
            "leave it out to start a new one.",
        },
    },
    "required": ["message"],
}
_OUTPUT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "status": {"type": "string", "enum": ["answered", "waiting_for_human"]},
        "answer": {"type": "string"},
        "question": {},
        "thread_id": {"type": "string"},
        "how_to_resume": {"type": "string"},
    },
    "required": ["status", "thread_id"],
}


def _resume_value(message: str) -> Any:
    """A human's answer: JSON when it parses (decisions, lists), else the text itself."""
    try:
        return json.loads(message)
    except ValueError:
        return message


class AgentTool:
    """Serves ``agent`` as the tool ``ask_<agent name>``.

    Each call runs the agent on ``thread_id`` (a new one when left out), so an MCP
    client keeps a conversation by passing back the thread id of the previous answer.
    An agent without a saver gets an in-memory one here, or threads could not be kept.
    When the run pauses for a human, the answer is the question and how to resume:
    the next call on that thread id is taken as the human's answer.
    """

    def __init__(self, agent: BaseAgent) -> None:
        if agent.graph.saver is None:
            # a copy: the caller's agent object keeps running without a saver
            agent = copy.copy(agent)
            agent.graph = agent.graph.with_saver(MemorySaver())
        self.agent = agent
        self.name = safe_name(f"ask_{agent.name}")
        description = getattr(agent, "description", "") or f"Ask the {agent.name} agent."
        self.tool = types.Tool(
            name=self.name,
            description=f"{description} Answers with the agent's reply and the thread_id "
            "that continues the conversation.",
            inputSchema=_SCHEMA,
            outputSchema=_OUTPUT,
        )

    async def run(
        self, arguments: dict[str, Any], meta: dict[str, Any] | None
    ) -> types.CallToolResult:
        """Run the agent on the message; the reply, or the question it waits on."""
        message = str(arguments.get("message", ""))
        thread = str(arguments.get("thread_id") or uuid.uuid4().hex)
        before = await self.agent.graph.aget_state(self.agent._config(None, thread))
        payload: Any = Command(resume=_resume_value(message)) if before.interrupts else message
        state = await self.agent.ainvoke(payload, thread_id=thread)
        after = await self.agent.graph.aget_state(self.agent._config(None, thread))
        if after.interrupts:
            return self._waiting(thread, [i.value for i in after.interrupts])
        answer = last_answer(state).text
        data = {"status": "answered", "answer": answer, "thread_id": thread}
        text = f"{answer}\n\n(thread_id: {thread}; pass it to continue this conversation)"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structuredContent=data
        )

    def _waiting(self, thread: str, questions: list[Any]) -> types.CallToolResult:
        question = questions[0] if len(questions) == 1 else questions
        how = (
            f"The agent is waiting for a human. Call {self.name} again with "
            f"thread_id={thread!r} and the human's answer as message (JSON for a structured "
            'answer, e.g. [{"type": "approve"}])'
        )
        data = {
            "status": "waiting_for_human",
            "question": question,
            "thread_id": thread,
            "how_to_resume": how,
        }
        text = f"{how}. The question: {json.dumps(question, default=str)}"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structuredContent=json.loads(json.dumps(data, default=str)),
        )
