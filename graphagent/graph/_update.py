"""Reading a thread to stand on it (:func:`load`), and ``update_state`` /
``bulk_update_state`` as programs: writes to a thread made as if nodes had returned them.
No I/O here: the drivers (``_drive``) perform the effects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint.base import Checkpoint
from graphagent.config import RunnableConfig
from graphagent.errors import InvalidRouteError, UserError
from graphagent.graph._constants import END, START
from graphagent.graph._effects import Get, Head, Lock, Program, Put, PutWrites
from graphagent.graph._plan import Plan
from graphagent.graph._step import Position, merge, route, write

__all__ = ["StateUpdate", "bulk_update_program", "load", "update_program"]

StateUpdate = tuple[Mapping[str, Any] | None, str | None]
"""One write of a super-step given to ``bulk_update_state``: ``(values, as_node)``."""


def load(
    plan: Plan, thread: str, checkpoint_id: str | None
) -> Program[tuple[Position, Checkpoint | None]]:
    """Take the thread's run lock, read the checkpoint and stand on it.

    Returns the position (with the thread's head as the expected head of the next
    write) and the checkpoint read (``None``: a new thread; the position is the start).
    """
    yield Lock(thread)
    saved = yield Get(thread, checkpoint_id)
    position = Position()
    if saved is None:
        return position, None
    position.restore(plan, thread, saved)
    # the head is the checkpoint read, unless that was an older one (a replay or fork)
    position.head = saved.id if checkpoint_id is None else (yield Head(thread))
    return position, saved


def update_program(
    plan: Plan,
    config: RunnableConfig,
    values: Mapping[str, Any] | None,
    as_node: str | None,
) -> Program[str]:
    """``update_state`` as a program: merge ``values`` as if ``as_node`` wrote them.

    Returns the new checkpoint's id. On an older ``checkpoint_id`` this forks.
    """
    return (yield from bulk_update_program(plan, config, [[(values, as_node)]]))


def bulk_update_program(
    plan: Plan, config: RunnableConfig, supersteps: Sequence[Sequence[StateUpdate]]
) -> Program[str]:
    """``update_state`` (one super-step of one write) and ``bulk_update_state`` as a
    program: each super-step's writes merge as if their ``as_node`` had returned them in
    one step, and make one checkpoint. Returns the last checkpoint's id. On an older
    ``checkpoint_id`` this forks.
    """
    thread = config.thread_id
    if plan.saver is None or thread is None:
        raise UserError("update_state needs a saver and a thread_id in the config")
    if not supersteps or any(not updates for updates in supersteps):
        raise UserError(
            "bulk_update_state takes a list of super-steps, each a non-empty list of "
            "(values, as_node) updates"
        )
    nodes = plan.topology.nodes
    for updates in supersteps:
        for _, as_node in updates:
            if as_node not in (None, START, END) and as_node not in nodes:
                raise InvalidRouteError(
                    f"as_node={as_node!r} is not a node of this graph; known nodes: "
                    f"{', '.join(sorted(nodes))}"
                )
    pos, saved = yield from load(plan, thread, config.checkpoint_id)
    checkpoint_id = ""
    for updates in supersteps:
        # one super-step's writes merge as one step's: two replacing one key are refused
        writes: list[tuple[str, Mapping[str, Any]]] = [
            (a or "__update__", dict(v or {})) for v, a in updates
        ]
        pos.values, changes = merge(plan, pos.values, writes)
        pos.step += 1
        writers = [a for _, a in updates if a is not None]
        if writers and all(a == END for a in writers):
            pos.next, pos.sends = (), []
        elif writers:
            pos.next = route(plan, pos, config, [a for a in writers if a != END], {})
        checkpoint = write(pos, config, changes, "update", writers or None)
        yield Put(thread, checkpoint, pos.head)
        pos.checkpoint_id = pos.head = checkpoint_id = checkpoint.id
    untargeted = len(supersteps) == 1 and not any(a for _, a in supersteps[0])
    if untargeted and saved is not None and saved.pending_writes:
        # the step stays where it paused: finished work, questions, nested runs and a
        # passed breakpoint carry over, so invoke(None) or a resume continues it
        yield PutWrites(thread, checkpoint_id, tuple(saved.pending_writes))
    return checkpoint_id
