"""Fixtures for long-term memory stores: every backend in turn, each on storage of its own
(a temporary SQLite file, a PostgreSQL schema, a Redis key prefix), and a clock to move."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from checkpoint.store import BaseStore, MemoryStore, PostgresStore, RedisStore, SqliteStore
from checkpoint.store import base as store_base

BACKENDS = ["memory", "sqlite", "postgres", "redis"]
# semantic search runs on these and on PostgreSQL with pgvector (`pgvector_url`)
VECTOR_BACKENDS = [*BACKENDS, "pgvector"]
# the backends whose items live outside the store object (a file, a schema, a prefix)
DURABLE = BACKENDS[1:]

MakeStore = Callable[..., BaseStore]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest) -> Iterator[MakeStore]:
    """A factory of stores of one backend; every store it makes shares one storage
    (for memory, each call is a new store)."""
    yield from _factory(request, request.param)


def _factory(request: pytest.FixtureRequest, kind: str) -> Iterator[MakeStore]:
    made: list[BaseStore] = []

    def make(**kw: Any) -> BaseStore:
        store: BaseStore
        if kind == "memory":
            store = MemoryStore(**kw)
        elif kind == "sqlite":
            store = SqliteStore(request.getfixturevalue("tmp_path") / "store.sqlite", **kw)
        elif kind == "postgres":
            # the exact scan, even where the server has pgvector
            url = request.getfixturevalue("postgres_url")
            kw.setdefault("pgvector", False)
            store = PostgresStore.from_url(url, schema=request.getfixturevalue("pg_schema"), **kw)
        elif kind == "pgvector":
            url = request.getfixturevalue("pgvector_url")
            kw.setdefault("pgvector", True)
            store = PostgresStore.from_url(url, schema=request.getfixturevalue("pgv_schema"), **kw)
        else:
            url = request.getfixturevalue("redis_url")
            store = RedisStore.from_url(url, prefix=request.getfixturevalue("redis_prefix"), **kw)
        made.append(store)
        return store

    make.kind = kind  # type: ignore[attr-defined]
    yield make
    for store in made:
        store.close()


def same_ranking(got: list[tuple[str, float | None]], want: list[tuple[str, float | None]]) -> None:
    """The same items with the same scores (to float32 precision: one side may compute in
    float32), in the same order except among items whose scores tie at that precision."""
    assert len(got) == len(want)
    assert sorted(k for k, _ in got) == sorted(k for k, _ in want)
    scores = dict(want)
    for (key, score), (_, at) in zip(got, want, strict=True):
        expected = scores[key]
        assert (score is None) == (expected is None), key
        if score is not None and expected is not None and at is not None:
            assert score == pytest.approx(expected, abs=1e-5), key
            assert score == pytest.approx(at, abs=1e-5), key  # a near-tie, if the keys differ


@pytest.fixture
def lt_store(make_store: MakeStore) -> BaseStore:
    """One store of each backend in turn, with no index and no TTL."""
    return make_store()


class Clock:
    """Stands in for ``time.time`` inside the stores: tests move it instead of sleeping."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def time(self) -> float:
        return self.now

    def advance(self, minutes: float) -> None:
        self.now += minutes * 60.0


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """A clock the stores read (their "now", also sent to Redis scripts)."""
    fake = Clock()
    monkeypatch.setattr(store_base, "time", fake)
    return fake


# ---------------------------------------------------------------- PostgreSQL with pgvector


def _has_pgvector(url: str) -> bool:
    with psycopg.connect(url, autocommit=True, connect_timeout=3) as conn:
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')"
        ).fetchone()
    return bool(row and row[0])


def _pgserver_install() -> Path | None:
    """The PostgreSQL build (with pgvector) inside the ``pgserver`` package, found without
    importing it (its import warns, and warnings are errors here)."""
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    return root if (root / "bin" / "postgres").is_file() else None


INITDB = ["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"]
# on a Unix socket only (port 5432 names the socket file, in a directory of our own); no
# fsync: a test server
SERVER = ["-p", "5432", "-c", "listen_addresses=", "-c", "fsync=off"]


@pytest.fixture(scope="session")
def pgvector_url(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL with pgvector: the test server when it has the extension (tests/_system.py
    installs Debian's package where Debian has one), else a private server started from the
    ``pgserver`` package's build (PostgreSQL 16 with pgvector; a dev dependency), on a Unix
    socket in a temporary directory. Never skipped: without either, the tests fail saying so."""
    if _has_pgvector(postgres_url):
        yield postgres_url
        return
    install = _pgserver_install()
    if install is None:
        pytest.fail(
            "no PostgreSQL with pgvector: the test server lacks the extension and the "
            "pgserver package is missing (pip install -e '.[dev]')",
            pytrace=False,
        )
    workdir = Path(tempfile.mkdtemp(prefix="graphagent-pgvector-"))
    # PostgreSQL refuses to run as root: run it as the `postgres` user there
    user: str | None = None
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        user = "postgres"
        shutil.chown(workdir, user)
    data = workdir / "data"
    subprocess.run(
        [str(install / "bin" / "initdb"), "-D", str(data), *INITDB],
        check=True,
        capture_output=True,
        user=user,
    )
    log = open(workdir / "log", "wb")  # noqa: SIM115 (closed after the server stops)
    proc = subprocess.Popen(
        [str(install / "bin" / "postgres"), "-D", str(data), "-k", str(workdir), *SERVER],
        stdout=log,
        stderr=subprocess.STDOUT,
        user=user,
    )
    url = f"postgresql://postgres@/postgres?host={workdir}&port=5432"
    deadline = time.monotonic() + 60
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            break
        except psycopg.Error:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                log.close()
                pytest.fail(
                    "the private pgvector server did not start: "
                    + (workdir / "log").read_text(errors="replace")[-2000:],
                    pytrace=False,
                )
            time.sleep(0.1)
    yield url
    proc.terminate()  # a smart shutdown
    proc.wait(timeout=30)
    log.close()
    shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture
def pgv_schema(pgvector_url: str) -> Iterator[str]:
    """A schema of this test's own on the pgvector server, dropped afterwards."""
    schema = f"gatest_{uuid.uuid4().hex[:12]}"
    yield schema
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=VECTOR_BACKENDS)
def make_vector_store(request: pytest.FixtureRequest) -> Iterator[MakeStore]:
    """Like ``make_store``, over every backend and PostgreSQL with pgvector."""
    yield from _factory(request, request.param)
