"""LangGraph's semantic-search store tests, translated, on every backend and pgvector.

Origin: langgraph ``libs/checkpoint/tests/test_store.py`` (``test_vector_store_initialization``,
``test_embed_with_path``, ``test_non_ascii``, ``test_get_text_at_path``),
``libs/checkpoint-postgres/tests/test_store.py`` and ``test_async_store.py``
(``test_embed_with_path_operation_config``, ``test_scores``, ``test_search_sorting``,
``test_vector_search_with_filters`` with ``refresh_ttl``) and
``libs/checkpoint-sqlite/tests/test_store.py`` (the same cases). LangGraph's
``CharacterEmbeddings`` test double is ``FakeEmbeddings`` here; its pgvector distance
variants (l2, inner product, halfvec) have no counterpart: graphagent ranks by cosine on
every backend, so the score is checked against the cosine it must equal.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest
from _ltstores import MakeStore, make_vector_store, pgv_schema, pgvector_url

from checkpoint.store import BaseStore
from graphagent.models import FakeEmbeddings

__all__ = ["make_vector_store", "pgv_schema", "pgvector_url"]  # fixtures, for pytest

DIMS = 128


def _store(make: MakeStore, **index: Any) -> BaseStore:
    return make(index={"embed": FakeEmbeddings(DIMS), "dims": DIMS, **index})


def _cosine(a: list[float], b: list[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(x * x for x in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb) if na and nb else 0.0


def test_vector_store_initialization(make_vector_store: MakeStore) -> None:
    """test_store.py::test_vector_store_initialization (all three packages): the store
    keeps the index it was given (LangGraph's ``index_config`` is ``index`` here)."""
    fake = FakeEmbeddings(DIMS)
    store = make_vector_store(index={"embed": fake, "dims": DIMS})
    assert store.index is not None
    assert store.index.dims == DIMS and store.index.embedder is fake
    assert store.index.fields == ("$",)
    assert make_vector_store().index is None


def test_embed_with_path(make_vector_store: MakeStore) -> None:
    """checkpoint test_store.py::test_embed_with_path: store-level fields (a missing one is
    skipped), a query scores an item by its best field, an unindexed field scores low;
    then fields per put on a store whose own fields match nothing, and index=False items
    listed after the scored ones, without a score."""
    store = _store(make_vector_store, fields=["key0", "key1", "key3"])
    asyncio.run(store.aput(("test",), "doc1", {"key1": "xxx", "key2": "yyy", "key3": "zzz"}))
    asyncio.run(
        store.aput(("test",), "doc2", {"key0": "uuu", "key1": "vvv", "key2": "www", "key3": "xxx"})
    )
    found = asyncio.run(store.asearch(("test",), query="xxx"))
    assert len(found) == 2 and found[0].key != found[1].key
    best = found[0].score
    assert best is not None and best == pytest.approx(found[1].score, abs=1e-5)
    found = store.search(("test",), query="uuu")
    assert [f.key for f in found] == ["doc2", "doc1"]
    assert found[0].score == pytest.approx(best, abs=1e-5) and found[0].score > found[1].score
    found = store.search(("test",), query="www")
    assert len(found) == 2 and all(f.score is not None and f.score < best for f in found)

    store = _store(make_vector_store, fields=["key17"])
    store.put(("o",), "doc3", {"key0": "aaa", "key1": "bbb", "key2": "ccc", "key3": "ddd"},
              index=["key0", "key1"])  # fmt: skip
    store.put(("o",), "doc4", {"key0": "eee", "key1": "bbb", "key2": "fff", "key3": "ggg"},
              index=["key1", "key3"])  # fmt: skip
    for query, first in [("aaa", "doc3"), ("ggg", "doc4")]:
        found = store.search(("o",), query=query)
        assert [f.key for f in found][:1] == [first] and len(found) == 2
        assert found[0].score > found[1].score  # type: ignore[operator]
    found = store.search(("o",), query="bbb")
    assert {f.key for f in found} == {"doc3", "doc4"}
    assert found[0].score == pytest.approx(found[1].score, abs=1e-5)
    assert all(f.score < best for f in store.search(("o",), query="ccc"))  # type: ignore[operator]
    store.put(("o",), "doc5", {"key0": "hhh", "key1": "iii"}, index=False)
    found = store.search(("o",), query="hhh")
    assert [f.key for f in found][-1] == "doc5" and found[-1].score is None and len(found) == 3
    plain = store.search(("o",))
    assert len(plain) == 3 and all(f.score is None for f in plain)


@pytest.mark.parametrize("query", ["aaa", "bbb", "ccc", "abcd", "poisson"])
def test_scores(make_vector_store: MakeStore, query: str) -> None:
    """postgres/sqlite test_store.py::test_scores: the score is the cosine similarity of
    the query's and the field's vectors (a field named at put but absent adds nothing)."""
    fake = FakeEmbeddings(DIMS)
    store = make_vector_store(index={"embed": fake, "dims": DIMS, "fields": ["key0"]})
    store.put(("test",), "doc", {"key0": "aaa"}, index=["key0", "key1"])
    found = store.search((), query=query)
    want = _cosine(fake.embed_query(query), fake.embed_query("aaa"))
    assert len(found) == 1 and found[0].score == pytest.approx(want, abs=1e-4)


def test_search_sorting(make_vector_store: MakeStore) -> None:
    """postgres test_async_store.py::test_search_sorting: the one match ranks first among
    many non-matches in other namespaces, ten distinct items per page. LangGraph puts
    2 x 100 decoys; 2 x 30 keep the shape."""
    store = _store(make_vector_store, fields=["key1"])

    async def fill() -> None:
        await store.aput(("test", "M"), "M", {"key1": "mmm"})
        for side in ("A", "Z"):
            for i in range(30):
                await store.aput(("test", side), f"{side}{i}", {"key1": "no"})

    asyncio.run(fill())
    found = asyncio.run(store.asearch(("test",), query="mmm", limit=10))
    assert len(found) == 10 and len({f.key for f in found}) == 10
    assert found[0].key == "M" and found[0].score > found[1].score  # type: ignore[operator]


@pytest.mark.parametrize("refresh_ttl", [True, False])
def test_vector_search_with_filters_and_ttl(
    make_vector_store: MakeStore, refresh_ttl: bool
) -> None:
    """postgres test_store.py::test_vector_search_with_filters (its vector store has a TTL
    with refresh_on_read, and each search passes refresh_ttl): the best match comes first
    within each filter."""
    store = make_vector_store(
        index={"embed": FakeEmbeddings(DIMS), "dims": DIMS, "fields": ["text"]},
        ttl={"default_ttl": 2, "refresh_on_read": True},
    )
    for key, value in [
        ("doc1", {"text": "red apple", "color": "red", "score": 4.5}),
        ("doc2", {"text": "red car", "color": "red", "score": 3.0}),
        ("doc3", {"text": "green apple", "color": "green", "score": 4.0}),
        ("doc4", {"text": "blue car", "color": "blue", "score": 3.5}),
    ]:
        store.put(("test",), key, value)
    s = lambda q, f: store.search(("test",), query=q, filter=f, refresh_ttl=refresh_ttl)  # noqa: E731
    found = s("apple", {"color": "red"})
    assert len(found) == 2 and found[0].key == "doc1"
    found = s("car", {"color": "red"})
    assert len(found) == 2 and found[0].key == "doc2"
    found = s("blue car", {"score": {"$gt": 3.2}})
    assert len(found) == 3 and found[0].key == "doc4"
    assert [f.key for f in s("apple", {"score": {"$gte": 4.0}, "color": "green"})] == ["doc3"]


def test_non_ascii(make_vector_store: MakeStore) -> None:
    """checkpoint/sqlite/postgres test_store.py::test_non_ascii: Chinese, Japanese,
    Korean, Russian and Hindi texts each find themselves first."""
    store = _store(make_vector_store)
    texts = ["这是中文", "これは日本語です", "이건 한국어야", "Это русский", "यह रूसी है"]
    for i, text in enumerate(texts, 1):
        store.put(("user_123", "memories"), str(i), {"text": text})
    for i, text in enumerate(texts, 1):
        assert store.search(("user_123", "memories"), query=text)[0].key == str(i)


NESTED = {
    "name": "test",
    "info": {
        "age": 25,
        "tags": ["a", "b", "c"],
        "metadata": {"created": "2024-01-01", "updated": "2024-01-02"},
    },
    "items": [
        {"id": 1, "value": "first", "tags": ["x", "y"]},
        {"id": 2, "value": "second", "tags": ["y", "z"]},
        {"id": 3, "value": "third", "tags": ["z", "w"]},
    ],
    "empty": None,
    "zeros": [0, 0.0, "0"],
    "empty_list": [],
    "empty_dict": {},
}


@pytest.mark.parametrize(
    ("path", "texts"),
    [
        ("name", ["test"]),
        ("info.age", ["25"]),
        ("info.metadata.created", ["2024-01-01"]),
        ("items[0].value", ["first"]),
        ("items[-1].value", ["third"]),
        ("items[1].tags[0]", ["y"]),
        ("items[*].value", ["first", "second", "third"]),
        ("info.metadata.*", ["2024-01-01", "2024-01-02"]),
        ("{name,info.age}", ["test", "25"]),
        ("items[*].{id,value}", ["1", "first", "2", "second", "3", "third"]),
        ("items[*].tags[*]", ["x", "y", "y", "z", "z", "w"]),
        ("nonexistent", []),
        ("items[99].value", []),
        ("items[*].nonexistent", []),
        ("empty", []),
        ("empty_list", ["[]"]),
        ("empty_dict", ["{}"]),
        ("zeros[*]", ["0", "0.0", "0"]),
        ("items[].value", []),
        ("items[abc].value", []),
        ("{unclosed", []),
        ("nested[{invalid}]", []),
    ],
)
def test_get_text_at_path(path: str, texts: list[str]) -> None:
    """checkpoint test_store.py::test_get_text_at_path: the index ``fields`` syntax
    (dotted names, ``[i]``, ``[-1]``, ``[*]``, ``*``, ``{a,b}``) picks these texts; a path
    that finds nothing, or is malformed, embeds nothing. (LangGraph tests its helper; here
    the texts a put hands the embedder are checked.)"""
    seen: list[str] = []

    def embed(batch: list[str]) -> list[list[float]]:
        seen.extend(batch)
        return [[1.0, 0.0] for _ in batch]

    from checkpoint.store import MemoryStore

    store = MemoryStore(index={"embed": embed, "dims": 2, "fields": [path]})
    store.put(("t",), "k", NESTED)
    assert sorted(seen) == sorted(texts)
    found = store.search(("t",), query="q")
    assert len(found) == 1 and (found[0].score is None) == (not texts)


def test_path_fields_on_every_backend(make_vector_store: MakeStore) -> None:
    """checkpoint test_store.py::test_get_text_at_path, on each backend: every text a
    ``[*]`` field picks is embedded (and kept) on its own, so any of them finds the item."""
    store = _store(make_vector_store, fields=["items[*].value", "name"])
    store.put(("p",), "nested", NESTED)
    store.put(("p",), "other", {"name": "unrelated words", "items": [{"value": "nothing"}]})
    for query in ["first", "second", "third"]:
        found = store.search(("p",), query=query)
        assert found[0].key == "nested" and found[0].score == pytest.approx(1.0, abs=1e-4)
    store.put(("p",), "nested", {**NESTED, "items": [{"value": "fourth"}]})
    found = store.search(("p",), query="second")
    assert found[0].score is not None and found[0].score < 0.99  # the old vectors are gone
