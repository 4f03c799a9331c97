"""Executing one run: drive the graph, publish its events, settle the run and its thread.

The same code runs in ``graphagent serve`` and in ``graphagent worker``; the queue that
hands it runs (``_queue``) decides which process executes which run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from graphagent.config import RunnableConfig
from graphagent.graph import StateSnapshot
from graphagent.server._assistants import Assistant, Assistants
from graphagent.server._docs import Docs
from graphagent.server._errors import ApiError
from graphagent.server._events import Events
from graphagent.server._records import ACTIVE, now
from graphagent.server._wire import (
    chunk_to_wire,
    command_from_wire,
    input_from_wire,
    interrupt_to_wire,
    to_wire,
    values_to_wire,
)

__all__ = ["Executor", "Stopped", "run_config", "settle_thread"]

log = logging.getLogger("graphagent.server")

# the stream modes a client may ask for, and the graph mode each reads
_MODES = {
    "values": "values",
    "updates": "updates",
    "custom": "custom",
    "debug": "debug",
    "messages-tuple": "messages",
}


class Stopped(Exception):
    """A run stopped from outside: ``action`` is ``interrupt`` or ``rollback``."""

    def __init__(self, action: str) -> None:
        super().__init__(action)
        self.action = action


def stream_modes(raw: Any) -> list[str]:
    """The run's requested stream modes, checked (default ``["values"]``)."""
    modes = [raw] if isinstance(raw, str) else list(raw or ["values"])
    unknown = [m for m in modes if m not in _MODES]
    if unknown:
        raise ApiError(
            422,
            f"stream_mode {unknown!r} is not served; use {', '.join(_MODES)}",
        )
    return modes


def run_config(key: str, run: Mapping[str, Any]) -> RunnableConfig:
    """The graph config of a run on the thread stored as ``key``."""
    raw = dict(run["kwargs"].get("config") or {})
    configurable = dict(raw.get("configurable") or {})
    configurable.update(run["kwargs"].get("context") or {})
    for private in ("thread_id", "checkpoint_id", "checkpoint_ns"):
        configurable.pop(private, None)
    options: dict[str, Any] = {"thread_id": key, "configurable": configurable}
    if raw.get("recursion_limit") is not None:
        options["recursion_limit"] = int(raw["recursion_limit"])
    metadata = {**(raw.get("metadata") or {}), **run["metadata"]}
    options["metadata"] = {**metadata, "run_id": run["run_id"]}
    return RunnableConfig(**options)


def _graph_input(assistant: Assistant, kwargs: Mapping[str, Any]) -> Any:
    if kwargs.get("command"):
        return command_from_wire(kwargs["command"])
    return assistant.prepare(input_from_wire(kwargs.get("input")))


