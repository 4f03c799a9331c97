"""Semantic search on every store, and the embeddings that feed it."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest
from _ltstores import VECTOR_BACKENDS, MakeStore, _factory, pgv_schema, pgvector_url

from checkpoint.store import MemoryStore, StoreError
from graphagent.errors import ModelResponseError, UserError
from graphagent.models import FakeEmbeddings, OpenAIEmbeddings, init_embeddings

DIMS = 64

__all__ = ["pgv_schema", "pgvector_url"]  # fixtures, imported for pytest


@pytest.fixture(params=VECTOR_BACKENDS)
def make_store(request: pytest.FixtureRequest) -> Any:
    """Every backend, and PostgreSQL ranking with pgvector."""
    yield from _factory(request, request.param)


def index(**kw: Any) -> dict[str, Any]:
    return {"embed": FakeEmbeddings(DIMS), "dims": DIMS, **kw}


DOCS = {
    "zebra": {"text": "zany zebra Xerxes", "color": "red", "score": 4.5},
    "dogs": {"text": "something about dogs", "color": "red", "score": 3.0},
    "birds": {"text": "text about birds", "color": "green", "score": 4.0},
    "cars": {"text": "blue cars drive fast", "color": "blue", "score": 3.5},
}


def test_query_ranks_by_cosine_with_scores(make_store: MakeStore) -> None:
    """The closest item comes first, with a score; scores fall down the list."""
    store = make_store(index=index(fields=["text"]))
    for key, value in DOCS.items():
        store.put(("docs",), key, value)
    found = store.search(("docs",), query="Zany Xerxes")
    assert found[0].key == "zebra"
    scores = [f.score for f in found]
    assert all(s is not None for s in scores)
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    assert found[0].score == pytest.approx(found[0].response_metadata["score"])
    birds = store.search(("docs",), query="birds", filter={"color": "green"})
    assert [b.key for b in birds] == ["birds"]
    red = store.search(("docs",), query="dogs", filter={"score": {"$lt": 4}, "color": "red"})
    assert [r.key for r in red] == ["dogs"]


def test_update_reembeds_and_index_false_is_listed_last(make_store: MakeStore) -> None:
    """A put replaces the vectors; an item put with index=False is kept, after scored ones."""
    store = make_store(index=index(fields=["text"]))
    for key, value in DOCS.items():
        store.put(("docs",), key, value)
    before = store.search(("docs",), query="zany zebra Xerxes", limit=1)[0]
    store.put(("docs",), "zebra", {"text": "new text about dogs"})
    after = {f.key: f.score for f in store.search(("docs",), query="zany zebra Xerxes")}
    assert before.score is not None and after["zebra"] is not None
    assert after["zebra"] < before.score
    store.put(("docs",), "plain", {"text": "zany zebra Xerxes"}, index=False)
    ranked = store.search(("docs",), query="zany zebra Xerxes", limit=10)
    assert ranked[-1].key == "plain" and ranked[-1].score is None
    assert "plain" not in [f.key for f in store.search(("docs",), query="zany", limit=4)]
    assert [f.key for f in store.search(("docs",), query="zany", limit=1, offset=4)] == ["plain"]


def test_pages_of_a_ranked_search_cover_every_item(make_store: MakeStore) -> None:
    """Pages of one query hold each item once, in one ranking."""
    store = make_store(index=index())
    for i in range(9):
        store.put(("p", str(i % 2)), f"d{i}", {"text": f"test document number {i}"})
    store.put(("p", "0"), "unindexed", {"text": "x"}, index=False)
    whole = [f.key for f in store.search(("p",), query="document 3", limit=20)]
    pages = [store.search(("p",), query="document 3", limit=3, offset=o) for o in range(0, 12, 3)]
    assert [f.key for page in pages for f in page] == whole
    assert len(whole) == 10 and whole[0] == "d3" and whole[-1] == "unindexed"


def test_fields_and_per_put_fields(make_store: MakeStore) -> None:
    """Only the index's fields are embedded (nested paths too); put(index=[...]) overrides;
    an item whose fields are all missing is stored unscored."""
    store = make_store(index=index(fields=["title", "meta.summary"]))
    store.put(("f",), "a", {"title": "penguins", "body": "volcanoes erupt"})
    store.put(("f",), "b", {"title": "x", "meta": {"summary": "volcanoes erupt"}})
    store.put(("f",), "c", {"body": "penguins"}, index=["body"])
    store.put(("f",), "d", {"other": "volcanoes erupt"})
    found = store.search(("f",), query="volcanoes erupt")
    assert found[0].key == "b"
    assert found[-1].key == "d" and found[-1].score is None
    scored = {f.key: f.score for f in store.search(("f",), query="penguins")}
    assert scored["c"] is not None and scored["a"] is not None


def test_expired_and_deleted_items_never_rank(make_store: MakeStore, clock: Any) -> None:
    """A semantic search skips items that expired or were deleted."""
    store = make_store(index=index())
    store.put(("e",), "gone", {"text": "zany zebra"}, ttl=1)
    store.put(("e",), "deleted", {"text": "zany zebra"})
    store.put(("e",), "kept", {"text": "quiet owl"})
    store.delete(("e",), "deleted")
    clock.advance(2)
    assert [f.key for f in store.search(("e",), query="zany zebra")] == ["kept"]


def test_embed_may_be_a_function_sync_or_async(make_store: MakeStore) -> None:
    """index embed takes a texts -> vectors function, sync or async, on sync and async calls."""
    fake = FakeEmbeddings(DIMS)

    async def aembed(texts: list[str]) -> list[list[float]]:
        return fake.embed_documents(texts)

    sync_store = make_store(index={"embed": fake.embed_documents, "dims": DIMS})
    sync_store.put(("s",), "k", {"text": "zany zebra"})
    assert sync_store.search(("s",), query="zebra")[0].score is not None

    async def main() -> None:
        store = make_store(index={"embed": aembed, "dims": DIMS})
        await store.aput(("a",), "k", {"text": "zany zebra"})
        await store.aput(("a",), "j", {"text": "quiet owl"})
        found = await store.asearch(("a",), query="zany zebra")
        assert found[0].key == "k" and found[0].score is not None

    asyncio.run(main())


def test_async_embed_function_in_a_running_loop_names_the_fix() -> None:
    """A sync put with an async-only embedder inside an event loop says to use aput."""

    async def aembed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0]] * len(texts)

    store = MemoryStore(index={"embed": aembed, "dims": 2})

    async def main() -> None:
        with pytest.raises(StoreError, match="aput"):
            store.put(("a",), "k", {"text": "x"})

    asyncio.run(main())
    store.put(("a",), "k", {"text": "x"})  # outside a loop the sync call runs it
    assert store.search(("a",), query="x")[0].score == pytest.approx(1.0)


def test_index_mistakes_are_named() -> None:
    """A wrong dims, a missing embed or an unknown option fails with the fix named."""
    with pytest.raises(StoreError, match="dims"):
        MemoryStore(index={"embed": FakeEmbeddings(4)})
    with pytest.raises(StoreError, match="needs 'embed'"):
        MemoryStore(index={"dims": 4})
    with pytest.raises(StoreError, match="unknown index option"):
        MemoryStore(index={"embed": FakeEmbeddings(4), "dims": 4, "field": ["x"]})
    with pytest.raises(StoreError, match="provider:model"):
        MemoryStore(index={"embed": "openai", "dims": 4})
    store = MemoryStore(index={"embed": FakeEmbeddings(4), "dims": 8})
    with pytest.raises(StoreError, match="dims=8"):
        store.put(("a",), "k", {"text": "x"})
    with pytest.raises(StoreError, match="needs a store made with index"):
        MemoryStore().put(("a",), "k", {"text": "x"}, index=["text"])


def test_provider_string_is_resolved_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    """'provider:model' builds nothing until a vector is needed, then uses init_embeddings."""
    store = MemoryStore(index={"embed": "ollama:nomic-embed-text", "dims": 8})
    assert store.index is not None
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://embed.test/v1")
    embedder = store.index.embedder
    assert isinstance(embedder, OpenAIEmbeddings) and embedder.model == "nomic-embed-text"
    assert embedder.http.base_url == "http://embed.test/v1"


def _server(seen: list[dict[str, Any]]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(
            {"url": str(request.url), "body": body, "auth": request.headers.get("authorization")}
        )
        data = [
            {"index": i, "embedding": [float(len(t)), 1.0, float(i)]}
            for i, t in enumerate(body["input"])
        ]
        return httpx.Response(200, json={"data": list(reversed(data)), "model": body["model"]})

    return httpx.MockTransport(handle)


def test_openai_embeddings_speak_the_embeddings_api() -> None:
    """POST /embeddings with model and inputs, batched; vectors come back in input order."""
    seen: list[dict[str, Any]] = []
    embed = OpenAIEmbeddings(
        "text-embedding-3-small",
        base_url="http://llm.test/v1",
        api_key="sk-test",
        batch_size=2,
        dimensions=3,
        transport=_server(seen),
    )
    vectors = embed.embed_documents(["a", "bbb", "cc"])
    assert vectors == [[1.0, 1.0, 0.0], [3.0, 1.0, 1.0], [2.0, 1.0, 0.0]]
    assert [s["body"]["input"] for s in seen] == [["a", "bbb"], ["cc"]]
    assert seen[0]["url"] == "http://llm.test/v1/embeddings"
    assert seen[0]["auth"] == "Bearer sk-test" and seen[0]["body"]["dimensions"] == 3
    assert asyncio.run(embed.aembed_query("dddd")) == [4.0, 1.0, 0.0]
    store = MemoryStore(index={"embed": embed, "dims": 3})
    store.put(("m",), "k", {"text": "x"})
    assert store.search(("m",), query="x")[0].score is not None


def test_openai_embeddings_refuse_a_malformed_answer() -> None:
    """An answer without one vector per text is a ModelResponseError, not a crash."""
    transport = httpx.MockTransport(lambda r: httpx.Response(200, json={"data": []}))
    embed = OpenAIEmbeddings("m", base_url="http://llm.test/v1", transport=transport)
    with pytest.raises(ModelResponseError, match="one 'data' entry per text"):
        embed.embed_documents(["a"])
    bad = httpx.MockTransport(lambda r: httpx.Response(200, json={"data": [{"embedding": "x"}]}))
    with pytest.raises(ModelResponseError, match="not a vector"):
        OpenAIEmbeddings("m", base_url="http://llm.test/v1", transport=bad).embed_query("a")


def test_init_embeddings_by_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """init_embeddings picks the provider's URL and key variables; Anthropic has none."""
    monkeypatch.setenv("DASHSCOPE_API_KEY", "ds-key")
    embed = init_embeddings("dashscope:text-embedding-v3")
    assert embed.model == "text-embedding-v3"
    assert embed.http.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert init_embeddings("ollama:nomic-embed-text", base_url="http://h/v1").http.base_url == (
        "http://h/v1"
    )
    for bad in ("anthropic:x", "nope:x", "openai"):
        with pytest.raises(UserError, match="provider:model"):
            init_embeddings(bad)


