"""Shared fixtures: a real Redis for every test that needs one, and both savers.

Redis comes from ``REDIS_URL`` if set, else 127.0.0.1:6379; when neither answers,
a private ``redis-server`` is started on a free port. If that fails too the run
stops with an error: Redis tests never skip silently.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator

import pytest
import redis

from checkpoint import MemorySaver, RedisSaver
from checkpoint.base import CheckpointSaver


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a Redis that answers PING, started here if need be."""
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    if _answers(url):
        yield url
        return
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.exit(f"Redis at {url} does not answer and redis-server is not installed", 3)
    port = _free_port()
    workdir = tempfile.mkdtemp(prefix="graphagent-redis-")
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    for _ in range(100):
        if _answers(url):
            break
        time.sleep(0.05)
    else:
        proc.kill()
        pytest.exit(f"started redis-server on port {port} but it never answered", 3)
    yield url
    proc.terminate()
    proc.wait(timeout=10)
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    """A sync client on the test Redis."""
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def redis_prefix(redis_client: redis.Redis) -> Iterator[str]:
    """A key prefix of this test's own; every key under it is deleted afterwards."""
    prefix = f"gatest-{uuid.uuid4().hex[:12]}"
    yield prefix
    keys = list(redis_client.scan_iter(match=f"{{{prefix}:*", count=1000))
    if keys:
        redis_client.delete(*keys)


@pytest.fixture(params=["memory", "redis"])
def saver(request: pytest.FixtureRequest) -> Iterator[CheckpointSaver]:
    """Each saver in turn: the conformance suite runs against both."""
    if request.param == "memory":
        yield MemorySaver()
        return
    url = request.getfixturevalue("redis_url")
    prefix = request.getfixturevalue("redis_prefix")
    s = RedisSaver.from_url(url, prefix=prefix)
    yield s
    s.close()


@pytest.fixture
def make_saver(request: pytest.FixtureRequest, saver: CheckpointSaver) -> object:
    """A factory for a second saver on the same storage (another "process")."""
    if isinstance(saver, MemorySaver):
        return lambda **kw: saver
    assert isinstance(saver, RedisSaver)
    url = request.getfixturevalue("redis_url")
    return lambda **kw: RedisSaver.from_url(url, prefix=saver.prefix, **kw)


@pytest.fixture(autouse=True, scope="session")
def _no_real_model_requests() -> Iterator[None]:
    """Tests never reach a real model server: only MockTransport clients may send."""
    from graphagent.models import allow_model_requests

    allow_model_requests(False)
    yield
    allow_model_requests(True)
