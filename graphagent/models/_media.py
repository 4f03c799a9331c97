"""Images and files of a message in each provider's wire format."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from graphagent.errors import ModelError
from graphagent.messages import FilePart, ImagePart

__all__ = ["anthropic_blocks", "openai_parts"]


def openai_parts(text: str, parts: Sequence[ImagePart | FilePart]) -> list[dict[str, Any]]:
    """A user message's content list in the chat completions format."""
    out: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for part in parts:
        if isinstance(part, ImagePart):
            out.append({"type": "image_url", "image_url": {"url": part.data_url}})
        elif part.data is None:
            raise ModelError(
                f"the chat completions API takes a file as its bytes, not a URL ({part.url}): "
                "pass FilePart(data=...) or FilePart.from_path(...)"
            )
        else:
            name = part.name or "file"
            out.append({"type": "file", "file": {"filename": name, "file_data": part.data_url}})
    return out


def _source(part: ImagePart | FilePart) -> dict[str, Any]:
    if part.url is not None and not part.url.startswith("data:"):
        return {"type": "url", "url": part.url}
    if part.url is not None:  # a data: URL given as the url
        head, _, data = part.url.partition(",")
        media = head[len("data:") :].split(";")[0] or part.mime_type
        return {"type": "base64", "media_type": media, "data": data}
    if isinstance(part, FilePart) and part.mime_type.startswith("text/"):
        text = (part.data or b"").decode("utf-8", errors="replace")
        return {"type": "text", "media_type": "text/plain", "data": text}
    return {"type": "base64", "media_type": part.mime_type, "data": part.base64}


def anthropic_blocks(text: str, parts: Sequence[ImagePart | FilePart]) -> list[dict[str, Any]]:
    """Content blocks in the Messages API format: the text, then images and documents."""
    out: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for part in parts:
        kind = "image" if isinstance(part, ImagePart) else "document"
        block: dict[str, Any] = {"type": kind, "source": _source(part)}
        if isinstance(part, FilePart) and part.name:
            block["title"] = part.name
        out.append(block)
    return out
