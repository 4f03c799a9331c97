"""Listing a thread's history (issue 13 item 13), on every saver.

Each listed checkpoint equals ``get`` at that checkpoint, forks and pending writes
included, and listing ``n`` checkpoints reads each stored item once: store reads and
decodes grow linearly with the thread, counted, never timed.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import time
from collections.abc import Iterator
from typing import Any

import pytest

from checkpoint import (
    AsyncPostgresSaver,
    AsyncRedisSaver,
    AsyncSqliteSaver,
    CheckpointWrite,
    MemorySaver,
    PostgresSaver,
    RedisSaver,
    SqliteSaver,
    new_checkpoint_id,
)
from checkpoint.base import CheckpointSaver, PendingWrite
from graphagent.graph import (
    END,
    START,
    AppendStrategy,
    Command,
    StateGraph,
    StateSnapshot,
    interrupt,
)
from graphagent.graph._snapshot import message_count
from graphagent.messages import AssistantMessage, UserMessage


def _put(saver: CheckpointSaver, parent: str | None, head: str | None, **changes: Any) -> str:
    w = CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=parent,
        step=0,
        changes=changes,
        next=("n",),
        metadata={"at": parent},
        created_at=time.time(),
    )
    saver.put("t", w, expected_head=head)
    return w.id


def _forked_thread(saver: CheckpointSaver) -> list[str]:
    """A line of six, a fork from its second checkpoint that appends and resets, the
    original line going on after the fork, and pending writes on two checkpoints."""
    a = _put(saver, None, None, log=("append", ["a"]), n=("set", 0), cfg=("set", {"k": 1}))
    b = _put(saver, a, a, log=("append", ["b", "c"]), n=("set", 1))
    c = _put(saver, b, b, log=("append", ["d"]))
    d = _put(saver, c, c, n=("set", 3), other=("append", [1]))
    e = _put(saver, d, d, log=("append", ["e"]), other=("append", [2]))
    f1 = _put(saver, b, e, n=("set", 10))  # fork: shares b's branch of 'log'
    f2 = _put(saver, f1, f1, log=("append", ["X"]))
    f3 = _put(saver, f2, f2, other=("reset", [9]), log=("append", ["Y"]))
    g = _put(saver, e, f3, log=("append", ["f"]), cfg=("set", {"k": 2}))
    saver.put_writes("t", g, [PendingWrite("n", "update", {"n": 7})])
    saver.put_writes("t", f2, [PendingWrite("n", "interrupt", [{"q": "?"}, "i1", "n"])])
    return [a, b, c, d, e, f1, f2, f3, g]


def test_every_listed_checkpoint_equals_get(saver: CheckpointSaver) -> None:
    """Each checkpoint of a forked thread's listing is what ``get`` gives for its id."""
    ids = _forked_thread(saver)
    listed = saver.list("t")
    assert [cp.id for cp in listed] == ids[::-1]
    for cp in listed:
        assert cp == saver.get("t", cp.id)
    assert listed[0].values["log"] == ["a", "b", "c", "d", "e", "f"]
    fork = {"n": 10, "cfg": {"k": 1}, "log": ["a", "b", "c", "X", "Y"], "other": [9]}
    assert listed[1].values == fork


def test_history_builds_what_list_returns(saver: CheckpointSaver) -> None:
    """history() is list() built on read: indexing, slicing, bare() and size() agree."""
    _forked_thread(saver)
    listed = saver.list("t")
    history = saver.history("t")
    assert len(history) == len(listed)
    assert list(history) == listed and history[2:5] == listed[2:5]
    for i, cp in enumerate(listed):
        bare = history.bare(i)
        assert bare.values == {} and bare.id == cp.id and bare.pending_writes == cp.pending_writes
        assert history.values(i) == cp.values
        assert history.size(i, "log") == len(cp.values["log"])
        assert history.size(i, "n") is None


@pytest.mark.parametrize(("limit", "before_at"), [(None, 0), (3, None), (2, 4), (0, None)])
def test_limit_and_before_pick_a_slice_of_the_listing(
    saver: CheckpointSaver, limit: int | None, before_at: int | None
) -> None:
    """limit= and before= give the matching slice of the full listing, states intact."""
    _forked_thread(saver)
    full = saver.list("t")
    before = None if before_at is None else full[before_at].id
    start = 0 if before_at is None else before_at + 1
    expected = full[start:] if limit is None else full[start : start + limit]
    assert saver.list("t", limit=limit, before=before) == expected
    assert list(saver.history("t", limit=limit, before=before)) == expected


