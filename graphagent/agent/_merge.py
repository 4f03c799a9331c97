"""How :class:`~graphagent.agent.ParallelAgent` merges its sub-agents' answers into one
value, and how it bounds how many run at once."""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "ConcatenationMergeStrategy",
    "DefaultMergeStrategy",
    "Limit",
    "ListMergeStrategy",
    "MergeStrategy",
]


class MergeStrategy:
    """Merges ``{output key (or agent name): answer}`` into the value stored under
    ``merge_output_key``. Subclass it and override :meth:`merge`."""

    def merge(self, results: Mapping[str, Any], state: Mapping[str, Any]) -> Any:
        """The merged value (``state``: the parent's state after the sub-agents ran)."""
        raise NotImplementedError


class DefaultMergeStrategy(MergeStrategy):
    """A dict: each answer under its sub-agent's output key (or name).

    Example:
        >>> DefaultMergeStrategy().merge({"poem": "Owls hoot.", "prose": "Owls fly."}, {})
        {'poem': 'Owls hoot.', 'prose': 'Owls fly.'}
    """

    def merge(self, results: Mapping[str, Any], state: Mapping[str, Any]) -> Any:
        """The answers as a dict."""
        return dict(results)


class ListMergeStrategy(MergeStrategy):
    """A list of the answers, in sub-agent order.

    Example:
        >>> ListMergeStrategy().merge({"poem": "Owls hoot.", "prose": "Owls fly."}, {})
        ['Owls hoot.', 'Owls fly.']
    """

    def merge(self, results: Mapping[str, Any], state: Mapping[str, Any]) -> Any:
        """The answers as a list."""
        return list(results.values())


class ConcatenationMergeStrategy(MergeStrategy):
    """One text: the answers joined by ``separator``.

    Example:
        >>> ConcatenationMergeStrategy(" | ").merge({"a": "Owls hoot.", "b": "Owls fly."}, {})
        'Owls hoot. | Owls fly.'
    """

    def __init__(self, separator: str = "\n") -> None:
        self.separator = separator

    def merge(self, results: Mapping[str, Any], state: Mapping[str, Any]) -> Any:
        """The answers' texts joined."""
        return self.separator.join(str(v) for v in results.values())


class Limit:
    """At most ``most`` of the node calls it wraps run at once (threads wait on one
    semaphore; asyncio tasks on one semaphore per event loop)."""

    def __init__(self, most: int) -> None:
        self.most = most
        self.gate = threading.BoundedSemaphore(most)
        self.loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def wrap(
        self, fn: Callable[..., Any], afn: Callable[..., Any]
    ) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """``fn`` and ``afn``, each call holding one of the slots."""

        def run(state: Any, config: Any) -> Any:
            with self.gate:
                return fn(state, config)

        async def arun(state: Any, config: Any) -> Any:
            loop = asyncio.get_running_loop()
            slots = self.loops.get(loop)
            if slots is None:
                slots = self.loops[loop] = asyncio.Semaphore(self.most)
            async with slots:
                return await afn(state, config)

        return run, arun
