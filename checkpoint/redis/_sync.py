"""``RedisSaver``, the sync saver (the package's face re-exports it)."""

from __future__ import annotations

import functools
from typing import Any, TypeVar

import redis
from redis.exceptions import RedisError

from checkpoint._program import Program, ProgramSaver, drive
from checkpoint.redis._common import RedisBase, storage_error
from checkpoint.redis._programs import (
    Command,
    Eval,
    EvalSha,
    Fetch,
    LoadScript,
    Pipeline,
    RedisLogic,
    Scan,
)
from checkpoint.redis._wire import SyncWire

__all__ = ["RedisSaver"]

T = TypeVar("T")


class RedisSaver(RedisBase[redis.Redis], ProgramSaver[RedisLogic]):
    """Keep threads in Redis, so any process that reaches it can resume them.

    Args:
        client: a ``redis.Redis`` (sync) client. The async twins run its calls in a
            worker thread; for a native ``redis.asyncio`` client use
            :class:`AsyncRedisSaver`.
        prefix: first part of every key; threads of different prefixes never meet.
        ttl: seconds after the last write that a thread's keys expire (``None``: never).
        keep_last: keep only this many newest checkpoints per thread (costs extra
            round trips on steps that prune).
        serde: the codec (default: the process-wide one).
        lock_timeout: opt in to one run at a time per thread: a run waits up to this many
            seconds for the thread's lock, then raises ``ThreadLockedError`` (``None``: no
            lock; racing runs are still safe, the loser gets ``CheckpointConflictError``).
        lock_lease: seconds a lock outlives a crashed holder (live runs renew it).

    Example::

        saver = RedisSaver.from_url("redis://localhost:6379/0", ttl=7 * 86400)
        app = graph.compile(saver=saver)
    """

    @functools.cached_property
    def _wire(self) -> SyncWire | None:
        """The lean path for scripts, on a plain client with hiredis installed."""
        return SyncWire(self.client) if SyncWire.fits(self.client) else None

    @staticmethod
    def _connect(url: str, **options: Any) -> redis.Redis:
        return redis.Redis.from_url(url, **options)

    def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        try:
            return drive(program, self._perform)
        except (RedisError, OSError) as exc:
            raise storage_error(action, exc) from exc

    def _perform(self, op: Any) -> Any:
        client, cls = self.client, type(op)
        if cls is EvalSha:
            wire = self._wire
            if wire is not None:
                return wire.call("EVALSHA", op.sha, len(op.keys), *op.keys, *op.args)
            return client.evalsha(op.sha, len(op.keys), *op.keys, *op.args)
        if cls is Command:
            return getattr(client, op.name)(*op.args, **op.kwargs)
        if cls is Fetch:
            wire = self._wire
            if wire is not None:
                return wire.call("HMGET", op.key, *op.fields)
            return client.hmget(op.key, op.fields)
        if cls is Pipeline:
            pipe = client.pipeline(transaction=op.transaction)
            for call in op.calls:
                getattr(pipe, call.name)(*call.args, **call.kwargs)
            return pipe.execute()
        if cls is Scan:
            return list(client.scan_iter(match=op.match, count=500))
        wire = self._wire
        if cls is LoadScript:
            if wire is not None:
                return wire.call("SCRIPT", "LOAD", op.text)
            return client.script_load(op.text)
        assert cls is Eval
        if wire is not None:
            return wire.call("EVAL", op.text, len(op.keys), *op.keys, *op.args)
        return client.eval(op.text, len(op.keys), *op.keys, *op.args)

    def close(self) -> None:
        """Close the client's connections."""
        wire = self.__dict__.get("_wire")
        if wire is not None:
            wire.close()
        self.client.close()
