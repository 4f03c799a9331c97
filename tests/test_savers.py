"""Saver conformance: every rule runs against MemorySaver and RedisSaver alike."""

from __future__ import annotations

import statistics
import time
from typing import Any

import pytest
import redis

from checkpoint import (
    AsyncRedisSaver,
    CheckpointConflictError,
    CheckpointNotFoundError,
    CheckpointStorageError,
    CheckpointWrite,
    MemorySaver,
    PendingWrite,
    RedisSaver,
    SerializationError,
    new_checkpoint_id,
)
from checkpoint.base import CheckpointSaver
from graphagent.messages import UserMessage


def write(parent: str | None, changes: dict[str, Any], step: int = 0) -> CheckpointWrite:
    return CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=parent,
        step=step,
        changes=changes,
        next=("n",),
        metadata={"source": "test"},
        created_at=time.time(),
    )


def chain(saver: CheckpointSaver, thread: str, n: int) -> list[str]:
    ids: list[str] = []
    parent = None
    for i in range(n):
        w = write(parent, {"log": ("append", [i]), "last": ("set", i)}, step=i)
        saver.put(thread, w, expected_head=parent)
        ids.append(w.id)
        parent = w.id
    return ids


def test_put_get_rebuilds_state(saver: CheckpointSaver) -> None:
    """The head's values are rebuilt from per-step changes."""
    ids = chain(saver, "t", 5)
    cp = saver.get("t")
    assert cp is not None
    assert cp.id == ids[-1] and cp.parent_id == ids[-2]
    assert cp.values == {"log": [0, 1, 2, 3, 4], "last": 4}
    assert cp.next == ("n",) and cp.metadata == {"source": "test"}
    older = saver.get("t", ids[1])
    assert older is not None and older.values == {"log": [0, 1], "last": 1}


def test_unknown_thread_and_checkpoint(saver: CheckpointSaver) -> None:
    """An unknown thread reads as None; an unknown checkpoint id is an error."""
    assert saver.get("nobody") is None
    assert saver.list("nobody") == []
    chain(saver, "t", 1)
    with pytest.raises(CheckpointNotFoundError):
        saver.get("t", "0" * 24)


def test_list_newest_first_with_limit_and_before(saver: CheckpointSaver) -> None:
    """History is newest first; limit and before narrow it."""
    ids = chain(saver, "t", 6)
    assert [c.id for c in saver.list("t")] == ids[::-1]
    assert [c.id for c in saver.list("t", limit=2)] == ids[:-3:-1]
    assert [c.id for c in saver.list("t", before=ids[3], limit=2)] == [ids[2], ids[1]]


def test_conflict_writes_nothing(saver: CheckpointSaver) -> None:
    """A writer whose expected head moved gets CheckpointConflictError and writes nothing."""
    ids = chain(saver, "t", 2)
    stale = write(ids[0], {"log": ("append", ["lost"])})
    with pytest.raises(CheckpointConflictError):
        saver.put("t", stale, expected_head=ids[0])
    cp = saver.get("t")
    assert cp is not None and cp.id == ids[-1] and cp.values["log"] == [0, 1]
    assert len(saver.list("t")) == 2
    with pytest.raises(CheckpointConflictError):
        saver.put("fresh", write(None, {}), expected_head="someone")


def test_a_step_that_cannot_be_encoded_writes_nothing(saver: CheckpointSaver) -> None:
    """A value the serde refuses fails the put whole: head, history and state unchanged."""
    ids = chain(saver, "t", 2)
    bad = write(ids[-1], {"log": ("append", ["ok", object()]), "last": ("set", 9)})
    with pytest.raises(SerializationError):
        saver.put("t", bad, expected_head=ids[-1])
    assert saver.head("t") == ids[-1]
    cp = saver.get("t")
    assert cp is not None and cp.values == {"log": [0, 1], "last": 1}
    assert [c.id for c in saver.list("t")] == ids[::-1]
    good = write(ids[-1], {"log": ("append", [2])})
    saver.put("t", good, expected_head=ids[-1])  # the thread goes on from there
    again = saver.get("t")
    assert again is not None and again.values["log"] == [0, 1, 2]


