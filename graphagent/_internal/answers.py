"""A person's answer to a paused run, typed as words: ``approve``, ``reject <reason>``,
``edit <json>`` or JSON.

Shared by every surface where a person answers in text (``graphagent chat``, an MCP
client resuming ``ask_<agent>``), so the same words work everywhere.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["ANSWER_HELP", "approval_requests", "parse_answer"]

ANSWER_HELP = "approve | reject <reason> | edit <json arguments> | JSON"
"""The answers a tool approval takes, for help texts."""


def approval_requests(value: Any) -> list[Mapping[str, Any]] | None:
    """The tool calls awaiting approval, when ``value`` is a HumanInTheLoopHook question."""
    if isinstance(value, Mapping):
        found = value.get("action_requests")
        if isinstance(found, list) and all(isinstance(r, Mapping) for r in found):
            return found
    return None


def _edit(rest: str, count: int) -> list[dict[str, Any]]:
    if count != 1:
        raise ValueError(
            f"edit changes one call, and {count} are waiting: answer with a JSON list, one "
            'decision per call, e.g. [{"type": "approve"}, {"type": "edit", "arguments": {...}}]'
        )
    try:
        arguments = json.loads(rest)
    except ValueError as exc:
        raise ValueError(f"edit takes the new arguments as JSON ({exc})") from None
    if not isinstance(arguments, dict):
        raise ValueError('edit takes a JSON object of arguments, e.g. edit {"to": "bob"}')
    return [{"type": "edit", "arguments": arguments}]


def parse_answer(text: str, question: Any) -> Any:
    """The resume value for what a person typed at ``question`` (an ``Interrupt``).

    For a tool approval (a :class:`~graphagent.agent.HumanInTheLoopHook` question):
    ``approve`` (or ``yes``), ``reject <reason>`` (or ``no``), ``edit <json arguments>``,
    or the decisions as JSON. For any other question: JSON when it parses, else the text.

    Raises:
        ValueError: the text is not an answer this question takes (the message says why).

    Example:
        >>> from types import SimpleNamespace
        >>> ask = SimpleNamespace(value={"action_requests": [{"name": "send_email"}]})
        >>> parse_answer("reject not today", ask)
        [{'type': 'reject', 'reason': 'not today'}]
    """
    requests = approval_requests(getattr(question, "value", None))
    stripped = text.strip()
    if requests is not None:
        word, _, rest = stripped.partition(" ")
        word, rest = word.lower(), rest.strip()
        if word in ("approve", "approved", "yes", "y"):
            return [{"type": "approve"} for _ in requests]
        if word in ("reject", "no", "n"):
            return [{"type": "reject", "reason": rest or "no reason given"} for _ in requests]
        if word == "edit":
            return _edit(rest, len(requests))
    try:
        return json.loads(stripped)
    except ValueError:
        if requests is not None:
            raise ValueError(f"not an answer to a tool approval; answer {ANSWER_HELP}") from None
        return text
