"""Shared fixtures: a real Redis for every test that needs one, and both savers.

Redis comes from ``REDIS_URL`` if set, else 127.0.0.1:6379; when neither answers,
a private ``redis-server`` is started on a free port. If that fails too the run
stops with an error: Redis tests never skip silently.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

# The code under test is this checkout's, even when the virtual env's editable install
# points at another checkout of the project (git worktrees sharing one .venv).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
import pytest
import redis
from _ltstores import clock, lt_store, make_store  # noqa: F401 (long-term store fixtures)
from _stores import Store

from checkpoint import MemorySaver, PostgresSaver, RedisSaver, SqliteSaver
from checkpoint.base import CheckpointSaver


def _answers(url: str) -> bool:
    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except (redis.RedisError, OSError):
        return False


def _free_port(bus: bool = False) -> int:
    """A free loopback port; with ``bus``, one whose cluster bus port (+10000) is free too."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if not bus:
            return port
        if port < 55000:
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", port + 10000))
                except OSError:
                    continue
            return port


def _start_redis(port: int, workdir: str, *extra: str) -> subprocess.Popen[bytes]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.exit("redis-server is not installed; the Redis tests cannot run", 3)
    return subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            *list(extra),
        ],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait(check: object, what: str, procs: list[subprocess.Popen[bytes]]) -> None:
    for _ in range(200):
        if check():  # type: ignore[operator]
            return
        time.sleep(0.05)
    for proc in procs:
        proc.kill()
    pytest.exit(f"{what} never came up", 3)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a Redis that answers PING, started here if need be."""
    url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
    if _answers(url):
        yield url
        return
    port = _free_port()
    workdir = tempfile.mkdtemp(prefix="graphagent-redis-")
    proc = _start_redis(port, workdir)
    url = f"redis://127.0.0.1:{port}/0"
    _wait(lambda: _answers(url), f"redis-server on port {port}", [proc])
    yield url
    proc.terminate()
    proc.wait(timeout=10)
    shutil.rmtree(workdir, ignore_errors=True)


class RedisProcess:
    """A private redis-server for fault tests: stop it, crash it, start it again.

    With ``durable``, it keeps an append-only file fsynced on every write, so a crash
    (SIGKILL) loses nothing that was acknowledged, as a production Redis with AOF would.
    """

    def __init__(self, durable: bool) -> None:
        self.port = _free_port()
        self.workdir = tempfile.mkdtemp(prefix="graphagent-fault-")
        self.durable = durable
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, empty: bool = False) -> None:
        if empty:
            shutil.rmtree(self.workdir, ignore_errors=True)
            os.mkdir(self.workdir)
        extra = ["--appendonly", "yes", "--appendfsync", "always"] if self.durable else []
        self.proc = _start_redis(self.port, self.workdir, *extra)
        _wait(lambda: _answers(self.url), f"private redis-server on {self.port}", [self.proc])

    def crash(self) -> None:
        """SIGKILL: no shutdown, no goodbye to clients."""
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=10)
            self.proc = None


@pytest.fixture
def private_redis() -> Iterator[RedisProcess]:
    """A redis-server of this test's own, with AOF, started; crashed and removed after."""
    server = RedisProcess(durable=True)
    server.start()
    yield server
    server.crash()
    shutil.rmtree(server.workdir, ignore_errors=True)


def _cluster_ok(url: str) -> bool:
    try:
        info = redis.Redis.from_url(url, socket_connect_timeout=1).cluster("info")
    except (redis.RedisError, OSError):
        return False
    text = info.decode() if isinstance(info, bytes) else str(info)
    return "cluster_state:ok" in text or (
        isinstance(info, dict) and info.get("cluster_state") == "ok"
    )


