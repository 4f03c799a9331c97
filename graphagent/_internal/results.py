"""Turning a tool's return value into the text the model reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic_core

__all__ = ["ResultConverter", "as_text", "default_result_converter"]

ResultConverter = Callable[[Any], str]


def default_result_converter(result: Any) -> str:
    """Strings pass through; anything else becomes JSON.

    pydantic models, dataclasses, dicts, lists, datetimes, UUIDs, enums and sets are
    handled; other objects are written with ``str()``.

    Example:
        >>> import datetime
        >>> default_result_converter({"when": datetime.date(2026, 1, 2), "n": 3})
        '{"when":"2026-01-02","n":3}'
    """
    if isinstance(result, str):
        return result
    return pydantic_core.to_json(result, serialize_unknown=True).decode()


def as_text(value: Any) -> str:
    """What a hand-written tool returned, as text: ``None`` is ``""``, others as above."""
    if value is None:
        return ""
    return default_result_converter(value)
