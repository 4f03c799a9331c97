"""What the server tests serve: a scripted ReAct agent and small graphs.

``graphagent serve tests/server/targets.py:agent tests/server/targets.py:asker ...``
serves them; nothing here calls a model provider.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from graphagent import ReactAgent
from graphagent.agent import HumanInTheLoopHook
from graphagent.config import RunnableConfig
from graphagent.graph import END, START, AppendStrategy, StateGraph, interrupt
from graphagent.messages import AssistantMessage, Message, ToolCall, ToolResponseMessage
from graphagent.models import FunctionChatModel
from graphagent.tools import tool


@tool
def get_weather(city: str) -> str:
    """Get the weather for a city.

    Args:
        city: the city's name.
    """
    return f"sunny in {city}"


def _script(messages: list[Message], tools: Any) -> AssistantMessage:
    """Model -> tool -> model: asks for the weather once, then answers with it."""
    last = messages[-1]
    if isinstance(last, ToolResponseMessage):
        return AssistantMessage(f"It is {last.text}.")
    city = last.text.rsplit(" ", 1)[-1].strip("?") or "Paris"
    call = ToolCall(
        id=f"call-{len(messages)}", name="get_weather", arguments=json.dumps({"city": city})
    )
    return AssistantMessage("", tool_calls=(call,))


agent = ReactAgent(
    name="assistant",
    model=FunctionChatModel(_script, keep_calls=False),
    tools=[get_weather],
    description="Tells the weather.",
)


def _ask(state: Any, config: RunnableConfig) -> dict[str, Any]:
    answer = interrupt({"question": "approve?", "draft": state.get("draft", "")})
    return {"log": [f"answer:{answer}"]}


def _draft(state: Any, config: RunnableConfig) -> dict[str, Any]:
    return {"log": ["drafted"], "draft": "hello"}


asker = (
    StateGraph({"log": AppendStrategy()})
    .add_node("draft", _draft)
    .add_node("ask", _ask)
    .add_edge(START, "draft")
    .add_edge("draft", "ask")
    .add_edge("ask", END)
    .compile(name="asker")
)


async def _work(state: Any, config: RunnableConfig) -> dict[str, Any]:
    if config.writer is not None:
        config.writer({"progress": "started"})
    await asyncio.sleep(float(state.get("delay") or 0))
    if state.get("fail"):
        raise ValueError("asked to fail")
    return {"log": [f"done:{state.get('tag', '')}"]}


slow = (
    StateGraph({"log": AppendStrategy()})
    .add_node("work", _work)
    .add_edge(START, "work")
    .add_edge("work", END)
    .compile(name="slow")
)


def user_of(headers: Any) -> str:
    """The auth function of the tenancy tests: ``Authorization: Bearer <user>``."""
    token = headers.get("authorization", "")
    if not token.startswith("Bearer "):
        raise PermissionError("send Authorization: Bearer <user>")
    return str(token.removeprefix("Bearer "))


@tool
def slow_lookup(city: str) -> str:
    """Look a city up, slowly (long enough for the fault test to kill a worker mid-run).

    Args:
        city: the city's name.
    """
    time.sleep(0.4)
    return f"sunny in {city}"


def _slow_script(messages: list[Message], tools: Any) -> AssistantMessage:
    last = messages[-1]
    if isinstance(last, ToolResponseMessage):
        return AssistantMessage(f"It is {last.text}.")
    city = last.text.rsplit(" ", 1)[-1]
    args = json.dumps({"city": city})
    return AssistantMessage(
        "", tool_calls=(ToolCall(id=f"c-{city}", name="slow_lookup", arguments=args),)
    )


slow_agent = ReactAgent(
    name="slow_assistant",
    model=FunctionChatModel(_slow_script, keep_calls=False),
    tools=[slow_lookup],
)


careful = ReactAgent(
    name="careful",
    model=FunctionChatModel(_script, keep_calls=False),
    tools=[get_weather],
    hooks=[HumanInTheLoopHook({"get_weather": "looks the weather up"})],
    description="Asks before it looks the weather up.",
)
