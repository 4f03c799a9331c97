"""Starting ``graphagent serve`` / ``graphagent worker`` subprocesses for the server tests."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
TARGETS = [f"tests/server/targets.py:{name}" for name in ("agent", "asker", "slow")]
REFERENCE = os.environ.get("GRAPHAGENT_SERVER_URL")


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes] | None, timeout: float = 30.0) -> None:
    """Wait until the server answers ``/ok`` (fail with its output if it died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            out = proc.stdout.read().decode() if proc.stdout else ""
            pytest.fail(f"the server exited with {proc.returncode}: {out[-2000:]}")
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    pytest.fail(f"the server at {url} did not answer in {timeout} s")


def start_server(args: list[str], cwd: Path = ROOT) -> subprocess.Popen[bytes]:
    """``graphagent ARGS...`` in its own process group, output kept for failures."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "graphagent", *args],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    """End the process group and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    if proc.stdout:
        proc.stdout.close()


def drop_prefix(redis_url: str, prefix: str) -> None:
    """Delete every key a test cluster made under ``prefix``."""
    import redis

    client = redis.Redis.from_url(redis_url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
        keys += list(client.scan_iter(match=f"{{{prefix}*", count=1000))
        for start in range(0, len(keys), 500):
            client.delete(*keys[start : start + 500])
    finally:
        client.close()


def drop_schema(postgres_url: str, schema: str) -> None:
    """Drop the schema a test cluster made."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def cluster_flags(request: pytest.FixtureRequest, kind: str, prefix: str) -> list[str]:
    """The storage flags of a test cluster on Redis or PostgreSQL (``kind``) under
    ``prefix``; its keys or schema are dropped when the test ends."""
    if kind == "redis":
        redis_url: str = request.getfixturevalue("redis_url")
        request.addfinalizer(lambda: drop_prefix(redis_url, prefix))
        return ["--redis", redis_url, "--prefix", prefix]
    pg_url: str = request.getfixturevalue("postgres_url")
    request.addfinalizer(lambda: drop_schema(pg_url, prefix))
    return ["--postgres", pg_url, "--prefix", prefix]


class ThreadFollower:
    """A client following a thread's stream in the background (``threads.join_stream``),
    its parts queued for the test to read; :meth:`joined` makes sure it is connected."""

    def __init__(self, client: Any, thread_id: str, **options: Any) -> None:
        self.parts: asyncio.Queue[tuple[str, Any, str | None]] = asyncio.Queue()
        self.task = asyncio.ensure_future(self._read(client, thread_id, options))

    async def _read(self, client: Any, thread_id: str, options: dict[str, Any]) -> None:
        async for part in await client.threads.join_stream(thread_id, **options):
            await self.parts.put((part.event, part.data, getattr(part, "id", None)))

    async def until_done(self, run_id: str, timeout: float = 20) -> list[tuple[str, Any, Any]]:
        """The parts read until ``run_id``'s ``run_done``."""
        seen = []
        while True:
            event, data, ident = await asyncio.wait_for(self.parts.get(), timeout)
            seen.append((event, data, ident))
            done = event == "metadata" and data.get("status") == "run_done"
            if done and data.get("run_id") == run_id:
                return seen

    async def joined(self, creator: Any, thread_id: str, assistant: str, input: Any) -> None:
        """Start runs through ``creator`` until one shows whole in the stream (start to
        end): from then on the stream is connected and sees every new run whole."""
        for _ in range(10):
            warm = await creator.runs.create(thread_id, assistant, input=input)
            await creator.runs.join(thread_id, warm["run_id"])
            try:
                seen = await self.until_done(warm["run_id"], 3)
            except asyncio.TimeoutError:
                continue  # joined after that run ended: try another
            if any(e == "metadata" and d.get("run_id") == warm["run_id"] for e, d, _ in seen[:1]):
                return
        raise AssertionError("the thread stream never showed a whole run")

    async def close(self) -> None:
        """Leave the stream."""
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task
