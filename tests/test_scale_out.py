"""Many stateless worker processes serving many threads through one store: a SQLite file,
PostgreSQL, Redis or a Redis Cluster.

Four processes take agent turns from a shared queue; each thread's turns land on whichever
process is free, so threads move between processes. Afterwards every thread's conversation
and checkpoint chain must be complete and in order.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import redis
from _stores import Store, close

from checkpoint.base import CheckpointSaver

WORKER = Path(__file__).with_name("_agent_worker.py")
PROCESSES = 4
THREADS = 200
TURNS = 3


def _serve(client: Any, queue_url: str, store: Store) -> dict[str, list[tuple[int, str]]]:
    """Run every turn of every thread on the worker processes; answers by thread."""
    queue = f"{{gatest-queue-{uuid.uuid4().hex[:12]}}}"
    workers = [
        subprocess.Popen([sys.executable, str(WORKER), queue_url, queue, f"w{i}", *store.argv()])
        for i in range(PROCESSES)
    ]
    done: dict[str, list[tuple[int, str]]] = {}
    try:
        threads = [f"user-{i}" for i in range(THREADS)]
        for turn in range(1, TURNS + 1):
            random.shuffle(threads)
            client.rpush(queue, *(f"{t}|{turn}" for t in threads))
            for _ in threads:
                # generous: on a loaded 2-core CI machine the workers' first turns are slow
                item = client.blpop([f"{queue}:done"], timeout=300)
                assert item is not None, "a worker stopped answering"
                thread, got_turn, worker, answer = item[1].decode().split("|", 3)
                done.setdefault(thread, []).append((int(got_turn), f"{worker}|{answer}"))
        client.rpush(queue, *["STOP"] * PROCESSES)
        for w in workers:
            assert w.wait(timeout=60) == 0
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
            w.wait()  # reap here, not in a later test's garbage collection
        client.delete(queue, f"{queue}:done")
    return done


def _check(saver: CheckpointSaver, done: dict[str, list[tuple[int, str]]]) -> None:
    assert len(done) == THREADS
    moved = 0
    for thread, turns in done.items():
        assert [t for t, _ in turns] == list(range(1, TURNS + 1)), thread
        workers = {entry.split("|")[0] for _, entry in turns}
        moved += len(workers) > 1
        for turn, entry in turns:
            # the model saw every earlier turn: the history crossed processes intact
            assert f"saw {turn} user messages; noted turn {turn}" in entry, (thread, entry)
        cp = saver.get(thread)
        assert cp is not None
        messages = cp.values["messages"]
        assert len(messages) == 4 * TURNS, thread
        expected_roles = ["user", "assistant", "tool", "assistant"] * TURNS
        assert [m.role for m in messages] == expected_roles, thread
        assert [m.text for m in messages if m.role == "user"] == [
            f"turn {t}" for t in range(1, TURNS + 1)
        ]
        assert len({m.id for m in messages}) == len(messages), "a duplicated message"
        history = saver.list(thread)
        assert [h.step for h in history] == sorted({h.step for h in history}, reverse=True)
        for newer, older in itertools.pairwise(history):
            assert newer.parent_id == older.id, "a broken checkpoint chain"
    # turns were spread over the processes, so most threads changed hands
    assert moved > THREADS // 2, moved


def test_many_workers_share_threads_through_one_store(store: Store, redis_url: str) -> None:
    """4 processes x 200 threads x 3 turns on one store: nothing lost, doubled or reordered.

    Runs on SQLite (one file), PostgreSQL, Redis and a 3-master Redis Cluster (where the
    threads must also spread over every node).
    """
    cluster = store.kind == "cluster"
    client: Any = (
        # no socket timeout: redis-py 8 defaults to 5 s, which cuts the blocking pops short
        redis.RedisCluster.from_url(store.target, socket_timeout=None)
        if cluster
        else redis.Redis.from_url(redis_url, socket_timeout=None)
    )
    done = _serve(client, redis_url, store)
    saver = store.open()
    try:
        _check(saver, done)
        if cluster:
            threads = saver.threads()  # type: ignore[attr-defined]
            nodes = {client.get_node_from_key(f"{{{store.name}:{t}}}:head").name for t in threads}
            assert len(nodes) == 3
    finally:
        close(saver)
        client.close()