def test_metadata_is_stored_as_given_and_refused_when_it_cannot_be(
    saver: CheckpointSaver,
) -> None:
    """Metadata and extra are kept as the caller gave them at put time (later changes to
    the caller's objects change nothing), and a step whose metadata cannot be stored fails
    whole on every saver, MemorySaver (which keeps records unencoded) included."""
    ids = chain(saver, "t", 1)
    tags = ["a", "b"]
    nested = {"user": {"id": 7, "roles": ["admin"]}, "when": (1, 2)}
    w = CheckpointWrite(
        new_checkpoint_id(),
        ids[0],
        1,
        {},
        (),
        {"tags": tags, **nested},
        time.time(),
        extra={"barriers": {"0": ["x"]}},
    )
    saver.put("t", w, expected_head=ids[0])
    tags.append("c")
    nested["user"]["roles"].append("root")  # type: ignore[index]
    cp = saver.get("t")
    assert cp is not None
    assert cp.metadata == {
        "tags": ["a", "b"],
        "user": {"id": 7, "roles": ["admin"]},
        "when": (1, 2),
    }
    assert cp.extra == {"barriers": {"0": ["x"]}}
    cp.metadata["tags"].append("mine")  # a reader's changes stay the reader's
    cp.extra["barriers"]["0"].append("y")
    again = saver.get("t")
    assert again is not None and again.metadata["tags"] == ["a", "b"]
    assert again.extra == {"barriers": {"0": ["x"]}}
    assert saver.list("t")[0].metadata["tags"] == ["a", "b"]
    for meta in ({"who": object()}, {"deep": [{"x": object()}]}, {1: "not text"}):
        bad = CheckpointWrite(new_checkpoint_id(), w.id, 2, {}, (), meta, time.time())
        try:
            saver.put("t", bad, expected_head=w.id)
        except SerializationError:
            pass
        else:  # only a non-text key may be storable (msgpack keeps it); then it reads back
            assert meta == {1: "not text"}
            again = saver.get("t")
            assert again is not None and again.metadata == meta
            return
        assert saver.head("t") == w.id and len(saver.list("t")) == 2


def test_fork_keeps_both_branches(saver: CheckpointSaver) -> None:
    """Writing on an older checkpoint branches; both lines read back correctly."""
    ids = chain(saver, "t", 4)
    fork = write(ids[1], {"log": ("append", ["f"])})
    saver.put("t", fork, expected_head=ids[-1])
    head = saver.get("t")
    assert head is not None and head.values["log"] == [0, 1, "f"]
    old_line = saver.get("t", ids[-1])
    assert old_line is not None and old_line.values["log"] == [0, 1, 2, 3]
    nxt = write(fork.id, {"log": ("append", ["g"])})
    saver.put("t", nxt, expected_head=fork.id)
    again = saver.get("t")
    assert again is not None and again.values["log"] == [0, 1, "f", "g"]


def test_reset_rewrites_list(saver: CheckpointSaver) -> None:
    """A reset change replaces the whole list (e.g. after a message removal)."""
    ids = chain(saver, "t", 3)
    w = write(ids[-1], {"log": ("reset", ["only"])})
    saver.put("t", w, expected_head=ids[-1])
    cp = saver.get("t")
    assert cp is not None and cp.values["log"] == ["only"]
    w2 = write(w.id, {"log": ("append", ["more"])})
    saver.put("t", w2, expected_head=w.id)
    cp2 = saver.get("t")
    assert cp2 is not None and cp2.values["log"] == ["only", "more"]


