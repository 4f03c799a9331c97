"""Hooks: code that runs as its own graph node before/after the agent and each model call."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from graphagent._internal.callables import as_state_config
from graphagent.config import RunnableConfig
from graphagent.graph import OverAllState

__all__ = [
    "AgentHook",
    "Hook",
    "HookResult",
    "ModelHook",
    "after_agent",
    "after_model",
    "before_agent",
    "before_model",
]

HookResult = Any
"""A state update (dict), ``None``, or ``Command(goto="end" | "model" | "tools", update=...)``."""

HOOK_POINTS = ("before_agent", "before_model", "after_model", "after_agent")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Hook:
    """Base of all hooks. Override any of the four points; the defaults change nothing.

    Each overridden point becomes a node of the agent's graph named
    ``"<hook name>.<point>"`` (or just the hook's name when it implements one point).
    A point returns a state update, ``None``, or a jump:
    ``Command(goto="end" | "model" | "tools", update=...)``. It may be ``async``, and
    take the config as shown, keyword-only (``def before_model(self, state, *, config)``)
    or not at all (``def before_model(self, state)``), as a node does.

    ``before_*`` points run in list order; ``after_*`` points in reverse (the onion).
    ``order`` sorts hooks first (lower first, Spring AI Alibaba's ``getOrder()``); hooks
    of equal order keep their list order.
    """

    #: jump targets this hook may use (declared so the graph can be validated and drawn)
    can_jump_to: tuple[str, ...] = ()
    #: where the hook runs among the others: lower first (ties keep list order)
    order: int = 0

    @property
    def name(self) -> str:
        """The hook's name (default: its class name in snake case)."""
        return getattr(self, "_name", None) or _snake(type(self).__name__)

    def points(self) -> list[str]:
        """The points this hook implements."""
        return [p for p in HOOK_POINTS if getattr(type(self), p, None) is not getattr(Hook, p)]

    def before_agent(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        """Once per run, before anything else."""
        return None

    def before_model(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        """Before each model call."""
        return None

    def after_model(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        """After each model call, before its tool calls run."""
        return None

    def after_agent(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        """Once per run, after the final answer."""
        return None


class AgentHook(Hook):
    """A hook around the whole run: override ``before_agent`` and/or ``after_agent``."""


class ModelHook(Hook):
    """A hook around each model call: override ``before_model`` and/or ``after_model``."""


class _FunctionHook(Hook):
    def __init__(
        self,
        point: str,
        fn: Callable[..., HookResult],
        name: str | None,
        jumps: tuple[str, ...],
        order: int = 0,
    ) -> None:
        self.order = order
        self._name = name or fn.__name__
        self._point = point
        self.can_jump_to = jumps
        # the config and a ``store`` parameter are handed over as a node's are
        self.fn: Callable[[OverAllState, RunnableConfig], HookResult] = as_state_config(fn)

    def points(self) -> list[str]:
        return [self._point]

    def _run(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        return self.fn(state, config)

    def before_agent(self, state: OverAllState, config: RunnableConfig) -> HookResult:
        return self._run(state, config)

    before_model = after_model = after_agent = before_agent

    def __repr__(self) -> str:
        return f"<{self._point} hook {self._name!r}>"


def _decorator(point: str) -> Callable[..., Any]:
    def decorate(
        fn: Callable[..., HookResult] | None = None,
        *,
        name: str | None = None,
        can_jump_to: tuple[str, ...] = (),
        order: int = 0,
    ) -> Any:
        def make(f: Callable[..., HookResult]) -> Hook:
            return _FunctionHook(point, f, name, tuple(can_jump_to), order)

        return make(fn) if fn is not None else make

    decorate.__name__ = point
    decorate.__doc__ = (
        f"Make a hook of a function ``(state[, config]) -> dict | None | Command``, sync or "
        f"async, that runs at ``{point}`` (a keyword-only ``config`` gets the run's config, "
        f"a parameter named ``store`` the run's store). Use bare or as "
        f"``@{point}(name=..., can_jump_to=('end',), "
        "order=0)`` (lower ``order`` runs first)."
    )
    return decorate


before_agent = _decorator("before_agent")
after_agent = _decorator("after_agent")
before_model = _decorator("before_model")
after_model = _decorator("after_model")
