"""Turning a tool's return value into what the model reads: text, and any images or files."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Union

import pydantic_core

from graphagent._internal.parts import FilePart, ImagePart

__all__ = [
    "ResultConverter",
    "ToolOutput",
    "as_text",
    "default_result_converter",
    "has_parts",
    "media_output",
    "split_output",
]

ResultConverter = Callable[[Any], str]

ToolOutput = Union[str, ImagePart, FilePart, list[Union[str, ImagePart, FilePart]]]  # noqa: UP007
"""What a tool's ``call`` returns: text, or an image/file part, or a list of text and parts
(a tool that returns images or files)."""

_PARTS = (ImagePart, FilePart)


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


def has_parts(value: Any) -> bool:
    """Whether a tool's return value is, or is a list or tuple holding, an image or file."""
    if isinstance(value, _PARTS):
        return True
    return type(value) in (list, tuple) and any(isinstance(v, _PARTS) for v in value)


def media_output(value: Any, convert: ResultConverter) -> ToolOutput:
    """A return value holding parts as a :data:`ToolOutput`: the parts kept, every other
    item converted to text by ``convert`` (``None`` items dropped)."""
    if isinstance(value, _PARTS):
        return value
    return [v if isinstance(v, (str, *_PARTS)) else convert(v) for v in value if v is not None]


def split_output(value: Any) -> tuple[str, tuple[ImagePart | FilePart, ...]]:
    """A tool's return value as (text for the model, its images and files in order).

    Text pieces of a list are joined by newlines; items that are neither text nor parts
    become JSON (see :func:`default_result_converter`).

    Example:
        >>> split_output(["see the chart", ImagePart(url="https://x/c.png")])[0]
        'see the chart'
    """
    if type(value) is str:
        return value, ()
    if not has_parts(value):
        return as_text(value), ()
    if isinstance(value, _PARTS):
        return "", (value,)
    texts = [as_text(v) for v in value if not isinstance(v, _PARTS) and v is not None]
    parts = tuple(v for v in value if isinstance(v, _PARTS))
    return "\n".join(t for t in texts if t), parts
