"""AsyncRedisSaver's own wire for scripts: same answers as the client, whatever goes wrong.

The step write and the thread read are ``EVALSHA`` sent on connections the saver keeps
(``checkpoint/redis/_wire.py``). These tests attack what such a path can get wrong: a
reply read by the wrong caller after a cancellation, a connection the server dropped, a
script the server forgot, an error reply, many conversations at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import subprocess
import time
import uuid
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

import checkpoint.redis._programs as programs_module
import checkpoint.redis._scripts as scripts_module
import checkpoint.redis._wire as wire_module
from checkpoint import (
    AsyncRedisSaver,
    CheckpointConflictError,
    CheckpointStorageError,
    CheckpointWrite,
    MemorySaver,
    PendingWrite,
    ReadCache,
    new_checkpoint_id,
)
from checkpoint import _layout as layout
from checkpoint.base import CheckpointSaver
from checkpoint.serde import default_serde
from graphagent.agent import AgentRecord, ReactAgent
from graphagent.messages import AssistantMessage, Message, ToolCall
from graphagent.models import FunctionChatModel


def write(parent: str | None, n: int) -> CheckpointWrite:
    return CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=parent,
        step=n,
        changes={"log": ("append", [n]), "last": ("set", n)},
        next=("n",),
        metadata={"source": "test"},
        created_at=time.time(),
    )


async def grow(saver: AsyncRedisSaver, thread: str, n: int) -> list[str]:
    ids: list[str] = []
    parent = None
    for i in range(n):
        w = write(parent, i)
        await saver.aput(thread, w, expected_head=parent)
        ids.append(w.id)
        parent = w.id
    return ids


@pytest.fixture
async def asaver(redis_url: str, redis_prefix: str) -> Any:
    """An AsyncRedisSaver on its wire (hiredis packs and parses: ``graphagent[fast]``)."""
    assert wire_module.available(), "make test installs hiredis (graphagent[fast])"
    saver = AsyncRedisSaver.from_url(redis_url, prefix=redis_prefix)
    yield saver
    await saver.aclose()


async def test_without_hiredis_scripts_go_through_the_client(
    redis_url: str, redis_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """hiredis is an optional extra: without it the saver has no wire (no protocol of its
    own) and sends its scripts through redis-py's client, with the same answers: a thread,
    a conflict, a forgotten script, sixteen conversations at once."""
    monkeypatch.setattr(wire_module, "hiredis", None)
    saver = AsyncRedisSaver.from_url(redis_url, prefix=redis_prefix)
    try:
        assert saver._fast() is None
        ids = await grow(saver, "t", 3)
        cp = await saver.aget("t")
        assert cp is not None and cp.values == {"log": [0, 1, 2], "last": 2}
        with pytest.raises(CheckpointConflictError):
            await saver.aput("t", write(ids[0], 9), expected_head=ids[0])
        await saver.client.script_flush()
        await saver.aput("t", write(ids[-1], 3), expected_head=ids[-1])
        again = await saver.aget("t")
        assert again is not None and again.values["log"] == [0, 1, 2, 3]
        on_client = await _conversations(saver, 16, 3)
        assert on_client == await _conversations(MemorySaver(), 16, 3)
        assert saver._wire is None
    finally:
        await saver.aclose()


async def test_cancelled_calls_never_hand_their_reply_to_another(
    asaver: AsyncRedisSaver,
) -> None:
    """Calls cancelled while waiting for Redis leave no reply behind on a connection."""
    threads = [f"t{i}" for i in range(12)]
    for i, t in enumerate(threads):
        await grow(asaver, t, i + 1)
    for round_ in range(20):
        tasks = [asyncio.ensure_future(asaver.aget(t)) for t in threads]
        for _ in range(round_ % 4):
            await asyncio.sleep(0)
        for task in tasks[::2]:
            task.cancel()
        for t, task in zip(threads, tasks, strict=True):
            try:
                cp = await task
            except asyncio.CancelledError:
                continue
            assert cp is not None and cp.values["last"] == int(t[1:]), t
    for i, t in enumerate(threads):
        cp = await asaver.aget(t)
        assert cp is not None and cp.values["log"] == list(range(i + 1))


def _count_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of scripts in each write the wire makes from now on (a batch is one
    ``transport.write``; counted around it, since uvloop's transports cannot be patched)."""
    sends: list[int] = []
    original = wire_module._Link.send

    def counted(self: Any, batch: Any) -> None:
        sends.append(b"".join(item[0] for item in batch).count(b"EVALSHA"))
        original(self, batch)

    monkeypatch.setattr(wire_module._Link, "send", counted)
    return sends


