"""The texts an index field names in a value: LangGraph's field path syntax.

``"a.b"`` reaches into dicts, ``"a[0]"``/``"a[-1]"`` into lists, ``"a[*]"`` takes every
element, ``"a.*"`` every value of a dict, and ``"{a,b.c}"`` several paths at once
(``"items[*].{id,value}"``). A path that finds nothing, or is malformed, names no text;
``None`` is no text; anything but a string is embedded as its JSON.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["texts_at"]

_SEGMENT = re.compile(r"([^\[\]{}*]*)((?:\[[^\[\]]*\])*)")
_INDEX = re.compile(r"-?\d+")


class _Malformed(Exception):
    pass


def _split(path: str, sep: str) -> list[str]:
    """``path`` cut at ``sep`` outside brackets and braces."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(path):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth < 0:
                raise _Malformed
        elif ch == sep and depth == 0:
            parts.append(path[start:i])
            start = i + 1
    if depth:
        raise _Malformed
    parts.append(path[start:])
    return parts


def _step(nodes: Iterable[Any], token: str) -> list[Any]:
    if token.startswith("{"):
        if not token.endswith("}"):
            raise _Malformed
        nodes = list(nodes)
        return [got for sub in _split(token[1:-1], ",") for got in _walk(nodes, sub)]
    if token == "*":
        out: list[Any] = []
        for node in nodes:
            if isinstance(node, dict):
                out += node.values()
            elif isinstance(node, list):
                out += node
        return out
    match = _SEGMENT.fullmatch(token)
    if match is None or not token:
        raise _Malformed
    name, brackets = match.groups()
    current = list(nodes)
    if name:
        current = [n[name] for n in current if isinstance(n, dict) and name in n]
    for index in re.findall(r"\[([^\[\]]*)\]", brackets):
        if index == "*":
            current = [e for n in current if isinstance(n, list) for e in n]
        elif _INDEX.fullmatch(index):
            i = int(index)
            current = [n[i] for n in current if isinstance(n, list) and -len(n) <= i < len(n)]
        else:
            raise _Malformed
    return current


def _walk(nodes: list[Any], path: str) -> list[Any]:
    for token in _split(path, "."):
        nodes = _step(nodes, token)
    return nodes


def texts_at(value: Any, path: str) -> list[str]:
    """The texts ``path`` names in ``value``, in document order."""
    try:
        found = _walk([value], path)
    except _Malformed:
        return []
    return [
        v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        for v in found
        if v is not None
    ]
