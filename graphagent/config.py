"""Run configuration: which thread, which checkpoint, user metadata, limits."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graphagent.errors import UserError

__all__ = ["ConfigLike", "RunnableConfig", "ensure_config"]


def _discard(_: Any) -> None:
    """Default ``config.writer``: custom stream output goes nowhere unless streamed."""


class RunnableConfig(BaseModel):
    """The immutable context of one run.

    Anywhere a config is taken, a plain dict with these keys works too.

    Attributes:
        thread_id: the conversation to load and checkpoint; ``None`` runs fresh. An
            ``int`` or a ``uuid.UUID`` is taken as its text (``str(value)``).
        checkpoint_id: start from this checkpoint of the thread (time travel, forks).
        checkpoint_ns: ``""`` for the graph itself, or a paused subgraph inside it, as
            ``get_state(config, subgraphs=True).tasks[i].state.config`` names it
            (``"node:task_id"``, ``"|"``-joined when nested; the ``:task_id`` parts may
            be left out): ``get_state`` and ``update_state`` then read and write that
            subgraph's own state.
        metadata: user data for hooks and tools (user id, tenant, ...); also stored
            in each checkpoint's metadata.
        recursion_limit: most super-steps one run may take.
        configurable: free-form options for nodes. A ``thread_id`` or ``checkpoint_id``
            found here (LangGraph's place for them) is used when the top-level one is unset.
        writer: call it from a node to emit ``"custom"`` stream events.
        store: the long-term memory store of the run (``compile(store=...)``,
            ``ReactAgent(store=...)``): nodes, hooks and tools read and write it
            (Spring AI Alibaba's ``config.store()``); ``None`` without one.
        emit: set while a ``"messages"`` stream is read: ``emit("messages", payload)``
            hands model tokens and tool results to the caller as they happen (agents use
            it; ``None`` otherwise).
        context: the run's context object (``invoke(..., context=Ctx(...))``): typed,
            per run, never stored (a user id, a database handle). Nodes read it as
            ``runtime.context`` (a ``runtime`` parameter, or ``get_runtime()``), tools as
            ``ctx.runtime.context``; ``None`` without one.
        listeners: :class:`~graphagent.graph.GraphLifecycleListener` objects told of
            this run's start, nodes, errors and end (besides the compiled graph's).

    Example:
        >>> cfg = RunnableConfig(thread_id="u42", metadata={"user_id": "ada"})
        >>> cfg.metadata["user_id"]
        'ada'
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    thread_id: str | None = None
    checkpoint_id: str | None = None
    checkpoint_ns: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    recursion_limit: int = Field(default=25, ge=1)
    configurable: dict[str, Any] = Field(default_factory=dict)
    writer: Callable[[Any], None] = Field(default=_discard, exclude=True, repr=False)
    emit: Callable[[str, Any], None] | None = Field(default=None, exclude=True, repr=False)
    store: Any = Field(default=None, exclude=True, repr=False)
    context: Any = Field(default=None, exclude=True, repr=False)

    @field_validator("thread_id", mode="before")
    @classmethod
    def _thread_text(cls, value: Any) -> Any:
        # LangGraph users key threads by int or UUID; a thread is stored under its text
        if isinstance(value, uuid.UUID) or (type(value) is int):
            return str(value)
        return value

    listeners: tuple[Any, ...] = Field(default=(), exclude=True, repr=False)


ConfigLike = RunnableConfig | Mapping[str, Any] | None


def ensure_config(config: ConfigLike = None, **overrides: Any) -> RunnableConfig:
    """Turn ``None``, a dict or a :class:`RunnableConfig` into a :class:`RunnableConfig`.

    Args:
        config: what the caller passed.
        **overrides: fields to set on top (``None`` values are ignored).

    Raises:
        UserError: an unknown key or a value of the wrong type, named.
    """
    updates = {k: v for k, v in overrides.items() if v is not None} if overrides else {}
    if isinstance(config, RunnableConfig):
        return config.model_copy(update=updates) if updates else config
    data: dict[str, Any] = dict(config or {})
    # LangGraph puts these under "configurable"; ignoring them would silently drop the thread
    configurable = data.get("configurable")
    if configurable:
        for key in ("thread_id", "checkpoint_id", "checkpoint_ns"):
            nested = configurable.get(key) if isinstance(configurable, Mapping) else None
            if nested is not None and data.get(key) is None:
                data[key] = nested
    if updates:
        data.update(updates)
    try:
        return RunnableConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'config'}: {e['msg']}" for e in exc.errors()
        )
        raise UserError(
            f"invalid run config ({problems}); allowed keys: "
            "thread_id, checkpoint_id, checkpoint_ns, metadata, recursion_limit, configurable"
        ) from None
