"""RedisSaver's lean path for scripts: same answers as redis-py's client, whatever goes wrong.

A sync step is one ``EVALSHA`` sent on a connection the saver borrows from the client's
pool and reads itself (``checkpoint/redis/_wire.py``, :class:`SyncWire`). These tests
attack what such a path can get wrong: a connection the server dropped, a reply that comes
after its caller gave up, a script the server forgot, an error reply, many threads at once.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

import checkpoint.redis._wire as wire_module
from checkpoint import CheckpointStorageError, CheckpointWrite, RedisSaver, new_checkpoint_id
from checkpoint.redis._wire import SyncWire


def _write(parent: str | None, n: int) -> CheckpointWrite:
    return CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=parent,
        step=n,
        changes={"log": ("append", [n]), "last": ("set", n)},
        next=(),
        metadata={},
        created_at=time.time(),
    )


def _grow(saver: RedisSaver, thread: str, n: int, head: str | None = None) -> str | None:
    start = 0 if head is None else len(saver.get(thread).values["log"])  # type: ignore[union-attr]
    for i in range(start, start + n):
        w = _write(head, i)
        saver.put(thread, w, expected_head=head)
        head = w.id
    return head


@pytest.fixture
def saver(redis_url: str, redis_prefix: str) -> Any:
    """A RedisSaver on a plain client: its scripts take the wire."""
    s = RedisSaver.from_url(redis_url, prefix=redis_prefix)
    assert isinstance(s._wire, SyncWire), "make test installs hiredis (graphagent[fast])"
    yield s
    s.close()


def _wire_addr(saver: RedisSaver) -> str:
    """The client address Redis knows the wire's one idle connection by."""
    wire = saver._wire
    assert wire is not None and len(wire._free) == 1
    host, port = wire._free[0].sock.getsockname()[:2]
    return f"{host}:{port}"


def test_only_a_plain_client_takes_the_wire(
    redis_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single-connection client keeps its one connection, and without hiredis nothing
    of the wire is used: both send scripts through redis-py, with the same answers."""
    one = redis.Redis.from_url(redis_url, single_connection_client=True)
    single = RedisSaver(one, prefix=redis_prefix)
    assert single._wire is None
    monkeypatch.setattr(wire_module, "hiredis", None)
    plain = RedisSaver.from_url(redis_url, prefix=redis_prefix)
    try:
        assert plain._wire is None
        head = _grow(single, "a", 3)
        head = _grow(plain, "a", 2, head)
        cp = plain.get("a")
        assert cp is not None and cp.id == head and cp.values["log"] == [0, 1, 2, 3, 4]
        plain.client.script_flush()
        _grow(single, "a", 1, head)
        again = single.get("a")
        assert again is not None and again.values["log"] == [0, 1, 2, 3, 4, 5]
    finally:
        plain.close()
        single.close()


def test_a_connection_the_server_dropped_is_replaced_and_the_step_lands_once(
    saver: RedisSaver, redis_client: redis.Redis
) -> None:
    """Redis closing the wire's connection (idle timeout, restart, CLIENT KILL) costs the
    next step one reconnect: it lands, once, on a fresh connection."""
    head = _grow(saver, "t", 2)
    killed = _wire_addr(saver)
    redis_client.client_kill(killed)
    head = _grow(saver, "t", 1, head)
    cp = saver.get("t")
    assert cp is not None and cp.id == head and cp.values["log"] == [0, 1, 2]
    assert _wire_addr(saver) != killed
    assert len(saver.list("t")) == 3


def test_a_reply_after_its_caller_gave_up_is_never_read_by_the_next_call(
    private_redis: Any,
) -> None:
    """A script that times out (the server busy past ``socket_timeout``) drops its
    connection: its late reply cannot answer a later command, and the step lands once."""
    # a server of its own: the busy script blocks every client of the server for 2 s
    saver = RedisSaver.from_url(private_redis.url, prefix="p", socket_timeout=0.3)
    other = redis.Redis.from_url(private_redis.url)
    spin = "local t = tonumber(redis.call('TIME')[1]) + 2 "
    spin += "while tonumber(redis.call('TIME')[1]) < t do end"
    busy = threading.Thread(target=other.eval, args=(spin, 0))
    try:
        head = _grow(saver, "t", 1)
        busy.start()
        time.sleep(0.1)
        w = _write(head, 1)
        with pytest.raises(CheckpointStorageError, match=r"did not answer|Timeout|timed out"):
            saver.put("t", w, expected_head=head)
        busy.join()
        saver.put("t", w, expected_head=head)  # the retry of a write that landed meanwhile
        cp = saver.get("t")
        assert cp is not None and cp.id == w.id and cp.values["log"] == [0, 1]
        assert saver.head("t") == w.id and len(saver.list("t")) == 2
    finally:
        if busy.is_alive():
            busy.join()
        saver.close()
        other.close()


def test_a_script_redis_forgot_is_loaded_again_on_the_wire(
    saver: RedisSaver, redis_client: redis.Redis
) -> None:
    """NOSCRIPT on the wire (a restarted or flushed server) loads the script and runs it."""
    head = _grow(saver, "t", 2)
    redis_client.script_flush()
    head = _grow(saver, "t", 1, head)
    cp = saver.get("t")
    assert cp is not None and cp.id == head and cp.values["log"] == [0, 1, 2]


def test_error_replies_are_storage_errors_and_leave_the_wire_usable(
    saver: RedisSaver, redis_client: redis.Redis, redis_prefix: str
) -> None:
    """A script's error reply (a key of the wrong type) is a CheckpointStorageError, and
    the connection it came on serves the next step."""
    redis_client.hset(f"{{{redis_prefix}:bad}}:head", "x", "y")
    with pytest.raises(CheckpointStorageError, match="WRONGTYPE"):
        saver.put("bad", _write(None, 0), expected_head=None)
    addr = _wire_addr(saver)
    _grow(saver, "good", 2)
    assert _wire_addr(saver) == addr
    cp = saver.get("good")
    assert cp is not None and cp.values["log"] == [0, 1]


def test_many_threads_at_once_keep_their_steps_and_few_idle_connections(
    saver: RedisSaver,
) -> None:
    """Sixteen Python threads writing at once each keep their own thread's steps, and the
    wire keeps at most ``IDLE`` connections out of the pool afterwards."""
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            _grow(saver, f"t{n}", 20)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    workers = [threading.Thread(target=run, args=(n,)) for n in range(16)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors
    for n in range(16):
        cp = saver.get(f"t{n}")
        assert cp is not None and cp.values["log"] == list(range(20))
    assert saver._wire is not None and 1 <= len(saver._wire._free) <= SyncWire.IDLE


def test_a_closed_saver_opens_again_on_next_use(saver: RedisSaver) -> None:
    """close() gives the wire's connections back; a later step borrows a fresh one."""
    head = _grow(saver, "t", 1)
    saver.close()
    assert saver._wire is not None and saver._wire._free == []
    _grow(saver, "t", 1, head)
    cp = saver.get("t")
    assert cp is not None and cp.values["log"] == [0, 1]
