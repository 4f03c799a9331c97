"""The run queue of a cluster on PostgreSQL (``FOR UPDATE SKIP LOCKED``), and its service.

A cancel reaches the executor through a row it checks and a notification: the notification
stops the run at once; the row is read when the run starts and at each renewal of its lease
(in the renewal's own statement), so a notification lost (the listening connection down)
delays a cancel by a third of a lease at most. A stopping process (SIGTERM) takes no run,
hands over the ones it executes unsettled, and frees each lease once its run stopped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Iterable
from typing import Any

from checkpoint import AsyncPostgresSaver, PostgresStore
from graphagent._internal.waiting import pause
from graphagent.server._execute import Executor
from graphagent.server._outage import OUTAGE_MS, Backoff, Renewal
from graphagent.server._postgres import PostgresCluster, PostgresDocs, PostgresEvents
from graphagent.server._queue import stop_and_outlast
from graphagent.server._service import Auth, Service

__all__ = ["PostgresQueue", "postgres_service"]

log = logging.getLogger("graphagent.server")

# the oldest runs nobody holds (or whose holder's lease ran out): each taken by one
# executor, the others skip the locked rows instead of waiting on them
_TAKE = """
UPDATE {s}.graphagent_server_queue q SET owner = %s,
    lease_until = now() + %s * interval '1 millisecond', taken = q.taken + 1
FROM (SELECT run_id FROM {s}.graphagent_server_queue q1
      WHERE (lease_until IS NULL OR lease_until < now())
      -- never one this process is executing still (its lease ran out under load)
      AND run_id <> ALL(%s)
      -- only the oldest queued run of each thread: its runs go in order
      AND NOT EXISTS (SELECT 1 FROM {s}.graphagent_server_queue q0
                      WHERE q0.thread = q1.thread AND q0.seq < q1.seq)
      ORDER BY seq LIMIT %s FOR UPDATE SKIP LOCKED) free
WHERE q.run_id = free.run_id
RETURNING q.run_id, q.thread, q.taken
"""
# a thread's lease: taken when free or run out, atomically (the thread is the key)
_LEASE = """
INSERT INTO {s}.graphagent_server_leases (thread, owner, until)
VALUES (%s, %s, now() + %s * interval '1 millisecond')
ON CONFLICT (thread) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
WHERE {s}.graphagent_server_leases.until < now()
    OR {s}.graphagent_server_leases.owner = EXCLUDED.owner
