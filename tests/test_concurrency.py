"""Two runs on one thread at once: one step wins per head, or runs wait with the opt-in lock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
import redis

from checkpoint import MemorySaver, RedisSaver
from checkpoint.base import CheckpointSaver
from checkpoint.locks import LockPolicy
from graphagent.errors import CheckpointConflictError, GraphAgentError, ThreadLockedError
from graphagent.graph import END, START, AppendStrategy, CompiledGraph, StateGraph


def _graph(saver: CheckpointSaver, work: Callable[[Any], dict[str, Any]]) -> CompiledGraph:
    g = StateGraph({"log": AppendStrategy()})
    g.add_node("work", work).add_edge(START, "work").add_edge("work", END)
    return g.compile(saver=saver, interrupt_before=["work"])


def _race(*runs: Callable[[], Any]) -> list[BaseException | None]:
    errors: list[BaseException | None] = [None] * len(runs)

    def go(i: int) -> None:
        try:
            runs[i]()
        except BaseException as exc:
            errors[i] = exc

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    return errors


def test_two_writers_one_wins_the_other_gets_a_conflict(
    saver: CheckpointSaver, make_saver: Any
) -> None:
    """Both runs read the same head; exactly one step lands, the other writes nothing."""
    both_ran = threading.Barrier(2, timeout=10)

    def work(state: Any) -> dict[str, Any]:
        both_ran.wait()  # both have loaded the head before either writes
        return {"log": [threading.current_thread().name]}

    first = _graph(saver, work)
    first.invoke({"log": []}, {"thread_id": "t"})  # paused before "work"
    paused = saver.head("t")
    second = _graph(make_saver(), work)
    errors = _race(
        lambda: first.invoke(None, {"thread_id": "t"}),
        lambda: second.invoke(None, {"thread_id": "t"}),
    )
    lost = [e for e in errors if e is not None]
    assert len(lost) == 1 and isinstance(lost[0], CheckpointConflictError), errors
    assert "reload the thread" in str(lost[0]) or "moved" in str(lost[0])
    state = first.get_state({"thread_id": "t"})
    assert len(state.values["log"]) == 1  # the winner's entry, once
    history = first.get_state_history({"thread_id": "t"})
    assert history[1].checkpoint_id == paused and len(history) == 2


def _slow_appender(delay: float) -> Callable[[Any], dict[str, Any]]:
    def work(state: Any) -> dict[str, Any]:
        time.sleep(delay)
        return {"log": ["x"]}

    return work


def _locking(saver: CheckpointSaver, make_saver: Any, **kw: Any) -> CheckpointSaver:
    if isinstance(saver, MemorySaver):
        return MemorySaver(**kw) if kw else saver
    return make_saver(**kw)  # type: ignore[no-any-return]


def test_opt_in_lock_serialises_runs_on_a_thread(saver: CheckpointSaver, make_saver: Any) -> None:
    """With lock_timeout, concurrent runs on one thread wait their turn and all land."""
    shared = _locking(saver, make_saver, lock_timeout=10)
    graphs = [
        StateGraph({"log": AppendStrategy()})
        .add_node("work", _slow_appender(0.05))
        .add_edge(START, "work")
        .add_edge("work", END)
        .compile(saver=shared if isinstance(shared, MemorySaver) else make_saver(lock_timeout=10))
        for _ in range(4)
    ]
    errors = _race(*(lambda g=g: g.invoke({"log": ["in"]}, {"thread_id": "L"}) for g in graphs))
    assert errors == [None] * 4
    log = graphs[0].get_state({"thread_id": "L"}).values["log"]
    assert log == ["in", "x"] * 4  # each run whole, one after another


def test_lock_timeout_names_the_thread_and_changes_nothing(
    saver: CheckpointSaver, make_saver: Any
) -> None:
    """A run that cannot get the lock in time raises ThreadLockedError; state is untouched."""
    locker = _locking(saver, make_saver, lock_timeout=5, lock_lease=0.6)
    g = _graph(locker, _slow_appender(0))
    g.invoke({"log": ["a"]}, {"thread_id": "busy"})
    before = locker.head("busy")
    with locker.lock("busy"):
        if isinstance(saver, MemorySaver):  # one process: the same saver, less patient now
            impatient, locker.lock_policy = locker, LockPolicy(timeout=0.2, lease=0.6)
        else:
            impatient = make_saver(lock_timeout=0.2, lock_lease=0.6)
        time.sleep(0.7)  # longer than the lease: the holder's renewal keeps it
        started = time.monotonic()
        with pytest.raises(ThreadLockedError, match="'busy' is locked by another run"):
            _graph(impatient, _slow_appender(0)).invoke(None, {"thread_id": "busy"})
        assert 0.15 < time.monotonic() - started < 2
    assert locker.head("busy") == before
    assert issubclass(ThreadLockedError, CheckpointConflictError)
    assert issubclass(ThreadLockedError, GraphAgentError)


def test_a_crashed_holder_frees_the_thread_after_its_lease(
    redis_url: str, redis_prefix: str
) -> None:
    """A lock left by a dead worker expires with its lease; the next run then proceeds."""
    client = redis.Redis.from_url(redis_url)
    saver = RedisSaver(client, prefix=redis_prefix, lock_timeout=5, lock_lease=30)
    client.set(f"{{{redis_prefix}:t}}:lock", "dead-worker", px=400)
    started = time.monotonic()
    out = _graph(saver, _slow_appender(0)).invoke({"log": []}, {"thread_id": "t"})
    assert out == {"log": []}  # paused before "work": the run got the lock and ran
    assert 0.3 < time.monotonic() - started < 3
    assert client.get(f"{{{redis_prefix}:t}}:lock") is None  # given back


async def test_lock_serialises_async_runs(redis_url: str, redis_prefix: str) -> None:
    """AsyncRedisSaver takes the same lock under ainvoke."""
    import asyncio

    from checkpoint import AsyncRedisSaver

    saver = AsyncRedisSaver.from_url(redis_url, prefix=redis_prefix, lock_timeout=10)
    g = StateGraph({"log": AppendStrategy()})

    async def work(state: Any) -> dict[str, Any]:
        await asyncio.sleep(0.02)
        return {"log": ["x"]}

    app = (
        g.add_node("work", work).add_edge(START, "work").add_edge("work", END).compile(saver=saver)
    )
    await asyncio.gather(*(app.ainvoke({"log": ["in"]}, {"thread_id": "A"}) for _ in range(5)))
    state = await app.aget_state({"thread_id": "A"})
    assert state.values["log"] == ["in", "x"] * 5
    await saver.aclose()
