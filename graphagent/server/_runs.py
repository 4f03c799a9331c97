"""Runs: create (with the multitask strategies), read, list, cancel, join and stream."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from graphagent.server._errors import ApiError, not_found
from graphagent.server._events import RESULT, Event, Events
from graphagent.server._execute import stream_modes
from graphagent.server._queue import Queue
from graphagent.server._records import ACTIVE, new_run, new_thread, now, public
from graphagent.server._threads import Threads

__all__ = ["Runs"]

_STRATEGIES = ("reject", "enqueue", "interrupt", "rollback")
_UNSERVED = ("interrupt_before", "interrupt_after", "webhook", "after_seconds")


class Runs:
    """The run endpoints' logic."""

    def __init__(self, threads: Threads, queue: Queue, events: Events) -> None:
        self.threads = threads
        self.docs = threads.docs
        self.queue = queue
        self.events = events

    def _check(self, body: Mapping[str, Any]) -> None:
        strategy = body.get("multitask_strategy") or "enqueue"
        if strategy not in _STRATEGIES:
            raise ApiError(422, f"multitask_strategy {strategy!r}: use {', '.join(_STRATEGIES)}")
        for key in _UNSERVED:
            if body.get(key):
                raise ApiError(
                    422, f"{key} is not served per run; compile the graph with it instead"
                )
        if body.get("input") is not None and body.get("command"):
            raise ApiError(422, "pass input or command, not both")
        stream_modes(body.get("stream_mode"))

    async def _thread_for(
        self, owner: str, thread_id: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        try:
            return await self.threads.load(owner, thread_id)
        except ApiError:
            if body.get("if_not_exists") != "create":
                raise
        await self.threads.create(owner, {"thread_id": thread_id})
        return await self.threads.load(owner, thread_id)

    async def create(
        self, owner: str, thread_id: str | None, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Create a run (``thread_id`` ``None``: stateless, on a thread of its own that is
        deleted when it ends unless ``on_completion`` is ``keep``) and queue it."""
        self._check(body)
        assistant = self.threads.assistants.get(str(body.get("assistant_id")))
        temporary = thread_id is None and body.get("on_completion", "delete") == "delete"
        if thread_id is None:
            thread_id = str(uuid.uuid4())
            key = self.threads.tenancy.key(owner, thread_id)
            thread = new_thread(thread_id, key, owner, {})
        else:
            thread = await self._thread_for(owner, thread_id, body)
        graph_id = thread["metadata"].get("graph_id")
        if graph_id is not None and graph_id != assistant.name:
            raise ApiError(
                409,
                f"thread {thread_id!r} belongs to {graph_id!r}; run {assistant.name!r} on "
                "another thread",
            )
        active = [
            r for r in await self.docs.children("run", thread["_key"]) if r["status"] in ACTIVE
        ]
        strategy = body.get("multitask_strategy") or "enqueue"
        if active and strategy == "reject":
            raise ApiError(
                409,
                f"thread {thread_id!r} is busy with run {active[0]['run_id']!r} "
                "(multitask_strategy 'reject'); wait for it, or use enqueue / interrupt / rollback",
            )
        if active and strategy in ("interrupt", "rollback"):
            for other in active:
                await self.stop(other, strategy)
        thread["metadata"].update(graph_id=assistant.name, assistant_id=assistant.assistant_id)
        thread["status"], thread["updated_at"] = "busy", now()
        await self.docs.put("thread", thread["_key"], thread)
        run = new_run(thread, assistant.assistant_id, dict(body), temporary=temporary)
        await self.docs.put("run", run["run_id"], run)
        return run

    async def submit(self, run: dict[str, Any]) -> None:
        """Hand a created run to the queue."""
        await self.queue.submit(run)

    async def load(self, owner: str, thread_id: str | None, run_id: str) -> dict[str, Any]:
        """The caller's run (on ``thread_id`` when given), or 404."""
        run = await self.docs.get("run", run_id)
        if run is None or run["_owner"] != owner:
            raise not_found("run", run_id)
        if thread_id is not None and run["thread_id"] != thread_id:
            raise not_found("run", run_id)
        return run

    async def list(
        self, owner: str, thread_id: str, params: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        """``runs.list``: newest first, by ``status``, paged."""
        thread = await self.threads.load(owner, thread_id)
        runs = [r for r in await self.docs.children("run", thread["_key"])]
        if params.get("status"):
            runs = [r for r in runs if r["status"] == params["status"]]
        runs.reverse()
        offset, limit = int(params.get("offset") or 0), int(params.get("limit") or 10)
        return [public(r) for r in runs[offset : offset + limit]]

    async def stop(self, run: dict[str, Any], action: str) -> None:
        """Stop a run: a pending one never starts; a running one is cancelled where it runs."""
        if action not in ("interrupt", "rollback"):
            raise ApiError(422, f"action {action!r}: use interrupt or rollback")
        if run["status"] == "pending":
            # settled here: the executor skips a run that is no longer pending
            if action == "rollback":
                await self.docs.delete("run", run["run_id"])
            else:
                run["status"], run["updated_at"] = "interrupted", now()
                await self.docs.put("run", run["run_id"], run)
            await self.queue.cancel(run, action)
            await self.events.end(run["run_id"], {})
        elif run["status"] == "running":
            await self.queue.cancel(run, action)

    async def delete(self, owner: str, thread_id: str, run_id: str) -> None:
        """``runs.delete``: a finished run's record (a live run: 409)."""
        run = await self.load(owner, thread_id, run_id)
        if run["status"] in ACTIVE:
            raise ApiError(409, f"run {run_id!r} is {run['status']}; cancel it first")
        await self.docs.delete("run", run_id)

    async def outcome(self, run: dict[str, Any], after: str | None = "-1") -> Any:
        """Wait for the run to end; what ``runs.wait`` and ``runs.join`` answer."""
        result: Any = None
        # a run that ended long ago may have no stream kept: the thread's values answer
        if await self.is_live(run["run_id"]) or await self.events.has(run["run_id"]):
            async for _, event, data in self.events.read(run["run_id"], after):
                if event == RESULT:
                    result = data
        if result is not None:
            return result
        # the run ended before this reader came (and its stream is gone): the thread
        thread = await self.docs.get("thread", run["_parent"])
        return dict((thread or {}).get("values") or {})

    async def is_live(self, run_id: str) -> bool:
        """Whether the run is still pending or running."""
        run = await self.docs.get("run", run_id)
        return run is not None and run["status"] in ACTIVE

    async def sse(self, run: dict[str, Any], after: str | None) -> AsyncIterator[Event]:
        """The run's events for an SSE client (the server's own ones left out)."""
        if not await self.is_live(run["run_id"]) and not await self.events.has(run["run_id"]):
            return
        async for event in self.events.read(run["run_id"], after):
            if not event[1].startswith("__"):
                yield event
