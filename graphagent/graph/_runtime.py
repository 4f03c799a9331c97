"""``Runtime``: what one run hands every node besides the state (its context object, the
store, the stream writer, the config), and ``get_runtime()`` to reach it from anywhere.

The context object is the run's own (``invoke(..., context=Ctx(...))``): typed, per run,
never checkpointed, so it can hold a user id, a tenant, a database handle. The graph's
``context_schema`` turns a dict into that type when the caller passes one.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic

from typing_extensions import TypeVar

from graphagent.config import RunnableConfig
from graphagent.errors import UserError
from graphagent.graph._command import current_task

__all__ = ["Runtime", "coerce_context", "get_runtime"]

C = TypeVar("C", default=Any)
"""The context object's type: ``Runtime[Ctx]``."""

_TASK = current_task()


def _discard(_: Any) -> None:
    """The stream writer outside a streamed run: custom output goes nowhere."""


@dataclass(frozen=True)
class Runtime(Generic[C]):
    """The run's context, store and stream writer, as a node or a tool sees them.

    A node gets it by declaring a parameter named ``runtime`` (``def node(state,
    runtime: Runtime[Ctx])``) or by calling :func:`get_runtime`; a tool reads
    ``ctx.runtime`` on its :class:`~graphagent.tools.ToolContext`.

    Attributes:
        context: the run's context object (``invoke(..., context=...)``), or ``None``.
        store: the run's long-term memory store (``compile(store=...)``), or ``None``.
        stream_writer: call it to emit ``"custom"`` stream events (``config.writer``).
        config: the run's config (thread, ``metadata``, limits), or ``None`` outside a run.

    Example:
        >>> from dataclasses import dataclass
        >>> from graphagent.graph import StateGraph, START, END, Runtime
        >>> @dataclass
        ... class Ctx:
        ...     user_id: str
        >>> def greet(state, runtime: Runtime[Ctx]):
        ...     return {"text": f"hello {runtime.context.user_id}"}
        >>> g = StateGraph(context_schema=Ctx).add_node("greet", greet)
        >>> app = g.add_edge(START, "greet").add_edge("greet", END).compile()
        >>> app.invoke({}, context={"user_id": "ada"})["text"]
        'hello ada'
    """

    context: C = field(default=None)  # type: ignore[assignment]
    store: Any = None
    stream_writer: Callable[[Any], None] = _discard
    config: RunnableConfig | None = None

    @property
    def metadata(self) -> Mapping[str, Any]:
        """``config.metadata``: the run's user data (empty outside a run)."""
        return self.config.metadata if self.config is not None else {}

    @property
    def thread_id(self) -> str | None:
        """The thread the run works on (``None``: an unsaved run)."""
        return self.config.thread_id if self.config is not None else None

    @staticmethod
    def of(config: RunnableConfig) -> Runtime[Any]:
        """The runtime of the run ``config`` belongs to."""
        return Runtime(config.context, config.store, config.writer, config)

    def override(self, **changes: Any) -> Runtime[C]:
        """A copy with ``changes`` (``context=``, ``store=``...) replacing fields."""
        return dataclasses.replace(self, **changes)

    def merge(self, other: Runtime[C]) -> Runtime[C]:
        """A copy with ``other``'s fields that are set (not ``None``, not the default
        writer) replacing this one's."""
        return Runtime(
            other.context if other.context is not None else self.context,
            other.store if other.store is not None else self.store,
            other.stream_writer if other.stream_writer is not _discard else self.stream_writer,
            other.config if other.config is not None else self.config,
        )


def get_runtime(context_schema: type[C] | None = None) -> Runtime[C]:
    """The runtime of the run whose node (or a tool it runs) is calling.

    Args:
        context_schema: the context's type, for type checkers only (not checked).

    Raises:
        UserError: called outside a running graph.
    """
    scope = _TASK.get()
    config = scope.ctx.config if scope is not None and scope.ctx is not None else None
    if config is None:
        raise UserError(
            "get_runtime() is called from inside a node (or a tool it runs) of a running "
            "graph; outside a run there is no runtime"
        )
    return Runtime.of(config)


def coerce_context(schema: Any, context: Any) -> Any:
    """The ``context=`` a caller passed, as the graph's ``context_schema`` type.

    A dict becomes a dataclass or a pydantic model of ``schema``; an instance (or any value
    when there is no schema, or a TypedDict one) is taken as it is.

    Raises:
        TypeError: a dict whose keys the dataclass does not take (missing or unknown).
        pydantic.ValidationError: a dict that the pydantic model refuses.
    """
    if context is None or schema is None or not isinstance(context, Mapping):
        return context
    if not isinstance(schema, type) or typing.is_typeddict(schema) or isinstance(context, schema):
        return context
    if dataclasses.is_dataclass(schema):
        try:
            return schema(**context)
        except TypeError as exc:
            raise TypeError(
                f"context={dict(context)!r} does not fit the graph's context_schema "
                f"{schema.__name__}: {exc}"
            ) from None
    validate = getattr(schema, "model_validate", None)
    if validate is not None:
        return validate(context)
    return context
