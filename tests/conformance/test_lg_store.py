"""LangGraph's store tests, translated, on every backend.

Origin: langgraph ``libs/checkpoint/tests/test_store.py`` (InMemoryStore cases, and its
AsyncBatchedBaseStore cases as behaviour of graphagent's async methods),
``test_store_ttl.py`` and ``test_inmemory_store_dotted_filters.py``. Each test here runs on
memory, SQLite, PostgreSQL (its own schema) and Redis (its own prefix). LangGraph's
``CharacterEmbeddings(dims=500)`` test double is ``FakeEmbeddings`` here. Deliberate
differences are named in the test that meets them.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from _ltstores import MakeStore

from checkpoint.store import BaseStore, InvalidNamespaceError, PutOp
from graphagent.models import FakeEmbeddings

DIMS = 128


def _indexed(make_store: MakeStore) -> BaseStore:
    return make_store(index={"embed": FakeEmbeddings(DIMS), "dims": DIMS})


NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


def test_list_namespaces_basic(lt_store: BaseStore) -> None:
    """test_store.py::test_list_namespaces_basic: prefix, suffix, both, max_depth, limit,
    offset, "*" wildcards, and a prefix nothing has."""
    for i, ns in enumerate(NAMESPACES):
        lt_store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    ls = lt_store.list_namespaces
    assert ls(prefix=("a", "b")) == [NAMESPACES[i] for i in (0, 1, 2, 3)]
    assert ls(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert ls(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert ls(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert ls(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert ls(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert ls(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert ls(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert ls(prefix=("nonexistent",)) == []
    assert ls(prefix=("users", "123")) == [("users", "123")]


def test_list_namespaces_with_wildcards(lt_store: BaseStore) -> None:
    """test_store.py::test_list_namespaces_with_wildcards."""
    namespaces = [
        ("users", "123"),
        ("users", "456"),
        ("users", "789", "settings"),
        ("admin", "users", "789"),
        ("guests", "123"),
        ("guests", "456", "preferences"),
    ]
    for i, ns in enumerate(namespaces):
        lt_store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert lt_store.list_namespaces(prefix=("users", "*")) == namespaces[:3]
    assert lt_store.list_namespaces(suffix=("*", "preferences")) == [namespaces[5]]
    assert lt_store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    lt_store.put(("admin", "users", "settings", "789"), "foo", {"data": "some_val"})
    assert lt_store.list_namespaces(prefix=("*", "users"), suffix=("settings", "*")) == [
        ("admin", "users", "settings", "789")
    ]


def test_list_namespaces_pagination(lt_store: BaseStore) -> None:
    """test_store.py::test_list_namespaces_pagination: pages of five, in order."""
    for i in range(20):
        lt_store.put(("namespace", f"sub_{i:02d}"), f"id_{i:02d}", {"data": f"value_{i:02d}"})
    for offset in (0, 5, 15):
        assert lt_store.list_namespaces(prefix=("namespace",), limit=5, offset=offset) == [
            ("namespace", f"sub_{i:02d}") for i in range(offset, offset + 5)
        ]


def test_list_namespaces_max_depth(lt_store: BaseStore) -> None:
    """test_store.py::test_list_namespaces_max_depth: deeper namespaces are cut and merged."""
    for i, ns in enumerate(
        [
            ("a", "b", "c", "d"),
            ("a", "b", "c", "e"),
            ("a", "b", "f"),
            ("a", "g"),
            ("h", "i", "j", "k"),
        ]
    ):
        lt_store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert lt_store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "g"), ("h", "i")]


def test_list_namespaces_no_conditions_and_empty_store(lt_store: BaseStore) -> None:
    """test_store.py::test_list_namespaces_no_conditions and ::test_list_namespaces_empty_store."""
    assert lt_store.list_namespaces() == []
    namespaces = [("a", "b"), ("c", "d"), ("e", "f", "g")]
    for i, ns in enumerate(namespaces):
        lt_store.put(ns, f"id_{i}", {"data": f"value_{i:02d}"})
    assert lt_store.list_namespaces() == namespaces


def test_cannot_put_empty_namespace(lt_store: BaseStore) -> None:
    """test_store.py::test_cannot_put_empty_namespace: an empty namespace and an empty label
    are refused, sync and async, through put and through batch. Differences: LangGraph also
    refuses a '.' inside a label and a first label 'langgraph' (names its own server
    reserves); graphagent escapes every label, so both are ordinary labels here."""
    doc = {"foo": "bar"}
    for ns in [(), ("some", "fun", "")]:
        with pytest.raises(InvalidNamespaceError):
            lt_store.put(ns, "foo", doc)
        with pytest.raises(InvalidNamespaceError):
            asyncio.run(lt_store.aput(ns, "foo", doc))
        with pytest.raises(InvalidNamespaceError):
            lt_store.batch([PutOp(ns, "foo", doc)])
    for ns in [("foo", "langgraph", "foo"), ("langgraph", "foo"), ("the", "thing.about")]:
        lt_store.put(ns, "bar", doc)
        got = lt_store.get(ns, "bar")
        assert got is not None and got.value == doc
        assert lt_store.search(ns)[0].value == doc
        lt_store.delete(ns, "bar")
        assert lt_store.get(ns, "bar") is None


def test_put_ttl_as_timedelta_and_datetime(lt_store: BaseStore, clock: Any) -> None:
    """test_store_ttl.py::test_store_put_timedelta / ::test_store_aput_datetime: a ttl may be
    a timedelta or an aware datetime (the moment it expires), as well as minutes."""
    lt_store.put(("t",), "delta", {"a": 1}, ttl=timedelta(minutes=15))
    when = datetime.fromtimestamp(clock.now, tz=timezone.utc) + timedelta(minutes=60)
    asyncio.run(lt_store.aput(("t",), "moment", {"a": 1}, ttl=when))
    clock.advance(20)
    assert lt_store.get(("t",), "delta") is None
    assert lt_store.get(("t",), "moment", refresh_ttl=False) is not None
    clock.advance(41)
    assert lt_store.get(("t",), "moment") is None


def test_dotted_filters(lt_store: BaseStore) -> None:
    """test_inmemory_store_dotted_filters.py: "a.b" filters reach into nested dicts, with
    operators too, and a path through a non-dict is missing."""
    lt_store.put(("d",), "1", {"user": {"name": "ada", "age": 36}, "tags": ["x"]})
    lt_store.put(("d",), "2", {"user": {"name": "bob", "age": 17}})
    lt_store.put(("d",), "3", {"user": "flat"})
    found = lambda f: sorted(i.key for i in lt_store.search(("d",), filter=f))  # noqa: E731
    assert found({"user.name": "ada"}) == ["1"]
    assert found({"user.age": {"$gte": 18}}) == ["1"]
    assert found({"user.age": {"$lt": 18}, "user.name": {"$ne": "ada"}}) == ["2"]
    assert found({"user.name": None}) == ["3"]


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_vector_insert_with_auto_embedding(make_store: MakeStore, use_async: bool) -> None:
    """test_store.py::test_vector_insert_with_auto_embedding (and its async twin): items put
    without naming fields are embedded whole and found by a related query."""
    store = _indexed(make_store)
    docs = [
        ("doc1", {"text": "short text"}),
        ("doc2", {"text": "longer text document"}),
        ("doc3", {"text": "longest text document here"}),
        ("doc4", {"description": "text in description field"}),
        ("doc5", {"content": "text in content field"}),
        ("doc6", {"body": "text in body field"}),
    ]

    async def run() -> list[str]:
        for key, value in docs:
            await store.aput(("test",), key, value)
        return [r.key for r in await store.asearch(("test",), query="long text")]

    if use_async:
        order = asyncio.run(run())
    else:
        for key, value in docs:
            store.put(("test",), key, value)
        order = [r.key for r in store.search(("test",), query="long text")]
    assert "doc2" in order and "doc3" in order


def test_vector_update_with_embedding(make_store: MakeStore) -> None:
    """test_store.py::test_vector_update_with_embedding: a new value gets a new vector;
    index=False keeps an item out of the top results."""
    store = _indexed(make_store)
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    initial = store.search(("test",), query="Zany Xerxes")
    assert initial[0].key == "doc1"
    initial_score = initial[0].score
    assert initial_score is not None
    store.put(("test",), "doc1", {"text": "new text about dogs"})
    after = next(r.score for r in store.search(("test",), query="Zany Xerxes") if r.key == "doc1")
    assert after is not None and after < initial_score
    for r in store.search(("test",), query="new text about dogs"):
        if r.key == "doc1":
            assert r.score is not None and r.score > after
    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    top = store.search(("test",), query="new text about dogs", limit=3)
    assert not any(r.key == "doc4" for r in top)


def test_vector_search_with_filters(make_store: MakeStore) -> None:
    """test_store.py::test_vector_search_with_filters: a query ranks within a filter."""
    store = _indexed(make_store)
    for key, value in [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]:
        store.put(("test",), key, value)
    results = store.search(("test",), query="apple", filter={"color": "red"})
    assert [r.key for r in results][:1] == ["doc1"] and len(results) == 2
    results = store.search(("test",), query="car", filter={"color": "red"})
    assert [r.key for r in results][:1] == ["doc2"] and len(results) == 2
    results = store.search(("test",), query="bbbbluuu", filter={"score": {"$gt": 3.2}})
    assert len(results) == 3
    results = store.search(
        ("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"}
    )
    assert [r.key for r in results] == ["doc3"]


def test_batched_vector_search_concurrent(make_store: MakeStore) -> None:
    """test_store.py::test_async_batched_vector_search_concurrent: many concurrent puts,
    deletes and re-puts, then concurrent filtered queries that all honour their filters."""
    store = _indexed(make_store)
    colors = ["red", "blue", "green", "yellow", "purple"]
    things = ["apple", "car", "house", "book", "phone"]
    docs = [
        (
            f"doc{i}",
            {
                "text": f"{colors[i % 5]} {things[i % 5]}",
                "color": colors[i % 5],
                "score": [3.0, 3.5, 4.0, 4.5, 5.0][i % 5],
                "index": i,
            },
        )
        for i in range(50)
    ]
    queries: list[tuple[str, dict[str, Any]]] = [
        ("apple", {"color": "red"}),
        ("car", {"color": "blue"}),
        ("phone", {"score": {"$gt": 4.99}}),
        ("book", {"score": {"$lte": 3.5}}),
        ("house", {"index": {"$gt": 25}}),
        ("phone", {"index": {"$lte": 10}}),
    ]

    async def run() -> list[Any]:
        await asyncio.gather(*(store.aput(("test",), k, v) for k, v in docs))
        await asyncio.gather(*(store.adelete(("test",), k) for k, _ in docs))
        await asyncio.gather(*(store.aput(("test",), k, v) for k, v in docs))
        return await asyncio.gather(
            *(store.asearch(("test",), query=q, filter=f) for q, f in queries)
        )

    for results, (_, flt) in zip(asyncio.run(run()), queries, strict=True):
        assert results
        for r in results:
            for field, cond in flt.items():
                got = r.value[field]
                if isinstance(cond, dict):
                    ((op, want),) = cond.items()
                    assert {"$gt": got > want, "$lte": got <= want}[op]
                else:
                    assert got == cond


def test_vector_search_pagination(make_store: MakeStore) -> None:
    """test_store.py::test_vector_search_pagination: two pages differ and all five are found."""
    store = _indexed(make_store)
    for i in range(5):
        store.put(("test",), f"doc{i}", {"text": f"test document number {i}"})
    page1 = store.search(("test",), query="test", limit=2)
    page2 = store.search(("test",), query="test", limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2 and page1[0].key != page2[0].key
    assert len(store.search(("test",), query="test", limit=10)) == 5


def test_vector_search_edge_cases(make_store: MakeStore) -> None:
    """test_store.py::test_vector_search_edge_cases: empty, None, long and odd queries."""
    store = _indexed(make_store)
    store.put(("test",), "doc1", {"text": "test document"})
    for query in ["", None, "test " * 100, "test!@#$%^&*()"]:
        assert len(store.search(("test",), query=query)) == 1


def test_async_store_survives_cancelled_calls(lt_store: BaseStore) -> None:
    """test_store.py::test_async_batch_store_resilience and
    ::test_async_batch_store_handles_cancellation: LangGraph cancels its batching task and
    a pending aget; the store's next calls still work. graphagent has no background task
    to cancel, so what is cancelled here is a caller's aget and aput mid-flight."""
    doc = {"foo": "bar"}

    async def run() -> None:
        await lt_store.aput(("foo", "langgraph", "foo"), "bar", doc)
        for call in (
            lt_store.aget(("a",), "b"),
            lt_store.aput(("c",), "d", {"x": 1}),
            lt_store.asearch(("foo",)),
        ):
            pending = asyncio.ensure_future(call)
            await asyncio.sleep(0)
            pending.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pending
        found = await lt_store.asearch(("foo", "langgraph", "foo"))
        assert [f.value for f in found] == [doc]
        await lt_store.aput(("test", "namespace"), "key", {"baz": "qux"})
        got = await lt_store.aget(("test", "namespace"), "key")
        assert got is not None and got.value == {"baz": "qux"}

    asyncio.run(run())
    assert lt_store.get(("test", "namespace"), "key") is not None


