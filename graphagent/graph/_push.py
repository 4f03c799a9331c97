"""``push_message``: a node hands a message to the ``"messages"`` stream now, and to the
state with its update.

A node that builds a message by other means than a model call (a canned answer, a
message from a queue) shows it to a ``"messages"`` stream reader as it happens, and the
message lands in the state key as if the node had returned it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from graphagent.errors import UserError
from graphagent.graph._command import Command, current_task
from graphagent.messages import Message, coerce_message

__all__ = ["push_message", "with_pushed"]

_TASK = current_task()


def push_message(message: Any, *, state_key: str | None = "messages") -> Message:
    """Emit ``message`` on the ``"messages"`` stream and add it to ``state_key``.

    The message goes to a ``stream(mode="messages")`` reader at once, as
    ``(message, {"node": ...})``, and is merged into ``state_key`` together with what the
    node returns (pushed messages first). ``state_key=None`` only streams it.

    Args:
        message: a message, a string (a user message) or a ``{"role": ...}`` dict.
        state_key: the state key the message is added to, or ``None``.

    Returns:
        the message, as a :class:`~graphagent.messages.Message`.

    Raises:
        UserError: called outside a running node.

    Example::

        def greet(state):
            push_message(AssistantMessage("one moment..."))
            return {"messages": [AssistantMessage("done")]}
    """
    scope = _TASK.get()
    if scope is None or scope.ctx is None:
        raise UserError("push_message() is called from inside a node of a running graph")
    msg = coerce_message(message)
    config = scope.ctx.config
    if config is not None and config.emit is not None:
        config.emit("messages", (msg, {"node": scope.node}))
    if state_key is not None:
        if scope.pushed is None:
            scope.pushed = {}
        scope.pushed.setdefault(state_key, []).append(msg)
    return msg


def _joined(update: Mapping[str, Any] | None, pushed: dict[str, list[Any]]) -> dict[str, Any]:
    out = dict(update or {})
    for key, messages in pushed.items():
        if key in out:
            returned = out[key]
            tail = list(returned) if isinstance(returned, (list, tuple)) else [returned]
            out[key] = [*messages, *tail]
        else:
            out[key] = list(messages)
    return out


def with_pushed(ret: Any, pushed: dict[str, list[Any]]) -> Any:
    """What a node returned, with the messages it pushed added to its update."""
    if isinstance(ret, Command):
        if ret.update is not None and not isinstance(ret.update, Mapping):
            return ret  # refused as it is when the step reads it
        return dataclasses.replace(ret, update=_joined(ret.update, pushed))
    if ret is None or isinstance(ret, Mapping):
        return _joined(ret, pushed)
    return ret