@pytest.fixture(scope="session")
def redis_cluster_url() -> Iterator[str]:
    """A 3-master Redis Cluster on loopback, started from redis-server binaries.

    ``REDIS_CLUSTER_URL`` (any node) is used instead when set. Never skipped: if the cluster
    cannot start, the run stops with the reason.
    """
    given = os.environ.get("REDIS_CLUSTER_URL")
    if given:
        if not _cluster_ok(given):
            pytest.exit(f"REDIS_CLUSTER_URL={given} is not a healthy cluster", 3)
        yield given
        return
    cli = shutil.which("redis-cli")
    if cli is None:
        pytest.exit("redis-cli is not installed; the Redis Cluster tests cannot run", 3)
    ports = [_free_port(bus=True) for _ in range(3)]
    workdir = tempfile.mkdtemp(prefix="graphagent-cluster-")
    procs = []
    for port in ports:
        node_dir = os.path.join(workdir, str(port))
        os.mkdir(node_dir)
        procs.append(
            _start_redis(
                port,
                node_dir,
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-node-timeout",
                "2000",
            )
        )
    urls = [f"redis://127.0.0.1:{p}/0" for p in ports]
    for url in urls:
        _wait(lambda url=url: _answers(url), f"cluster node {url}", procs)
    created = subprocess.run(
        [
            cli,
            "--cluster",
            "create",
            *(f"127.0.0.1:{p}" for p in ports),
            "--cluster-replicas",
            "0",
            "--cluster-yes",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if created.returncode != 0:
        for proc in procs:
            proc.kill()
        pytest.exit(f"redis-cli --cluster create failed: {created.stdout}{created.stderr}", 3)
    for url in urls:
        _wait(lambda url=url: _cluster_ok(url), f"cluster state ok at {url}", procs)
    yield urls[0]
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(timeout=10)
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def cluster_client(redis_cluster_url: str) -> Iterator[redis.RedisCluster]:
    """A cluster client on the test cluster."""
    client = redis.RedisCluster.from_url(redis_cluster_url)
    yield client
    client.close()


@pytest.fixture
def cluster_prefix(cluster_client: redis.RedisCluster) -> Iterator[str]:
    """A key prefix of this test's own on the cluster, cleaned up on every node."""
    prefix = f"gatest-{uuid.uuid4().hex[:12]}"
    yield prefix
    for key in list(cluster_client.scan_iter(match=f"{{{prefix}:*", count=1000)):
        cluster_client.delete(key)


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


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """URL of a PostgreSQL that answers: ``DATABASE_URL``, else 127.0.0.1:5432, database test.

    Never skipped: if none answers, every PostgreSQL test fails saying what to start.
    """
    url = os.environ.get("DATABASE_URL") or "postgresql://127.0.0.1:5432/test"
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as exc:
        shown = re.sub(r"//[^@/]*@", "//***@", url)  # no password in the report
        pytest.fail(
            f"no PostgreSQL answers at {shown} ({str(exc).strip()}). Start one with trust auth "
            "and a database named test (on the project's machines: `pg_ctlcluster "
            "--skip-systemctl-redirect $(ls /etc/postgresql) main start`; elsewhere e.g. "
            "`docker run -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust -e POSTGRES_DB=test "
            "postgres`), or set DATABASE_URL",
            pytrace=False,
        )
    return url


@pytest.fixture
def pg_schema(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL schema of this test's own, dropped with everything in it afterwards."""
    schema = f"gatest_{uuid.uuid4().hex[:12]}"
    yield schema
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis", "cluster"])
def saver(request: pytest.FixtureRequest) -> Iterator[CheckpointSaver]:
    """Each saver in turn: the conformance suite runs against memory, SQLite, PostgreSQL,
    Redis and a Cluster."""
    if request.param == "memory":
        yield MemorySaver()
        return
    if request.param == "sqlite":
        path = request.getfixturevalue("tmp_path") / "threads.sqlite"
        with SqliteSaver(path) as s:
            yield s
        return
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_url")
        with PostgresSaver.from_url(url, schema=request.getfixturevalue("pg_schema")) as pg:
            pg.setup()
            yield pg
        return
    if request.param == "cluster":
        url = request.getfixturevalue("redis_cluster_url")
        prefix = request.getfixturevalue("cluster_prefix")
        s = RedisSaver(redis.RedisCluster.from_url(url), prefix=prefix)
        yield s
        s.close()
        return
    url = request.getfixturevalue("redis_url")
    prefix = request.getfixturevalue("redis_prefix")
    s = RedisSaver.from_url(url, prefix=prefix)
    yield s
    s.close()


@pytest.fixture(params=["sqlite", "postgres", "redis", "cluster"])
def store(request: pytest.FixtureRequest) -> Iterator[Store]:
    """Each store that outlives a process in turn, for tests with several processes."""
    if request.param == "sqlite":
        path = request.getfixturevalue("tmp_path") / "threads.sqlite"
        SqliteSaver(path).close()  # creates the file and its tables
        yield Store("sqlite", str(path))
    elif request.param == "postgres":
        url, schema = request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema")
        with PostgresSaver.from_url(url, schema=schema) as pg:
            pg.setup()
        yield Store("postgres", url, schema)
    elif request.param == "cluster":
        url = request.getfixturevalue("redis_cluster_url")
        yield Store("cluster", url, request.getfixturevalue("cluster_prefix"))
    else:
        yield Store(
            "redis", request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        )


@pytest.fixture
def make_saver(request: pytest.FixtureRequest, saver: CheckpointSaver) -> object:
    """A factory for a second saver on the same storage (another "process")."""
    if isinstance(saver, MemorySaver):
        return lambda **kw: saver
    if isinstance(saver, SqliteSaver):
        made: list[SqliteSaver] = []
        request.addfinalizer(lambda: [s.close() for s in made])
        return lambda **kw: made.append(SqliteSaver(saver.path, **kw)) or made[-1]
    if isinstance(saver, PostgresSaver):
        url = request.getfixturevalue("postgres_url")
        pools: list[PostgresSaver] = []
        request.addfinalizer(lambda: [s.close() for s in pools])
        return lambda **kw: (
            pools.append(PostgresSaver.from_url(url, schema=saver.schema, **kw)) or pools[-1]
        )
    assert isinstance(saver, RedisSaver)
    if isinstance(saver.client, redis.RedisCluster):
        url = request.getfixturevalue("redis_cluster_url")
        return lambda **kw: RedisSaver(redis.RedisCluster.from_url(url), prefix=saver.prefix, **kw)
    url = request.getfixturevalue("redis_url")
    return lambda **kw: RedisSaver.from_url(url, prefix=saver.prefix, **kw)


@pytest.fixture(autouse=True, scope="session")
def _no_real_model_requests() -> Iterator[None]:
    """Tests never reach a real model server: only MockTransport clients may send."""
    from graphagent.models import allow_model_requests

    allow_model_requests(False)
    yield
    allow_model_requests(True)
