"""A PostgreSQL store outlives its connection: after a database restart (every
connection terminated, as ``pg_terminate_backend`` does here to this test's own), the
next operation of each kind succeeds on its first try, on a new connection."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from _pgconns import named_url, terminate

from checkpoint import CheckpointStorageError, PostgresStore


@pytest.fixture
def named(postgres_url: str) -> tuple[str, str]:
    """A URL whose connections carry this test's own application name, and the name."""
    return named_url(postgres_url)


@pytest.fixture
def store(named: tuple[str, str], pg_schema: str) -> Iterator[PostgresStore]:
    s = PostgresStore.from_url(named[0], schema=pg_schema)
    yield s
    s.close()


@pytest.mark.parametrize("op", ["get", "put", "search", "delete", "list_namespaces", "len"])
def test_each_operation_after_a_restart_succeeds_first_time(
    store: PostgresStore, named: tuple[str, str], postgres_url: str, op: str
) -> None:
    store.put(("users", "u1"), "fact", {"likes": "tea"})
    assert store.get(("users", "u1"), "fact") is not None
    assert terminate(postgres_url, named[1]) == 1
    if op == "get":
        item = store.get(("users", "u1"), "fact")
        assert item is not None and item.value == {"likes": "tea"}
    elif op == "put":
        store.put(("users", "u1"), "fact", {"likes": "coffee"})
    elif op == "search":
        assert [i.key for i in store.search(("users",))] == ["fact"]
    elif op == "delete":
        assert store.delete(("users", "u1"), "fact") is True
    elif op == "list_namespaces":
        assert store.list_namespaces() == [("users", "u1")]
    else:
        assert len(store) == 1
    item = store.get(("users", "u1"), "fact")
    expected = {"get": "tea", "put": "coffee", "search": "tea", "list_namespaces": "tea"}
    if op == "delete":
        assert item is None
    elif op != "len":
        assert item is not None and item.value["likes"] == expected[op]


async def test_the_async_methods_reconnect_too(
    store: PostgresStore, named: tuple[str, str], postgres_url: str
) -> None:
    await store.aput(("users", "u2"), "fact", {"likes": "tea"})
    assert terminate(postgres_url, named[1]) == 1
    item = await store.aget(("users", "u2"), "fact")
    assert item is not None and item.value == {"likes": "tea"}


def test_a_store_on_a_connection_of_yours_says_so_when_it_dies(
    named: tuple[str, str], pg_schema: str, postgres_url: str
) -> None:
    """A store made on a connection you passed in cannot make another one for you: the
    error says the connection was lost and what to do."""
    conn = psycopg.connect(named[0], autocommit=True)
    store = PostgresStore(conn, schema=pg_schema)
    try:
        store.put(("a",), "k", {"v": 1})
        terminate(postgres_url, named[1])
        with pytest.raises(CheckpointStorageError, match="connection"):
            store.get(("a",), "k")
    finally:
        conn.close()
