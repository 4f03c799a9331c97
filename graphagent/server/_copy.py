"""Copying a thread's checkpoints to another thread (``threads.copy``, and the drawing of
a thread's run, which reads a copy).

Every checkpoint is written again, in the order the thread wrote them, with its id, parent,
step, next nodes, metadata, engine bookkeeping and pending work, so the copy has the same
history (forks included), resumes where the original waits, and grows apart from it.
Each checkpoint stores only what changed from its parent, as the engine writes them: a list
is a log (a reset, then appends), so a list that grew by appending costs the appended items.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from checkpoint import MemorySaver
from checkpoint.base import Change, Checkpoint, CheckpointSaver, CheckpointWrite
from graphagent.graph import CompiledGraph

__all__ = ["copy_checkpoints", "drawn_over"]


def _changes(values: Mapping[str, Any], parent: Mapping[str, Any] | None) -> dict[str, Change]:
    out: dict[str, Change] = {}
    for key, value in values.items():
        if parent is not None and key in parent:
            old = parent[key]
            if old is value or old == value:
                continue
            if isinstance(value, list) and isinstance(old, list) and value[: len(old)] == old:
                out[key] = Change("append", value[len(old) :])
                continue
        # a list is stored as a log (reset, then appends), anything else whole
        out[key] = Change("reset", list(value)) if isinstance(value, list) else Change("set", value)
    return out


def _write(checkpoint: Checkpoint, parent: Mapping[str, Any] | None) -> CheckpointWrite:
    return CheckpointWrite(
        id=checkpoint.id,
        parent_id=checkpoint.parent_id,
        step=checkpoint.step,
        changes=_changes(checkpoint.values, parent),
        next=tuple(checkpoint.next),
        metadata=dict(checkpoint.metadata),
        created_at=checkpoint.created_at,
        extra=dict(checkpoint.extra),
    )


async def copy_checkpoints(
    saver: CheckpointSaver, source: str, target: str, into: CheckpointSaver | None = None
) -> int:
    """Write thread ``source``'s checkpoints to the new thread ``target`` (of ``into``, by
    default the same saver); how many."""
    into = saver if into is None else into
    listed = list(await saver.alist(source))
    listed.reverse()  # oldest first: each checkpoint after its parent
    values: dict[str, dict[str, Any]] = {}
    head: str | None = None
    for checkpoint in listed:
        parent = values.get(checkpoint.parent_id) if checkpoint.parent_id else None
        await into.aput(target, _write(checkpoint, parent), expected_head=head)
        if checkpoint.pending_writes:
            await into.aput_writes(target, checkpoint.id, checkpoint.pending_writes)
        values[checkpoint.id] = checkpoint.values
        head = checkpoint.id
    return len(listed)


async def drawn_over(graph: CompiledGraph, fmt: str, thread: Mapping[str, Any]) -> str:
    """``graph`` drawn in ``fmt`` with ``thread``'s run over it.

    The thread's checkpoints are read with the saver's async calls (a cluster's savers
    have no sync reads, and a read must not block the server) into a memory saver under
    the id the client knows (a user's stored thread id is never shown), which the drawing
    then reads.
    """
    saver = graph.saver
    assert saver is not None  # the server gave every assistant its saver
    view = MemorySaver()
    await copy_checkpoints(saver, thread["_key"], thread["thread_id"], into=view)
    return str(graph.with_saver(view).draw(fmt, config={"thread_id": thread["thread_id"]}))