def test_pending_writes_kept_until_child_commits(saver: CheckpointSaver) -> None:
    """put_writes attaches to a checkpoint and is dropped when its child is written."""
    ids = chain(saver, "t", 1)
    saver.put_writes("t", ids[0], [PendingWrite("a", "update", {"x": 1})])
    cp = saver.get("t")
    assert cp is not None and cp.pending_writes == (PendingWrite("a", "update", {"x": 1}),)
    child = write(ids[0], {})
    saver.put("t", child, expected_head=ids[0])
    parent = saver.get("t", ids[0])
    assert parent is not None and parent.pending_writes == ()


def test_delete_thread(saver: CheckpointSaver) -> None:
    """delete_thread forgets everything; other threads are untouched."""
    chain(saver, "t", 3)
    chain(saver, "other", 1)
    saver.delete_thread("t")
    assert saver.get("t") is None and saver.list("t") == []
    assert saver.get("other") is not None


def test_stored_values_are_immutable(saver: CheckpointSaver) -> None:
    """Mutating a value after put, or a loaded state, never changes what is stored."""
    payload = {"nested": [1, 2]}
    w = write(None, {"cfg": ("set", payload)})
    saver.put("t", w, expected_head=None)
    payload["nested"].append(3)
    loaded = saver.get("t")
    assert loaded is not None and loaded.values["cfg"] == {"nested": [1, 2]}
    loaded.values["cfg"]["nested"].append(99)
    again = saver.get("t")
    assert again is not None and again.values["cfg"] == {"nested": [1, 2]}


def test_messages_round_trip_as_models(saver: CheckpointSaver) -> None:
    """Library messages come back as their classes, not dicts."""
    msg = UserMessage("hi", metadata={"lang": "en"})
    saver.put("t", write(None, {"messages": ("append", [msg])}), expected_head=None)
    cp = saver.get("t")
    assert cp is not None and cp.values["messages"] == [msg]
    assert type(cp.values["messages"][0]) is UserMessage


def test_retention_keeps_last_n(saver: CheckpointSaver, make_saver: Any) -> None:
    """keep_last prunes old checkpoints while the kept ones still read whole."""
    s = MemorySaver(keep_last=3) if isinstance(saver, MemorySaver) else make_saver(keep_last=3)
    ids = chain(s, "t", 8)
    kept = s.list("t")
    assert [c.id for c in kept] == ids[:-4:-1]
    assert kept[-1].values == {"log": list(range(6)), "last": 5}
    with pytest.raises(CheckpointNotFoundError):
        s.get("t", ids[0])


async def test_async_twins(saver: CheckpointSaver) -> None:
    """Every saver method has an async twin that sees the same data."""
    w = write(None, {"log": ("append", [1])})
    await saver.aput("t", w, expected_head=None)
    cp = await saver.aget("t")
    assert cp is not None and cp.values == {"log": [1]}
    assert [c.id for c in await saver.alist("t")] == [w.id]
    assert await saver.ahead("t") == w.id
    await saver.aput_writes("t", w.id, [PendingWrite("n", "update", None)])
    await saver.adelete_thread("t")
    assert await saver.aget("t") is None


@pytest.fixture
def rsaver(redis_url: str, redis_prefix: str) -> Any:
    """A factory of RedisSavers on this test's prefix, closed afterwards."""
    made: list[RedisSaver] = []

    def make(**kw: Any) -> RedisSaver:
        made.append(RedisSaver.from_url(redis_url, prefix=redis_prefix, **kw))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_redis_read_of_its_own_head_is_one_round_trip(rsaver: Any) -> None:
    """A thread this saver wrote reads back in one round trip; a thread another process
    moved since reads right in two, pending writes of the head included."""
    mine, other = rsaver(), rsaver()
    ids = chain(mine, "t", 3)
    mine.put_writes("t", ids[-1], [PendingWrite("a", "update", {"x": 1})])
    trips: list[str] = []
    perform = mine._perform

    def counted(op: Any) -> Any:
        trips.append(type(op).__name__)
        return perform(op)

    mine._perform = counted  # type: ignore[method-assign]
    cp = mine.get("t")
    assert cp is not None and cp.id == ids[-1] and cp.values["last"] == 2
    assert [(w.task, w.value) for w in cp.pending_writes] == [("a", {"x": 1})]
    assert trips == ["EvalSha"]
    head = other.get("t")
    assert head is not None
    w = write(ids[-1], {"log": ("append", [3]), "last": ("set", 3)}, 3)
    other.put("t", w, expected_head=ids[-1])
    trips.clear()
    cp = mine.get("t")
    assert cp is not None and cp.id == w.id and cp.values == {"log": [0, 1, 2, 3], "last": 3}
    assert not cp.pending_writes
    assert len(trips) == 2
    trips.clear()
    older = mine.get("t", ids[1])
    assert older is not None and older.values == {"log": [0, 1], "last": 1}
    assert trips == ["EvalSha"]  # its record was cached: the named checkpoint's guess


