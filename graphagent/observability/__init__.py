"""Seeing what agents do: logs, OpenTelemetry traces, and live progress.

Logging needs nothing: graphagent logs through the standard ``logging`` module under
``graphagent.*`` (a ``NullHandler`` is installed, so nothing prints until you configure
logging). At DEBUG, ``graphagent.models`` logs each model request and answer,
``graphagent.tools`` each tool call, ``graphagent.checkpoint`` each checkpoint write.

Tracing needs the ``otel`` extra (``pip install -e '.[otel]'`` in a clone) and one call::

    from graphagent.observability import instrument
    instrument()              # spans go to the global TracerProvider

Spans follow the OpenTelemetry GenAI conventions: ``invoke_agent``, ``chat`` and
``execute_tool``, plus a span per graph run and per node. Message text and exception
text are recorded in neither logs nor spans unless :func:`capture_content` turns it on.
"""

from __future__ import annotations

from typing import Any

from graphagent.errors import UserError
from graphagent.observability import _logs  # noqa: F401  (registers the DEBUG loggers)
from graphagent.observability._hooks import (
    Observer,
    add_observer,
    capture_content,
    content_captured,
    remove_observer,
)
from graphagent.observability._progress import progress

__all__ = [
    "capture_content",
    "content_captured",
    "instrument",
    "instrumented",
    "progress",
    "uninstrument",
]

_ACTIVE: list[Observer] = []
_set_content = capture_content  # instrument()'s keyword of the same name hides it


def instrument(tracer_provider: Any = None, *, capture_content: bool | None = None) -> None:
    """Trace every graph run, node, model request and tool call with OpenTelemetry.

    Calling it again replaces the earlier setup (e.g. with another tracer provider).

    Args:
        tracer_provider: where spans go (default: the global one, as set by
            ``opentelemetry.trace.set_tracer_provider`` or the OTel distro).
        capture_content: also record messages, tool arguments and tool results
            (``None``: keep the current setting, see :func:`capture_content`).

    Raises:
        UserError: OpenTelemetry is not installed.
    """
    try:
        from graphagent.observability._otel import Tracing
    except ImportError as exc:
        raise UserError(
            f"tracing needs OpenTelemetry ({exc}): "
            "pip install 'opentelemetry-api>=1.27' (the otel extra)"
        ) from None
    uninstrument()
    if capture_content is not None:
        _set_content(capture_content)
    tracing = Tracing(tracer_provider)
    _ACTIVE.append(tracing)
    add_observer(tracing)


def uninstrument() -> None:
    """Stop tracing (spans already started still end)."""
    while _ACTIVE:
        remove_observer(_ACTIVE.pop())


def instrumented() -> bool:
    """Whether :func:`instrument` is in effect."""
    return bool(_ACTIVE)
