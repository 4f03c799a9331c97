"""Served for the tenancy tests: an agent whose saver already holds the application's
own thread ``u42``, as a web app sharing the saver would have it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from checkpoint import MemorySaver
from graphagent.agent import ReactAgent
from graphagent.messages import Message, UserMessage
from graphagent.models import FunctionChatModel

APP_SECRET = "the application's own thread: payroll for March"


def _recall(messages: Sequence[Message], tools: Any) -> str:
    said = [m.text for m in messages if isinstance(m, UserMessage)]
    return f"you said {len(said)} things; first: {said[0]}; last: {said[-1]}"


helper = ReactAgent(
    name="helper",
    model=FunctionChatModel(_recall),
    saver=MemorySaver(),
    description="Remembers what you said on this thread.",
)
helper.call(APP_SECRET, thread_id="u42")  # the application's thread, not served
