"""How a user's callable is called: async or not, and whether it takes the run's config.

Nodes, routers, hooks and tools are plain functions the engine, the agents and the tools
package all look at the same way.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = [
    "accepts_config",
    "as_state_config",
    "config_keyword",
    "config_slot",
    "is_async_callable",
    "with_keywords",
]


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


def config_slot(
    params: list[inspect.Parameter], injected: tuple[str, ...]
) -> tuple[bool, str | None]:
    """Where a callable whose parameters ``injected`` are passed by keyword takes the
    config: ``(takes_config, by_name)``.

    ``takes_config``: its second positional parameter besides the injected ones has no
    default or is named ``config``. ``by_name``: that parameter's name when it must be
    passed by keyword because an injected one comes before it (``def f(state, store,
    config)``: passed second, the config would land in the store's slot), else ``None``.
    """
    rest = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in injected
    ]
    takes = len(rest) >= 2 and (rest[1].default is rest[1].empty or rest[1].name == "config")
    by_name = (
        rest[1].name
        if takes and rest[1].kind is rest[1].POSITIONAL_OR_KEYWORD and params[1] is not rest[1]
        else None
    )
    return takes, by_name


def config_keyword(params: list[inspect.Parameter]) -> bool:
    """Whether a callable with these parameters takes the config by keyword: it has a
    keyword-only parameter named ``config`` (as LangGraph passes it)."""
    return any(p.name == "config" and p.kind is p.KEYWORD_ONLY for p in params)


def with_keywords(fn: Callable[..., Any]) -> Callable[[Any, Any], Any] | None:
    """``fn`` as a ``(state, config)`` callable that passes ``store=config.store`` and/or
    ``config=config`` by keyword, when it has a parameter named ``store`` or a
    keyword-only one named ``config`` (else ``None``).

    A parameter *named* ``store`` is the store even as the second positional one; the
    config is passed positionally too when ``fn`` has a slot for it (by name when that
    slot comes after the store's). An async ``fn`` gives back its coroutine.
    """
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    store = any(
        p.name == "store" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params
    )
    keyword = config_keyword(params)
    if not store and not keyword:
        return None
    takes_config, by_name = config_slot(params, ("store",) if store else ())

    def kwargs(config: Any) -> dict[str, Any]:
        out: dict[str, Any] = {"store": config.store} if store else {}
        if keyword:
            out["config"] = config
        if by_name is not None:
            out[by_name] = config
        return out

    def call(state: Any, config: Any) -> Any:
        if takes_config and by_name is None:
            return fn(state, config, **kwargs(config))
        return fn(state, **kwargs(config))

    return call


def as_state_config(fn: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    """``fn`` as a ``(state, config)`` callable, however it takes the config: second
    positional (then it is ``fn`` itself), keyword-only as ``config``, beside a ``store``
    parameter, or not at all. An async ``fn`` gives back its coroutine."""
    injecting = with_keywords(fn)
    if injecting is not None:
        return injecting
    if accepts_config(fn):
        return fn
    return lambda state, config: fn(state)
