"""Fixtures for long-term memory stores: every backend in turn, each on storage of its own
(a temporary SQLite file, a PostgreSQL schema, a Redis key prefix), and a clock to move."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from _pgserver import NoPgvector, pgvector_server

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


@pytest.fixture(scope="session")
def pgvector_url(postgres_url: str) -> Iterator[str]:
    """A PostgreSQL with pgvector (see tests/_pgserver.py). Never skipped: without one, the
    tests fail saying what is missing."""
    try:
        with pgvector_server(postgres_url) as url:
            yield url
    except NoPgvector as exc:
        pytest.fail(str(exc), pytrace=False)


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
