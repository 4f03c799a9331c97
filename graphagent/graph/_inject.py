"""What a node function is handed besides the state, read from its signature.

- A parameter named ``store`` gets the run's store, one named ``runtime`` (or annotated
  ``Runtime[...]``) the run's :class:`~graphagent.graph._runtime.Runtime`, a keyword-only
  one named ``config`` the run's config (as LangGraph passes it).
- A first parameter annotated with a state class other than the graph's own (a
  TypedDict, a pydantic model or a dataclass: the node's *input schema*) makes the node
  see only that class's keys; a pydantic model or a dataclass is built from them, as is
  the graph's own pydantic or dataclass schema when the node is annotated with it.

Nodes that ask for none of this are called as they are: no wrapper, no cost.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any

from graphagent._internal.callables import config_slot
from graphagent.graph._nodes import is_async_callable
from graphagent.graph._runtime import Runtime

__all__ = [
    "injected",
    "input_class",
    "is_state_class",
    "node_view",
    "with_injected",
    "with_view",
]

_NAMES = ("store", "runtime")


def _parameters(fn: Any) -> list[inspect.Parameter]:
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []


def _hints(fn: Any) -> dict[str, Any]:
    """``fn``'s resolved annotations; one that cannot be resolved (a name local to a
    function, under ``from __future__ import annotations``) is left out, not the rest."""
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else getattr(fn, "__call__", fn)  # noqa: B004
    try:
        return typing.get_type_hints(target)
    except Exception:
        pass
    out: dict[str, Any] = {}
    namespace = getattr(target, "__globals__", {})
    for name, raw in getattr(target, "__annotations__", {}).items():
        if not isinstance(raw, str):
            out[name] = raw
            continue
        try:
            out[name] = eval(raw, namespace)
        except Exception:
            continue
    return out


def _is_runtime(hint: Any) -> bool:
    return hint is Runtime or typing.get_origin(hint) is Runtime


def injected(fn: Any) -> tuple[str, ...]:
    """The names among ``store``, ``runtime`` and a keyword-only ``config`` that ``fn``
    takes by keyword (a parameter annotated ``Runtime[...]`` counts as ``runtime``
    whatever its name)."""
    params = _parameters(fn)
    names = [
        p.name
        for p in params
        if (p.name in _NAMES and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))
        or (p.name == "config" and p.kind is p.KEYWORD_ONLY)
    ]
    if "runtime" not in names and any("runtime" in str(p.annotation) for p in params):
        hints = _hints(fn)
        names += [p.name for p in params if _is_runtime(hints.get(p.name))]
    return tuple(names)


def with_injected(fn: Callable[..., Any], names: tuple[str, ...]) -> Callable[..., Any]:
    """``fn`` as a ``(state, config)`` node that passes ``names`` by keyword.

    A parameter *named* ``store`` or ``runtime`` is injected even when it is the second
    positional one (``def node(state, runtime)``); the config is passed too when ``fn``
    has a slot for it (a second positional parameter with another name, or one named
    ``config``).

    Raises:
        TypeError: an injected parameter is positional-only.
    """
    params = _parameters(fn)
    for p in params:
        if p.name in names and p.kind is p.POSITIONAL_ONLY:
            raise TypeError(f"{fn!r}: a {p.name!r} parameter must be passable by keyword")
    takes_config, config_name = config_slot(params, names)
    runtime_name = next((n for n in names if n not in ("store", "config")), None)

    def kwargs(config: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if config_name is not None:
            out[config_name] = config
        if "config" in names:  # keyword-only: never taken as the second positional
            out["config"] = config
        if "store" in names:
            out["store"] = config.store
        if runtime_name is not None:
            out[runtime_name] = Runtime.of(config)
        return out

    call: Callable[..., Any]
    if is_async_callable(fn):

        async def call(state: Any, config: Any) -> Any:
            if takes_config and config_name is None:
                return await fn(state, config, **kwargs(config))
            return await fn(state, **kwargs(config))

    else:

        def call(state: Any, config: Any) -> Any:
            if takes_config and config_name is None:
                return fn(state, config, **kwargs(config))
            return fn(state, **kwargs(config))

    _named_like(call, fn)
    return call


def _named_like(call: Any, fn: Any) -> None:
    """Give ``call`` ``fn``'s name and docs (a callable object or a ``partial`` has no
    ``__name__``: its class's name stands in)."""
    for attr in ("__name__", "__qualname__"):
        name = getattr(fn, attr, None)
        if not isinstance(name, str):
            inner = getattr(fn, "func", fn)  # a partial's function
            name = getattr(inner, attr, None) or type(inner).__name__
        setattr(call, attr, name)
    call.__doc__ = getattr(fn, "__doc__", None)
    call.__module__ = getattr(fn, "__module__", None) or call.__module__


def is_state_class(cls: Any) -> bool:
    """Whether ``cls`` is a class a state schema can be: a TypedDict, a pydantic model or
    a dataclass."""
    return isinstance(cls, type) and (
        typing.is_typeddict(cls) or hasattr(cls, "model_fields") or dataclasses.is_dataclass(cls)
    )


def input_class(fn: Any, state_class: type | None = None) -> type | None:
    """The state class ``fn``'s first parameter is annotated with, or ``None``.

    An annotation that cannot be resolved (a class local to a function, under
    ``from __future__ import annotations``) still counts when it names ``state_class``.
    """
    params = [p for p in _parameters(fn) if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not params or params[0].annotation is inspect.Parameter.empty:
        return None
    hint = _hints(fn).get(params[0].name)
    raw = params[0].annotation
    if hint is None and state_class is not None and raw == state_class.__name__:
        return state_class
    return hint if is_state_class(hint) else None


def _keys(cls: type) -> tuple[str, ...]:
    if typing.is_typeddict(cls):
        return tuple(typing.get_type_hints(cls))
    fields = getattr(cls, "model_fields", None)
    if fields is not None:
        return tuple(fields)
    return tuple(f.name for f in dataclasses.fields(cls))


def node_view(cls: type, narrow: bool) -> Callable[[Mapping[str, Any]], Any]:
    """What a node annotated with ``cls`` is handed instead of the whole state.

    Args:
        cls: the node's input class.
        narrow: only ``cls``'s keys are shown (an input schema other than the graph's).
    """
    keys = _keys(cls)
    build: Callable[[dict[str, Any]], Any] | None = None
    if hasattr(cls, "model_validate"):
        build = cls.model_validate
    elif dataclasses.is_dataclass(cls):
        build = lambda data: cls(**data)  # noqa: E731

    def view(state: Mapping[str, Any]) -> Any:
        data = {k: state[k] for k in keys if k in state} if narrow or build else dict(state)
        if build is None:
            return data
        # the node gets its own copy: an object it changes in place must not change the
        # state that savers and other nodes hold
        return build(copy.deepcopy(data))

    return view


def with_view(
    fn: Callable[..., Any], view: Callable[[Mapping[str, Any]], Any], takes_config: bool
) -> Callable[..., Any]:
    """``fn`` as a ``(state, config)`` node that is handed ``view(state)``."""
    call: Callable[..., Any]
    if is_async_callable(fn):

        async def call(state: Any, config: Any) -> Any:
            return await (fn(view(state), config) if takes_config else fn(view(state)))

    else:

        def call(state: Any, config: Any) -> Any:
            return fn(view(state), config) if takes_config else fn(view(state))

    _named_like(call, fn)
    return call
