"""How a user's callable is called: async or not, and whether it takes the run's config.

Nodes, routers, hooks and tools are plain functions the engine, the agents and the tools
package all look at the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["accepts_config", "is_async_callable"]


def is_async_callable(fn: Any) -> bool:
    """True for ``async def`` functions and objects whose ``__call__`` is one."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects count too
    return inspect.iscoroutinefunction(call)


def accepts_config(fn: Callable[..., Any]) -> bool:
    """True when ``fn`` wants the run's config as its second argument.

    That is: its second positional parameter has no default, or is named ``config``
    (so ``def node(state, name=name)`` closures keep their default).
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return False
    positional = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
    ]
    if len(positional) < 2:
        return False
    second = positional[1]
    return (
        second.kind is second.VAR_POSITIONAL
        or second.default is second.empty
        or second.name == "config"
    )
