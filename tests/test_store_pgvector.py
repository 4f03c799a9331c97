"""PostgresStore's semantic search with pgvector, and without it, on one server.

The pgvector server is the test server when it has the extension, else a private one
(tests/_ltstores.py). Every ranking is compared with the exact scan's on the same items.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from _ltstores import pgvector_url, same_ranking

from checkpoint.errors import CheckpointStorageError
from checkpoint.store import PostgresStore
from checkpoint.store._pgvector import Query
from graphagent.models import FakeEmbeddings

__all__ = ["pgvector_url"]  # a fixture, imported for pytest

DIMS = 16


def index(**kw: Any) -> dict[str, Any]:
    return {"embed": FakeEmbeddings(DIMS), "dims": DIMS, **kw}


@pytest.fixture
def schemas(pgvector_url: str) -> Iterator[list[str]]:
    """Schemas a test names (appended to the list), dropped afterwards."""
    made: list[str] = []
    yield made
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        for schema in made:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def new_schema(schemas: list[str]) -> str:
    schema = f"gatest_{uuid.uuid4().hex[:12]}"
    schemas.append(schema)
    return schema


def fill(store: PostgresStore, n: int) -> None:
    ops = []
    for i in range(n):
        value = {"text": f"note {i} about topic {i % 7}", "n": i, "group": f"g{i % 3}"}
        ops.append((("notes", f"u{i % 4}"), f"k{i}", value))
    for namespace, key, value in ops:
        store.put(namespace, key, value)
    store.put(("notes", "u0"), "plain", {"text": "topic 3"}, index=False)


def ranking(store: PostgresStore, **kw: Any) -> list[tuple[str, float | None]]:
    return [(f.key, f.score) for f in store.search(("notes",), **kw)]


SEARCHES: list[dict[str, Any]] = [
    {"query": "topic 3", "limit": 10},
    {"query": "note 12 about topic 5", "limit": 5, "offset": 3},
    {"query": "topic 1", "limit": 10, "filter": {"group": "g1"}},
    {"query": "topic 2", "limit": 4, "filter": {"n": {"$gte": 50}}},
    # past the scored items: the unindexed one comes last, then nothing
    {"query": "topic 3", "limit": 5, "offset": 58},
    {"query": "topic 6", "limit": 200},
]


def test_pgvector_ranks_as_the_exact_scan(pgvector_url: str, schemas: list[str]) -> None:
    """The same items in a pgvector store and an exact-scan store rank the same (keys in
    order, scores to float32 precision), with filters, pages and unindexed items."""
    with (
        PostgresStore.from_url(pgvector_url, schema=new_schema(schemas), index=index()) as fast,
        PostgresStore.from_url(
            pgvector_url, schema=new_schema(schemas), index=index(), pgvector=False
        ) as exact,
    ):
        fill(fast, 60)
        fill(exact, 60)
        assert fast.pgvector is not None and exact.pgvector is None
        for kw in SEARCHES:
            got, want = ranking(fast, **kw), ranking(exact, **kw)
            same_ranking(got, want)
        assert ranking(fast, query="topic 3", limit=5, offset=58)[-1] == ("plain", None)


def test_the_search_reads_the_hnsw_index(pgvector_url: str, schemas: list[str]) -> None:
    """The store makes an HNSW index of its size, and its nearest-rows query is one the
    planner can answer from that index (an expression or size test that does not match the
    index's would leave it unused), sends the query vector once (binary) and is planned
    once (a generic plan) however many searches run it."""
    schema = new_schema(schemas)
    seen: list[tuple[str, list[Any]]] = []
    with PostgresStore.from_url(pgvector_url, schema=schema, index=index()) as store:
        fill(store, 30)
        rows = store._rows
        store._rows = lambda sql, params=(): seen.append((sql, list(params))) or rows(sql, params)  # type: ignore[method-assign]
        assert [f.key for f in store.search(("notes",), query="topic 3", limit=3)]
        store._rows = rows  # type: ignore[method-assign]
        nearest = [(sql, p) for sql, p in seen if "ORDER BY d LIMIT" in sql and "<#>" in sql]
        assert nearest, "the search did not run the nearest-rows query"
        sql, params = nearest[0]
        assert sql.count("%b") == 1 and isinstance(params[0], Query), sql
        names = [
            r[0]
            for r in store.conn.execute(
                "SELECT indexname FROM pg_indexes WHERE schemaname = %s", [schema]
            )
        ]
        assert f"graphagent_store_hnsw_{DIMS}" in names
        with store.conn.transaction():
            # as on a big table, where reading in index order beats sorting every row
            for setting in ("enable_seqscan", "enable_sort", "enable_bitmapscan"):
                store.conn.execute(f"SET LOCAL {setting} = off")
            # the store's cursor: it knows how to send the binary query vector
            cur = store._cursor
            plan = "\n".join(r[0] for r in cur.execute(f"EXPLAIN {sql}", params).fetchall())
        assert f"graphagent_store_hnsw_{DIMS}" in plan, plan
        for i in range(20):
            assert len(store.search(("notes",), query=f"topic {i % 7}", limit=3)) == 3
        plans = store.conn.execute(
            "SELECT generic_plans FROM pg_prepared_statements WHERE statement LIKE %s",
            ["%ORDER BY d LIMIT%"],
        ).fetchall()
        assert plans and plans[0][0] >= 5, plans


def test_a_selective_filter_still_fills_the_page(pgvector_url: str, schemas: list[str]) -> None:
    """An index scan yields a bounded number of rows before the filter drops some: when
    they come up short the page is ranked exactly, never cut."""
    with PostgresStore.from_url(pgvector_url, schema=new_schema(schemas), index=index()) as store:
        for i in range(400):
            store.put(("many",), f"k{i}", {"text": f"row {i}", "rare": i % 97 == 0})
        # the planner reads the HNSW index, as it would on a big table
        for setting in ("enable_seqscan", "enable_sort", "enable_bitmapscan"):
            store.conn.execute(f"SET {setting} = off")
        found = store.search(("many",), query="row 5", filter={"rare": True}, limit=10)
        assert sorted(f.key for f in found) == ["k0", "k194", "k291", "k388", "k97"]
        assert all(f.score is not None for f in found)
        # more rows than one index scan may return (hnsw.ef_search tops out at 1,000)
        big = store.search(("many",), query="row 5", limit=300, offset=50)
        assert len(big) == 300 and len({f.key for f in big}) == 300


def test_vectors_written_without_pgvector_are_ranked_with_it(
    pgvector_url: str, schemas: list[str]
) -> None:
    """Items a store wrote without pgvector get their pgvector column filled when a
    pgvector store opens the schema, and rank as before."""
    schema = new_schema(schemas)
    with PostgresStore.from_url(
        pgvector_url, schema=schema, index=index(), pgvector=False
    ) as before:
        fill(before, 20)
        want = ranking(before, query="topic 4", limit=8)
    with PostgresStore.from_url(pgvector_url, schema=schema, index=index()) as after:
        got = ranking(after, query="topic 4", limit=8)
        assert after.pgvector is not None
    assert [k for k, _ in got] == [k for k, _ in want]


@pytest.fixture
def unprivileged_url(pgvector_url: str) -> Iterator[str]:
    """A database without pgvector created, reached by a role that may not create it."""
    tag = uuid.uuid4().hex[:10]
    role, db = f"gatest_role_{tag}", f"gatest_db_{tag}"
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'CREATE DATABASE "{db}" OWNER "{role}"')
    base = psycopg.conninfo.conninfo_to_dict(pgvector_url)
    yield psycopg.conninfo.make_conninfo(**{**base, "user": role, "dbname": db})
    with psycopg.connect(pgvector_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')
        conn.execute(f'DROP ROLE IF EXISTS "{role}"')


def test_without_the_right_to_create_pgvector(unprivileged_url: str) -> None:
    """A role that cannot create the extension ranks with the exact scan (by default) or
    gets an error naming the fix (``pgvector=True``); nothing is left half set up."""
    with PostgresStore.from_url(unprivileged_url, index=index()) as store:
        fill(store, 12)
        assert store.pgvector is None
        assert ranking(store, query="topic 3", limit=3)[0][1] is not None
    strict = PostgresStore.from_url(unprivileged_url, index=index(), pgvector=True)
    with strict, pytest.raises(CheckpointStorageError, match="CREATE EXTENSION vector"):
        strict.search(("notes",), query="topic 3")
    with PostgresStore.from_url(unprivileged_url, index=index()) as again:
        assert len(again) == 13
