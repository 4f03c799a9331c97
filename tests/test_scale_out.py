"""Many stateless worker processes serving many threads through one Redis (or a Cluster).

Four processes take agent turns from a shared queue; each thread's turns land on whichever
process is free, so threads move between processes. Afterwards every thread's conversation
and checkpoint chain must be complete and in order.
"""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import redis

from checkpoint import RedisSaver

WORKER = Path(__file__).with_name("_agent_worker.py")
PROCESSES = 4
THREADS = 200
TURNS = 3


def _serve(client: Any, url: str, prefix: str, cluster: bool) -> dict[str, list[tuple[int, str]]]:
    """Run every turn of every thread on the worker processes; answers by thread."""
    queue = f"{{{prefix}:queue}}"
    extra = ["cluster"] if cluster else []
    workers = [
        subprocess.Popen([sys.executable, str(WORKER), url, prefix, queue, f"w{i}", *extra])
        for i in range(PROCESSES)
    ]
    done: dict[str, list[tuple[int, str]]] = {}
    try:
        threads = [f"user-{i}" for i in range(THREADS)]
        for turn in range(1, TURNS + 1):
            random.shuffle(threads)
            client.rpush(queue, *(f"{t}|{turn}" for t in threads))
            for _ in threads:
                item = client.blpop([f"{queue}:done"], timeout=60)
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
    return done


def _check(saver: RedisSaver, done: dict[str, list[tuple[int, str]]]) -> None:
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


def test_many_workers_on_one_redis(redis_url: str, redis_prefix: str) -> None:
    """4 processes x 200 threads x 3 turns on one Redis: nothing lost, doubled or reordered."""
    client = redis.Redis.from_url(redis_url)
    done = _serve(client, redis_url, redis_prefix, cluster=False)
    _check(RedisSaver(client, prefix=redis_prefix), done)


def test_many_workers_on_a_redis_cluster(redis_cluster_url: str, cluster_prefix: str) -> None:
    """The same on a 3-master Redis Cluster: threads spread over every node."""
    client = redis.RedisCluster.from_url(redis_cluster_url)
    done = _serve(client, redis_cluster_url, cluster_prefix, cluster=True)
    saver = RedisSaver(client, prefix=cluster_prefix)  # type: ignore[arg-type]
    _check(saver, done)
    nodes = {
        client.get_node_from_key(f"{{{cluster_prefix}:{t}}}:head").name for t in saver.threads()
    }
    assert len(nodes) == 3