def test_redis_ttl_covers_every_key(
    redis_client: redis.Redis, redis_prefix: str, rsaver: Any
) -> None:
    """With a TTL, every key of the thread, pending writes included, expires."""
    client = redis_client
    s = rsaver(ttl=60)
    ids = chain(s, "t", 2)
    s.put_writes("t", ids[-1], [PendingWrite("a", "update", 1)])
    keys = list(client.scan_iter(match=f"{{{redis_prefix}:*"))
    assert len(keys) == 5  # head, cp, seq, data, writes
    for key in keys:
        assert 0 < client.ttl(key) <= 60, key


def test_redis_keys_share_one_hash_slot_and_odd_ids_stay_inside(
    redis_client: redis.Redis, redis_prefix: str, rsaver: Any
) -> None:
    """All keys of a thread hash to one slot; braces in thread ids cannot escape it."""
    client = redis_client
    s = rsaver()
    odd = "a}b{c:%7D*"
    ids = chain(s, odd, 1)
    s.put_writes(odd, ids[0], [PendingWrite("n", "update", 1)])
    chain(s, "a", 1)
    keys = [k.decode() for k in client.scan_iter(match=f"{{{redis_prefix}:*")]
    odd_keys = [k for k in keys if "%7D" in k]
    assert len(odd_keys) == 5
    tags = {k[k.index("{") + 1 : k.index("}")] for k in odd_keys}
    assert len(tags) == 1
    assert s.threads() == sorted([odd, "a"])
    s.delete_thread(odd)
    assert s.get("a") is not None


def test_redis_step_write_size_does_not_grow_with_history(
    redis_client: redis.Redis, redis_prefix: str, rsaver: Any
) -> None:
    """Appending one message at 1,000 messages writes about what it writes at 10."""
    client = redis_client
    s = rsaver()

    def used() -> int:
        return sum(
            int(client.memory_usage(k, samples=0) or 0)
            for k in client.scan_iter(match=f"{{{redis_prefix}:*")
        )

    parent = None
    grew: dict[int, list[int]] = {10: [], 1000: []}
    for i in range(1009):
        w = write(parent, {"messages": ("append", [UserMessage(f"message {i}")])}, step=i)
        at = 10 if 10 <= i < 19 else 1000 if i >= 1000 else None
        if at is not None:
            before = used()
        s.put("t", w, expected_head=parent)
        if at is not None:
            grew[at].append(used() - before)
        parent = w.id
    # exact sizes (SAMPLES 0): the default estimate samples 5 fields of a 1,000-field hash.
    # The median of nine steps: Redis finishes growing a hash's table in the background
    # (incremental rehashing, also on a timer), and the step during which that lands
    # shows the table's old half going away or a new one arriving, not what it wrote
    sizes = {at: statistics.median(steps) for at, steps in grew.items()}
    assert sizes[1000] <= sizes[10] * 1.5 + 64, grew


