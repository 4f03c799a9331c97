"""The ``"debug"`` stream's events, in LangGraph's shape.

Each event is ``{"type", "timestamp", "step", "payload"}``:

- ``"checkpoint"``: a checkpoint the run stored (the input one too), with its ``config``,
  ``checkpoint_id``, ``parent_id``, ``values``, ``metadata``, ``next`` and ``tasks`` (the
  next step's, each ``{"id", "name", "interrupts", "state"}``). Only a run that saves
  stores checkpoints, so only such a run streams these.
- ``"task"``: a task about to run: ``id``, ``name``, ``path``, ``input`` (the state it
  reads), ``triggers``.
- ``"task_result"``: what a task came to: ``id``, ``name``, ``path``, ``error``
  (``None``), ``result`` (its update), ``interrupts`` (what it asked).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from checkpoint.base import CheckpointWrite
from graphagent.config import RunnableConfig
from graphagent.graph._command import Interrupt
from graphagent.graph._constants import public
from graphagent.graph._effects import Emit
from graphagent.graph._namespace import task_id
from graphagent.messages import Message, RemoveMessage

__all__ = ["announce", "checkpoint_event", "step_events", "task_result", "written_messages"]


def _event(kind: str, step: int, payload: dict[str, Any]) -> dict[str, Any]:
    now = _dt.datetime.now(_dt.timezone.utc).isoformat()
    return {"type": kind, "timestamp": now, "step": step, "payload": payload}


def announce(
    pos: Any, tasks: Iterable[Any], anchor: str | None, base: tuple[str, ...]
) -> Iterator[Emit]:
    """One ``"task"`` event per task about to run in the step after ``pos``."""
    state, step = public(pos.values), pos.step + 1
    for t in tasks:
        key = getattr(t, "key", t.spec.name)  # a fan-out's Send tasks have keys of their own
        path = (*base, key)
        payload = {
            "id": task_id(anchor, path),
            "name": t.spec.name,
            "path": path,
            "input": state,
            "triggers": (),
        }
        yield Emit("debug", _event("task", step, payload))


def task_result(
    step: int,
    anchor: str | None,
    base: tuple[str, ...],
    name: str,
    result: Mapping[str, Any] | None,
    interrupts: tuple[Interrupt, ...] = (),
) -> dict[str, Any]:
    """The ``"task_result"`` event of node ``name`` in ``step``."""
    return _event(
        "task_result",
        step,
        {
            "id": task_id(anchor, (*base, name)),
            "name": name,
            "path": (*base, name),
            "error": None,
            "result": public(result) if result else {},
            "interrupts": list(interrupts),
        },
    )


def checkpoint_event(
    written: CheckpointWrite, values: Mapping[str, Any], config: RunnableConfig
) -> dict[str, Any]:
    """The ``"checkpoint"`` event of a checkpoint the run stores (its input checkpoint)."""
    return _checkpoint(
        written.id, written.parent_id, written.step, written.next, written.metadata, values, config
    )


def _checkpoint(
    cid: str,
    parent: str | None,
    step: int,
    due: tuple[str, ...],
    metadata: Mapping[str, Any],
    values: Mapping[str, Any],
    config: RunnableConfig,
) -> dict[str, Any]:
    return _event(
        "checkpoint",
        step,
        {
            "config": config.model_copy(update={"checkpoint_id": cid}),
            "checkpoint_id": cid,
            "parent_id": parent,
            "values": public(values),
            "metadata": dict(metadata),
            "next": due,
            "tasks": [
                {"id": task_id(cid, (n,)), "name": n, "interrupts": (), "state": None} for n in due
            ],
        },
    )


def step_events(
    step: int,
    where: tuple[str | None, tuple[str, ...]],
    results: Mapping[str, tuple[Mapping[str, Any] | None, Any]],
    stored: tuple[str | None, str | None, list[str], tuple[str, ...]],
    values: Mapping[str, Any],
    config: RunnableConfig,
) -> Iterator[Emit]:
    """A committed step's events: each task's result, then the checkpoint stored (when
    the step stored one: ``stored`` is the parent id, the id now, the nodes that ran and
    the nodes due next)."""
    anchor, base = where
    for node in sorted(results):
        yield Emit("debug", task_result(step, anchor, base, node, results[node][0]))
    parent, now, ran, due = stored
    if now is not None and now != parent:
        metadata = {**config.metadata, "source": "loop", "step": step, "nodes": ran}
        yield Emit("debug", _checkpoint(now, parent, step, due, metadata, values, config))


def written_messages(
    results: Mapping[str, tuple[Mapping[str, Any] | None, Any]], base: tuple[str, ...]
) -> Iterator[Emit]:
    """The ``"messages"`` events of the messages a committed step's nodes wrote (the
    stream drops those it already carried, chunk by chunk or whole, by id)."""
    for node in sorted(results):
        update = results[node][0]
        for value in update.values() if update else ():
            for item in value if isinstance(value, (list, tuple)) else (value,):
                if isinstance(item, Message) and not isinstance(item, RemoveMessage):
                    yield Emit("messages", (item, {"node": node, "path": (*base, node)}))
