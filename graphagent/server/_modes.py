"""Stream modes as a client asks for them, and the events each one sees.

The executor streams the graph modes it knows (``values``, ``updates``, ``custom``,
``debug``, ``messages-tuple``). Two more modes are read out of ``debug`` here, at the edge:
``tasks`` (each task's start and result) and ``checkpoints`` (each checkpoint as written).
A run asking for them streams ``debug``; the client sees only what it asked for, in
LangGraph's shapes. Modes no graph here produces are refused by name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from graphagent.server._errors import ApiError
from graphagent.server._execute import stream_modes

__all__ = ["client_events", "executor_modes", "requested_modes", "thread_modes"]

_FROM_DEBUG = {"tasks": ("task", "task_result"), "checkpoints": ("checkpoint",)}

_REFUSED = {
    "events": "LangChain's callback events (astream_events) are not produced here; "
    "use updates, tasks or debug",
    "messages": "whole messages per step are not streamed; use messages-tuple (tokens) or "
    "updates (each node's messages)",
    "tools": "tool events are not streamed separately; use tasks (each tools step) or updates",
    "lifecycle": "subgraph lifecycle events are not streamed; use tasks or debug",
}

_THREAD_MODES = ("run_modes", "lifecycle")


def requested_modes(raw: Any) -> list[str]:
    """The stream modes a run's request asks for, checked (default ``["values"]``)."""
    modes = [raw] if isinstance(raw, str) else list(raw or ["values"])
    for mode in modes:
        if mode in _REFUSED:
            raise ApiError(422, f"stream_mode {mode!r} is not served: {_REFUSED[mode]}")
    stream_modes([m for m in modes if m not in _FROM_DEBUG] or None)
    return modes


def executor_modes(requested: Sequence[str]) -> list[str]:
    """What the executor streams for ``requested``: ``debug`` stands for the modes read
    out of it."""
    out = [m for m in requested if m not in _FROM_DEBUG]
    if len(out) < len(requested) and "debug" not in out:
        out.append("debug")
    return out


def _config(thread_id: str, checkpoint_id: Any) -> dict[str, Any] | None:
    if checkpoint_id is None:
        return None
    configurable = {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}
    return {"configurable": configurable}


def _checkpoint(thread_id: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    # the client's thread id, never the stored one (another user's key under auth)
    return {
        "config": _config(thread_id, payload.get("checkpoint_id")),
        "parent_config": _config(thread_id, payload.get("parent_id")),
        "values": payload.get("values") or {},
        "metadata": payload.get("metadata") or {},
        "next": list(payload.get("next") or ()),
        "tasks": list(payload.get("tasks") or ()),
    }


def client_events(
    event: str, data: Any, requested: Sequence[str] | None, thread_id: str
) -> Iterator[tuple[str, Any]]:
    """The events a client that asked for ``requested`` sees for one published event
    (``None``: the run was made before modes were split; it sees what was published)."""
    if requested is None or event != "debug":
        yield event, data
        return
    if "debug" in requested:
        yield event, data
    kind = data.get("type") if isinstance(data, Mapping) else None
    payload = data.get("payload") if isinstance(data, Mapping) else None
    if not isinstance(payload, Mapping):
        return
    if "tasks" in requested and kind in _FROM_DEBUG["tasks"]:
        yield "tasks", {k: v for k, v in payload.items() if k != "path"}
    if "checkpoints" in requested and kind in _FROM_DEBUG["checkpoints"]:
        yield "checkpoints", _checkpoint(thread_id, payload)


def thread_modes(raw: Sequence[str]) -> list[str]:
    """A thread stream's modes, checked: ``run_modes`` (every event of the thread's runs,
    the default) or ``lifecycle`` (each run's start and end)."""
    modes = [m.strip() for part in raw for m in part.split(",") if m.strip()] or ["run_modes"]
    unknown = [m for m in modes if m not in _THREAD_MODES]
    if unknown:
        raise ApiError(
            422,
            f"thread stream_mode {unknown!r} is not served; use run_modes or lifecycle "
            "(state_update: read threads.get_state after each run_done)",
        )
    return modes