def test_fake_embeddings_are_deterministic_and_similar_for_similar_text() -> None:
    """The same text gives the same unit vector; shared words score higher than none."""
    fake = FakeEmbeddings(32)
    a, b, c = fake.embed_documents(["green tea", "green tea please", "volcano"])
    assert a == fake.embed_query("green tea") and len(a) == 32
    assert sum(x * x for x in a) == pytest.approx(1.0)
    dot = lambda u, v: sum(x * y for x, y in zip(u, v, strict=True))  # noqa: E731
    assert dot(a, b) > dot(a, c)


def test_sqlite_vec_query_ranks_like_the_exact_scan(tmp_path: Any) -> None:
    """The sqlite-vec ranking SQL (used when the extension loads) gives the exact scan's
    order, scores, unscored-last and pages. This Python's sqlite3 cannot load extensions,
    so a Python function with sqlite-vec's meaning stands in for vec_distance_cosine."""
    from array import array

    from checkpoint.store import SqliteStore

    def distance(a: bytes, b: bytes) -> float:
        x, y = array("f"), array("f")
        x.frombytes(a)
        y.frombytes(b)
        dot = sum(p * q for p, q in zip(x, y, strict=True))
        norm = (sum(p * p for p in x) * sum(q * q for q in y)) ** 0.5
        return 1.0 - dot / norm

    store = SqliteStore(tmp_path / "vec.sqlite", index=index(fields=["text"]))
    for key, value in DOCS.items():
        store.put(("docs",), key, value)
    store.put(("docs",), "plain", {"text": "zany zebra"}, index=False)
    exact = [(f.key, f.score) for f in store.search(("docs",), query="zany zebra", limit=10)]
    store.conn.create_function("vec_distance_cosine", 2, distance, deterministic=True)
    store.vec = True
    ranked = store.search(("docs",), query="zany zebra", limit=10)
    assert [f.key for f in ranked] == [k for k, _ in exact]
    for found, (_, score) in zip(ranked, exact, strict=True):
        assert (found.score is None) == (score is None)
        if score is not None:
            assert found.score == pytest.approx(score, abs=1e-5)
    page = store.search(("docs",), query="zany zebra", limit=2, offset=3)
    assert [f.key for f in page] == [k for k, _ in exact][3:5]
    store.close()


