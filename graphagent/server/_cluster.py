"""A cluster's service: servers and workers sharing threads, runs, queue and events in Redis."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Iterable
from typing import Any

import redis

from checkpoint import AsyncRedisSaver, RedisStore
from graphagent.server._execute import Executor
from graphagent.server._outage import OUTAGE_MS
from graphagent.server._redis import SOCKET_TIMEOUT, RedisDocs, RedisEvents, client_for
from graphagent.server._redis_queue import RedisQueue
from graphagent.server._service import Auth, Service

__all__ = ["redis_service", "run_worker"]


def redis_service(
    targets: Iterable[Any],
    url: str,
    *,
    prefix: str = "graphagent",
    run: bool = True,
    concurrency: int = 16,
    lease_ms: int = 5000,
    outage_ms: int = OUTAGE_MS,
    auth: Auth | None = None,
    name: str = "graphagent",
) -> Service:
    """The service of one server or worker of a cluster on the Redis at ``url``.

    Threads are checkpointed with the Redis saver and ``prefix``; records, the run queue
    and the runs' event streams live under ``<prefix>:srv:``; the store under ``prefix``.

    Args:
        targets: the agents and graphs (the same in every process of the cluster).
        url: the Redis URL.
        prefix: the cluster's key prefix.
        run: whether this process executes runs (``False``: API only).
        concurrency: runs this process executes at once.
        lease_ms: how soon a dead executor's runs are taken over.
        outage_ms: how long a reader of a run's events waits for Redis to answer again
            (a restart, a failover, a ``BUSY`` script) before the client's stream ends
            with an error; the queue's loops wait on for ever, logging an error past it.
        auth: ``auth(headers) -> user id`` (a server's).
        name: the server's name.
    """
    client = client_for(url)
    saver = AsyncRedisSaver.from_url(
        url, prefix=prefix, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT
    )

    def queue(executor: Executor) -> RedisQueue:
        return RedisQueue(
            executor,
            client,
            prefix,
            run=run,
            concurrency=concurrency,
            lease_ms=lease_ms,
            outage_ms=outage_ms,
        )

    return Service(
        targets,
        saver,
        store=RedisStore(
            redis.Redis.from_url(
                url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT
            ),
            prefix=prefix,
        ),
        docs=RedisDocs(client, prefix),
        events=RedisEvents(client_for(url), prefix, outage_ms=outage_ms),
        queue=queue,
        auth=auth,
        name=name,
    )


def run_worker(targets: Iterable[Any], url: str, **options: Any) -> None:
    """Execute the runs a cluster's servers queue until SIGTERM or Ctrl-C.

    ``url`` is the cluster's Redis (``redis://...``) or PostgreSQL (``postgresql://...``);
    the options are :func:`redis_service`'s (``prefix`` names the PostgreSQL schema).
    """

    async def main() -> None:
        if url.startswith(("postgres://", "postgresql://")):
            from graphagent.server._postgres_queue import postgres_service

            schema = options.pop("prefix", "graphagent")
            service = postgres_service(targets, url, schema=schema, **options)
        else:
            service = redis_service(targets, url, **options)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        await service.start()
        try:
            await stop.wait()
        finally:
            await service.close()

    asyncio.run(main())
