"""Nothing is written to a thread deleted under a run (issue 13 item 4), on every saver.

A run that paused after its thread was deleted used to write the thread's pending-writes
key back on Redis: a key with no TTL, invisible to ``threads()``, that never went away.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg
import pytest
import redis

from checkpoint import (
    CheckpointNotFoundError,
    CheckpointWrite,
    PendingWrite,
    PostgresSaver,
    RedisSaver,
    new_checkpoint_id,
)
from checkpoint.base import CheckpointSaver
from graphagent.errors import CheckpointNotFoundError as RunCheckpointNotFoundError
from graphagent.graph import END, START, AppendStrategy, StateGraph, interrupt


def _keys(saver: CheckpointSaver) -> list[bytes]:
    """Every Redis key under the saver's prefix ([] for other savers)."""
    if not isinstance(saver, RedisSaver):
        return []
    client = saver.client
    pattern = f"{{{saver.prefix}:*"
    if isinstance(client, redis.RedisCluster):
        return list(client.scan_iter(match=pattern, count=1000, target_nodes=client.ALL_NODES))
    return list(client.scan_iter(match=pattern, count=1000))


def test_a_run_that_pauses_after_its_thread_was_deleted_writes_nothing(
    saver: CheckpointSaver,
) -> None:
    """delete_thread under a running step: the step's pause fails (the checkpoint it
    belongs to is gone) and no key of the thread comes back."""
    deleted: list[bool] = []

    def first(state: Any) -> dict[str, Any]:
        return {"log": ["first"]}

    def second(state: Any) -> dict[str, Any]:
        if not deleted:
            saver.delete_thread("t")  # another process deletes the thread meanwhile
            deleted.append(True)
        return {"log": [interrupt("go on?")]}

    g = StateGraph({"log": AppendStrategy()})
    g.add_node("first", first).add_node("second", second)
    g.add_edge(START, "first").add_edge("first", "second").add_edge("second", END)
    app = g.compile(saver=saver)
    with pytest.raises(RunCheckpointNotFoundError, match="'t'"):
        app.invoke({"log": ["hi"]}, {"thread_id": "t"})
    assert saver.get("t") is None and saver.head("t") is None
    assert "t" not in getattr(saver, "threads", lambda: [])()
    assert _keys(saver) == []


def test_pending_writes_to_a_deleted_thread_fail(saver: CheckpointSaver) -> None:
    """put_writes for a checkpoint of a deleted thread raises and stores nothing."""
    w = CheckpointWrite(new_checkpoint_id(), None, 0, {"n": ("set", 1)}, (), {}, 0.0)
    saver.put("t", w, expected_head=None)
    saver.delete_thread("t")
    with pytest.raises(CheckpointNotFoundError, match="'t'"):
        saver.put_writes("t", w.id, [PendingWrite("n", "update", 1)])
    assert saver.get("t") is None and _keys(saver) == []


def _thread(saver: CheckpointSaver) -> str:
    w = CheckpointWrite(new_checkpoint_id(), None, 0, {"n": ("set", 1)}, (), {}, 0.0)
    saver.put("t", w, expected_head=None)
    return w.id


def test_postgres_pending_writes_wait_for_a_delete_in_flight(
    postgres_url: str, pg_schema: str
) -> None:
    """put_writes racing a delete_thread that has not committed yet waits for it, then
    finds the checkpoint gone: no orphan row in the writes table."""
    with PostgresSaver.from_url(postgres_url, schema=pg_schema) as saver:
        saver.setup()
        cid = _thread(saver)
        outcome: list[BaseException | None] = []

        def pause() -> None:
            try:
                saver.put_writes("t", cid, [PendingWrite("n", "update", 1)])
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        with psycopg.connect(postgres_url) as conn:
            for table in ("threads", "checkpoints", "data", "writes"):
                conn.execute(f'DELETE FROM "{pg_schema}".graphagent_{table}')
            pausing = threading.Thread(target=pause)
            pausing.start()
            time.sleep(0.5)  # the pending writes arrive while the delete is in flight
            conn.commit()
        pausing.join(timeout=10)
        assert len(outcome) == 1 and isinstance(outcome[0], CheckpointNotFoundError)
        with psycopg.connect(postgres_url) as conn:
            rows = conn.execute(f'SELECT count(*) FROM "{pg_schema}".graphagent_writes')
            assert rows.fetchone() == (0,)
