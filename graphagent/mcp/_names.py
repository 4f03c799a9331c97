"""Tool names a model accepts: ``[a-zA-Z0-9_-]{1,64}``, as Spring AI's ``prefixedToolName``."""

from __future__ import annotations

import hashlib
import re

__all__ = ["MAX_NAME", "prefixed_tool_name", "safe_name"]

MAX_NAME = 64
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]+")


def safe_name(text: str) -> str:
    """``text`` in the model-safe charset: other characters become ``_``, at most 64 long.

    A name cut short ends in a hash of the whole, so two long names that differ only
    at the end stay apart.

    Example:
        >>> safe_name("files.read file")
        'files_read_file'
    """
    cleaned = _UNSAFE.sub("_", text).strip("_") or "tool"
    if len(cleaned) <= MAX_NAME:
        return cleaned
    digest = hashlib.sha1(text.encode()).hexdigest()[:8]
    return f"{cleaned[: MAX_NAME - 9]}_{digest}"


def prefixed_tool_name(server: str, tool: str) -> str:
    """``<server>_<tool>``, made model-safe (see :func:`safe_name`).

    Example:
        >>> prefixed_tool_name("my files", "read_file")
        'my_files_read_file'
        >>> prefixed_tool_name("mcp-servers/everything", "get-sum")
        'mcp-servers_everything_get-sum'
    """
    return safe_name(f"{server}_{tool}")
