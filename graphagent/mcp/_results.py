"""An MCP ``CallToolResult`` as the text a model reads."""

from __future__ import annotations

import base64
import binascii
import json

from mcp import types

from graphagent.errors import ToolExecutionError
from graphagent.messages import ImagePart
from graphagent.tools import ToolOutput

__all__ = ["result_text"]


def _size(data: str) -> str:
    try:
        return f"{len(base64.b64decode(data, validate=True))} bytes"
    except (binascii.Error, ValueError):
        return f"{len(data)} base64 characters"


def _resource(contents: types.TextResourceContents | types.BlobResourceContents) -> str:
    mime = contents.mimeType or "unknown type"
    if isinstance(contents, types.TextResourceContents):
        head = f"[resource {contents.uri} ({mime}, {len(contents.text)} characters)]"
        return f"{head}\n{contents.text}"
    return f"[resource {contents.uri} ({mime}, {_size(contents.blob)})]"


def _part(block: types.ContentBlock) -> str | None:
    """A description of a non-text block; text blocks give ``None``."""
    if isinstance(block, types.TextContent):
        return None
    if isinstance(block, types.ImageContent):
        return f"[image ({block.mimeType}, {_size(block.data)})]"
    if isinstance(block, types.AudioContent):
        return f"[audio ({block.mimeType}, {_size(block.data)})]"
    if isinstance(block, types.ResourceLink):
        extra = ", ".join(
            x for x in (block.mimeType, f"{block.size} bytes" if block.size else None) if x
        )
        title = f" {block.name}" if block.name else ""
        return f"[resource link{title}: {block.uri}{f' ({extra})' if extra else ''}]"
    if isinstance(block, types.EmbeddedResource):
        return _resource(block.resource)
    return f"[{getattr(block, 'type', type(block).__name__)} content]"


def _image(block: types.ContentBlock) -> ImagePart | None:
    """An image block as a part the model sees (``None``: not an image, or bad base64)."""
    if not isinstance(block, types.ImageContent):
        return None
    try:
        data = base64.b64decode(block.data, validate=True)
    except (binascii.Error, ValueError):
        return None  # described as text instead, with its size in characters
    return ImagePart(data=data, mime_type=block.mimeType or "image/png")


def result_text(result: types.CallToolResult, *, tool: str, server: str) -> ToolOutput:
    """The result for the model: text parts joined, structured content as JSON, images as
    image parts, others described.

    When the server sends ``structuredContent``, that JSON is the result (servers repeat
    it as text for older clients, so the text parts are left out); images reach the
    model as images (the text is then followed by ``ImagePart`` items); audio and
    resources are described by type, size and URI, never dropped silently.

    Raises:
        ToolExecutionError: the server flagged the result ``isError``.
    """
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    images = [(b, _image(b)) for b in result.content if isinstance(b, types.ImageContent)]
    kept = {id(b) for b, image in images if image is not None}
    others = [d for d in (_part(b) for b in result.content if id(b) not in kept) if d is not None]
    if result.isError:
        detail = "\n".join([*texts, *others]) or "no details given"
        raise ToolExecutionError(
            f"MCP server {server!r} reported an error from tool {tool!r}: {detail}",
            tool_name=tool,
        )
    if result.structuredContent is not None:
        body = [json.dumps(result.structuredContent, ensure_ascii=False)]
    else:
        body = texts
    text = "\n".join([*body, *others])
    if not kept:
        return text
    return [text, *(image for _, image in images if image is not None)]
