"""Threads: create, read, search, delete, and their state and history."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from graphagent.graph import StateSnapshot
from graphagent.server._assistants import Assistant, Assistants
from graphagent.server._copy import copy_checkpoints
from graphagent.server._docs import Docs
from graphagent.server._errors import ApiError, not_found
from graphagent.server._execute import interrupts_of, settle_thread
from graphagent.server._records import Tenancy, new_thread, now, public
from graphagent.server._wire import input_from_wire, to_wire, values_to_wire

__all__ = ["Threads"]

_SORTABLE = ("thread_id", "status", "created_at", "updated_at", "state_updated_at")


def _checkpoint(thread_id: str, checkpoint_id: str | None) -> dict[str, Any] | None:
    if checkpoint_id is None:
        return None
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint_id,
        "checkpoint_map": None,
    }


def state_to_wire(thread_id: str, snapshot: StateSnapshot) -> dict[str, Any]:
    """A snapshot as ``threads.get_state`` answers (LangGraph's ``ThreadState``)."""
    interrupts = interrupts_of(snapshot)
    tasks = [
        {
            "id": f"{snapshot.checkpoint_id}:{node}",
            "name": node,
            "path": [node],
            "error": None,
            "interrupts": interrupts.get(node, []),
            "checkpoint": None,
            "state": None,
            "result": None,
        }
        for node in snapshot.next
    ]
    metadata = to_wire(snapshot.metadata)
    if isinstance(metadata, dict) and "step" not in metadata:
        metadata["step"] = snapshot.step
    return {
        "values": values_to_wire(snapshot.values),
        "next": list(snapshot.next),
        "tasks": tasks,
        "checkpoint": _checkpoint(thread_id, snapshot.checkpoint_id)
        or {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": None},
        "metadata": metadata,
        "created_at": snapshot.created_at.isoformat() if snapshot.created_at else None,
        "parent_checkpoint": _checkpoint(thread_id, snapshot.parent_id),
        "interrupts": [i for group in interrupts.values() for i in group],
    }


def _matches(doc: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    meta = body.get("metadata") or {}
    if any(doc["metadata"].get(k) != v for k, v in meta.items()):
        return False
    values = body.get("values") or {}
    if any((doc.get("values") or {}).get(k) != v for k, v in values.items()):
        return False
    if body.get("status") and doc["status"] != body["status"]:
        return False
    return not body.get("ids") or doc["thread_id"] in body["ids"]


class Threads:
    """The thread endpoints' logic, for one caller at a time (``owner``)."""

    def __init__(self, docs: Docs, assistants: Assistants, tenancy: Tenancy) -> None:
        self.docs = docs
        self.assistants = assistants
        self.tenancy = tenancy

    async def load(self, owner: str, thread_id: str) -> dict[str, Any]:
        """The caller's thread record, or 404 (also for another user's thread)."""
        doc = await self.docs.get("thread", self.tenancy.key(owner, thread_id))
        if doc is None or doc["_owner"] != owner:
            raise not_found("thread", thread_id)
        return doc

    def assistant_of(self, doc: Mapping[str, Any]) -> Assistant | None:
        """The assistant whose runs wrote the thread (``None``: no run yet)."""
        return self.assistants.find(doc["metadata"].get("graph_id"))

    async def create(self, owner: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``threads.create``: ``if_exists`` ``raise`` (409) or ``do_nothing``."""
        thread_id = str(body.get("thread_id") or uuid.uuid4())
        key = self.tenancy.key(owner, thread_id)
        existing = await self.docs.get("thread", key)
        if existing is not None:
            if body.get("if_exists") == "do_nothing":
                return public(existing)
            raise ApiError(409, f"thread {thread_id!r} already exists")
        doc = new_thread(thread_id, key, owner, body.get("metadata"))
        graph_id = doc["metadata"].get("graph_id")
        if graph_id is not None:
            assistant = self.assistants.get(str(graph_id))
            doc["metadata"]["graph_id"] = assistant.name
        await self.docs.put("thread", key, doc)
        return public(doc)

    async def copy(self, owner: str, thread_id: str) -> dict[str, Any]:
        """``threads.copy``: a new thread of the caller's with the same metadata and the
        same checkpoints (history, forks, pending interrupts); its runs are not copied."""
        source = await self.load(owner, thread_id)
        new_id = str(uuid.uuid4())
        doc = new_thread(new_id, self.tenancy.key(owner, new_id), owner, source["metadata"])
        assistant = self.assistant_of(source)
        if assistant is not None:
            saver = assistant.graph.saver
            assert saver is not None  # the server gave every assistant its saver
            await copy_checkpoints(saver, source["_key"], doc["_key"])
        return public(await settle_thread(self.docs, doc, assistant))

    async def get(self, owner: str, thread_id: str) -> dict[str, Any]:
        """``threads.get``."""
        return public(await self.load(owner, thread_id))

    async def patch(self, owner: str, thread_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``threads.update``: merge ``metadata``."""
        doc = await self.load(owner, thread_id)
        doc["metadata"].update(body.get("metadata") or {})
        doc["updated_at"] = now()
        await self.docs.put("thread", doc["_key"], doc)
        return public(doc)

    async def search(self, owner: str, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """``threads.search``: filter, sort (newest first by default) and page."""
        docs = [d for d in await self.docs.owned("thread", owner) if _matches(d, body)]
        key = body.get("sort_by") or "created_at"
        if key not in _SORTABLE:
            raise ApiError(422, f"sort_by {key!r}: use one of {', '.join(_SORTABLE)}")
        docs.sort(key=lambda d: str(d.get(key) or ""), reverse=body.get("sort_order") != "asc")
        offset, limit = int(body.get("offset") or 0), int(body.get("limit") or 10)
        return [public(d) for d in docs[offset : offset + limit]]

    async def count(self, owner: str, body: Mapping[str, Any]) -> int:
        """``threads.count``."""
        return sum(_matches(d, body) for d in await self.docs.owned("thread", owner))

    async def delete(self, doc: dict[str, Any]) -> None:
        """Forget the thread: its record, its runs' records and its checkpoints."""
        assistant = self.assistant_of(doc)
        if assistant is not None:
            await assistant.graph.adelete_thread({"thread_id": doc["_key"]})
        for run in await self.docs.children("run", doc["_key"]):
            await self.docs.delete("run", run["run_id"])
        await self.docs.delete("thread", doc["_key"])

    async def state(
        self, owner: str, thread_id: str, checkpoint_id: str | None = None
    ) -> dict[str, Any]:
        """``threads.get_state`` (at ``checkpoint_id`` when given)."""
        doc = await self.load(owner, thread_id)
        assistant = self.assistant_of(doc)
        if assistant is None:
            return {
                "values": {},
                "next": [],
                "tasks": [],
                "checkpoint": {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": None},
                "metadata": {},
                "created_at": None,
                "parent_checkpoint": None,
                "interrupts": [],
            }
        config = {"thread_id": doc["_key"], "checkpoint_id": checkpoint_id}
        snapshot = await assistant.graph.aget_state(config)
        if checkpoint_id is not None and not snapshot.exists:
            raise not_found("checkpoint", checkpoint_id)
        return state_to_wire(thread_id, snapshot)

    async def history(
        self, owner: str, thread_id: str, body: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """``threads.get_history``: newest first; ``before`` a checkpoint; ``metadata``."""
        doc = await self.load(owner, thread_id)
        assistant = self.assistant_of(doc)
        if assistant is None:
            return []
        before = body.get("before")
        if isinstance(before, Mapping):
            before = before.get("checkpoint_id")
        limit = int(body.get("limit") or 10)
        meta = body.get("metadata") or {}
        listed = await assistant.graph.aget_state_history(
            {"thread_id": doc["_key"]}, limit=None if meta else limit, before=before
        )
        out = [
            state_to_wire(thread_id, s)
            for s in listed
            if all(s.metadata.get(k) == v for k, v in meta.items())
        ]
        return out[:limit]

    async def update_state(
        self, owner: str, thread_id: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """``threads.update_state``: write values as ``as_node`` (forks on an old checkpoint)."""
        doc = await self.load(owner, thread_id)
        assistant = self.assistant_of(doc)
        if assistant is None:
            graph_id = body.get("graph_id") or next(iter(self.assistants)).name
            assistant = self.assistants.get(str(graph_id))
            doc["metadata"]["graph_id"] = assistant.name
            doc["metadata"]["assistant_id"] = assistant.assistant_id
        checkpoint_id = body.get("checkpoint_id")
        if isinstance(body.get("checkpoint"), Mapping):
            checkpoint_id = body["checkpoint"].get("checkpoint_id") or checkpoint_id
        config = {"thread_id": doc["_key"], "checkpoint_id": checkpoint_id}
        values = input_from_wire(body.get("values"))
        written = await assistant.graph.aupdate_state(config, values, body.get("as_node"))
        await settle_thread(self.docs, doc, assistant)
        return {"checkpoint": _checkpoint(thread_id, written.checkpoint_id)}
