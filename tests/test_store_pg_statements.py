"""What PostgresStore sends per operation: one statement for a put and for a get (no
BEGIN/COMMIT around either), and searches PostgreSQL plans once per statement shape
(a generic plan) instead of at every call; filters on top-level and nested fields, with
names SQL would choke on, still match as the memory store's do."""

from __future__ import annotations

from typing import Any

import pytest

from checkpoint.store import MemoryStore, PostgresStore


class _Spy:
    """A cursor that notes each statement it runs."""

    def __init__(self, cur: Any, seen: list[str]) -> None:
        self._cur, self._seen = cur, seen

    def execute(self, sql: Any, params: Any = None, **kw: Any) -> Any:
        self._seen.append(str(sql))
        return self._cur.execute(sql, params, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)


def _statements(store: PostgresStore, run: Any) -> list[str]:
    seen: list[str] = []
    rows, cur = store._rows, store._get_cursor

    def spy_rows(sql: str, params: Any = ()) -> Any:
        seen.append(sql)
        return rows(sql, params)

    store._rows = spy_rows  # type: ignore[method-assign]
    store._get_cursor = _Spy(cur, seen)  # type: ignore[assignment]
    try:
        run()
    finally:
        store._rows = rows  # type: ignore[method-assign]
        store._get_cursor = cur
    return seen


def test_a_put_and_a_get_are_one_statement_each(postgres_url: str, pg_schema: str) -> None:
    with PostgresStore.from_url(postgres_url, schema=pg_schema) as store:
        store.put(("a",), "warm", {"x": 1})  # tables made, the first sweep done
        put = _statements(store, lambda: store.put(("a",), "k", {"x": 2}))
        again = _statements(store, lambda: store.put(("a",), "k", {"x": 3}))
        get = _statements(store, lambda: store.get(("a",), "k"))
        assert len(put) == 1 and put[0].lstrip().startswith("INSERT"), put
        assert len(again) == 1, again
        assert len(get) == 1 and get[0].startswith("SELECT"), get
        item = store.get(("a",), "k")
        assert item is not None and item.value == {"x": 3}


def _plans(store: PostgresStore, like: str) -> list[tuple[int, int]]:
    rows = store.conn.execute(
        "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
        [like],
    ).fetchall()
    return [(int(g), int(c)) for g, c in rows]


def test_a_filtered_search_is_planned_once(postgres_url: str, pg_schema: str) -> None:
    """psycopg prepares a statement run five times; PostgreSQL then keeps one generic plan
    only when its row counts match a custom plan's, which a ``LIMIT`` parameter prevents
    (every search was planned again: 0.15 ms)."""
    with PostgresStore.from_url(postgres_url, schema=pg_schema) as store:
        for i in range(2000):
            value = {"text": "likes tea", "category": f"c{i % 10}", "rank": i, "flag": i % 2 == 0}
            store.put(("bench", f"u{i % 100}"), f"k{i}", value)
        for i in range(30):
            found = store.search(("bench",), filter={"category": f"c{i % 10}"}, limit=10)
            assert [f.value["category"] for f in found] == [f"c{i % 10}"] * 10
            found = store.search(("bench",), filter={"rank": {"$gte": 1990 - i}}, limit=10)
            assert [f.value["rank"] for f in found] == list(range(1999, 1989, -1))
        plans = _plans(store, "%FROM (SELECT * FROM%")
        assert plans, "the window query was not prepared"
        assert len(plans) == 2 and min(generic for generic, _ in plans) >= 20, plans


@pytest.mark.parametrize(
    "filter",
    [
        {"it's": 1},
        {"0": "zero"},
        {"a b": True},
        {"nested.deep": 2},
        {"nested.deep": {"$gt": 1}},
        {"it's": {"$ne": 1}},
        {"missing": None},
    ],
)
def test_filters_on_awkward_field_names_match_as_in_memory(
    postgres_url: str, pg_schema: str, filter: dict[str, Any]
) -> None:
    values = [
        {"it's": 1, "0": "zero", "a b": True, "nested": {"deep": 2}},
        {"it's": 2, "0": "one", "a b": False, "nested": {"deep": 1}},
        {"other": 1},
    ]
    memory = MemoryStore()
    with PostgresStore.from_url(postgres_url, schema=pg_schema) as store:
        for i, value in enumerate(values):
            for s in (store, memory):
                s.put(("f",), f"k{i}", value)
        got = sorted(f.key for f in store.search(("f",), filter=filter))
        want = sorted(f.key for f in memory.search(("f",), filter=filter))
        assert got == want and want