def test_unknown_thread_lists_nothing(saver: CheckpointSaver) -> None:
    """A thread never written has an empty history."""
    assert saver.list("nobody") == [] and len(saver.history("nobody")) == 0


def test_states_built_from_one_history_do_not_share_containers(saver: CheckpointSaver) -> None:
    """Changing one built state's list or dict leaves the next build, and the store, alone."""
    _forked_thread(saver)
    history = saver.history("t")
    first = history.values(0)
    first["log"].append("mutated")
    first["n"] = -1
    assert history.values(0)["log"] == ["a", "b", "c", "d", "e", "f"]
    assert history.values(0)["n"] == 3
    again = saver.get("t")
    assert again is not None and again.values["log"][-1] == "f"


# -- counted, not timed: listing costs O(n) reads and decodes ----------------------------


class _Counter:
    """Counts what a saver reads from its store (data items) and what it decodes."""

    def __init__(self) -> None:
        self.reads = 0
        self.decodes = 0


def _count_decodes(saver: CheckpointSaver, counter: _Counter) -> None:
    owner: Any = saver if isinstance(saver, MemorySaver) else saver.logic  # type: ignore[attr-defined]
    serde = owner.serde

    class Counting:
        def dumps(self, value: Any) -> bytes:
            return serde.dumps(value)  # type: ignore[no-any-return]

        def loads(self, data: bytes) -> Any:
            counter.decodes += 1
            return serde.loads(data)

    owner.serde = Counting()


class _CountingDict(dict[str, bytes]):
    def __init__(self, data: dict[str, bytes], counter: _Counter) -> None:
        super().__init__(data)
        self.counter = counter

    def get(self, key: str, default: Any = None) -> Any:
        self.counter.reads += 1
        return super().get(key, default)

    def __getitem__(self, key: str) -> bytes:
        self.counter.reads += 1
        return super().__getitem__(key)


def _count_reads(saver: CheckpointSaver, counter: _Counter) -> None:
    """Count data items fetched: memory's data dict, Redis replies, SQL data rows."""
    if isinstance(saver, MemorySaver):
        t = saver._threads["t"]
        t.data = _CountingDict(t.data, counter)
        return
    if isinstance(saver, RedisSaver):
        perform = saver._perform

        def counted_perform(op: Any) -> Any:
            reply = perform(op)
            calls = getattr(op, "calls", [op])
            replies = reply if hasattr(op, "calls") else [reply]
            for call, answer in zip(calls, replies, strict=False):
                if getattr(call, "args", ()) and str(call.args[0]).endswith(":data"):
                    counter.reads += len(answer) if isinstance(answer, list | dict) else 1
            return reply

        saver._perform = counted_perform  # type: ignore[method-assign]
        return
    assert isinstance(saver, SqliteSaver | PostgresSaver)
    run = saver._run

    def counted_run(program: Any, **kwargs: Any) -> Any:
        def watched() -> Iterator[Any]:
            send: Any = None
            while True:
                try:
                    op = program.send(send)
                except StopIteration as stop:
                    return stop.value
                send = yield op
                stmts = op if isinstance(op, tuple) else (op,)
                answers = send if isinstance(op, tuple) else (send,)
                for stmt, answer in zip(stmts, answers, strict=True):
                    if "graphagent_data" in stmt.sql and stmt.sql.lstrip().startswith("SELECT"):
                        counter.reads += len(answer)

        return run(watched(), **kwargs)  # type: ignore[arg-type]

    saver._run = counted_run  # type: ignore[method-assign]


def _grow(saver: CheckpointSaver, steps: int, head: str | None) -> str:
    """Append one item and set a counter per step: the state grows with the thread."""
    for i in range(steps):
        changes: dict[str, Any] = {"log": ("append", [f"item {i}"]), "n": ("set", i)}
        head = _put(saver, head, head, **changes)
    assert head is not None
    return head