RETURNING owner
"""


class PostgresQueue:
    """Runs queued in PostgreSQL, executed by this process (unless ``run`` is false) and by
    every other server and worker on the same schema.

    Args:
        executor: executes runs here.
        db: the cluster's connections.
        run: whether this process executes runs.
        concurrency: runs this process executes at once.
        lease_ms: how soon a dead executor's runs are taken over.
        outage_ms: how long PostgreSQL may fail before the loops log an error; they try
            on for ever, with waits growing to 2 s.
    """

    def __init__(
        self,
        executor: Executor,
        db: PostgresCluster,
        *,
        run: bool = True,
        concurrency: int = 16,
        lease_ms: int = 5000,
        outage_ms: int = OUTAGE_MS,
    ) -> None:
        self.executor = executor
        executor.shared = True
        self.db = db
        self.run = run
        self.concurrency = concurrency
        self.lease_ms = lease_ms
        self.outage_ms = outage_ms
        self.me = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._active: dict[str, asyncio.Task[Any]] = {}
        self._loops: list[asyncio.Task[Any]] = []
        self._closing = False

    async def submit(self, run: dict[str, Any]) -> None:
        await self.db.sql(
            "INSERT INTO {s}.graphagent_server_queue (run_id, thread) VALUES (%s, %s)",
            run["run_id"],
            run["_parent"],
        )
        await self.db.notify("queue", run["run_id"])

    async def cancel(self, run: dict[str, Any], action: str) -> None:
        run_id = run["run_id"]
        await self.db.sql(
            "INSERT INTO {s}.graphagent_server_cancels (run_id, action) VALUES (%s, %s) "
            "ON CONFLICT (run_id) DO UPDATE SET action = EXCLUDED.action",
            run_id,
            action,
        )
        await self.db.notify("cancel", run_id)
        if run["status"] != "running":
            return
        for _ in range(100):  # wait (a little) for its executor to settle it
            doc = await self.executor.docs.get("run", run_id)
            if doc is None or doc["status"] != "running":
                return
            await asyncio.sleep(0.05)

    async def start(self) -> None:
        await self.db.ready()
        if self.run:
            self._loops = [
                asyncio.ensure_future(self._take()),
                asyncio.ensure_future(self._cancels()),
            ]

    def _backoff(self, what: str) -> Backoff:
        """The retries of one of this executor's loops (which never give up)."""
        return Backoff(what, self.outage_ms, give_up=False)

    async def _take(self) -> None:
        wake = self.db.waiter("queue")
        retry = self._backoff("taking runs from PostgreSQL")
        while not self._closing:  # (a stopping process takes nothing: see pause)
            try:
                wake.clear()
                free = self.concurrency - len(self._active)
                if free > 0:
                    mine = list(self._active)
                    rows = await self.db.sql(_TAKE, self.me, self.lease_ms, mine, free)
                    for run_id, thread, taken in rows:
                        task = asyncio.ensure_future(self._execute(run_id, thread, taken > 1))
                        self._active[run_id] = task
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await retry.failed(exc)
                continue
            retry.succeeded()
            await pause(wake, min(1.0, self.lease_ms / 3000))

    async def _cancels(self) -> None:
        wake = self.db.waiter("cancel")
        retry = self._backoff("checking runs for cancels")
        while True:
            await wake.wait()
            wake.clear()
            try:
                await self._check_cancels()
            except Exception as exc:
                await retry.failed(exc)
                wake.set()  # checked again
                continue
            retry.succeeded()

    async def _check_cancels(self) -> None:
        """Stop the runs executing here that someone asked to cancel."""
        mine = list(self.executor.tasks)
        if not mine:
            return
        rows = await self.db.sql(
            "SELECT run_id, action FROM {s}.graphagent_server_cancels WHERE run_id = ANY(%s)",
            mine,
        )
        for run_id, action in rows:
            self.executor.stop(run_id, action)

    async def _execute(self, run_id: str, thread: str, recovered: bool) -> None:
        try:
            owner = await self.db.sql(_LEASE, thread, self.me, self.lease_ms)
            if not owner:  # the thread runs elsewhere: hand the run back
                await self._hand_back(run_id)
                return
            try:
                settled = await self._under_lease(run_id, thread, recovered)
            finally:
                await self.db.sql(
                    "DELETE FROM {s}.graphagent_server_leases WHERE thread = %s AND owner = %s",
                    thread,
                    self.me,
                )
            if not settled or self._closing:  # an older run goes first, or this one stops
                # (a stopping executor's run counts as taken: the next one resumes it)
                await self._hand_back(run_id, taken=settled)
                return
            await self.db.sql(
                "DELETE FROM {s}.graphagent_server_queue WHERE run_id = %s AND owner = %s",
                run_id,
                self.me,
            )
            await self.db.notify("queue", thread)  # its thread's next run may go now
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("executing run %s failed", run_id)
        finally:
            self._active.pop(run_id, None)

    async def _hand_back(self, run_id: str, *, taken: bool = False) -> None:
        """Put a run this executor took back in the queue, to be taken again (``taken``:
        it ran here, so the next executor resumes it)."""
        await self.db.sql(
            "UPDATE {s}.graphagent_server_queue SET owner = NULL, lease_until = NULL, "
            "taken = taken - %s WHERE run_id = %s AND owner = %s",
            0 if taken else 1,
            run_id,
            self.me,
        )
        await asyncio.sleep(0.05)

    async def _under_lease(self, run_id: str, thread: str, recovered: bool) -> bool:
        task = asyncio.ensure_future(self.executor.execute(run_id, recovered=recovered))
        self.executor.tasks[run_id] = task
        renewal = Renewal(f"renewing the lease of run {run_id!r}", self.lease_ms)
        try:
            action = await self._cancel_asked(run_id)  # asked before it started here
            while not task.done():
                if action is not None:
                    self.executor.stop(run_id, action)
                done, _ = await asyncio.wait({task}, timeout=renewal.wait)
                if done:
                    break
                renewal.sending()
                try:
                    renewed = await self._renew(run_id, thread)
                except Exception as exc:  # tried again soon, within the lease
                    if renewal.failed(exc):
                        continue
                    renewed = []  # a whole lease unrenewed: it may be another's by now
                else:
                    renewal.succeeded()
                if not renewed:
                    log.warning("run %s lost its thread's lease; stopping it here", run_id)
                    self.executor.stops[run_id] = "lost"
                    task.cancel()
                    break
                action = renewed[0][0]  # the cancel's notification may have been lost
            return bool(await task)
        finally:
            # left early (this process stops): the run is handed over, and stops writing
            # before its lease is freed
            await stop_and_outlast(self.executor, run_id, task)
            self.executor.tasks.pop(run_id, None)
            self.executor.stops.pop(run_id, None)

    async def _cancel_asked(self, run_id: str) -> str | None:
        try:
            rows = await self.db.sql(
                "SELECT action FROM {s}.graphagent_server_cancels WHERE run_id = %s", run_id
            )
        except Exception:  # read again at the first renewal
            log.exception("checking run %s for a cancel failed", run_id)
            return None
        return str(rows[0][0]) if rows else None

    async def _renew(self, run_id: str, thread: str) -> list[tuple[Any, ...]]:
        """Extend the run's thread lease and queue entry; one row (the cancel asked for
        the run, or ``None``) if this executor still held the lease, none if it lost it."""
        renewed = await self.db.sql(
            "UPDATE {s}.graphagent_server_leases SET until = now() + %s * interval "
            "'1 millisecond' WHERE thread = %s AND owner = %s RETURNING (SELECT action "
            "FROM {s}.graphagent_server_cancels WHERE run_id = %s)",
            self.lease_ms,
            thread,
            self.me,
            run_id,
        )
        await self.db.sql(
            "UPDATE {s}.graphagent_server_queue SET lease_until = now() + %s * "
            "interval '1 millisecond' WHERE run_id = %s AND owner = %s",
            self.lease_ms,
            run_id,
            self.me,
        )
        return renewed

    async def close(self) -> None:
        self._closing = True
        await self.executor.abandon([*self._loops, *self._active.values()])


