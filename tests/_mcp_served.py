"""What the MCP server tests serve: two tools, a chatty agent, and one that asks a human."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphagent.agent import HumanInTheLoopHook, ReactAgent
from graphagent.messages import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResponseMessage,
    UserMessage,
)
from graphagent.models import FunctionChatModel
from graphagent.tools import ToolContext, tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers.

    Args:
        a: the first number.
        b: the second number.
    """
    return a + b


@tool
def explode(reason: str) -> str:
    """Always fails, with the reason given."""
    raise RuntimeError(reason)


@tool
def noisy(text: str) -> str:
    """Prints to stdout (which, over stdio, carries the protocol), then echoes."""
    print(f"debugging output: {text}")
    return text


@tool
def whoami(ctx: ToolContext) -> str:
    """Says who is asking, from the request's _meta."""
    return str(ctx.context.get("mcp_meta", {}).get("user", "nobody"))


def _recall(messages: Sequence[Message], tools: Any) -> str:
    said = [m.text for m in messages if isinstance(m, UserMessage)]
    return f"you said {len(said)} things; first: {said[0]}; last: {said[-1]}"


helper = ReactAgent(
    name="helper",
    model=FunctionChatModel(_recall),
    description="Remembers what you said on this thread.",
)


@tool
def send_email(to: str) -> str:
    """Send the email."""
    return f"sent to {to}"


def _mailer(messages: Sequence[Message], tools: Any) -> AssistantMessage | str:
    if isinstance(messages[-1], ToolResponseMessage):
        return f"done: {messages[-1].text}"
    call = ToolCall(id="m1", name="send_email", arguments='{"to": "ceo@example.com"}')
    return AssistantMessage(tool_calls=[call])


mailer = ReactAgent(
    name="mailer",
    model=FunctionChatModel(_mailer),
    tools=[send_email],
    hooks=[HumanInTheLoopHook(approval_on={"send_email": "emails leave the company"})],
)

served = [add, explode, noisy, whoami, helper, mailer]