async def test_concurrent_calls_share_one_write(
    asaver: AsyncRedisSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Scripts issued in one turn of the event loop go out in one write, replies in order."""
    threads = [f"t{i}" for i in range(16)]
    for i, t in enumerate(threads):
        await grow(asaver, t, i + 1)
    sends = _count_writes(monkeypatch)
    got = await asyncio.gather(*(asaver.aget(t) for t in threads))
    assert [cp.values["last"] for cp in got if cp is not None] == list(range(16))
    assert sends == [16]


async def test_scripts_issued_while_a_batch_is_out_go_in_the_next(
    asaver: AsyncRedisSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One batch is out at a time: what callers issue meanwhile waits and goes together."""
    for i in range(8):
        await grow(asaver, f"t{i}", 2)
    sends = _count_writes(monkeypatch)
    first = asyncio.ensure_future(asaver.aget("t0"))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the first read is on the wire
    rest = [asyncio.ensure_future(asaver.aget(f"t{i}")) for i in range(1, 8)]
    got = [await first, *(await asyncio.gather(*rest))]
    assert all(cp is not None and cp.values["log"] == [0, 1] for cp in got)
    assert sends == [1, 7]


def test_a_saver_serves_one_event_loop_after_another(redis_url: str, redis_prefix: str) -> None:
    """asyncio.run twice with one saver, closed after each (scripts, notebooks): the
    second loop gets connections of its own."""
    saver = AsyncRedisSaver.from_url(redis_url, prefix=redis_prefix)

    async def first() -> None:
        try:
            await grow(saver, "t", 2)
        finally:
            await saver.aclose()

    async def second() -> list[Any]:
        try:
            return list(await asyncio.gather(saver.aget("t"), saver.aget("t")))
        finally:
            await saver.aclose()

    asyncio.run(first())
    got = asyncio.run(second())
    assert [cp.values["log"] for cp in got if cp is not None] == [[0, 1], [0, 1]]


async def test_closing_the_client_closes_the_saver_connections(
    redis_url: str, redis_prefix: str
) -> None:
    """A client the application owns and closes itself takes the saver's connections
    with it (they are the pool's), and they reconnect if the saver is used again."""
    client = aredis.Redis.from_url(redis_url)
    saver = AsyncRedisSaver(client, prefix=redis_prefix)
    await asyncio.gather(*(grow(saver, f"t{i}", 2) for i in range(4)))
    wire = saver._fast()
    assert wire is not None and wire._link is not None
    conn = wire._link.conn
    await client.aclose()
    assert not conn.is_connected
    cp = await saver.aget("t0")
    assert cp is not None and cp.values["log"] == [0, 1]
    assert wire._link is not None and wire._link.conn.is_connected
    conn = wire._link.conn
    await client.aclose()
    assert not conn.is_connected


async def test_a_dropped_connection_is_replaced(asaver: AsyncRedisSaver) -> None:
    """Connections the server (or a proxy) closed while idle are replaced, not reported."""
    ids = await grow(asaver, "t", 2)
    wire = asaver._fast()
    assert wire is not None and wire._link is not None
    wire._link.transport.abort()
    await asyncio.sleep(0.01)
    w = write(ids[-1], 2)
    await asaver.aput("t", w, expected_head=ids[-1])
    cp = await asaver.aget("t")
    assert cp is not None and cp.id == w.id and cp.values["log"] == [0, 1, 2]


async def test_a_script_redis_forgot_is_loaded_again(
    asaver: AsyncRedisSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NOSCRIPT (a restarted or flushed server) loads the script and runs it, once."""
    ids = await grow(asaver, "t", 2)
    fresh = scripts_module.Script(f"{scripts_module.READ.text}-- {uuid.uuid4().hex}\n")
    monkeypatch.setattr(scripts_module, "READ", fresh)
    sha = hashlib.sha1(fresh.text.encode()).hexdigest()
    assert await asaver.client.script_exists(sha) == [False]
    cp = await asaver.aget("t")
    assert cp is not None and cp.id == ids[-1] and cp.values["log"] == [0, 1]
    assert await asaver.client.script_exists(sha) == [True]


async def test_error_replies_are_storage_errors_and_leave_the_wire_usable(
    asaver: AsyncRedisSaver, redis_client: redis.Redis, redis_prefix: str
) -> None:
    """A script error (here a head key of the wrong type) names Redis and the thread; the
    connection it came on serves the next call."""
    ids = await grow(asaver, "ok", 2)
    redis_client.hset(f"{{{redis_prefix}:bad}}:head", "x", "y")
    for _ in range(3):
        with pytest.raises(CheckpointStorageError, match="Redis failed while reading thread 'bad'"):
            await asaver.aget("bad")
        cp = await asaver.aget("ok")
        assert cp is not None and cp.id == ids[-1]
    with pytest.raises(CheckpointConflictError):
        await asaver.aput("ok", write(ids[0], 9), expected_head=ids[0])


async def test_unreachable_redis_is_a_storage_error() -> None:
    """No server: CheckpointStorageError naming the cause, on reads and step writes."""
    saver = AsyncRedisSaver.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.5)
    try:
        with pytest.raises(CheckpointStorageError, match="Redis"):
            await saver.aget("t")
        with pytest.raises(CheckpointStorageError, match="Redis"):
            await saver.aput("t", write(None, 0), expected_head=None)
    finally:
        await saver.aclose()


async def test_pending_writes_come_back_with_the_read(asaver: AsyncRedisSaver) -> None:
    """Pending writes of the read checkpoint (only its own) come in the same reply."""
    ids = await grow(asaver, "t", 2)
    await asaver.aput_writes("t", ids[0], [PendingWrite("old", "update", 0)])
    await asaver.aput_writes(
        "t", ids[1], [PendingWrite("b", "update", {"v": 2}), PendingWrite("a", "update", 1)]
    )
    cp = await asaver.aget("t")
    assert cp is not None
    assert [(w.task, w.value) for w in cp.pending_writes] == [("a", 1), ("b", {"v": 2})]
    older = await asaver.aget("t", ids[0])
    assert older is not None and [w.task for w in older.pending_writes] == ["old"]


def _script(messages: list[Message], tools: Any) -> AssistantMessage:
    if messages[-1].role == "user":
        n = len(messages)
        return AssistantMessage(
            tool_calls=[ToolCall(id=f"c{n}", name="note", arguments=f'{{"turn": {n}}}')]
        )
    return AssistantMessage(f"done: {messages[-1].text}")


def note(turn: int) -> str:
    """Write a turn down."""
    return f"noted {turn}"


async def _conversations(saver: CheckpointSaver, threads: int, turns: int) -> list[Any]:
    agent = ReactAgent(
        name="a", model=FunctionChatModel(_script, keep_calls=False), tools=[note], saver=saver
    )

    async def one(thread: str) -> Any:
        for turn in range(turns):
            async for _ in agent.astream(f"turn {turn}", thread_id=thread, mode="updates"):
                pass
        state = await agent.graph.aget_state({"thread_id": thread})
        calls = dict(AgentRecord.of(state.values).tool_calls)
        return [(m.role, m.text) for m in state.values["messages"]], calls

    return await asyncio.gather(*(one(f"c{i}") for i in range(threads)))


async def test_concurrent_conversations_end_as_on_memory(asaver: AsyncRedisSaver) -> None:
    """Sixteen conversations at once on one process end exactly as they do in memory."""
    on_redis = await _conversations(asaver, 16, 3)
    assert on_redis == await _conversations(MemorySaver(), 16, 3)
    assert on_redis[0][0][-1] == ("assistant", "done: noted 9")


async def test_a_connection_lost_with_a_batch_out_sends_it_once_more(
    asaver: AsyncRedisSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection drops right after a batch went out (its scripts may have run): the
    batch goes once more on a fresh connection, and a step that had landed is not
    reported as a conflict."""
    ids = await grow(asaver, "t", 2)
    drops = []
    original = wire_module._Link.send

    def send_then_drop(self: Any, batch: Any) -> None:
        original(self, batch)
        if not drops:
            drops.append(len(batch))
            self.transport.abort()

    monkeypatch.setattr(wire_module._Link, "send", send_then_drop)
    w = write(ids[-1], 2)
    others = [asaver.aget("t") for _ in range(3)]
    await asyncio.gather(asaver.aput("t", w, expected_head=ids[-1]), *others)
    assert drops == [4]
    cp = await asaver.aget("t")
    assert cp is not None and cp.id == w.id and cp.values["log"] == [0, 1, 2]


async def test_a_connection_lost_twice_is_a_storage_error(
    asaver: AsyncRedisSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch whose connection drops on both tries fails its callers with a storage
    error; the next call gets a working connection."""
    ids = await grow(asaver, "t", 2)
    original = wire_module._Link.send

    def send_then_drop(self: Any, batch: Any) -> None:
        original(self, batch)
        self.transport.abort()

    monkeypatch.setattr(wire_module._Link, "send", send_then_drop)
    with pytest.raises(CheckpointStorageError, match="Redis failed while reading thread 't'"):
        await asaver.aget("t")
    monkeypatch.setattr(wire_module._Link, "send", original)
    cp = await asaver.aget("t")
    assert cp is not None and cp.id == ids[-1]


async def test_a_reply_later_than_socket_timeout_is_a_storage_error(
    private_redis: Any, redis_prefix: str
) -> None:
    """``socket_timeout`` bounds the wait for a reply (a paused or stuck server): the
    batch is tried twice, then the caller gets a storage error, not a hang."""
    saver = AsyncRedisSaver.from_url(private_redis.url, prefix=redis_prefix, socket_timeout=0.2)
    admin = redis.Redis.from_url(private_redis.url)
    try:
        ids = await grow(saver, "t", 2)
        admin.client_pause(1500)
        start = time.monotonic()
        with pytest.raises(CheckpointStorageError, match="Timeout"):
            await saver.aget("t")
        assert time.monotonic() - start < 1.2
        admin.client_unpause()
        cp = await saver.aget("t")
        assert cp is not None and cp.id == ids[-1]
    finally:
        admin.client_unpause()
        await saver.aclose()


async def test_large_values_arrive_in_pieces_and_are_read_whole(asaver: AsyncRedisSaver) -> None:
    """A reply of several MB comes in many socket reads; it is read whole, in order
    with the replies around it."""
    big = "x" * 3_000_000
    w = CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=None,
        step=0,
        changes={"log": ("append", [big, "small"]), "last": ("set", 0)},
        next=(),
        metadata={},
        created_at=time.time(),
    )
    await asaver.aput("big", w, expected_head=None)
    await grow(asaver, "small", 1)
    got = await asyncio.gather(*(asaver.aget(t) for t in ("small", "big", "small", "big")))
    assert [cp.values["log"] if cp else None for cp in got] == [[0], [big, "small"]] * 2


def test_the_read_script_is_told_the_fields_read_fields_names() -> None:
    """The read names a record's log items as (prefix, first, last) ranges; expanded as
    the script does, they are exactly ``read_fields``, in order (forked logs included)."""
    dumps = default_serde.dumps

    def put(parent: layout.Record | None, changes: dict[str, Any], on_head: bool) -> Any:
        w = CheckpointWrite(
            id=new_checkpoint_id(),
            parent_id=parent.id if parent else None,
            step=0,
            changes=changes,
            next=(),
            metadata={},
            created_at=0.0,
        )
        return layout.plan_put(parent, w, on_head=on_head, dumps=dumps).record

    root = put(None, {"log": ("append", [1, 2, 3]), "n": ("set", 1), "é": ("set", 2)}, True)
    head = put(root, {"log": ("append", [4]), "other": ("append", [5, 6])}, True)
    fork = put(root, {"log": ("append", [7, 8]), "n": ("set", 3)}, False)
    empty = put(None, {"log": ("reset", [])}, True)
    for record in (root, head, fork, empty):
        plan = ReadCache(default_serde).plan("t", record)  # nothing held: every field
        assert plan.fields == layout.read_fields(record)
        spec = programs_module.plan_spec(record, plan)
        assert spec[0] == record.id
        n = spec[1]
        fields = list(spec[2 : 2 + n])
        rest = spec[2 + n :]
        for i in range(0, len(rest), 3):
            prefix, first, last = rest[i : i + 3]
            fields += [prefix + str(j).encode() for j in range(first, last)]
        assert fields == [f.encode() for f in layout.read_fields(record)], record


@pytest.fixture
def unix_redis(tmp_path: Any) -> Any:
    """A redis-server of this test's own on a unix socket only (no TCP port)."""
    binary = shutil.which("redis-server")
    assert binary is not None, "redis-server is not installed"
    path = tmp_path / "redis.sock"
    proc = subprocess.Popen(
        [binary, "--port", "0", "--unixsocket", str(path), "--save", "", "--appendonly", "no"],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                if redis.Redis(unix_socket_path=str(path)).ping():
                    break
            except (redis.RedisError, OSError):
                time.sleep(0.05)
        else:
            raise AssertionError(f"redis-server did not answer on {path}")
        yield path
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.mark.parametrize("protocol", [2, 3])
async def test_the_wire_speaks_resp2_and_resp3_on_a_unix_socket_and_another_db(
    unix_redis: Any, redis_prefix: str, protocol: int
) -> None:
    """The connection the wire takes over has the client's transport, protocol and
    database (redis-py made the handshake): conversations end as on memory, and the
    keys are in the client's database."""
    saver = AsyncRedisSaver.from_url(
        f"unix://{unix_redis}?db=3", prefix=redis_prefix, protocol=protocol
    )
    try:
        on_redis = await _conversations(saver, 4, 2)
        assert on_redis == await _conversations(MemorySaver(), 4, 2)
        wire = saver._fast()
        assert wire is not None and wire._link is not None
        assert wire._link.conn.protocol == protocol
    finally:
        await saver.aclose()
    in_db3 = redis.Redis(unix_socket_path=str(unix_redis), db=3)
    assert in_db3.exists(f"{{{redis_prefix}:c0}}:head")
    assert not redis.Redis(unix_socket_path=str(unix_redis), db=0).keys("*")


async def test_closing_waits_for_the_calls_out_and_a_cancelled_close_leaves_them_be(
    redis_url: str, redis_prefix: str
) -> None:
    """``aclose`` lets the scripts already issued finish with their replies; a close that
    is itself cancelled does not cancel them."""
    saver = AsyncRedisSaver.from_url(redis_url, prefix=redis_prefix)
    try:
        for i in range(4):
            await grow(saver, f"t{i}", i + 1)
        reads = [asyncio.ensure_future(saver.aget(f"t{i}")) for i in range(4)]
        await asyncio.sleep(0)
        closing = asyncio.ensure_future(saver.aclose())
        await asyncio.sleep(0)
        closing.cancel()
        got = await asyncio.gather(*reads)
        assert [cp.values["log"] if cp else None for cp in got] == [
            list(range(i + 1)) for i in range(4)
        ]
        reads = [asyncio.ensure_future(saver.aget(f"t{i}")) for i in range(4)]
        await asyncio.sleep(0)
        await saver.aclose()
        assert all(r.done() and r.result() is not None for r in reads)
    finally:
        await saver.aclose()


async def test_a_single_connection_client_keeps_its_one_connection(
    redis_url: str, redis_prefix: str
) -> None:
    """A client made with ``single_connection_client=True`` is used as it is (the wire
    would take a second connection): concurrent conversations still end right."""
    client = aredis.Redis.from_url(redis_url, single_connection_client=True)
    saver = AsyncRedisSaver(client, prefix=redis_prefix)
    try:
        assert saver._fast() is None
        got = await asyncio.gather(*(grow(saver, f"t{i}", 3) for i in range(4)))
        for i, ids in enumerate(got):
            cp = await saver.aget(f"t{i}")
            assert cp is not None and cp.id == ids[-1] and cp.values["log"] == [0, 1, 2]
    finally:
        await saver.aclose()


@pytest.mark.parametrize("wire", [True, False], ids=["hiredis-wire", "redis-py"])
async def test_the_first_read_and_write_after_a_redis_restart_succeed(
    private_redis: Any, redis_prefix: str, wire: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis crashes and comes back with its data, the saver not told: its next read and
    its next step write succeed on their first try, on the hiredis wire and on redis-py's
    own commands (redis-py 8.1's async pool handed out the dead connections: #4252)."""
    if not wire:
        monkeypatch.setattr(wire_module, "available", lambda: False)
    saver = AsyncRedisSaver.from_url(private_redis.url, prefix=redis_prefix)
    try:
        ids = await grow(saver, "t", 2)
        await asyncio.gather(*(saver.ahead("t") for _ in range(3)))
        private_redis.crash()
        await asyncio.to_thread(private_redis.start)
        await asyncio.sleep(0.05)  # a serving process's loop sees the sockets close
        assert await saver.ahead("t") == ids[-1]
        step = write(ids[-1], 2)
        await saver.aput("t", step, expected_head=ids[-1])
        cp = await saver.aget("t")
        assert cp is not None and cp.id == step.id
    finally:
        await saver.aclose()
