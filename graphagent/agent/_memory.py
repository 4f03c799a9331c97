"""Long-term memory for agents: a remember/recall tool pair and an interceptor that puts
what the store recalls in front of each model call.

Both work on a namespace written as a template over the run's metadata, by default
``("memories", "{user_id}")``: a run with ``metadata={"user_id": "ada"}`` reads and
writes ``("memories", "ada")``, whatever thread it is on. The store is the agent's
(``ReactAgent(store=...)``), reached as ``ctx.store`` and ``request.config.store``.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from graphagent.agent._interceptors import ModelHandler, ModelInterceptor, ModelRequest
from graphagent.errors import UserError
from graphagent.messages import AssistantMessage, SystemMessage, UserMessage
from graphagent.tools import FunctionToolCallback, ToolContext, tool

__all__ = ["MemoryRecallInterceptor", "memory_namespace", "memory_tools"]

DEFAULT_NAMESPACE = ("memories", "{user_id}")


def memory_namespace(template: Sequence[str], metadata: Mapping[str, Any]) -> tuple[str, ...]:
    """``template`` with ``{name}`` filled from the run's metadata.

    Raises:
        UserError: a placeholder the metadata does not hold, named with the fix.
    """
    try:
        return tuple(str(label).format_map(metadata) for label in template)
    except KeyError as exc:
        raise UserError(
            f"the memory namespace {tuple(template)!r} needs {exc.args[0]!r} in the run's "
            f"metadata: call with config={{'metadata': {{{exc.args[0]!r}: ...}}}}"
        ) from None


def _store(store: Any) -> Any:
    if store is None:
        raise UserError(
            "memory tools need a store: ReactAgent(..., store=MemoryStore()) or compile(store=...)"
        )
    return store


def _recalled(store: Any, namespace: tuple[str, ...], query: str, limit: int) -> list[Any]:
    """Items for ``query``; on a store without an index, where a query matches only as a
    substring, the newest memories when nothing matches."""
    found: list[Any] = store.search(namespace, query=query or None, limit=limit)
    if not found and query:
        found = store.search(namespace, limit=limit)
    return found


def _lines(items: Sequence[Any]) -> str:
    return "\n".join(f"- {item.value.get('text', item.value)}" for item in items)


def memory_tools(
    namespace: Sequence[str] = DEFAULT_NAMESPACE, *, limit: int = 5
) -> list[FunctionToolCallback]:
    """The ``remember`` and ``recall`` tools over one namespace of the agent's store.

    Args:
        namespace: labels, each a template over the run's metadata.
        limit: most memories ``recall`` returns.

    Example::

        agent = ReactAgent(model=model, tools=memory_tools(), store=MemoryStore())
        agent.call("I like green tea", thread_id="t1", config={"metadata": {"user_id": "ada"}})
    """
    template = tuple(namespace)

    @tool
    def remember(fact: str, ctx: ToolContext) -> str:
        """Save a fact about the user for future conversations.

        Args:
            fact: the fact, as a short sentence (e.g. "prefers green tea").
        """
        where = memory_namespace(template, ctx.metadata)
        _store(ctx.store).put(where, uuid.uuid4().hex, {"text": fact})
        return f"Remembered: {fact}"

    @tool
    def recall(query: str, ctx: ToolContext) -> str:
        """Look up what you remember about the user.

        Args:
            query: what to look for (e.g. "favourite drink").
        """
        where = memory_namespace(template, ctx.metadata)
        found = _recalled(_store(ctx.store), where, query, limit)
        return _lines(found) if found else "Nothing remembered yet."

    return [remember, recall]


class MemoryRecallInterceptor(ModelInterceptor):
    """Before each model call, recall memories related to the user's last message and
    send them as a system message. They are sent, never written to the thread.

    Args:
        namespace: labels, each a template over the run's metadata.
        limit: most memories sent.
        header: the text before the list.
    """

    def __init__(
        self,
        namespace: Sequence[str] = DEFAULT_NAMESPACE,
        *,
        limit: int = 5,
        header: str = "What you remember about the user:",
    ) -> None:
        self.namespace = tuple(namespace)
        self.limit = limit
        self.header = header

    def _with_memories(self, request: ModelRequest) -> ModelRequest:
        store = request.config.store
        if store is None:
            return request
        query = next((m.text for m in reversed(request.messages) if isinstance(m, UserMessage)), "")
        where = memory_namespace(self.namespace, request.config.metadata)
        found = _recalled(store, where, query, self.limit)
        if not found:
            return request
        note = SystemMessage(f"{self.header}\n{_lines(found)}", id="recalled-memories")
        messages = list(request.messages)
        # after the system prompt, if there is one, so the prompt stays first
        at = 1 if messages and isinstance(messages[0], SystemMessage) else 0
        return request.override(messages=[*messages[:at], note, *messages[at:]])

    def intercept_model(self, request: ModelRequest, handler: ModelHandler) -> AssistantMessage:
        """Add the recalled memories, then call the model."""
        return handler(self._with_memories(request))
