"""``AsyncRedisSaver``: ``RedisSaver`` over a ``redis.asyncio`` client."""

from __future__ import annotations

from typing import Any, TypeVar

import redis.asyncio as aredis
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import RedisError

from checkpoint._program import AsyncOnly, AsyncProgramSaver, Program, adrive
from checkpoint.redis import _wire
from checkpoint.redis._client import async_client
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
from checkpoint.redis._wire import Wire

__all__ = ["AsyncRedisSaver"]

T = TypeVar("T")


class AsyncRedisSaver(
    AsyncOnly, RedisBase[aredis.Redis], AsyncProgramSaver[RedisLogic], sync_twin="RedisSaver"
):
    """``RedisSaver`` over a ``redis.asyncio.Redis`` client, for async services.

    Same keys and layout as :class:`~checkpoint.RedisSaver` (the two read each other's
    threads). Its sync methods raise ``TypeError``; use the ``a``-twins and ``aclose()``.
    """

    _wire: Wire | None = None

    @staticmethod
    def _connect(url: str, **options: Any) -> aredis.Redis:
        return async_client(url, **options)

    async def _run(self, program: Program[T], *, write: bool | None, action: str) -> T:
        try:
            return await adrive(program, self._perform)
        except (RedisError, OSError) as exc:
            raise storage_error(action, exc) from exc

    def _fast(self) -> Wire | None:
        """The lean path for scripts: a plain client only (a cluster client routes by slot,
        and a single-connection client must keep its one connection)."""
        wire = self._wire
        if (
            wire is None
            and _wire.available()
            and type(self.client) is aredis.Redis
            # its one connection is made on first use: ``connection`` is None until then
            and not self.client.single_connection_client
            and self.client.connection is None
            and issubclass(self.client.connection_pool.connection_class, AbstractConnection)
        ):
            wire = self._wire = Wire(self.client)
        return wire

    async def _perform(self, op: Any) -> Any:
        client, cls = self.client, type(op)
        if cls is EvalSha:
            wire = self._fast()
            if wire is not None:
                return await wire.call("EVALSHA", op.sha, len(op.keys), *op.keys, *op.args)
            return await client.evalsha(op.sha, len(op.keys), *op.keys, *op.args)
        if cls is Command:
            return await getattr(client, op.name)(*op.args, **op.kwargs)
        if cls is Fetch:
            wire = self._fast()
            if wire is not None:
                return await wire.call("HMGET", op.key, *op.fields)
            return await client.hmget(op.key, op.fields)
        if cls is Pipeline:
            pipe = client.pipeline(transaction=op.transaction)
            for call in op.calls:
                getattr(pipe, call.name)(*call.args, **call.kwargs)
            return await pipe.execute()
        if cls is Scan:
            return [key async for key in client.scan_iter(match=op.match, count=500)]
        wire = self._fast()
        if cls is LoadScript:
            if wire is not None:
                return await wire.call("SCRIPT", "LOAD", op.text)
            return await client.script_load(op.text)
        assert cls is Eval
        if wire is not None:
            return await wire.call("EVAL", op.text, len(op.keys), *op.keys, *op.args)
        return await client.eval(op.text, len(op.keys), *op.keys, *op.args)

    async def aclose(self) -> None:
        """Close the async client's connections."""
        if self._wire is not None:
            await self._wire.aclose()
        await self.client.aclose()