def interrupts_of(snapshot: StateSnapshot) -> dict[str, list[dict[str, Any]]]:
    """A thread's pending interrupts by the node that asked (the wire's ``interrupts``)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for item in snapshot.interrupts:
        out.setdefault(item.node, []).append(interrupt_to_wire(item))
    return out


async def settle_thread(
    docs: Docs, thread: dict[str, Any], assistant: Assistant | None, errored: bool = False
) -> dict[str, Any]:
    """Refresh a thread record from its checkpoints and runs, and store it."""
    if assistant is not None:
        snapshot = await assistant.graph.aget_state({"thread_id": thread["_key"]})
        if snapshot.exists:
            thread["values"] = values_to_wire(snapshot.values)
            thread["interrupts"] = interrupts_of(snapshot)
            thread["state_updated_at"] = now()
        status = "interrupted" if snapshot.next else "idle"
    else:
        status = "idle"
    if errored:
        status = "error"
    runs = await docs.children("run", thread["_key"])
    if any(r["status"] in ACTIVE for r in runs):
        status = "busy"
    thread["status"] = status
    thread["updated_at"] = now()
    await docs.put("thread", thread["_key"], thread)
    return thread


class Executor:
    """Executes runs in this process: one run per thread at a time.

    Args:
        assistants: what can be run.
        docs: the records.
        events: where the runs' events go.
    """

    def __init__(self, assistants: Assistants, docs: Docs, events: Events) -> None:
        self.assistants = assistants
        self.docs = docs
        self.events = events
        self.tasks: dict[str, asyncio.Task[Any]] = {}
        self.stops: dict[str, str] = {}
        # a run's result and end being published: a stopping process lets them finish
        self.ending: set[asyncio.Future[bool]] = set()
        # runs shared with other processes (a cluster's queue): check the thread's order
        # and whether another executor took a run over; a local queue needs neither
        self.shared = False
        # this process stopped taking runs (abandon): it starts none, and a run cancelled
        # without a stop asked (asyncio.run's teardown) is handed over, not interrupted
        self.closing = False
        # runs under way here (between recording them running and their outcome): a stop
        # cancels them where they are; one asked before waits for the run to get there
        self.live: set[str] = set()

    async def execute(self, run_id: str, *, recovered: bool = False) -> bool:
        """Run ``run_id`` if it is still pending (its thread's lock is the caller's).

        ``recovered``: the run's executor died (its lease ran out); a run it left
        ``running`` resumes from its last checkpoint.

        Returns:
            ``False`` when an older run of its thread has yet to run (the caller keeps
            it queued and tries again); ``True`` when it is settled.
        """
        if self.closing:
            return False  # left queued: another executor takes it
        run = await self.docs.get("run", run_id)
        if run is None:
            return True
        resuming = recovered and run["status"] == "running"
        if recovered and run["status"] not in ACTIVE and not await self.events.ended(run_id):
            # its executor died between recording the end and publishing it
            thread = await self.docs.get("thread", run["_parent"])
            await self._publish_end(run_id, dict((thread or {}).get("values") or {}))
            return True
        if run["status"] != "pending" and not resuming:
            return True
        if self.shared:
            siblings = await self.docs.children("run", run["_parent"])
            first = next((r for r in siblings if r["status"] in ACTIVE), None)
            if first is not None and first["run_id"] != run_id:
                return False  # a thread's runs go in the order they were created
        thread = await self.docs.get("thread", run["_parent"])
        assistant = self.assistants.find(run["assistant_id"])
        if thread is None or assistant is None:
            await self._finish(run, "error", {"__error__": {"error": "NotFound"}})
            return True
        saver = assistant.graph.saver
        assert saver is not None  # the server gave every assistant its saver
        head = await saver.ahead(thread["_key"])
        if not resuming:
            run["_head"] = head
        # a run that wrote a checkpoint before its executor died continues from there;
        # one that had written nothing starts again from its input
        progressed = resuming and head != run.get("_head")
        where = {"thread_id": thread["_key"]}
        ended = progressed and not (await assistant.graph.aget_state(where)).next
        run["_attempt"] = int(run.get("_attempt") or 0) + 1
        status, errored = "success", False
        result: dict[str, Any] | None = None
        self.live.add(run_id)
        try:
            # from here on a cancel, wherever it lands, settles the run below
            run["status"], run["updated_at"] = "running", now()
            await self.docs.put("run", run_id, run)
            if run_id in self.stops:  # asked before the run got here
                raise Stopped(self.stops[run_id])
            thread["status"] = "busy"
            await self.docs.put("thread", thread["_key"], thread)
            attempt = {"run_id": run_id, "attempt": run["_attempt"]}
            await self.events.publish(run_id, "metadata", attempt)
            if not ended:  # else it had ended before its executor died: nothing to run
                await self._drive(run, thread, assistant, progressed)
            self.live.discard(run_id)
        except (asyncio.CancelledError, Stopped):
            self.live.discard(run_id)
            action = self.stops.pop(run_id, "lost" if self.closing else "interrupt")
            if action == "lost":
                return True  # another executor took the run over: it settles it
            status = "interrupted"
            if action == "rollback":
                await self._rollback(thread, assistant, run.get("_head"))
                status = "rollback"
        except Exception as exc:
            self.live.discard(run_id)
            log.warning("run %s failed: %s: %s", run_id, type(exc).__name__, exc)
            error = {"error": type(exc).__name__, "message": str(exc)}
            await self.events.publish(run_id, "error", error)
            status, errored, result = "error", True, {"__error__": error}
        if self.shared and await self._superseded(run):
            return True  # another executor took the run over meanwhile: it settles it
        await self._record(run, status)
        fresh = await self.docs.get("thread", thread["_key"])
        if fresh is not None:  # else the thread was deleted while the run ran
            thread = await settle_thread(self.docs, fresh, assistant, errored)
        if result is None:
            result = {**(thread.get("values") or {})}
            pending = [i for group in thread["interrupts"].values() for i in group]
            if pending:
                result["__interrupt__"] = pending
        if run.get("_temporary"):
            await assistant.graph.adelete_thread({"thread_id": thread["_key"]})
            await self.docs.delete("thread", thread["_key"])
        await self._publish_end(run_id, result)
        return True

    def stop(self, run_id: str, action: str) -> None:
        """Stop ``run_id`` if it executes here (``interrupt`` or ``rollback``): cancelled
        where it is once under way, else as it gets there (a cancel landing before would
        end its task unsettled, and the queue would retry the run, and cancel it, forever).
        """
        task = self.tasks.get(run_id)
        if task is None or task.done():
            return
        self.stops[run_id] = action
        if run_id in self.live:
            task.cancel()

    async def _drive(
        self, run: dict[str, Any], thread: dict[str, Any], assistant: Assistant, resume: bool
    ) -> None:
        run_id = run["run_id"]
        wanted = stream_modes(run["kwargs"].get("stream_mode"))
        graph_modes = sorted({_MODES[m] for m in wanted})
        info = {"graph_id": assistant.name, "run_id": run_id, "thread_id": run["thread_id"]}
        cfg = run_config(thread["_key"], run)
        graph_input = None if resume else _graph_input(assistant, run["kwargs"])
        events = assistant.graph.astream(graph_input, cfg, mode=graph_modes)
        publish = self.events.publish
        async for mode, payload in events:
            if mode == "messages":
                chunk, meta = payload
                node = meta.get("node") if isinstance(meta, Mapping) else None
                data = [chunk_to_wire(chunk, run_id), {**info, "langgraph_node": node}]
                await publish(run_id, "messages", data)
            elif mode == "values":
                await publish(run_id, "values", values_to_wire(payload))
            else:
                await publish(run_id, mode, to_wire(payload))

    async def _rollback(
        self, thread: dict[str, Any], assistant: Assistant, head: str | None
    ) -> None:
        """Put the thread back where it was before the run (at checkpoint ``head``)."""
        key = thread["_key"]
        if head is None:
            await assistant.graph.adelete_thread({"thread_id": key})
            thread["values"], thread["interrupts"] = None, {}
            return
        # a fork from the checkpoint before the run: the run's checkpoints leave the
        # thread's history, which now continues from where the run started
        config = {"thread_id": key, "checkpoint_id": head}
        await assistant.graph.aupdate_state(config, {}, as_node=None)

    async def _record(self, run: dict[str, Any], status: str) -> None:
        if status == "rollback":
            await self.docs.delete("run", run["run_id"])
        else:
            run["status"], run["updated_at"] = status, now()
            await self.docs.put("run", run["run_id"], run)

    async def _publish_end(self, run_id: str, result: Any) -> None:
        # ending is one step that only the first executor to end the run takes (a lapsed
        # executor and its successor may both get here); it goes on when this process is
        # stopped meanwhile, and a stopping process lets it finish before closing
        ending = asyncio.ensure_future(self.events.end(run_id, result))
        self.ending.add(ending)
        ending.add_done_callback(self.ending.discard)
        await asyncio.shield(ending)

    async def abandon(self, loops: list[asyncio.Task[Any]]) -> None:
        """Leave this process's runs to other executors (it is shutting down): they stay
        unsettled and unacknowledged, resumed from their last checkpoint by whoever takes
        them next. ``loops``, the queue's own tasks, are cancelled and awaited, so are the
        runs (each cancelled once: a second cancel would cut what it stores as it stops),
        then the results and ends being published are let finish before connections close.
        From here on this executor starts no run (see ``closing``)."""
        self.closing = True
        runs = list(self.tasks.items())
        for run_id, task in runs:
            self.stops[run_id] = "lost"
            task.cancel()
        pending = {task for task in loops if not task.done()}
        while pending:
            # cancelled again until it ends: the loops wait with _internal.waiting, which
            # never swallows a cancel, but a cancel landing as something else they await
            # ends may still be (asyncio.wait_for on Python 3.11 did), and a loop would go on
            for task in pending:
                task.cancel()
            _, pending = await asyncio.wait(pending, timeout=0.1)
        for task in loops:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if runs:
            await asyncio.wait([task for _, task in runs])
        if self.ending:
            await asyncio.gather(*self.ending, return_exceptions=True)

    async def _superseded(self, run: dict[str, Any]) -> bool:
        """Whether another executor started this run after this one did (this one's lease
        lapsed: a stalled process, a network split), so that this one must not settle it."""
        fresh = await self.docs.get("run", run["run_id"])
        return fresh is not None and fresh.get("_attempt") != run.get("_attempt")

    async def _finish(self, run: dict[str, Any], status: str, result: Any) -> None:
        await self._record(run, status)
        await self._publish_end(run["run_id"], result)