def _listing_cost(saver: CheckpointSaver, head: str | None, steps: int) -> tuple[int, int, str]:
    head = _grow(saver, steps, head)
    counter = _Counter()
    _count_reads(saver, counter)
    _count_decodes(saver, counter)
    listed = saver.list("t")
    assert listed[0].values["log"][-1] == listed[0].values["log"][listed[0].values["n"]]
    return counter.reads, counter.decodes, head


def test_listing_reads_each_stored_item_once(saver: CheckpointSaver) -> None:
    """Listing n steps reads about 2n data items (one per append, one per set) and decodes
    about 3n blobs (records too), where rebuilding each checkpoint read n²/2; doubling
    the thread doubles the cost."""
    reads, decodes, head = _listing_cost(saver, None, 120)
    assert 240 <= reads <= 2 * 120 + 5
    assert decodes <= 3 * 120 + 5  # records, values, items: each once
    reads2, decodes2, _ = _listing_cost(saver, head, 120)  # now 240 steps
    assert reads2 <= 2 * reads + 5 and decodes2 <= 2 * decodes + 5


def _fork_graph(saver: CheckpointSaver) -> Any:
    def ask(state: dict[str, Any]) -> dict[str, Any]:
        answer = interrupt({"question": "go on?", "seen": len(state["messages"])})
        return {"messages": [AssistantMessage(f"you said {answer}")], "asked": True}

    def reply(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AssistantMessage(f"echo: {state['messages'][-1].text}")]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply).add_node("ask", ask)
    g.add_edge(START, "reply").add_edge("reply", "ask").add_edge("ask", END)
    return g.compile(saver=saver)


def test_get_state_history_equals_get_state_with_forks_and_interrupts(
    saver: CheckpointSaver,
) -> None:
    """Every snapshot of a graph's history (a fork, a pending interrupt) equals get_state."""
    app = _fork_graph(saver)
    cfg = {"thread_id": "g"}
    app.invoke({"messages": [UserMessage("a")]}, cfg)
    app.invoke(Command(resume="yes"), cfg)
    app.invoke({"messages": [UserMessage("b")]}, cfg)  # paused at 'ask' again
    old = [s for s in app.get_state_history(cfg) if s.next == ("ask",)][-1]
    forked = app.update_state(old.config, {"messages": [UserMessage("edited")]})
    app.invoke(None, forked)  # the fork pauses at 'ask' too
    app.invoke(Command(resume="no"), cfg)
    history = app.get_state_history(cfg)
    assert len(history) == 7 and history[0].values["messages"][-1].text == "you said no"
    assert any(s.interrupts for s in history)
    for snap in history:
        assert snap == app.get_state(snap.config)
    assert history[2:4] == [app.get_state(s.config) for s in history[2:4]]


async def test_aget_state_history_equals_get_state(saver: CheckpointSaver) -> None:
    """The async listing builds the same snapshots."""
    app = _fork_graph(saver)
    cfg = {"thread_id": "g"}
    app.invoke({"messages": [UserMessage("a")]}, cfg)
    app.invoke(Command(resume="yes"), cfg)
    history = await app.aget_state_history(cfg)
    assert [s.checkpoint_id for s in history] == [
        s.checkpoint_id for s in app.get_state_history(cfg)
    ]
    for snap in history:
        assert snap == await app.aget_state(snap.config)


def test_listed_snapshots_build_their_state_on_read_and_copy_to_plain_ones(
    saver: CheckpointSaver,
) -> None:
    """A history holds no state: each read of values builds it; copies, pickles and
    replace() give plain snapshots equal to it; the timeline and message counts build none."""
    app = _fork_graph(saver)
    cfg = {"thread_id": "g"}
    app.invoke({"messages": [UserMessage("a")]}, cfg)
    app.invoke(Command(resume="yes"), cfg)
    history = app.get_state_history(cfg)
    snap = history[0]
    assert "values" not in vars(snap) and snap.values == snap.values
    assert snap.values is not snap.values  # built anew, never kept
    assert repr(snap).startswith("StateSnapshot(values={")
    for copied in (copy.copy(snap), copy.deepcopy(snap), pickle.loads(pickle.dumps(snap))):
        assert type(copied) is StateSnapshot and copied == snap and snap == copied
    replaced = dataclasses.replace(snap, next=("x",))
    assert replaced.values == snap.values and replaced.next == ("x",)
    assert message_count(replaced) == message_count(snap) == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        snap.values = {}  # type: ignore[misc]
    assert [message_count(s) for s in history] == [len(s.values["messages"]) for s in history]


