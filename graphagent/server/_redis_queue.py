"""The run queue of a cluster on Redis: any number of servers and workers share it.

- Runs wait in a Redis stream read by one consumer group: each entry goes to one consumer.
- A thread runs one run at a time across the cluster: the executor holds a lease on the
  thread (``SET NX PX``) and renews it while the run executes; a run whose thread is
  leased elsewhere waits in its consumer's pending list and is tried again.
- A consumer that dies (SIGKILL, a lost machine) stops renewing: its lease expires and
  another consumer claims its pending entries (``XAUTOCLAIM`` after the lease time) and
  resumes the run from its last checkpoint. An executor whose lease was taken over
  stops its run at once, so a run is executed by one process at a time, and its entry is
  acknowledged once, when it ended.
- Cancel reaches the executor through a key and a pub/sub message: the message stops the
  run at once; the key is read when the run starts and at each renewal of its lease, so a
  message lost (a pub/sub connection down, a listener failing) delays a cancel by a third
  of a lease at most, never loses it.
- A stopping process (SIGTERM) starts no run, hands over the ones it executes unsettled,
  and releases each thread's lease only once its run stopped writing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from typing import Any

from redis import asyncio as aredis
from redis.exceptions import ResponseError

from graphagent._internal.waiting import pause
from graphagent.server._execute import Executor
from graphagent.server._outage import OUTAGE_MS, Backoff, Renewal
from graphagent.server._queue import stop_and_outlast
from graphagent.server._redis import blocking_ms

__all__ = ["RedisQueue"]

log = logging.getLogger("graphagent.server")

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisQueue:
    """Runs queued in Redis, executed by this process (unless ``run`` is false) and by any
    other server or worker on the same Redis and prefix.

    Args:
        executor: executes runs here.
        client: a ``redis.asyncio.Redis`` client.
        prefix: the cluster's key prefix.
        run: whether this process executes runs (``False``: an API-only server).
        concurrency: runs this process executes at once.
        lease_ms: how long a thread's lease lasts unrenewed (how soon a dead executor's
            runs are taken over).
        outage_ms: how long Redis may fail (down, unreachable, busy) before the loops
            log an error; they try on for ever, with waits growing to 2 s.
    """

    def __init__(
        self,
        executor: Executor,
        client: aredis.Redis,
        prefix: str,
        *,
        run: bool = True,
        concurrency: int = 16,
        lease_ms: int = 5000,
        outage_ms: int = OUTAGE_MS,
    ) -> None:
        self.executor = executor
        executor.shared = True
        self.client: Any = client  # redis-py's reply types are too loose to check
        self.base = f"{prefix}:srv"
        self.stream = f"{self.base}:queue"
        self.group = "executors"
        self.consumer = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.run = run
        self.slots = asyncio.Semaphore(concurrency)
        self.lease_ms = lease_ms
        self.outage_ms = outage_ms
        self._block = blocking_ms(client)  # a read inside the client's socket_timeout
        self._loops: list[asyncio.Task[Any]] = []
        self._closing = False
        self._running: dict[str, asyncio.Task[Any]] = {}  # entry id -> its task
        self._kick = asyncio.Event()  # a thread was released: retry the waiting runs now
        self._release = client.register_script(_RELEASE)
        self._renew = client.register_script(_RENEW)

    # -- what the API side calls -----------------------------------------------------------

    async def submit(self, run: dict[str, Any]) -> None:
        await self.client.xadd(self.stream, {"run": run["run_id"], "thread": run["_parent"]})

    async def cancel(self, run: dict[str, Any], action: str) -> None:
        run_id = run["run_id"]
        await self.client.set(f"{self.base}:cancel:{run_id}", action, ex=3600)
        await self.client.publish(f"{self.base}:cancels", run_id)
        if run["status"] != "running":
            return
        # wait (a little) for the executor to settle it, as the local queue does
        for _ in range(100):
            doc = await self.executor.docs.get("run", run_id)
            if doc is None or doc["status"] != "running":
                return
            await asyncio.sleep(0.05)

    # -- the executor side ---------------------------------------------------------------

    async def start(self) -> None:
        with contextlib.suppress(ResponseError):  # BUSYGROUP: another process made it
            await self.client.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        if not self.run:
            return
        self._loops = [
            asyncio.ensure_future(self._take()),
            asyncio.ensure_future(self._reclaim()),
            asyncio.ensure_future(self._listen()),
        ]

    async def _take(self) -> None:
        """Read new entries and start them."""
        # (an entry delivered by a read whose reply was lost is pending here: _reclaim
        # starts it)
        retry = self._backoff("reading the run queue")
        while not self._closing:
            try:
                await self.slots.acquire()
                self.slots.release()
                found = await self.client.xreadgroup(
                    self.group, self.consumer, {self.stream: ">"}, count=8, block=self._block
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await retry.failed(exc)
                continue
            retry.succeeded()
            for _, entries in found or ():
                for ident, fields in entries:
                    self._start(_text(ident), fields)

    def _backoff(self, what: str) -> Backoff:
        """The retries of one of this executor's loops (which never give up)."""
        return Backoff(what, self.outage_ms, give_up=False)

    async def _reclaim(self) -> None:
        """Take over entries whose consumer went quiet for longer than a lease, and retry
        this consumer's entries that waited for their thread."""
        retry = self._backoff("reclaiming runs")
        while not self._closing:
            try:
                await pause(self._kick, min(1.0, self.lease_ms / 3000))
                self._kick.clear()
                await self._reclaim_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await retry.failed(exc)
                continue
            retry.succeeded()

    async def _reclaim_once(self) -> None:
        """One look at the entries to take over or retry."""
        _, claimed, *_ = await self.client.xautoclaim(
            self.stream, self.group, self.consumer, min_idle_time=self.lease_ms, count=16
        )
        for ident, fields in claimed:
            if fields:  # an entry deleted meanwhile comes back empty
                self._start(_text(ident), fields, recovered=True)
        mine = await self.client.xpending_range(
            self.stream, self.group, "-", "+", 64, consumername=self.consumer
        )
        for entry in mine:
            ident = _text(entry["message_id"])
            if ident not in self._running:
                rows = await self.client.xrange(self.stream, ident, ident)
                if rows:
                    self._start(ident, rows[0][1], recovered=True)
                else:
                    await self.client.xack(self.stream, self.group, ident)

    async def _listen(self) -> None:
        """Cancel requests for runs executing here; after a failure (the connection lost,
        a read failing) it subscribes again and checks every run here for what it missed."""
        retry = self._backoff("listening for cancels")
        while not self._closing:
            pubsub = self.client.pubsub()
            try:
                await pubsub.subscribe(f"{self.base}:cancels")
                for run_id in list(self.executor.tasks):
                    await self._check_cancel(run_id)
                retry.succeeded()
                async for message in pubsub.listen():
                    if message.get("type") == "message":
                        await self._check_cancel(_text(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                await retry.failed(exc)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    async def _check_cancel(self, run_id: str) -> None:
        action = await self.client.get(f"{self.base}:cancel:{run_id}")
        if action is not None:
            self.executor.stop(run_id, _text(action))

    def _start(self, ident: str, fields: dict[Any, Any], recovered: bool = False) -> None:
        if self._closing or ident in self._running:
            return  # (a stopping process starts nothing: a loop may outlive its cancel)
        run_id, thread = _text(fields[b"run"]), _text(fields[b"thread"])
        self._running[ident] = asyncio.ensure_future(
            self._execute(ident, run_id, thread, recovered)
        )

    async def _execute(self, ident: str, run_id: str, thread: str, recovered: bool) -> None:
        lease, token = f"{self.base}:lease:{thread}", uuid.uuid4().hex
        try:
            async with self.slots:
                if not await self.client.set(lease, token, nx=True, px=self.lease_ms):
                    return  # the thread runs elsewhere: left pending, retried by _reclaim
                try:
                    settled = await self._under_lease(run_id, lease, token, recovered)
                finally:
                    await self._release(keys=[lease], args=[token])
                    self._kick.set()
                if not settled or self._closing:
                    return  # tried again later (an older run of the thread goes first), or
                    # by another executor (this one is shutting down)
                # acknowledged only once the run ended: a crash before leaves it pending
                await self.client.xack(self.stream, self.group, ident)
                await self.client.xdel(self.stream, ident)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("executing run %s failed", run_id)
        finally:
            self._running.pop(ident, None)

    async def _under_lease(self, run_id: str, lease: str, token: str, recovered: bool) -> bool:
        task = asyncio.ensure_future(self.executor.execute(run_id, recovered=recovered))
        self.executor.tasks[run_id] = task
        renewal = Renewal(f"renewing the lease of run {run_id!r}", self.lease_ms)
        try:
            while not task.done():
                # on starting (asked before the run started here), then at each renewal:
                # the cancel's message may have been lost, its key is not
                try:
                    await self._check_cancel(run_id)
                except Exception:
                    log.exception("checking run %s for a cancel failed", run_id)
                done, _ = await asyncio.wait({task}, timeout=renewal.wait)
                if done:
                    break
                renewal.sending()
                try:
                    renewed = await self._renew(keys=[lease], args=[token, self.lease_ms])
                except Exception as exc:  # tried again soon, within the lease
                    if renewal.failed(exc):
                        continue
                    renewed = 0  # a whole lease unrenewed: it may be another's by now
                else:
                    renewal.succeeded()
                if not renewed:
                    # the lease went to another executor: this one must not write on
                    log.warning("run %s lost its thread's lease; stopping it here", run_id)
                    self.executor.stops[run_id] = "lost"
                    task.cancel()
                    break
            return bool(await task)
        finally:
            # left early (this process stops): the run is handed over, and stops writing
            # before its lease is released
            await stop_and_outlast(self.executor, run_id, task)
            self.executor.tasks.pop(run_id, None)
            self.executor.stops.pop(run_id, None)

    async def close(self) -> None:
        self._closing = True
        await self.executor.abandon([*self._loops, *self._running.values()])
        self._loops = []
