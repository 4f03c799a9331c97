"""Records and event streams in Redis: what every server and worker of a cluster shares.

Keys (all under ``<prefix>:srv:``): ``doc:<kind>:<id>`` a record's JSON; ``kids:<kind>:<parent>``
and ``own:<kind>:<owner>`` sorted sets of ids by creation order; ``seq`` the order counter;
``ev:<run>`` a run's event stream (a Redis stream, so any machine reads it and a client
resumes from an event id); ``queue`` the run queue (``_redis_queue``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import Any

from redis import asyncio as aredis

from checkpoint.redis import async_client
from graphagent.server._docs import dumps
from graphagent.server._events import END, RESULT, Event
from graphagent.server._outage import OUTAGE_MS, Backoff

__all__ = ["SOCKET_TIMEOUT", "RedisDocs", "RedisEvents", "blocking_ms", "client_for"]

SOCKET_TIMEOUT = 5.0
"""Seconds the cluster's clients wait for a reply or a connection (redis-py 8's default,
set explicitly: before redis-py 8 there was none, and a stalled Redis hung a server); the
URL's own ``socket_timeout`` / ``socket_connect_timeout`` win."""


def client_for(url: str) -> aredis.Redis:
    """A client of the cluster's Redis at ``url``, with explicit timeouts."""
    return async_client(url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT)


def blocking_ms(client: Any, wanted: int = 1000) -> int:
    """How long one blocking read (``XREAD``/``XREADGROUP`` ``BLOCK``) on ``client`` may
    wait: ``wanted``, or half the client's ``socket_timeout`` when that is shorter, since
    redis-py cuts a command waiting longer than it as a ``TimeoutError``."""
    timeout = client.connection_pool.connection_kwargs.get("socket_timeout")
    if timeout is None:
        return wanted
    return max(1, min(wanted, int(timeout * 500)))


_KEEP_EVENTS = 24 * 3600
"""Seconds a finished run's events stay readable (for join_stream and late readers)."""

# Each record call is one script: a run writes and reads about ten records on the servers
# and workers of a cluster, and every round trip costs a write and a read syscall on both
# ends (bench/server.py: socket writes were the largest cost of a worker). The scripts
# name the keys they derive from their arguments, which plain Redis allows (the records'
# keys are not hash-tagged: the server's records never ran on Redis Cluster).
_PUT = """
local seq = redis.call('INCR', KEYS[4])
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], 'NX', seq, ARGV[2])
redis.call('ZADD', KEYS[3], 'NX', seq, ARGV[2])
return seq
"""
_LISTED = """
local out = {}
for _, ident in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local doc = redis.call('GET', ARGV[1] .. ident)
  if doc then out[#out + 1] = doc end
end
return out
"""
_DELETE = """
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local doc = cjson.decode(raw)
local function text(v) if type(v) == 'string' then return v end return '' end
redis.call('DEL', KEYS[1])
redis.call('ZREM', ARGV[1] .. 'kids:' .. ARGV[2] .. ':' .. text(doc['_parent']), ARGV[3])
redis.call('ZREM', ARGV[1] .. 'own:' .. ARGV[2] .. ':' .. text(doc['_owner']), ARGV[3])
return 1
"""
# a run's result and end, appended in one step by the first executor to end the run; the
# marker key says it ended even when events were appended after the end (a superseded
# executor still running), which a look at the stream's last entry would miss
_END = """
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[4]) then
  redis.call('XADD', KEYS[1], '*', 'e', ARGV[1], 'd', ARGV[2])
  redis.call('XADD', KEYS[1], '*', 'e', ARGV[3], 'd', 'null')
  redis.call('EXPIRE', KEYS[1], ARGV[4])
  return 1
end
return 0
"""


