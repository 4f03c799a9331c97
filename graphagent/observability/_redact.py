"""What of an exception may be written to a span or a log: its type always, its text on opt-in.

An exception's text is data: a provider's refusal quotes the prompt, a tool's error
quotes the secret it was handed, a node's error quotes state. So it follows the same
opt-in as message text (:func:`~graphagent.observability.capture_content`); without it,
spans and logs get the exception's type, a redacted message, and the stack (file, line
and function of each frame, which is code, not data) with every message line redacted,
causes and notes included.
"""

from __future__ import annotations

import traceback

from graphagent._internal.observe import content_captured

__all__ = ["REDACTED", "exception_attributes", "exception_summary", "exception_type"]

REDACTED = "[message redacted: capture_content(True) records exception text]"
_CAUSE = "\nThe above exception was the direct cause of the following exception:\n\n"
_CONTEXT = "\nDuring handling of the above exception, another exception occurred:\n\n"


def exception_type(error: BaseException) -> str:
    """``module.QualName`` (builtins bare), as OpenTelemetry's ``record_exception`` writes it."""
    kind = type(error)
    module = kind.__module__
    return f"{kind.__qualname__}" if module in ("builtins", "") else f"{module}.{kind.__qualname__}"


def _chain(error: BaseException) -> list[BaseException]:
    """``error`` and what it was raised from or during, outermost cause first."""
    found: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found.append(current)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return found[::-1]


def _redacted_stack(error: BaseException) -> str:
    parts: list[str] = []
    previous: BaseException | None = None
    for exc in _chain(error):
        if previous is not None:
            parts.append(_CAUSE if exc.__cause__ is previous else _CONTEXT)
        if exc.__traceback__ is not None:
            parts.append("Traceback (most recent call last):\n")
            parts.extend(traceback.format_tb(exc.__traceback__))
        parts.append(f"{exception_type(exc)}: {REDACTED}\n")
        previous = exc
    return "".join(parts)


def exception_attributes(error: BaseException) -> dict[str, str]:
    """The attributes of a span's ``exception`` event, redacted unless content is captured."""
    if content_captured():
        return {
            "exception.type": exception_type(error),
            "exception.message": str(error),
            "exception.stacktrace": "".join(traceback.format_exception(error)),
        }
    return {
        "exception.type": exception_type(error),
        "exception.message": REDACTED,
        "exception.stacktrace": _redacted_stack(error),
    }


def exception_summary(error: BaseException) -> str:
    """One line for a log: ``Type: text`` with content capture, else the type alone."""
    name = type(error).__qualname__
    return f"{name}: {error}" if content_captured() else f"{name} ({REDACTED})"
