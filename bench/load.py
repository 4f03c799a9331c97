"""Throughput and step latency under load: steps per second, p50/p99 per step.

Scenarios (a scripted ReactAgent with one tool; each turn is three super-steps: model,
tools, model, plus the input checkpoint):

- 1, 4 and 16 conversation threads served concurrently by one asyncio process, on
  MemorySaver and on Redis (AsyncRedisSaver);
- 4 worker processes taking turns of 200 threads from a Redis queue (RedisSaver), the
  stateless-worker deployment.

A step's latency is the time from the end of the previous super-step (or the call) to the
end of this one, checkpoint write included. Run: ``make bench`` or
``.venv/bin/python bench/load.py`` (``REDIS_URL``, default ``redis://127.0.0.1:6379/0``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import redis
from _common import machine

from checkpoint import AsyncRedisSaver, MemorySaver, RedisSaver
from checkpoint.base import CheckpointSaver
from graphagent.agent import ReactAgent
from graphagent.messages import AssistantMessage, Message, ToolCall
from graphagent.models import FunctionChatModel

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
TURNS_PER_THREAD = 12
WORKERS = 4
WORKER_THREADS = 200
WORKER_TURNS = 3


def script(messages: list[Message], tools: Any) -> AssistantMessage:
    """One tool call per user turn, then an answer."""
    if messages[-1].role == "user":
        n = len(messages)
        return AssistantMessage(
            tool_calls=[ToolCall(id=f"c{n}", name="note", arguments=f'{{"turn": {n}}}')]
        )
    return AssistantMessage(f"done: {messages[-1].text}")


def note(turn: int) -> str:
    """Write a turn down."""
    return f"noted {turn}"


def agent(saver: CheckpointSaver) -> ReactAgent:
    """The benchmark's agent."""
    return ReactAgent(name="load", model=FunctionChatModel(script), tools=[note], saver=saver)


def percentile(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def _conversation(a: ReactAgent, thread: str, latencies: list[float]) -> None:
    for turn in range(TURNS_PER_THREAD):
        last = time.perf_counter()
        async for _ in a.astream(f"turn {turn}", thread_id=thread, mode="updates"):
            now = time.perf_counter()
            latencies.append(now - last)
            last = now


async def concurrent(saver: CheckpointSaver, threads: int) -> tuple[float, float, float]:
    """Steps per second, p50 and p99 step latency (ms) for ``threads`` concurrent threads."""
    a = agent(saver)
    run = uuid.uuid4().hex[:8]
    await _conversation(a, f"warm-{run}", [])
    latencies: list[float] = []
    start = time.perf_counter()
    await asyncio.gather(*(_conversation(a, f"{run}-{i}", latencies) for i in range(threads)))
    elapsed = time.perf_counter() - start
    return (
        len(latencies) / elapsed,
        percentile(latencies, 50) * 1000,
        percentile(latencies, 99) * 1000,
    )


def sync_single(saver: CheckpointSaver) -> tuple[float, float, float]:
    """One thread, sync API: the latency floor of a step on this saver."""
    a = agent(saver)
    latencies: list[float] = []
    start = time.perf_counter()
    for turn in range(TURNS_PER_THREAD * 4):
        last = time.perf_counter()
        for _ in a.stream(f"turn {turn}", thread_id="sync-1", mode="updates"):
            now = time.perf_counter()
            latencies.append(now - last)
            last = now
    elapsed = time.perf_counter() - start
    return (
        len(latencies) / elapsed,
        percentile(latencies, 50) * 1000,
        percentile(latencies, 99) * 1000,
    )


def worker(url: str, prefix: str, queue: str) -> int:
    """Worker mode: take "<thread>|<turn>" jobs until STOP; report step latencies."""
    client = redis.Redis.from_url(url)
    a = agent(RedisSaver(client, prefix=prefix))
    latencies: list[float] = []
    while True:
        item = client.blpop([queue], timeout=60)
        if item is None or item[1] == b"STOP":
            break
        thread, turn = item[1].decode().split("|")
        last = time.perf_counter()
        for _ in a.stream(f"turn {turn}", thread_id=thread, mode="updates"):
            now = time.perf_counter()
            latencies.append(now - last)
            last = now
    client.rpush(f"{queue}:latencies", ",".join(f"{x:.6f}" for x in latencies))
    return 0


def processes() -> tuple[float, float, float]:
    """Steps per second and p50/p99 step latency (ms) of WORKERS processes on one Redis."""
    client = redis.Redis.from_url(REDIS_URL)
    prefix = f"bench-load-{uuid.uuid4().hex[:8]}"
    queue = f"{{{prefix}:queue}}"
    procs = [
        subprocess.Popen([sys.executable, __file__, "--worker", REDIS_URL, prefix, queue])
        for _ in range(WORKERS)
    ]
    try:
        time.sleep(1.0)  # let the workers import and connect before the clock starts
        start = time.perf_counter()
        for turn in range(WORKER_TURNS):
            client.rpush(queue, *(f"t{i}|{turn}" for i in range(WORKER_THREADS)))
            while client.llen(queue):
                time.sleep(0.005)
        client.rpush(queue, *["STOP"] * WORKERS)
        reports = [client.blpop([f"{queue}:latencies"], timeout=120) for _ in procs]
        elapsed = time.perf_counter() - start
        for p in procs:
            p.wait(timeout=60)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        keys = list(client.scan_iter(match=f"{{{prefix}:*", count=1000))
        if keys:
            client.delete(*keys)
    latencies = [float(x) for r in reports if r for x in r[1].decode().split(",") if x]
    return (
        len(latencies) / elapsed,
        percentile(latencies, 50) * 1000,
        percentile(latencies, 99) * 1000,
    )


async def main() -> None:
    """Print the table."""
    print(f"# load: {machine()}; scripted ReactAgent, 1 tool, {TURNS_PER_THREAD} turns/thread")
    print(f"{'scenario':<42} {'steps/s':>9} {'p50 ms':>8} {'p99 ms':>8}")

    def row(label: str, figures: tuple[float, float, float]) -> None:
        steps, p50, p99 = figures
        print(f"{label:<42} {steps:>9.0f} {p50:>8.3f} {p99:>8.3f}")

    row("MemorySaver, 1 thread, sync", sync_single(MemorySaver()))
    for threads in (1, 4, 16):
        row(f"MemorySaver, {threads} concurrent threads", await concurrent(MemorySaver(), threads))
    sync_saver = RedisSaver.from_url(REDIS_URL, prefix=f"bench-load-{uuid.uuid4().hex[:8]}")
    try:
        row("Redis, 1 thread, sync", sync_single(sync_saver))
    finally:
        sync_saver.delete_thread("sync-1")
    for threads in (1, 4, 16):
        prefix = f"bench-load-{uuid.uuid4().hex[:8]}"
        saver = AsyncRedisSaver.from_url(REDIS_URL, prefix=prefix)
        try:
            row(f"Redis (async), {threads} concurrent threads", await concurrent(saver, threads))
        finally:
            for thread in await saver.athreads():
                await saver.adelete_thread(thread)
            await saver.aclose()
    row(f"Redis, {WORKERS} processes x {WORKER_THREADS} threads", processes())
    print(f"(redis-server {redis.Redis.from_url(REDIS_URL).info()['redis_version']} on loopback)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        raise SystemExit(worker(*sys.argv[2:5]))
    asyncio.run(main())
