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

All three are :class:`GraphLifecycleListener` objects, told of every run, node, model
call and tool call; yours can be told the same (:func:`add_listener`,
:func:`listening`, or ``compile(listeners=...)``).
"""

from __future__ import annotations

from graphagent._internal.listen import (
    GraphLifecycleListener,
    add_listener,
    listening,
    remove_listener,
)
from graphagent._internal.observe import (
    ChatInfo,
    NodeInfo,
    RunInfo,
    ToolInfo,
    capture_content,
    content_captured,
)
from graphagent.observability import _logs  # noqa: F401  (registers the DEBUG loggers)
from graphagent.observability._instrument import instrument, instrumented, uninstrument
from graphagent.observability._progress import progress, status_line
from graphagent.observability._redact import exception_summary

__all__ = [
    "ChatInfo",
    "GraphLifecycleListener",
    "NodeInfo",
    "RunInfo",
    "ToolInfo",
    "add_listener",
    "capture_content",
    "content_captured",
    "exception_summary",
    "instrument",
    "instrumented",
    "listening",
    "progress",
    "remove_listener",
    "status_line",
    "uninstrument",
]