class RedisDocs:
    """Thread and run records in Redis.

    Args:
        client: a ``redis.asyncio.Redis`` client.
        prefix: the key prefix shared by the cluster.
    """

    def __init__(self, client: aredis.Redis, prefix: str) -> None:
        self.client: Any = client  # redis-py's reply types are too loose to check
        self.base = f"{prefix}:srv"
        self._put = client.register_script(_PUT)
        self._listed_script = client.register_script(_LISTED)
        self._delete = client.register_script(_DELETE)

    def _doc(self, kind: str, ident: str) -> str:
        return f"{self.base}:doc:{kind}:{ident}"

    async def get(self, kind: str, ident: str) -> dict[str, Any] | None:
        raw = await self.client.get(self._doc(kind, ident))
        return None if raw is None else json.loads(raw)

    async def get_many(self, kind: str, idents: Sequence[str]) -> list[dict[str, Any]]:
        if not idents:
            return []
        raws = await self.client.mget([self._doc(kind, i) for i in idents])
        return [json.loads(r) for r in raws if r is not None]

    async def put(self, kind: str, ident: str, doc: dict[str, Any]) -> None:
        owner, parent = str(doc.get("_owner") or ""), str(doc.get("_parent") or "")
        keys = [
            self._doc(kind, ident),
            f"{self.base}:kids:{kind}:{parent}",
            f"{self.base}:own:{kind}:{owner}",
            f"{self.base}:seq",
        ]
        # ZADD NX: an update keeps the record's place in the order
        await self._put(keys=keys, args=[dumps(doc), ident])

    async def delete(self, kind: str, ident: str) -> None:
        # the record names its owner and parent, whose listings it leaves
        await self._delete(keys=[self._doc(kind, ident)], args=[f"{self.base}:", kind, ident])

    async def _listed(self, kind: str, key: str) -> list[dict[str, Any]]:
        raws = await self._listed_script(keys=[key], args=[f"{self.base}:doc:{kind}:"])
        return [json.loads(r) for r in raws]

    async def children(self, kind: str, parent: str) -> list[dict[str, Any]]:
        return await self._listed(kind, f"{self.base}:kids:{kind}:{parent}")

    async def owned(self, kind: str, owner: str) -> list[dict[str, Any]]:
        return await self._listed(kind, f"{self.base}:own:{kind}:{owner}")

    async def close(self) -> None:
        await self.client.aclose()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class RedisEvents:
    """Runs' events in one Redis stream per run, read by clients on any machine.

    Args:
        client: a ``redis.asyncio.Redis`` client (blocking reads take a connection each).
        prefix: the key prefix shared by the cluster.
        block_ms: how long one blocking read waits before checking again (at most half
            the client's ``socket_timeout``).
        outage_ms: how long a reader waits for Redis to answer again (a connection lost,
            a timeout, ``BUSY``) before its stream ends with an error.
    """

    def __init__(
        self,
        client: aredis.Redis,
        prefix: str,
        block_ms: int = 1000,
        *,
        outage_ms: int = OUTAGE_MS,
    ) -> None:
        self.client: Any = client  # redis-py's reply types are too loose to check
        self.base = f"{prefix}:srv:ev"
        self.block_ms = blocking_ms(client, block_ms)
        self.outage_ms = outage_ms
        self._end = self.client.register_script(_END)

    async def publish(self, run_id: str, event: str, data: Any) -> str:
        key = f"{self.base}:{run_id}"
        ident = await self.client.xadd(key, {"e": event, "d": dumps(data)})
        if event == END:
            await self.client.expire(key, _KEEP_EVENTS)
        return _text(ident)

    async def end(self, run_id: str, result: Any) -> bool:
        key = f"{self.base}:{run_id}"
        args: list[str | int] = [RESULT, dumps(result), END, _KEEP_EVENTS]
        return bool(await self._end(keys=[key, f"{key}:ended"], args=args))

    async def has(self, run_id: str) -> bool:
        return bool(await self.client.exists(f"{self.base}:{run_id}"))

    async def _tail(self, run_id: str) -> tuple[bool, str]:
        """Whether the run ended, and its stream's last id (``0-0`` when it has none), in
        one round trip."""
        key = f"{self.base}:{run_id}"
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.exists(f"{key}:ended")
            pipe.xrevrange(key, count=1)
            marked, last = await pipe.execute()
        # a stream ended before end markers existed says so only by its last entry
        ended = bool(marked) or (bool(last) and _text(last[0][1].get(b"e", b"")) == END)
        return ended, _text(last[0][0]) if last else "0-0"

    async def ended(self, run_id: str) -> bool:
        return (await self._tail(run_id))[0]

    async def read(self, run_id: str, after: str | None) -> AsyncIterator[Event]:
        key = f"{self.base}:{run_id}"
        # a failed read is made again from the last event delivered: none lost or repeated
        retry = Backoff(f"reading the events of run {run_id!r} from Redis", self.outage_ms)
        if after is None:  # only what is to come: after the stream's last event
            ended, cursor = await retry.call(lambda: self._tail(run_id))
            if ended:
                return  # the run is over
        else:
            cursor = "0-0" if after in ("-1", "0", "") else after
        while True:
            xread = partial(self.client.xread, {key: cursor}, count=100, block=self.block_ms)
            found = await retry.call(xread)
            for _, entries in found or ():
                for ident, fields in entries:
                    cursor = _text(ident)
                    event = _text(fields[b"e"])
                    yield cursor, event, json.loads(fields[b"d"])
                    if event == END:
                        return

    async def close(self) -> None:
        await self.client.aclose()
