"""An agent as one MCP tool, ``ask_<agent>``: a message in, the answer out, by thread id.

The thread ids a caller sees are the server's to issue and live in a namespace of the
caller's own (``graphagent._internal.tenancy``): a caller continues only the threads it started.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from mcp import types

from checkpoint import MemorySaver
from graphagent._internal.answers import ANSWER_HELP, parse_answer
from graphagent._internal.tenancy import ThreadNamespace
from graphagent.agent import BaseAgent
from graphagent.graph import Command
from graphagent.mcp._caller import Call
from graphagent.mcp._names import safe_name

__all__ = ["AgentTool"]

_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to say to the agent."},
        "thread_id": {
            "type": "string",
            "description": "The conversation to continue: the thread_id of an earlier "
            "answer to you; leave it out to start a new one.",
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


class AgentTool:
    """Serves ``agent`` as the tool ``ask_<agent name>``.

    Each call runs the agent on a thread: a new one when ``thread_id`` is left out, else
    the caller's own thread of that id (see :class:`ThreadNamespace`), so an MCP client
    keeps a conversation by passing back the thread id of the previous answer.
    An agent without a saver gets an in-memory one here, or threads could not be kept.
    When the run pauses for a human, the answer is the question and how to resume:
    the next call on that thread id is taken as the human's answer, in the words
    ``graphagent chat`` takes (``approve``, ``reject <reason>``, ``edit <json>``, JSON).
    """

    def __init__(self, agent: BaseAgent, server: str = "graphagent") -> None:
        if agent.graph.saver is None:
            # a copy: the caller's agent object keeps running without a saver
            agent = copy.copy(agent)
            agent.graph = agent.graph.with_saver(MemorySaver())
        self.agent = agent
        self.threads = ThreadNamespace("mcp", server)
        self.name = safe_name(f"ask_{agent.name}")
        description = getattr(agent, "description", "") or f"Ask the {agent.name} agent."
        self.tool = types.Tool(
            name=self.name,
            description=f"{description} Answers with the agent's reply and the thread_id "
            "that continues the conversation.",
            inputSchema=_SCHEMA,
            outputSchema=_OUTPUT,
        )

    async def run(self, arguments: dict[str, Any], call: Call) -> types.CallToolResult:
        """Run the agent on the message; the reply, or the question it waits on.

        Raises:
            ThreadAccessError: ``thread_id`` is not a thread this caller started.
        """
        message = str(arguments.get("message", ""))
        given = arguments.get("thread_id")
        if given:
            public = str(given)
            thread = await self.threads.aresume(self.agent.graph, call.caller, public)
        else:
            public = self.threads.new_thread()
            thread = self.threads.stored(call.caller, public)
        before = await self.agent.graph.aget_state(self.agent._config(None, thread))
        payload: Any = message
        if before.interrupts:
            try:
                payload = Command(resume=parse_answer(message, before.interrupts[0]))
            except ValueError as exc:
                return self._unanswered(public, [i.value for i in before.interrupts], exc)
        answer = (await self.agent.acall(payload, thread_id=thread)).text
        after = await self.agent.graph.aget_state(self.agent._config(None, thread))
        if after.interrupts:
            return self._waiting(public, [i.value for i in after.interrupts])
        data = {"status": "answered", "answer": answer, "thread_id": public}
        text = f"{answer}\n\n(thread_id: {public}; pass it to continue this conversation)"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structuredContent=data
        )

    def _how(self, thread: str) -> str:
        return (
            f"The agent is waiting for a human. Call {self.name} again with "
            f"thread_id={thread!r} and the human's answer as message: for a tool approval "
            f"{ANSWER_HELP} (e.g. 'approve', 'reject too expensive', 'edit {{\"to\": \"bob\"}}'), "
            "for other questions the answer as text or JSON"
        )

    def _waiting(self, thread: str, questions: list[Any]) -> types.CallToolResult:
        question = questions[0] if len(questions) == 1 else questions
        how = self._how(thread)
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

    def _unanswered(
        self, thread: str, questions: list[Any], error: ValueError
    ) -> types.CallToolResult:
        """The message did not answer the question: say so; the thread still waits."""
        result = self._waiting(thread, questions)
        text = f"That did not answer the question ({error}). {_text_of(result)}"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structuredContent=result.structuredContent,
            isError=True,
        )


def _text_of(result: types.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, types.TextContent))