def test_numpy_and_pure_python_rank_alike(
    make_store: MakeStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without NumPy (pure Python) and with it (one matrix product), the same items rank
    the same, items with two embedded fields scoring as their best one; items put while
    NumPy was missing are ranked with it later."""
    from _ltstores import same_ranking

    from checkpoint.store import _vectors

    assert _vectors.HAVE_NUMPY, "numpy is in the `vector` extra, which `make test` installs"
    monkeypatch.setattr(_vectors, "HAVE_NUMPY", False)
    store = make_store(index=index(fields=["text", "title"]))
    for i in range(40):
        store.put(("r", f"n{i % 3}"), f"k{i}", {"text": f"item {i} on {i % 5}", "title": f"t{i}"})
    store.put(("r", "n0"), "plain", {"text": "on 2"}, index=False)
    searches: list[dict[str, Any]] = [
        {"query": "item 7 on 2", "limit": 10},
        {"query": "t12", "limit": 5, "offset": 3},
        {"query": "on 4", "limit": 50},
    ]
    pure = [[(f.key, f.score) for f in store.search(("r",), **kw)] for kw in searches]
    monkeypatch.setattr(_vectors, "HAVE_NUMPY", True)
    for kw, want in zip(searches, pure, strict=True):
        same_ranking([(f.key, f.score) for f in store.search(("r",), **kw)], want)
    assert pure[2][-1] == ("plain", None)


def test_equal_scores_page_newest_first(make_store: MakeStore) -> None:
    """Items with the same vector tie: they come newest first, and pages cut through the
    tie without losing or repeating one (the exact scans keep only the best few scores)."""
    store = make_store(index=index(fields=["text"]))
    store.put(("t",), "other1", {"text": "quiet owl at night"})
    for i in range(12):
        store.put(("t",), f"same{i:02d}", {"text": "zany zebra"})
    store.put(("t",), "other2", {"text": "blue cars drive fast"})
    pages = [store.search(("t",), query="zany zebra", limit=5, offset=o) for o in (0, 5, 10)]
    keys = [f.key for page in pages for f in page]
    assert keys[:12] == [f"same{i:02d}" for i in reversed(range(12))]
    assert sorted(keys[12:]) == ["other1", "other2"]
    assert len({f.score for f in pages[0]}) == 1
