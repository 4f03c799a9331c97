"""History and keep_last follow each thread's own write order, never a host's clock
(issue 13 item 2), on every saver.

Checkpoint ids carry the wall clock of the worker that wrote them. A worker whose clock
runs 50 ms behind writes ids that sort before the ones already in the thread; ordering by
id would then list its steps out of order and prune its new head.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from checkpoint import CheckpointWrite, MemorySaver, PendingWrite, RedisSaver, new_checkpoint_id
from checkpoint import base as checkpoint_base
from checkpoint.base import CheckpointSaver
from graphagent.graph import END, START, AppendStrategy, StateGraph


@pytest.fixture
def behind(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Call it to make this process's id clock run 50 ms behind the real one (a worker on
    another host whose clock is late)."""

    def skew() -> None:
        real = time.time_ns
        monkeypatch.setattr(checkpoint_base, "_clock", lambda: real() - 50_000_000)
        monkeypatch.setattr(checkpoint_base, "_last_ns", 0)

    yield skew


def _retaining(saver: CheckpointSaver, make_saver: Any, keep: int) -> CheckpointSaver:
    if isinstance(saver, MemorySaver):
        return MemorySaver(keep_last=keep)
    return make_saver(keep_last=keep)  # type: ignore[no-any-return]


def _put(saver: CheckpointSaver, parent: str | None, i: int) -> str:
    w = CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=parent,
        step=i,
        changes={"log": ("append", [i]), "n": ("set", i)},
        next=(),
        metadata={},
        created_at=time.time(),
    )
    saver.put("t", w, expected_head=parent)
    return w.id


def test_a_late_clock_neither_reorders_history_nor_prunes_the_head(
    saver: CheckpointSaver, behind: Any
) -> None:
    """Steps written by a worker 50 ms behind list in write order, newest first."""
    ids = [_put(saver, None, 0)]
    ids.append(_put(saver, ids[-1], 1))
    behind()
    ids.append(_put(saver, ids[-1], 2))
    ids.append(_put(saver, ids[-1], 3))
    assert ids[2] < ids[1]  # the late worker's ids sort before the ones it follows
    assert [c.id for c in saver.list("t")] == ids[::-1]
    assert [c.id for c in saver.list("t", before=ids[2])] == [ids[1], ids[0]]
    assert [c.id for c in saver.list("t", before=ids[1], limit=1)] == [ids[0]]
    head = saver.get("t")
    assert head is not None and head.id == ids[3] and head.values["log"] == [0, 1, 2, 3]


def test_keep_last_prunes_the_oldest_steps_not_the_late_clocks(
    saver: CheckpointSaver, make_saver: Any, behind: Any
) -> None:
    """With keep_last=2, a late worker's new head stays and the oldest steps go."""
    s = _retaining(saver, make_saver, 2)
    ids = [_put(s, None, 0)]
    ids.append(_put(s, ids[-1], 1))
    behind()
    ids.append(_put(s, ids[-1], 2))
    assert [c.id for c in s.list("t")] == [ids[2], ids[1]]
    ids.append(_put(s, ids[-1], 3))
    assert [c.id for c in s.list("t")] == [ids[3], ids[2]]
    head = s.get("t")
    assert head is not None and head.id == ids[3]
    assert head.values == {"log": [0, 1, 2, 3], "n": 3}


def test_a_graph_run_by_a_late_worker_keeps_its_state(
    saver: CheckpointSaver, make_saver: Any, behind: Any
) -> None:
    """A run continued by a worker 50 ms behind: get_state works, history is the chain."""
    s = _retaining(saver, make_saver, 2)
    g = StateGraph({"log": AppendStrategy()})
    g.add_node("a", lambda state: {"log": ["a"]}).add_node("b", lambda state: {"log": ["b"]})
    g.add_edge(START, "a").add_edge("a", "b").add_edge("b", END)
    app = g.compile(saver=s)
    config = {"thread_id": "t"}
    app.invoke({"log": ["first"]}, config)
    behind()
    app.invoke({"log": ["second"]}, config)
    state = app.get_state(config)
    assert state.values["log"] == ["first", "a", "b", "second", "a", "b"]
    history = app.get_state_history(config)
    assert history[0].checkpoint_id == state.checkpoint_id
    assert len(history) == 2 and history[0].parent_id == history[1].checkpoint_id

    full = make_saver() if not isinstance(saver, MemorySaver) else saver
    whole = g.compile(saver=full)
    whole.invoke({"log": ["other"]}, {"thread_id": "u"})
    behind()
    whole.invoke({"log": ["late"]}, {"thread_id": "u"})
    chain = whole.get_state_history({"thread_id": "u"})
    assert len(chain) == 6
    for newer, older in itertools.pairwise(chain):
        assert newer.parent_id == older.checkpoint_id


def test_redis_keep_last_drops_the_pruned_steps_pending_writes(
    redis_client: redis.Redis, redis_prefix: str
) -> None:
    """A paused step left behind by a fork keeps its pending writes until keep_last prunes
    it; then they go with it (memory and SQL drop them too)."""
    saver = RedisSaver(redis_client, prefix=redis_prefix, keep_last=2)
    writes = f"{{{redis_prefix}:t}}:writes"
    ids = [_put(saver, None, 0)]
    ids.append(_put(saver, ids[-1], 1))
    saver.put_writes("t", ids[1], [PendingWrite("a", "update", {"log": [9]})])
    fork = CheckpointWrite(
        id=new_checkpoint_id(),
        parent_id=ids[0],  # a fork from step 0 leaves step 1 (and its writes) behind
        step=1,
        changes={"n": ("set", 10)},
        next=(),
        metadata={},
        created_at=time.time(),
    )
    saver.put("t", fork, expected_head=ids[1])
    assert {f.decode() for f in redis_client.hkeys(writes)} == {f"{ids[1]}|a"}
    line = [fork.id]
    line.append(_put(saver, line[-1], 2))
    assert ids[1] not in [c.id for c in saver.list("t")]  # pruned
    assert redis_client.hkeys(writes) == []
