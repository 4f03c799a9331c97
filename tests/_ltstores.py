"""Fixtures for long-term memory stores: every backend in turn, each on storage of its own
(a temporary SQLite file, a PostgreSQL schema, a Redis key prefix), and a clock to move."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from checkpoint.store import BaseStore, MemoryStore, PostgresStore, RedisStore, SqliteStore
from checkpoint.store import base as store_base

BACKENDS = ["memory", "sqlite", "postgres", "redis"]

MakeStore = Callable[..., BaseStore]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest) -> Iterator[MakeStore]:
    """A factory of stores of one backend; every store it makes shares one storage
    (for memory, each call is a new store)."""
    made: list[BaseStore] = []
    kind = request.param

    def make(**kw: Any) -> BaseStore:
        store: BaseStore
        if kind == "memory":
            store = MemoryStore(**kw)
        elif kind == "sqlite":
            store = SqliteStore(request.getfixturevalue("tmp_path") / "store.sqlite", **kw)
        elif kind == "postgres":
            url = request.getfixturevalue("postgres_url")
            store = PostgresStore.from_url(url, schema=request.getfixturevalue("pg_schema"), **kw)
        else:
            url = request.getfixturevalue("redis_url")
            store = RedisStore.from_url(url, prefix=request.getfixturevalue("redis_prefix"), **kw)
        made.append(store)
        return store

    make.kind = kind  # type: ignore[attr-defined]
    yield make
    for store in made:
        store.close()


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
