"""Task ids and checkpoint namespaces: how a task, and a subgraph run inside it, is named.

A task is one node's execution in one step. Its id is made from the checkpoint its step
grows from and its task path (the parent graph's node names down to the node), so a
snapshot of a stored checkpoint names the tasks of the next step with the same ids the
run gave them. A subgraph run inside a task is addressed by its *namespace*: one
``"node:task_id"`` part per level, as LangGraph spells it.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence

from graphagent.errors import UserError

__all__ = ["namespace", "ns_path", "ns_text", "task_id"]


def task_id(anchor: str | None, path: Sequence[str]) -> str:
    """The id of the task at ``path`` in the step growing from checkpoint ``anchor``."""
    seed = f"{anchor}\x00{'|'.join(path)}".encode()
    return str(uuid.UUID(bytes=hashlib.blake2s(seed, digest_size=16).digest()))


def namespace(anchor: str | None, path: Sequence[str]) -> tuple[str, ...]:
    """The namespace of the subgraph run at task path ``path``: ``("node:task_id", ...)``.

    Example:
        >>> [part.split(":")[0] for part in namespace("c1", ("review", "ask"))]
        ['review', 'ask']
    """
    return tuple(f"{part}:{task_id(anchor, path[: i + 1])}" for i, part in enumerate(path))


def ns_text(ns: Sequence[str]) -> str:
    """A namespace as one string (``config.checkpoint_ns``): its parts joined by ``|``."""
    return "|".join(ns)


def ns_path(text: str) -> tuple[str, ...]:
    """The task path a ``checkpoint_ns`` string names (task ids, if given, are dropped).

    Raises:
        UserError: the string has an empty part.

    Example:
        >>> ns_path("review:1f2e|ask")
        ('review', 'ask')
    """
    if not text:
        return ()
    parts = tuple(part.split(":", 1)[0] for part in text.split("|"))
    if not all(parts):
        raise UserError(
            f"checkpoint_ns {text!r} has an empty part; use 'node' or 'node:task_id' per "
            "level, joined by '|' (as get_state(config, subgraphs=True) names them)"
        )
    return parts