async def test_async_redis_saver_reads_sync_threads(
    redis_url: str, redis_prefix: str, rsaver: Any
) -> None:
    """AsyncRedisSaver shares the layout: it continues a thread the sync saver wrote."""
    ids = chain(rsaver(), "t", 3)
    a = AsyncRedisSaver.from_url(redis_url, prefix=redis_prefix)
    try:
        cp = await a.aget("t")
        assert cp is not None and cp.values["log"] == [0, 1, 2]
        w = write(ids[-1], {"log": ("append", [3])})
        await a.aput("t", w, expected_head=ids[-1])
        with pytest.raises(CheckpointConflictError):
            await a.aput("t", write(ids[-1], {}), expected_head=ids[-1])
        assert [c.id for c in await a.alist("t", limit=2)] == [w.id, ids[-1]]
        with pytest.raises(TypeError, match="only async methods"):
            a.get("t")
    finally:
        await a.aclose()
    again = rsaver().get("t")
    assert again is not None and again.values["log"] == [0, 1, 2, 3]


def test_redis_unreachable_is_a_storage_error() -> None:
    """A Redis that does not answer raises CheckpointStorageError naming the cause."""
    s = RedisSaver.from_url("redis://127.0.0.1:1/0", socket_connect_timeout=0.5)
    try:
        with pytest.raises(CheckpointStorageError, match="Redis"):
            s.get("t")
        with pytest.raises(CheckpointStorageError, match="Redis"):
            s.put("t", write(None, {}), expected_head=None)
    finally:
        s.close()


def test_threads_lists_every_thread(saver: CheckpointSaver) -> None:
    """threads() finds every thread (on a cluster: on every node), odd ids intact."""
    names = [f"t{i}" for i in range(12)] + ["a}b{c:%7D*", "ünï cødé"]
    for name in names:
        chain(saver, name, 1)
    assert saver.threads() == sorted(names)  # type: ignore[attr-defined]
    saver.delete_thread("t0")
    assert "t0" not in saver.threads()  # type: ignore[attr-defined]


@pytest.mark.parametrize("twin", ["RedisSaver", "PostgresSaver"])
async def test_async_only_savers_refuse_every_sync_method(twin: str) -> None:
    """Each sync method of AsyncRedisSaver and AsyncPostgresSaver raises TypeError naming
    the sync saver to use instead (no server needed: nothing is sent)."""
    import redis.asyncio as aredis

    from checkpoint import AsyncPostgresSaver

    saver: CheckpointSaver
    if twin == "RedisSaver":
        client = aredis.Redis()
        saver = AsyncRedisSaver(client)
    else:
        saver = AsyncPostgresSaver(pool=None)  # type: ignore[arg-type]  # never reached
    w = write(None, {})
    calls = {
        "put": lambda: saver.put("t", w, expected_head=None),
        "put_many": lambda: saver.put_many("t", [w], expected_head=None),
        "put_writes": lambda: saver.put_writes("t", w.id, []),
        "get": lambda: saver.get("t"),
        "list": lambda: saver.list("t"),
        "history": lambda: saver.history("t"),
        "delete_thread": lambda: saver.delete_thread("t"),
        "head": lambda: saver.head("t"),
    }
    message = f"Async{twin} has only async methods; use {twin} for sync runs"
    for name, call in calls.items():
        with pytest.raises(TypeError) as caught:
            call()
        assert str(caught.value) == message, name
    if twin == "RedisSaver":
        await client.aclose()


def test_a_saver_implementing_neither_list_nor_history_says_so() -> None:
    """list and history each default to the other: a saver with neither gets a
    NotImplementedError naming both (not a RecursionError); one with either works."""

    class Neither(MemorySaver):
        list = CheckpointSaver.list  # type: ignore[assignment]
        history = CheckpointSaver.history  # type: ignore[assignment]

    for call in (Neither().list, Neither().history):
        with pytest.raises(NotImplementedError, match="Neither implements neither list nor"):
            call("t")

    class ListOnly(Neither):
        def list(self, thread_id: str, **kw: Any) -> Any:
            return list(MemorySaver.history(self, thread_id, **kw))

    s = ListOnly()
    ids = chain(s, "t", 2)
    assert [c.id for c in s.history("t")] == ids[::-1]
