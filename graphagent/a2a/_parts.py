"""graphagent messages <-> A2A parts: text, data (JSON), files as bytes or URLs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from a2a.helpers import get_data_parts, new_data_part
from a2a.types import Part

from graphagent.messages import FilePart, ImagePart, Message, UserMessage

__all__ = ["data_of", "data_part", "plain", "text_of", "to_parts", "user_message"]


def plain(value: Any) -> Any:
    """``value`` with whole floats made ints again (a data part carries every number as a
    double, so ``{"amount": 40}`` arrives as ``40.0``)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def data_part(value: Any) -> Part:
    """A data part holding ``value`` (made JSON first: anything else is written as text)."""
    return new_data_part(json.loads(json.dumps(value, default=str)), "application/json")


def to_parts(message: Message) -> list[Part]:
    """A message's text, images and files as A2A parts."""
    parts = [Part(text=message.content)] if message.content else []
    for part in getattr(message, "parts", ()) or ():
        name = getattr(part, "name", None) or ""
        if part.data is not None:
            parts.append(Part(raw=part.data, media_type=part.mime_type, filename=name))
        else:
            parts.append(Part(url=part.url or "", media_type=part.mime_type, filename=name))
    return parts or [Part(text="")]


def text_of(parts: Iterable[Part]) -> str:
    """The text parts joined (``""`` when there are none)."""
    return "".join(p.text for p in parts if p.HasField("text"))


def data_of(parts: Iterable[Part]) -> list[Any]:
    """The values of the data parts."""
    return [plain(v) for v in get_data_parts(list(parts))]


def _file(part: Part) -> ImagePart | FilePart | None:
    kind = ImagePart if part.media_type.startswith("image/") else FilePart
    source: dict[str, Any] = {"mime_type": part.media_type}
    if kind is FilePart and part.filename:
        source["name"] = part.filename
    if part.HasField("raw"):
        return kind(data=part.raw, **source)
    if part.HasField("url"):
        return kind(url=part.url, **source)
    return None


def user_message(parts: Sequence[Part]) -> UserMessage:
    """The user message an A2A message's parts make: text (data parts as JSON text after
    it), and its files as image or file parts."""
    texts = [p.text for p in parts if p.HasField("text")]
    texts += [json.dumps(d) for d in data_of(parts)]
    files = [f for f in (_file(p) for p in parts) if f is not None]
    return UserMessage("\n".join(t for t in texts if t), parts=files)
