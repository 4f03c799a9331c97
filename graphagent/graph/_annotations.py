"""Destinations read from return annotations: ``-> Literal["a", "b"]`` and
``-> Command[Literal["a", "b"]]`` (LangGraph's convention for declaring where a
router or a node may go)."""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, Literal

__all__ = ["command_destinations", "literal_destinations", "returns_sends"]


def _return_hint(fn: Callable[..., Any]) -> Any:
    target = fn if callable(fn) and not isinstance(fn, type) else None
    if target is None:
        return None
    if not hasattr(target, "__annotations__"):
        target = getattr(fn, "__call__", None)  # noqa: B004 - callable objects count too
    try:
        hints = typing.get_type_hints(target)
    except Exception:
        raw = getattr(target, "__annotations__", {}).get("return")
        return None if isinstance(raw, str) else raw
    return hints.get("return")


def _literals(hint: Any) -> tuple[str, ...]:
    """The string values of a ``Literal`` (or a union holding Literals)."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        return tuple(v for v in typing.get_args(hint) if isinstance(v, str))
    if origin is typing.Union or type(hint).__name__ == "UnionType":
        out: list[str] = []
        for arg in typing.get_args(hint):
            out.extend(_literals(arg))
        return tuple(dict.fromkeys(out))
    return ()


def literal_destinations(fn: Callable[..., Any]) -> tuple[str, ...]:
    """Names a router's ``-> Literal[...]`` return annotation allows (empty if none)."""
    return _literals(_return_hint(fn))


def command_destinations(fn: Callable[..., Any]) -> tuple[str, ...]:
    """Names a node's ``-> Command[Literal[...]]`` return annotation allows (empty if none)."""
    from graphagent.graph._command import Command

    hint = _return_hint(fn)
    hints = typing.get_args(hint) if _is_union(hint) else (hint,)
    out: list[str] = []
    for h in hints:
        if typing.get_origin(h) is Command:
            for arg in typing.get_args(h):
                out.extend(_literals(arg))
    return tuple(dict.fromkeys(out))


def _is_union(hint: Any) -> bool:
    return typing.get_origin(hint) is typing.Union or type(hint).__name__ == "UnionType"


def returns_sends(fn: Callable[..., Any]) -> bool:
    """Whether a router's return annotation names ``Send`` (``-> list[Send]``,
    ``-> Send | str``...): its edges are drawn as fan-out edges."""
    from graphagent.graph._control import Send

    hint = _return_hint(fn)
    if hint is None:
        target = getattr(fn, "__annotations__", None) or {}
        raw = target.get("return") if isinstance(target, dict) else None
        return isinstance(raw, str) and "Send" in raw
    seen: list[Any] = [hint]
    while seen:
        h = seen.pop()
        if h is Send:
            return True
        seen.extend(typing.get_args(h))
    return False
