"""What a node or router hands the engine besides an update: a :class:`Send` (run a
node with an input of its own), an :class:`Overwrite` (set a key past its strategy), and
the managed keys a schema may declare (:data:`RemainingSteps`, :data:`IsLastStep`)."""

from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import Annotated, Any

import typing_extensions

__all__ = [
    "SEND_FIELDS",
    "IsLastStep",
    "Overwrite",
    "RemainingSteps",
    "Send",
    "managed_keys",
]


@dataclass(slots=True)
class Send:
    """Run ``node`` in the next step with ``arg`` as its input instead of the state.

    Return a list of them from a router (``add_conditional_edges``) or put them in
    ``Command(goto=[...])`` to fan out: each is its own task of the node, all run in one
    step, and their updates merge through the keys' strategies in the order the sends
    were made (after the step's other nodes). A node's input is a read-only mapping when
    ``arg`` is a dict, else ``arg`` itself.

    Example:
        >>> from graphagent.graph import END, START, AppendStrategy, StateGraph
        >>> g = StateGraph({"jokes": AppendStrategy()})
        >>> g = g.add_node("joke", lambda s: {"jokes": [f"a joke about {s['subject']}"]})
        >>> g = g.add_conditional_edges(
        ...     START, lambda s: [Send("joke", {"subject": x}) for x in s["subjects"]]
        ... )
        >>> g.add_edge("joke", END).compile().invoke({"subjects": ["cats", "dogs"]})["jokes"]
        ['a joke about cats', 'a joke about dogs']
    """

    node: str
    arg: Any


@dataclass(slots=True)
class Overwrite:
    """Set a key to ``value`` in this update, bypassing the key's strategy once.

    An append key given ``Overwrite([...])`` is replaced, not appended to. Two
    overwrites of one key in one step are refused (``InvalidUpdateError``).

    Example:
        >>> from graphagent.graph import StateGraph, START, END, AppendStrategy
        >>> g = StateGraph({"log": AppendStrategy()})
        >>> g = g.add_node("reset", lambda s: {"log": Overwrite(["fresh"])})
        >>> g.add_edge(START, "reset").add_edge("reset", END).compile().invoke({"log": ["old"]})
        {'log': ['fresh']}
    """

    value: Any


class _Managed:
    """Marks a schema key whose value the engine supplies each step."""

    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"managed({self.kind})"


SEND_FIELDS = ("node", "arg")
"""A stored ``Send``'s fields, in stored order (``checkpoint._library`` reads the same)."""


def _register_with_serde() -> None:
    # a checkpoint keeps the sends due next; an arg may hold a Send of its own (a task
    # that sends again). Stored by a stable name, in the base registry like messages.
    from checkpoint.serde import base_serde

    if not base_serde.is_registered(Send):
        base_serde.register(
            Send,
            name="graphagent.Send",
            encode=lambda send: [send.node, send.arg],
            decode=lambda stored: Send(stored[0], stored[1]),
        )


_register_with_serde()

RemainingSteps = Annotated[int, _Managed("remaining_steps")]
"""A state key annotated with it reads as how many super-steps the run may still take,
the current one included (``recursion_limit`` in the first step, ``1`` in the last).
Nodes read it; writes to it are ignored; it is never stored."""

IsLastStep = Annotated[bool, _Managed("is_last_step")]
"""A state key annotated with it reads ``True`` in the last super-step the run may take
before ``GraphRecursionError``. Nodes read it; writes to it are ignored; it is never
stored."""


_WRAPPERS = {
    typing_extensions.Required,
    typing_extensions.NotRequired,
    getattr(typing, "Required", None),
    getattr(typing, "NotRequired", None),
} - {None}


def managed_keys(schema: Any) -> dict[str, str]:
    """The managed keys of a TypedDict or pydantic schema: key -> kind."""
    found: dict[str, str] = {}
    if not isinstance(schema, type):
        return found
    fields = getattr(schema, "model_fields", None)
    if fields is not None:
        for key, info in fields.items():
            for meta in info.metadata:
                if isinstance(meta, _Managed):
                    found[key] = meta.kind
        return found
    try:
        hints = typing.get_type_hints(schema, include_extras=True)
    except Exception:  # a class whose annotations do not resolve has no managed keys
        return found
    for key, hint in hints.items():
        while typing.get_origin(hint) in _WRAPPERS:
            hint = typing.get_args(hint)[0]
        if typing.get_origin(hint) is typing.Annotated:
            for meta in typing.get_args(hint)[1:]:
                if isinstance(meta, _Managed):
                    found[key] = meta.kind
    return found
