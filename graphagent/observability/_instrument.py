"""Turning OpenTelemetry tracing on and off: one lifecycle listener, added and removed."""

from __future__ import annotations

from typing import Any

from graphagent._internal.listen import GraphLifecycleListener, add_listener, remove_listener
from graphagent._internal.observe import capture_content
from graphagent.errors import UserError

__all__ = ["instrument", "instrumented", "uninstrument"]

_ACTIVE: list[GraphLifecycleListener] = []
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
    add_listener(tracing)


def uninstrument() -> None:
    """Stop tracing (spans already started still end)."""
    while _ACTIVE:
        remove_listener(_ACTIVE.pop())


def instrumented() -> bool:
    """Whether :func:`instrument` is in effect."""
    return bool(_ACTIVE)
