"""A Redis write whose reply timed out is never done twice (issue 30 item 8).

A step whose reply came later than ``socket_timeout`` (a server busy with a slow script,
a stalled network) was reported failed, then landed: following the documented "retry is
always safe" with the same input then stored it twice. The saver now sends the same write
again on a timeout (it carries its checkpoint ids: a second landing is a no-op), and when
every try timed out it says the outcome is unknown and how to check, never "failed".
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from checkpoint import AsyncRedisSaver, CheckpointWrite, RedisSaver
from checkpoint.base import new_checkpoint_id
from graphagent.errors import CheckpointStorageError as RunStorageError
from graphagent.graph import END, START, AppendStrategy, StateGraph

_SPIN = """
local t = redis.call('TIME')
local start = t[1] * 1000000 + t[2]
while true do
  local now = redis.call('TIME')
  if now[1] * 1000000 + now[2] - start > tonumber(ARGV[1]) * 1000 then return 1 end
end
"""


def _busy(url: str, ms: int) -> Iterator[threading.Thread]:
    """Redis busy with a script of ``ms`` milliseconds, run from another connection."""
    admin = redis.Redis.from_url(url, socket_timeout=30)
    spinning = threading.Thread(target=admin.eval, args=(_SPIN, 0, ms), daemon=True)
    spinning.start()
    time.sleep(0.05)  # the script is running: every other client waits behind it
    yield spinning
    spinning.join(timeout=30)
    admin.close()


def _named(text: str) -> str:
    """The checkpoint id an outcome-unknown error names."""
    found = re.search(r"writing checkpoint (\w+)", text)
    assert found is not None, text
    return found.group(1)


def _write(parent: str | None, n: int) -> CheckpointWrite:
    return CheckpointWrite(new_checkpoint_id(), parent, n, {"n": ("set", n)}, (), {}, time.time())


def _app(saver: Any, url: str, ms: int) -> tuple[Any, list[threading.Thread]]:
    """A one-node graph whose node, the first time, leaves Redis busy for ``ms`` ms: the
    step's write arrives while the script runs."""
    spinning: list[threading.Thread] = []

    def a(state: Any) -> dict[str, Any]:
        if not spinning:
            admin = redis.Redis.from_url(url, socket_timeout=30)
            spinning.append(threading.Thread(target=admin.eval, args=(_SPIN, 0, ms)))
            spinning[0].start()
            time.sleep(0.05)
        return {"log": ["a"]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", a).add_edge(START, "a").add_edge("a", END)
    return g.compile(saver=saver), spinning


def test_redis_sync_write_later_than_socket_timeout_lands_once_and_succeeds(
    private_redis: Any, redis_prefix: str
) -> None:
    """RedisSaver, socket_timeout=0.2 s, a 0.5 s script ahead of a step: the put returns
    normally and the thread holds the step once."""
    saver = RedisSaver.from_url(private_redis.url, prefix=redis_prefix, socket_timeout=0.2)
    try:
        first = _write(None, 0)
        saver.put("t", first, expected_head=None)
        step = _write(first.id, 1)
        for _ in _busy(private_redis.url, 500):
            saver.put("t", step, expected_head=first.id)
        assert [c.id for c in saver.list("t")] == [step.id, first.id]
    finally:
        saver.close()


def test_redis_sync_run_whose_write_outlives_every_try_says_the_outcome_is_unknown(
    private_redis: Any, redis_prefix: str
) -> None:
    """A 2.5 s script: the run fails saying the step may have landed and how to check;
    doing what it advises stores the input once."""
    saver = RedisSaver.from_url(private_redis.url, prefix=redis_prefix, socket_timeout=0.2)
    (app, spinning), cfg = _app(saver, private_redis.url, 2500), {"thread_id": "t"}
    try:
        with pytest.raises(RunStorageError) as caught:
            app.invoke({"log": ["hi"]}, cfg)
        spinning[0].join(timeout=30)
        text = str(caught.value)
        assert "may have landed" in text and "saver.head('t')" in text, text
        assert "invoke(None" in text, text
        # the advice: the step landed if the head is the checkpoint named
        landed = saver.head("t") == _named(text)
        app.invoke(None if landed else {"log": ["hi"]}, cfg)
        assert app.get_state(cfg).values["log"] == ["hi", "a"]
    finally:
        saver.close()


def test_redis_async_write_later_than_socket_timeout_lands_once_and_succeeds(
    private_redis: Any, redis_prefix: str
) -> None:
    """AsyncRedisSaver: the same 0.5 s script ahead of a step; aput returns normally."""

    async def main() -> None:
        saver = AsyncRedisSaver.from_url(private_redis.url, prefix=redis_prefix, socket_timeout=0.2)
        try:
            first = _write(None, 0)
            await saver.aput("t", first, expected_head=None)
            step = _write(first.id, 1)
            for _ in _busy(private_redis.url, 500):
                await saver.aput("t", step, expected_head=first.id)
            assert [c.id for c in await saver.alist("t")] == [step.id, first.id]
        finally:
            await saver.aclose()

    asyncio.run(main())


def test_redis_async_run_whose_write_outlives_every_try_says_the_outcome_is_unknown(
    private_redis: Any, redis_prefix: str
) -> None:
    """AsyncRedisSaver, a 2.5 s script: the same advice, and following it stores once."""

    async def main() -> None:
        saver = AsyncRedisSaver.from_url(private_redis.url, prefix=redis_prefix, socket_timeout=0.2)
        (app, spinning), cfg = _app(saver, private_redis.url, 2500), {"thread_id": "t"}
        try:
            with pytest.raises(RunStorageError) as caught:
                await app.ainvoke({"log": ["hi"]}, cfg)
            await asyncio.to_thread(spinning[0].join, 30)
            text = str(caught.value)
            assert "may have landed" in text and "saver.head('t')" in text, text
            landed = await saver.ahead("t") == _named(text)
            await app.ainvoke(None if landed else {"log": ["hi"]}, cfg)
            state = await app.aget_state(cfg)
            assert state.values["log"] == ["hi", "a"]
        finally:
            await saver.aclose()

    asyncio.run(main())
