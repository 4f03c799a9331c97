"""Tenants never share keys (issue 13 items 5 and 6), on Redis and Cluster."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from checkpoint import CheckpointWrite, RedisSaver, new_checkpoint_id


def _one_step(saver: RedisSaver, thread: str, value: str) -> None:
    w = CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=None,
        step=0,
        changes={"owner": ("set", value)},
        next=(),
        metadata={},
        created_at=time.time(),
    )
    saver.put(thread, w, expected_head=None)


@pytest.fixture
def base(redis_client: redis.Redis) -> Iterator[str]:
    name = f"gatest-{uuid.uuid4().hex[:10]}"
    yield name
    for key in redis_client.scan_iter(match=f"*{name}*", count=1000):
        redis_client.delete(key)


@pytest.mark.parametrize("sep", [":", "{", "}"])
def test_prefix_with_a_separator_is_refused(redis_url: str, sep: str) -> None:
    with pytest.raises(ValueError, match="prefix"):
        RedisSaver.from_url(redis_url, prefix=f"tenant{sep}eu")


def test_thread_id_cannot_reach_another_prefix(redis_url: str, base: str) -> None:
    """Thread 'eu:123' under prefix P and thread '123' under prefix 'P-eu' stay apart."""
    one = RedisSaver.from_url(redis_url, prefix=base)
    two = RedisSaver.from_url(redis_url, prefix=f"{base}-eu")
    _one_step(one, "eu:123", "tenant one")
    _one_step(two, "123", "tenant two")
    got_one, got_two = one.get("eu:123"), two.get("123")
    assert got_one is not None and got_one.values["owner"] == "tenant one"
    assert got_two is not None and got_two.values["owner"] == "tenant two"
    assert one.threads() == ["eu:123"]
    assert two.threads() == ["123"]


@pytest.mark.parametrize("odd", ["a*", "a?", "a[bc]", "a\\"])
def test_threads_lists_only_its_own_prefix_whatever_its_characters(
    redis_url: str, base: str, odd: str
) -> None:
    mine = RedisSaver.from_url(redis_url, prefix=f"{base}{odd}")
    others = [RedisSaver.from_url(redis_url, prefix=f"{base}{o}") for o in ("ax", "ab", "a", "b")]
    _one_step(mine, "t-mine", "me")
    for i, other in enumerate(others):
        _one_step(other, f"t-other-{i}", "them")
    assert mine.threads() == ["t-mine"]