def postgres_service(
    targets: Iterable[Any],
    url: str,
    *,
    schema: str = "graphagent",
    run: bool = True,
    concurrency: int = 16,
    lease_ms: int = 5000,
    outage_ms: int = OUTAGE_MS,
    auth: Auth | None = None,
    name: str = "graphagent",
) -> Service:
    """The service of one server or worker of a cluster on the PostgreSQL at ``url``: the
    checkpoints (the PostgreSQL saver), the store, records, queue and events all in
    ``schema`` (the options are :func:`~graphagent.server.redis_service`'s)."""
    saver = AsyncPostgresSaver.from_url(url, schema=schema)
    store = PostgresStore.from_url(url, schema=schema)

    async def store_setup() -> None:
        await asyncio.to_thread(store.setup)

    db = PostgresCluster(url, schema, setups=(saver.asetup, store_setup), outage_ms=outage_ms)

    def queue(executor: Executor) -> PostgresQueue:
        return PostgresQueue(
            executor,
            db,
            run=run,
            concurrency=concurrency,
            lease_ms=lease_ms,
            outage_ms=outage_ms,
        )

    return Service(
        targets,
        saver,
        store=store,
        docs=PostgresDocs(db),
        events=PostgresEvents(db, outage_ms=outage_ms),
        queue=queue,
        auth=auth,
        name=name,
    )