def test_timeline_and_message_counts_build_no_state(saver: CheckpointSaver) -> None:
    """The Jupyter timeline and message counts of a history read no state at all."""
    app = _fork_graph(saver)
    cfg = {"thread_id": "g"}
    app.invoke({"messages": [UserMessage("a")]}, cfg)
    history = app.get_state_history(cfg)
    listing = vars(history[0])["_history"]

    def refuse(index: int) -> dict[str, Any]:
        raise AssertionError(f"state {index} was built")

    listing.values = refuse
    page = history._repr_html_()
    assert f"{len(history)} checkpoints" in page
    assert [message_count(s) for s in history] == [2, 1]


@pytest.mark.parametrize("kind", ["redis", "sqlite", "postgres"])
async def test_async_savers_list_what_the_sync_ones_do(
    kind: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    """ahistory/alist of the async savers give what the sync saver lists, forks included."""
    if kind == "redis":
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        sync: Any = RedisSaver.from_url(url, prefix=prefix)
        asaver: Any = AsyncRedisSaver.from_url(url, prefix=prefix)
    elif kind == "sqlite":
        sync = SqliteSaver(tmp_path / "t.sqlite")
        asaver = AsyncSqliteSaver(tmp_path / "t.sqlite")
    else:
        url, schema = request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema")
        sync = PostgresSaver.from_url(url, schema=schema)
        sync.setup()
        asaver = AsyncPostgresSaver.from_url(url, schema=schema)
    try:
        _forked_thread(sync)
        expected = sync.list("t")
        history = await asaver.ahistory("t", limit=5, before=expected[1].id)
        assert list(history) == expected[2:7]
        assert await asaver.alist("t") == expected
        for cp in expected:
            assert cp == await asaver.aget("t", cp.id)
    finally:
        sync.close()
        await asaver.aclose()


def _looping(saver: CheckpointSaver, steps: int) -> Any:
    def reply(state: dict[str, Any]) -> dict[str, Any]:
        return {"messages": [AssistantMessage(f"reply {len(state['messages'])}")]}

    g = StateGraph({"messages": AppendStrategy()}).add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_conditional_edges(
        "reply", lambda s: "reply" if len(s["messages"]) <= steps else END, ["reply", END]
    )
    return g.compile(saver=saver)


def test_reading_a_whole_graph_history_decodes_linearly(saver: CheckpointSaver) -> None:
    """get_state_history with every snapshot's values read decodes each stored item once:
    twice the steps, twice the decodes (rebuilding each checkpoint made it four times)."""
    counter = _Counter()
    _count_decodes(saver, counter)
    costs = []
    for steps in (60, 120):
        cfg = {"thread_id": f"loop{steps}", "recursion_limit": steps + 10}
        _looping(saver, steps).invoke({"messages": [UserMessage("go")]}, cfg)
        app = _looping(saver, steps)
        counter.decodes = 0
        history = app.get_state_history(cfg)
        seen = [len(snap.values["messages"]) for snap in history]
        assert seen == list(range(steps + 1, 0, -1))
        costs.append(counter.decodes)
    assert costs[0] <= 3 * 60 + 10 and costs[1] <= 2 * costs[0] + 10


def test_needed_fields_is_the_union_of_what_each_record_reads() -> None:
    """Overlapping, nested and disjoint spans of one branch are each named once."""
    from checkpoint import _layout as layout
    from checkpoint._history import needed_fields

    def record(vals: dict[str, str], logs: dict[str, list[tuple[str, int, int]]]) -> Any:
        return layout.Record("id", None, 0, 0.0, (), {}, {}, vals, logs)

    records = [
        record({"x": "v1"}, {"m": [("b", 0, 3)], "n": [("c", 0, 1), ("d", 0, 2)]}),
        record({"x": "v2", "y": "v1"}, {"m": [("b", 0, 5)]}),
        record({}, {"m": [("b", 1, 2), ("e", 4, 6)], "n": [("d", 3, 4)]}),
        record({}, {"m": [("b", 7, 9)]}),
    ]
    fields = needed_fields(records)
    assert len(fields) == len(set(fields))
    assert set(fields) == {f for r in records for f in layout.read_fields(r)}


@pytest.mark.parametrize("kind", ["redis", "cluster"])
def test_redis_listing_read_across_a_prune_reads_again(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """A keep_last prune landing between a Redis listing's reads does not break it: the
    listing sees data gone and reads once more, getting the pruned thread whole."""
    import redis as redis_py

    from checkpoint.redis._programs import Pipeline

    def open_saver(**options: Any) -> RedisSaver:
        if kind == "cluster":
            url = request.getfixturevalue("redis_cluster_url")
            prefix = request.getfixturevalue("cluster_prefix")
            return RedisSaver(redis_py.RedisCluster.from_url(url), prefix=prefix, **options)
        url, prefix = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        return RedisSaver.from_url(url, prefix=prefix, **options)

    reader, pruner = open_saver(), open_saver(keep_last=3)
    try:
        head = _grow(reader, 6, None)
        perform, pruned = reader._perform, []

        def prune_before_the_fields_are_read(op: Any) -> Any:
            reads_fields = isinstance(op, Pipeline) and str(op.calls[0].args[0]).endswith(":data")
            if reads_fields and not pruned:
                pruned.append(_put(pruner, head, head, n=("set", 99)))
            return perform(op)

        reader._perform = prune_before_the_fields_are_read  # type: ignore[method-assign]
        listed = reader.list("t")
        assert pruned and [cp.id for cp in listed] == [cp.id for cp in pruner.list("t")]
        assert len(listed) == 3 and listed[0].values["n"] == 99
        for cp in listed:
            assert cp == pruner.get("t", cp.id)
    finally:
        reader.close()
        pruner.close()


def test_one_history_built_from_many_threads_at_once(saver: CheckpointSaver) -> None:
    """Threads reading the states of one listing at once each get them whole."""
    from concurrent.futures import ThreadPoolExecutor

    _grow(saver, 40, None)
    expected = [saver.get("t", cp.id) for cp in saver.list("t")]
    owner: Any = saver if isinstance(saver, MemorySaver) else saver.logic  # type: ignore[attr-defined]
    serde = owner.serde

    class Slow:  # decoding gives the other threads time to reach the same item
        def dumps(self, value: Any) -> bytes:
            return serde.dumps(value)  # type: ignore[no-any-return]

        def loads(self, data: bytes) -> Any:
            time.sleep(0.0005)
            return serde.loads(data)

    owner.serde = Slow()
    for _ in range(3):
        history = saver.history("t")
        with ThreadPoolExecutor(8) as pool:
            built = list(pool.map(history.__getitem__, range(len(history) - 1, -1, -1)))
        assert built[::-1] == expected


class _ListOnly(CheckpointSaver):
    """A third-party saver that implements list() only (no history())."""

    def __init__(self) -> None:
        self.inner = MemorySaver()

    def put(self, thread_id: str, write: CheckpointWrite, *, expected_head: str | None) -> None:
        self.inner.put(thread_id, write, expected_head=expected_head)

    def put_writes(self, thread_id: str, checkpoint_id: str, writes: Any) -> None:
        self.inner.put_writes(thread_id, checkpoint_id, writes)

    def get(self, thread_id: str, checkpoint_id: str | None = None) -> Any:
        return self.inner.get(thread_id, checkpoint_id)

    def list(self, thread_id: str, *, limit: int | None = None, before: str | None = None) -> Any:
        return self.inner.list(thread_id, limit=limit, before=before)

    def delete_thread(self, thread_id: str) -> None:
        self.inner.delete_thread(thread_id)


async def test_a_saver_with_only_list_still_serves_history() -> None:
    """history() and ahistory() fall back to list(): snapshots, counts and the timeline work."""
    saver = _ListOnly()
    app = _fork_graph(saver)
    cfg = {"thread_id": "g"}
    app.invoke({"messages": [UserMessage("a")]}, cfg)
    for history in (app.get_state_history(cfg), await app.aget_state_history(cfg)):
        assert [s == app.get_state(s.config) for s in history] == [True, True]
        assert [message_count(s) for s in history] == [2, 1]
        assert "2 checkpoints" in history._repr_html_()
    listed = saver.history("g")
    assert listed.bare(0).values == {} and listed.size(0, "messages") is None


def _tamper(saver: CheckpointSaver, checkpoint_id: str, blob: bytes) -> None:
    """Overwrite one stored record with ``blob``, in the saver's own store."""
    if isinstance(saver, MemorySaver):
        saver._threads["t"].records[checkpoint_id] = blob
    elif isinstance(saver, RedisSaver):
        saver.client.hset(saver.logic.keys("t").cp, checkpoint_id, blob)
        saver.logic._records.clear()
    else:
        assert isinstance(saver, SqliteSaver | PostgresSaver)
        saver.logic._records.clear()
        sql = "UPDATE {t}graphagent_checkpoints SET record = ? WHERE id = ?"
        saver._run(_one(saver.logic.stmt(sql, blob, checkpoint_id)), write=True, action="tamper")


def _one(stmt: Any) -> Iterator[Any]:
    yield stmt


def test_a_record_claiming_more_items_than_stored_is_refused_before_allocating(
    saver: CheckpointSaver,
) -> None:
    """A damaged record whose range claims a million items of a thread that stores a few
    fails the listing with SerializationError, without building a million field names."""
    from checkpoint import SerializationError
    from checkpoint import _layout as layout

    head = _grow(saver, 3, None)
    listed = saver.list("t")
    branch = listed[-1].id  # the first checkpoint started the log's only branch
    cp = listed[0]
    claim = layout.Record(
        cp.id,
        cp.parent_id,
        cp.step,
        cp.created_at,
        cp.next,
        cp.metadata,
        cp.extra,
        {"n": cp.id},
        {"log": [(branch, 0, 10**6)]},
        (branch,),
    )
    serde = saver.serde if isinstance(saver, MemorySaver) else saver.logic.serde  # type: ignore[attr-defined]
    _tamper(saver, head, serde.dumps(claim.to_plain()))
    with pytest.raises(SerializationError, match="damaged"):
        saver.list("t")


def test_timeline_changed_keys_from_records_match_the_values(saver: CheckpointSaver) -> None:
    """The timeline's "changed" column, found from the stored records, names the keys
    whose values differ from the parent's, as comparing the built states does (a key set
    again to an equal value is unchanged; a reset to another list of equal length is not)."""
    from graphagent.graph._snapshot import changed_keys
    from graphagent.graph.draw._html import changed

    head = _forked_thread(saver)[-1]
    head = _put(saver, head, head, n=("set", 3), cfg=("set", {"k": 2}))  # equal values
    _put(saver, head, head, other=("reset", [7, 8]), log=("append", []))
    app = _fork_graph(saver)
    history = app.get_state_history({"thread_id": "t"})
    by_id = {s.checkpoint_id: s for s in history}
    for snap in history:
        parent = by_id.get(snap.parent_id)
        fast = changed_keys(snap, parent)
        slow = changed(copy.copy(snap), None if parent is None else copy.copy(parent))
        assert fast == slow, snap.checkpoint_id
    assert changed_keys(history[0], history[1]) == ["other"]
    assert changed_keys(history[1], history[2]) == []


def test_a_breakpoint_pause_lists_as_get_state_shows_it(saver: CheckpointSaver) -> None:
    """A checkpoint paused at interrupt_before is at_breakpoint in the listing too."""
    g = StateGraph().add_node("a", lambda s: {"x": 1}).add_node("b", lambda s: {"y": 2})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(saver=saver, interrupt_before=["b"])
    cfg = {"thread_id": "bp"}
    app.invoke({}, cfg)
    paused = app.get_state_history(cfg)[0]
    assert paused.at_breakpoint and paused == app.get_state(cfg)
    app.invoke(None, cfg)
    history = app.get_state_history(cfg)
    assert [s.at_breakpoint for s in history] == [
        app.get_state(s.config).at_breakpoint for s in history
    ]
    for snap in history:
        assert snap == app.get_state(snap.config)
