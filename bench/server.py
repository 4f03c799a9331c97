"""The HTTP server under load, beside LangGraph's: ``runs.wait`` throughput and latency.

The same ``langgraph-sdk`` load script drives both servers, each serving the same scripted
agent (model -> tool -> model: ``tests/server/targets.py:agent`` and its LangGraph twin
``tests/server/reference/graphs.py:assistant``): each client does ``threads.create`` then
``runs.wait``, RUNS times in all, at 8 and at 32 concurrent clients.

- ``graphagent serve`` on its default store (one SQLite file);
- ``langgraph dev`` (``langgraph-cli[inmem]``, in-memory), when ``.venv-ref`` has it
  (``bash tests/server/reference/run.sh`` makes it; it is not installed with the bench);
- a cluster on Redis: ``graphagent serve --redis --no-run`` and 1, 2, 4 ``graphagent worker``
  processes (``--workers``), at 32 clients.

Run: ``.venv/bin/python bench/server.py`` (``--runs 200``, ``--only graphagent,langgraph,
cluster``; ``REDIS_URL``, default ``redis://127.0.0.1:6379/0``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import redis
from langgraph_sdk import get_client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).parent))

from _common import machine  # noqa: E402

REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
REF = ROOT / ".venv-ref" / "bin" / "langgraph"
TARGET = "tests/server/targets.py:agent"
HI = {"messages": [{"role": "user", "content": "weather in Oslo"}]}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(argv: list[str], cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    for proc in procs:
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def _ready(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"no server at {url}")


async def _load(url: str, assistant: str, runs: int, clients: int) -> dict[str, float]:
    """RUNS x (threads.create, runs.wait) over CLIENTS concurrent clients."""
    client = get_client(url=url, timeout=120)
    latencies: list[float] = []
    left = list(range(runs))

    async def one_client() -> None:
        while left:
            left.pop()
            thread = await client.threads.create()
            start = time.perf_counter()
            out = await client.runs.wait(thread["thread_id"], assistant, input=HI)
            latencies.append(time.perf_counter() - start)
            assert out["messages"][-1]["content"] == "It is sunny in Oslo.", out

    for _ in range(3):  # warm up: imports, connections, first compiles
        thread = await client.threads.create()
        await client.runs.wait(thread["thread_id"], assistant, input=HI)
    began = time.perf_counter()
    await asyncio.gather(*(one_client() for _ in range(clients)))
    elapsed = time.perf_counter() - began
    await client.aclose()
    latencies.sort()
    return {
        "runs/s": runs / elapsed,
        "p50 ms": statistics.median(latencies) * 1000,
        "p99 ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
    }


def _row(name: str, clients: int, figures: dict[str, float]) -> None:
    print(
        f"| {name} | {clients} | {figures['runs/s']:.1f} | {figures['p50 ms']:.1f} | "
        f"{figures['p99 ms']:.1f} |",
        flush=True,
    )


def bench_graphagent(runs: int) -> dict[int, dict[str, float]]:
    port, workdir = _port(), Path(tempfile.mkdtemp(prefix="bench-serve-"))
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "graphagent", "serve", str(ROOT / TARGET), "--port", str(port)]
    procs = [_start(argv, workdir)]
    try:
        _ready(url)
        return {c: asyncio.run(_load(url, "assistant", runs, c)) for c in (8, 32)}
    finally:
        _stop(procs)


def bench_langgraph(runs: int) -> dict[int, dict[str, float]] | None:
    if not REF.exists():
        print("(langgraph dev is not installed: bash tests/server/reference/run.sh makes it)")
        return None
    port = _port()
    url = f"http://127.0.0.1:{port}"
    argv = [str(REF), "dev", "--port", str(port), "--no-browser", "--no-reload"]
    procs = [_start(argv, ROOT / "tests" / "server" / "reference")]
    try:
        _ready(url)
        return {c: asyncio.run(_load(url, "assistant", runs, c)) for c in (8, 32)}
    finally:
        _stop(procs)


def bench_cluster(runs: int, workers: int) -> dict[str, float]:
    port, prefix = _port(), f"bench-srv-{uuid.uuid4().hex[:8]}"
    url = f"http://127.0.0.1:{port}"
    shared = ["--redis", REDIS_URL, "--prefix", prefix]
    serve = [sys.executable, "-m", "graphagent", "serve", TARGET, "--port", str(port)]
    procs = [_start([*serve, "--no-run", *shared], ROOT)]
    worker = [sys.executable, "-m", "graphagent", "worker", TARGET, *shared]
    procs += [_start(worker, ROOT) for _ in range(workers)]
    try:
        _ready(url)
        time.sleep(1.0)
        return asyncio.run(_load(url, "assistant", runs, 32))
    finally:
        _stop(procs)
        client = redis.Redis.from_url(REDIS_URL)
        for pattern in (f"{prefix}*", f"{{{prefix}*"):
            keys = list(client.scan_iter(match=pattern, count=1000))
            for i in range(0, len(keys), 500):
                client.delete(*keys[i : i + 500])
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--only", default="graphagent,langgraph,cluster")
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    only = set(args.only.split(","))
    print(f"# server: runs.wait, {args.runs} runs ({machine()})\n")
    print("| server | clients | runs/s | p50 ms | p99 ms |")
    print("| --- | --- | --- | --- | --- |")
    ours = bench_graphagent(args.runs) if "graphagent" in only else None
    for clients, figures in (ours or {}).items():
        _row("graphagent serve (SQLite)", clients, figures)
    ref = bench_langgraph(args.runs) if "langgraph" in only else None
    for clients, figures in (ref or {}).items():
        _row("langgraph dev (in-memory)", clients, figures)
    if "cluster" in only:
        for n in (int(w) for w in args.workers.split(",")):
            _row(f"graphagent serve --redis + {n} worker(s)", 32, bench_cluster(args.runs, n))
    if ours and ref:
        print()
        for clients in (8, 32):
            ratio = ours[clients]["runs/s"] / ref[clients]["runs/s"]
            print(f"- {clients} clients: graphagent {ratio:.1f}x langgraph dev's runs/s")


if __name__ == "__main__":
    main()