def test_async_concurrent_calls(lt_store: BaseStore) -> None:
    """test_store.py::test_async_batch_store and ::test_async_batch_store_deduplication:
    concurrent agets each get their own item (equal reads equal), concurrent aputs to one
    key leave one whole value, concurrent equal searches agree. Difference: LangGraph
    merges concurrent calls into one batch and keeps the last put; here each call is its
    own, so the value left is one of the two, never a mix."""
    same, diff = {"value": "same"}, {"value": "different"}

    async def run() -> None:
        await asyncio.gather(
            lt_store.aput(("test",), "same", same), lt_store.aput(("test",), "different", diff)
        )
        a, b, c = await asyncio.gather(
            lt_store.aget(("test",), "same"),
            lt_store.aget(("test",), "same"),
            lt_store.aget(("test",), "different"),
        )
        assert a == b and a != c
        assert a is not None and a.value == same and c is not None and c.value == diff
        await asyncio.gather(
            lt_store.aput(("test",), "key", {"value": 1, "pad": "x" * 1000}),
            lt_store.aput(("test",), "key", {"value": 2, "pad": "y" * 1000}),
        )
        got = await lt_store.aget(("test",), "key")
        assert got is not None and got.value in (
            {"value": 1, "pad": "x" * 1000},
            {"value": 2, "pad": "y" * 1000},
        )
        left = got.value["value"]
        r1, r2 = await asyncio.gather(
            lt_store.asearch(("test",), filter={"value": left}),
            lt_store.asearch(("test",), filter={"value": left}),
        )
        assert r1 == r2 and [r.key for r in r1] == ["key"]

    asyncio.run(run())
