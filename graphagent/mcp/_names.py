"""Tool names a model accepts: ``[a-zA-Z0-9_-]{1,64}``, as Spring AI's ``prefixedToolName``."""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence

from graphagent.errors import ToolDefinitionError

__all__ = ["MAX_NAME", "is_safe", "prefixed_tool_name", "safe_name", "unique_tool_names"]

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


def is_safe(name: str) -> bool:
    """Whether a model takes ``name`` as it is."""
    return len(name) <= MAX_NAME and _UNSAFE.search(name) is None and bool(name)


def _suffixed(name: str, original: str) -> str:
    digest = hashlib.sha1(original.encode()).hexdigest()[:6]
    return f"{name[: MAX_NAME - 7]}_{digest}"


def unique_tool_names(server: str, tools: Sequence[str], *, prefix: bool) -> list[str]:
    """Model-safe names for a server's tools, one each, in the order given.

    Names that only differ in characters a model cannot take (``a.b`` and ``a b``,
    Chinese or Korean names, which become ``_``) would collide. Where they do, each
    name that lost characters gets ``_`` and six hex digits of a hash of the server's
    own name; a name already safe keeps itself. The suffix depends on the original
    name alone, so a tool keeps its name whatever order the server lists them in.

    Raises:
        ToolDefinitionError: the server lists one name twice, or (a hash collision)
            two names still meet.

    Example:
        >>> unique_tool_names("files", ["a.b", "a b", "a_b"], prefix=False)
        ['a_b_69f664', 'a_b_7dbde9', 'a_b']
    """
    seen = Counter(tools)
    twice = sorted(name for name, count in seen.items() if count > 1)
    if twice:
        raise ToolDefinitionError(
            f"MCP server {server!r} lists the tool {twice[0]!r} twice; fix the server"
        )
    made = [prefixed_tool_name(server, t) if prefix else safe_name(t) for t in tools]
    counts = Counter(made)
    names = [
        _suffixed(name, tool) if counts[name] > 1 and not is_safe(tool) else name
        for name, tool in zip(made, tools, strict=True)
    ]
    clash = [name for name, count in Counter(names).items() if count > 1]
    if clash:
        which = [t for t, n in zip(tools, names, strict=True) if n == clash[0]]
        raise ToolDefinitionError(
            f"MCP server {server!r}: tools {which} all become {clash[0]!r}; rename one, "
            "or use prefix=True"
        )
    return names
