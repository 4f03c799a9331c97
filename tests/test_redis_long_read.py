"""A Redis saver reading a long thread cold: every item, in order, in one transaction.

A saver that never served a thread reads its head's record first, then the fields it
names. Up to 256 fields the read script names a log's items from their range; a longer
read names them on the client and fetches them with one ``HMGET`` (Lua building 10,000
names and a 10,000-item reply cost the server several times the ``HMGET`` itself), on the
saver's wire when it has one. These tests hold both paths to
the same answers: whole and in order, a checkpoint gone between the two reads, sync and
async.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from checkpoint import AsyncRedisSaver, CheckpointWrite, RedisSaver, new_checkpoint_id
from checkpoint.errors import CheckpointError
from checkpoint.redis._programs import EvalSha, Fetch

SIZES = [40, 256, 257, 1500]  # below, at and past the script's share, and long


def _write(parent: str | None, step: int, items: list[Any]) -> CheckpointWrite:
    return CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=parent,
        step=step,
        changes={"log": ("append", items), "last": ("set", step)},
        next=(),
        metadata={},
        created_at=time.time(),
    )


def _fill(saver: RedisSaver, thread: str, size: int) -> str:
    """``size`` log items in steps of various lengths; the head's id."""
    head: str | None = None
    done, step = 0, 0
    while done < size:
        n = min(size - done, 1 + step * 37 % 300)
        w = _write(head, step, [f"item {i} " + "x" * (i % 7) for i in range(done, done + n)])
        saver.put(thread, w, expected_head=head)
        head, done, step = w.id, done + n, step + 1
    assert head is not None
    return head


def _expected(size: int) -> list[str]:
    return [f"item {i} " + "x" * (i % 7) for i in range(size)]


class _Spy:
    """Records the operations a saver performs (``_perform``), optionally acting after one."""

    def __init__(self, saver: Any, after_first_script: Any = None) -> None:
        self.ops: list[Any] = []
        self._perform = saver._perform
        self._after = after_first_script
        saver._perform = self

    def __call__(self, op: Any) -> Any:
        self.ops.append(op)
        out = self._perform(op)
        if self._after is not None and type(op) is EvalSha:
            after, self._after = self._after, None
            after()
        return out


@pytest.mark.parametrize("wire", [True, False], ids=["wire", "redis-py"])
@pytest.mark.parametrize("size", SIZES)
def test_cold_read_is_whole_and_in_order(
    redis_url: str, redis_prefix: str, size: int, wire: bool
) -> None:
    writer = RedisSaver.from_url(redis_url, prefix=redis_prefix)
    _fill(writer, "t", size)
    reader = RedisSaver.from_url(redis_url, prefix=redis_prefix)
    if not wire:  # a client the wire cannot borrow from (a cluster, one connection)
        reader.__dict__["_wire"] = None
    spy = _Spy(reader)
    got = reader.get("t")
    assert got is not None
    assert got.values["log"] == _expected(size)
    fetches = [op for op in spy.ops if type(op) is Fetch]
    # more fields than the script names (the log and the values map) go by one HMGET
    assert len(fetches) == (1 if size + 1 > 256 else 0)
    # and a warm read after it reads nothing again
    writer.put("t", _write(got.id, 999, ["one more"]), expected_head=got.id)
    again = reader.get("t")
    assert again is not None and again.values["log"] == [*_expected(size), "one more"]
    writer.close()
    reader.close()


@pytest.mark.parametrize("size", [40, 1500])
def test_a_checkpoint_deleted_between_the_reads_is_no_wrong_state(
    redis_url: str, redis_prefix: str, size: int
) -> None:
    """The thread is deleted after its record was read: both paths refuse alike (an
    error naming what is missing), never a state with holes."""
    writer = RedisSaver.from_url(redis_url, prefix=redis_prefix)
    _fill(writer, "t", size)
    reader = RedisSaver.from_url(redis_url, prefix=redis_prefix)
    _Spy(reader, after_first_script=lambda: writer.delete_thread("t"))
    with pytest.raises(CheckpointError) as caught:
        reader.get("t")
    assert "missing" in str(caught.value) or "not stored" in str(caught.value)
    writer.close()
    reader.close()


def test_async_cold_read_is_whole(redis_url: str, redis_prefix: str) -> None:
    writer = RedisSaver.from_url(redis_url, prefix=redis_prefix)
    _fill(writer, "t", 1500)

    async def read() -> list[Any]:
        reader = AsyncRedisSaver.from_url(redis_url, prefix=redis_prefix)
        try:
            got = await reader.aget("t")
            assert got is not None
            return list(got.values["log"])
        finally:
            await reader.aclose()

    assert asyncio.run(read()) == _expected(1500)
    writer.close()
