"""The run lock survives a lost reply to its take (issue 13 item 11).

The take is one command. When its reply is lost after Redis ran it, the client either
retries (the key then holds this run's own token: that is the lock, taken) or gives up
(the run fails, and must give the lock back rather than leave it for a whole lease).
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
import redis.asyncio as aredis

from checkpoint import AsyncRedisSaver, CheckpointStorageError, RedisSaver
from graphagent.errors import CheckpointStorageError as RunStorageError
from graphagent.graph import END, START, AppendStrategy, CompiledGraph, StateGraph


def _lock_command(args: tuple[Any, ...], key: str) -> bool:
    return any(a == key or a == key.encode() for a in args[1:])


class LostReply(redis.Redis):
    """A client that loses the reply to the first command on ``key``, after Redis ran it;
    with ``retry`` it then sends the command again, as redis-py's retry policy does."""

    key = ""
    retry = False
    armed = True

    def execute_command(self, *args: Any, **options: Any) -> Any:
        result = super().execute_command(*args, **options)
        if self.armed and _lock_command(args, self.key):
            self.armed = False
            if self.retry:
                return super().execute_command(*args, **options)
            raise redis.ConnectionError("connection reset before the reply arrived")
        return result


class AsyncLostReply(aredis.Redis):
    """:class:`LostReply` for redis.asyncio."""

    key = ""
    retry = False
    armed = True

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        result = await super().execute_command(*args, **options)
        if self.armed and _lock_command(args, self.key):
            self.armed = False
            if self.retry:
                return await super().execute_command(*args, **options)
            raise redis.ConnectionError("connection reset before the reply arrived")
        return result


def _app(saver: Any) -> CompiledGraph:
    g = StateGraph({"log": AppendStrategy()})
    g.add_node("work", lambda state: {"log": ["x"]}).add_edge(START, "work").add_edge("work", END)
    return g.compile(saver=saver)


@pytest.mark.parametrize("retry", [True, False], ids=["client-retries", "client-gives-up"])
def test_a_lost_reply_to_the_lock_take(
    redis_url: str, redis_prefix: str, redis_client: redis.Redis, retry: bool
) -> None:
    """Retried: the run holds the lock and runs (no ThreadLockedError). Not retried: the
    run fails with a storage error and gives the lock back at once."""
    key = f"{{{redis_prefix}:t}}:lock"
    client = LostReply.from_url(redis_url)
    client.key, client.retry = key, retry
    saver = RedisSaver(client, prefix=redis_prefix, lock_timeout=0.5, lock_lease=60)
    try:
        if retry:
            assert _app(saver).invoke({"log": ["in"]}, {"thread_id": "t"}) == {"log": ["in", "x"]}
        else:
            with pytest.raises(RunStorageError, match="locking thread 't'"):
                _app(saver).invoke({"log": ["in"]}, {"thread_id": "t"})
        assert not client.armed  # the reply was lost
        assert redis_client.get(key) is None  # not left for its 60 s lease
        again = RedisSaver(redis_client, prefix=redis_prefix, lock_timeout=0.5)
        _app(again).invoke({"log": ["in"]}, {"thread_id": "t"})  # the thread is free
    finally:
        client.close()


@pytest.mark.parametrize("retry", [True, False], ids=["client-retries", "client-gives-up"])
async def test_a_lost_reply_to_the_async_lock_take(
    redis_url: str, redis_prefix: str, redis_client: redis.Redis, retry: bool
) -> None:
    """The same on AsyncRedisSaver."""
    key = f"{{{redis_prefix}:t}}:lock"
    client = AsyncLostReply.from_url(redis_url)
    client.key, client.retry = key, retry
    saver = AsyncRedisSaver(client, prefix=redis_prefix, lock_timeout=0.5, lock_lease=60)
    try:
        if retry:
            out = await _app(saver).ainvoke({"log": ["in"]}, {"thread_id": "t"})
            assert out == {"log": ["in", "x"]}
        else:
            with pytest.raises(RunStorageError, match="locking thread 't'"):
                await _app(saver).ainvoke({"log": ["in"]}, {"thread_id": "t"})
        assert not client.armed
        assert redis_client.get(key) is None
    finally:
        await client.aclose()


def test_a_failed_take_is_a_storage_error(redis_prefix: str) -> None:
    """A lock take that cannot reach Redis says so (and has nothing to give back)."""
    saver = RedisSaver.from_url(
        "redis://127.0.0.1:1/0", prefix=redis_prefix, lock_timeout=0.2, socket_connect_timeout=1
    )
    with pytest.raises(CheckpointStorageError, match="locking thread 't'"), saver.lock("t"):
        pass
