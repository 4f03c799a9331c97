"""LangGraph's SQL store tests, translated, on every backend.

Origin: langgraph ``libs/checkpoint-sqlite/tests/test_store.py`` and
``test_async_store.py``, ``libs/checkpoint-postgres/tests/test_store.py`` and
``test_async_store.py``: the cases they share (batches, basic operations, namespace
scoping, filters that must not inject SQL, TTL) run here on memory, SQLite, PostgreSQL
(its own schema) and Redis (its own prefix), not on the one backend their file was written
for. Their vector cases are in ``test_lg_store_vectors.py``. Cases that test a private
helper of theirs (``_escape_like_literal``, ``_namespace_match_pattern``, the migrations
list, which SQL a query plans) have no counterpart: the behaviour those helpers serve is
tested here instead. Each test names its origin; differences are named where they occur.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from _ltstores import MakeStore

from checkpoint.store import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    PutOp,
    SearchOp,
    StoreError,
)


def _namespaces(store: BaseStore, prefix: tuple[str, ...]) -> set[tuple[str, ...]]:
    return {item.namespace for item in store.search(prefix, limit=100)}


# ---------------------------------------------------------------- batches


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_batch_order(lt_store: BaseStore, use_async: bool) -> None:
    """sqlite/postgres test_store.py::test_batch_order and test_async_store.py::
    test_abatch_order: results line up with mixed ops, in either order, and a put in the
    middle of a batch lands."""
    lt_store.put(("test", "foo"), "key1", {"data": "value1"})
    lt_store.put(("test", "bar"), "key2", {"data": "value2"})
    run = (lambda ops: asyncio.run(lt_store.abatch(ops))) if use_async else lt_store.batch

    got = run(
        [
            GetOp(("test", "foo"), "key1"),
            PutOp(("test", "bar"), "key2", {"data": "value2"}),
            SearchOp(("test",), filter={"data": "value1"}, limit=10, offset=0),
            ListNamespacesOp(limit=10, offset=0),
            GetOp(("test",), "key3"),
        ]
    )
    assert len(got) == 5
    assert isinstance(got[0], Item) and got[0].value == {"data": "value1"}
    assert (got[0].key, got[0].namespace) == ("key1", ("test", "foo"))
    assert got[1] is None
    assert [(i.key, i.value) for i in got[2]] == [("key1", {"data": "value1"})]
    assert ("test", "foo") in got[3] and ("test", "bar") in got[3]
    assert got[4] is None

    got = run(
        [
            SearchOp(("test",), limit=5, offset=0),
            GetOp(("test", "bar"), "key2"),
            ListNamespacesOp(limit=5, offset=0),
            PutOp(("test",), "key3", {"data": "value3"}),
            GetOp(("test", "foo"), "key1"),
        ]
    )
    assert len(got[0]) == 2
    assert got[1].value == {"data": "value2"} and got[1].namespace == ("test", "bar")
    assert got[2] == [("test", "bar"), ("test", "foo")]
    assert got[3] is None
    assert got[4].value == {"data": "value1"}
    item3 = lt_store.get(("test",), "key3")
    assert item3 is not None and item3.value == {"data": "value3"}


def test_batch_get_put_search_and_list_ops(lt_store: BaseStore) -> None:
    """sqlite/postgres test_store.py::test_batch_get_ops, ::test_batch_put_ops (a PutOp
    with value None deletes), ::test_batch_search_ops and ::test_batch_list_namespaces_ops."""
    assert lt_store.batch(
        [
            PutOp(("test",), "key1", {"data": "value1"}),
            PutOp(("test",), "key2", {"data": "value2"}),
            PutOp(("test",), "key3", None),
        ]
    ) == [None, None, None]
    got = lt_store.batch([GetOp(("test",), k) for k in ("key1", "key2", "key3")])
    assert [g.key if g else None for g in got] == ["key1", "key2", None]

    for ns, key, value in [
        (("s", "foo"), "key1", {"data": "value1", "tag": "a"}),
        (("s", "bar"), "key2", {"data": "value2", "tag": "a"}),
        (("s", "baz"), "key3", {"data": "value3", "tag": "b"}),
    ]:
        lt_store.put(ns, key, value)
    tagged, first_two, foo = lt_store.batch(
        [
            SearchOp(("s",), filter={"tag": "a"}, limit=10),
            SearchOp(("s",), limit=2),
            SearchOp(("s", "foo"), limit=10),
        ]
    )
    assert sorted(i.key for i in tagged) == ["key1", "key2"]
    assert len(first_two) == 2
    assert [i.namespace for i in foo] == [("s", "foo")]

    lt_store.clear()
    data = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("prod", "documents", "public"),
    ]
    for i, ns in enumerate(data):
        lt_store.put(ns, f"d{i}", {"content": "doc"})
    every, shallow, public = lt_store.batch(
        [
            ListNamespacesOp(limit=10),
            ListNamespacesOp(max_depth=2, limit=10),
            ListNamespacesOp(suffix=("public",), limit=10),
        ]
    )
    assert sorted(every) == sorted(data)
    assert shallow == [("prod", "documents"), ("test", "documents"), ("test", "images")]
    assert public == sorted(ns for ns in data if ns[-1] == "public")


# ---------------------------------------------------------------- basic operations


def test_basic_store_ops(lt_store: BaseStore, clock: Any) -> None:
    """sqlite/postgres test_store.py::test_basic_store_ops: put, get, update (a later
    ``updated_at``, the same ``created_at``), another namespace misses, delete."""
    ns = ("test", "documents")
    lt_store.put(ns, "doc1", {"title": "Test Document", "content": "Hello, World!"})
    item = lt_store.get(ns, "doc1")
    assert item is not None and (item.namespace, item.key) == (ns, "doc1")
    assert item.value == {"title": "Test Document", "content": "Hello, World!"}
    clock.advance(1)
    lt_store.put(ns, "doc1", {"title": "Updated Document", "content": "Hello, Updated!"})
    updated = lt_store.get(ns, "doc1")
    assert updated is not None and updated.value["title"] == "Updated Document"
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at
    assert lt_store.get(("test", "other_documents"), "doc1") is None
    lt_store.delete(ns, "doc1")
    assert lt_store.get(ns, "doc1") is None


def test_list_namespaces_and_search_take_lists(lt_store: BaseStore) -> None:
    """sqlite/postgres test_store.py::test_list_namespaces and ::test_search (and
    TestSqliteStore's copies): prefixes given as lists, filters, depth and pages."""
    spaces = [
        ("test", "documents", "public"),
        ("test", "documents", "private"),
        ("test", "images", "public"),
        ("test", "images", "private"),
        ("prod", "documents", "public"),
        ("prod", "documents", "private"),
    ]
    for ns in spaces:
        lt_store.put(ns, "dummy", {"content": "dummy"})
    assert len(lt_store.list_namespaces()) == 6
    tests = lt_store.list_namespaces(prefix=["test"])  # type: ignore[arg-type]
    assert len(tests) == 4 and all(ns[0] == "test" for ns in tests)
    public = lt_store.list_namespaces(suffix=["public"])  # type: ignore[arg-type]
    assert len(public) == 3 and all(ns[-1] == "public" for ns in public)
    assert all(len(ns) <= 2 for ns in lt_store.list_namespaces(max_depth=2))
    assert len(lt_store.list_namespaces(limit=3)) == 3
    for ns in spaces:
        lt_store.delete(ns, "dummy")
    assert lt_store.list_namespaces() == []

    for ns, key, value in [
        (("test", "docs"), "doc1", {"title": "First Doc", "author": "Alice", "tags": ["a"]}),
        (("test", "docs"), "doc2", {"title": "Second Doc", "author": "Bob", "tags": ["b"]}),
        (("test", "images"), "img1", {"title": "Image 1", "author": "Alice", "tags": ["c"]}),
    ]:
        lt_store.put(ns, key, value)
    assert len(lt_store.search(["test"])) == 3  # type: ignore[arg-type]
    docs = lt_store.search(["test", "docs"])  # type: ignore[arg-type]
    assert len(docs) == 2 and all(i.namespace == ("test", "docs") for i in docs)
    alice = lt_store.search(["test"], filter={"author": "Alice"})  # type: ignore[arg-type]
    assert sorted(i.key for i in alice) == ["doc1", "img1"]
    assert len(lt_store.search(("test",), limit=2)) == 2
    assert len(lt_store.search(("test",), offset=2)) == 1


# ---------------------------------------------------------------- namespace scoping


def test_search_namespace_segment_boundary(lt_store: BaseStore) -> None:
    """sqlite/postgres test_store.py::test_search_namespace_segment_boundary: a prefix
    scopes whole labels ("foo" is not "foobar" or "foo2"; "fo" matches nothing)."""
    for ns in [
        ("foo",),
        ("foo", "child"),
        ("foo", "child", "deep"),
        ("foobar",),
        ("foobar", "baz"),
        ("foo2",),
    ]:
        lt_store.put(ns, "k", {"v": 1})
    assert _namespaces(lt_store, ("foo",)) == {("foo",), ("foo", "child"), ("foo", "child", "deep")}
    assert _namespaces(lt_store, ("foobar",)) == {("foobar",), ("foobar", "baz")}
    assert _namespaces(lt_store, ("foo", "child")) == {("foo", "child"), ("foo", "child", "deep")}
    assert _namespaces(lt_store, ("foo2",)) == {("foo2",)}
    assert _namespaces(lt_store, ("fo",)) == set()


def test_search_empty_prefix_is_unconstrained(lt_store: BaseStore) -> None:
    """sqlite/postgres test_store.py::test_search_empty_prefix_is_unconstrained."""
    for ns in [("a",), ("b", "c"), ("d", "e", "f")]:
        lt_store.put(ns, "k", {"v": 1})
    assert _namespaces(lt_store, ()) == {("a",), ("b", "c"), ("d", "e", "f")}


def test_search_namespace_wildcard_chars_are_literal(lt_store: BaseStore) -> None:
    """sqlite test_store.py::test_search_namespace_wildcard_chars_are_literal and postgres
    ::test_search_namespace_like_metacharacters: LIKE, GLOB and Redis glob characters in
    labels match only themselves (and each label still matches itself)."""
    for ns in [
        ("user_1",),
        ("user_1", "child"),
        ("userX1",),
        ("a%b",),
        ("axxb",),
        ("star*",),
        ("starX",),
        ("q?m",),
        ("qXm",),
        ("br[ack]et",),
        ("brXacXket",),
    ]:
        lt_store.put(ns, "k", {"v": 1})
    assert _namespaces(lt_store, ("user_1",)) == {("user_1",), ("user_1", "child")}
    assert _namespaces(lt_store, ("a%b",)) == {("a%b",)}
    assert _namespaces(lt_store, ("star*",)) == {("star*",)}
    assert _namespaces(lt_store, ("q?m",)) == {("q?m",)}
    assert _namespaces(lt_store, ("br[ack]et",)) == {("br[ack]et",)}


def test_search_namespace_is_case_sensitive(lt_store: BaseStore) -> None:
    """sqlite test_store.py::test_search_namespace_is_case_sensitive: search agrees with
    get, which tells "Foo" from "foo"."""
    lt_store.put(("Foo",), "k", {"v": "upper"})
    lt_store.put(("foo",), "k", {"v": "lower"})
    assert _namespaces(lt_store, ("foo",)) == {("foo",)}
    assert _namespaces(lt_store, ("Foo",)) == {("Foo",)}
    assert lt_store.list_namespaces(prefix=("foo",)) == [("foo",)]


def test_list_namespaces_segment_boundary(lt_store: BaseStore) -> None:
    """sqlite/postgres test_store.py::test_list_namespaces_segment_boundary: prefix and
    suffix align to labels, "*" spans exactly one label."""
    for ns in [
        ("foo",),
        ("foo", "child"),
        ("foobar",),
        ("foobar", "baz"),
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    ]:
        lt_store.put(ns, "k", {"v": 1})
    ls = lt_store.list_namespaces
    assert set(ls(prefix=("foo",), limit=100)) == {("foo",), ("foo", "child")}
    assert set(ls(suffix=("alice",), limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "a", "b", "alice"),
    }
    assert set(ls(prefix=("uid", "*", "alice"), limit=100)) == {("uid", "users", "alice")}
    assert set(ls(prefix=("uid",), limit=100)) == {
        ("uid", "users", "alice"),
        ("uid", "users", "malice"),
        ("uid", "a", "b", "alice"),
    }


def test_namespace_labels_with_trailing_newline(lt_store: BaseStore) -> None:
    """sqlite/postgres test_store.py::test_namespace_labels_with_trailing_newline: "alice\\n"
    is a label of its own."""
    lt_store.put(("users", "alice"), "k", {"v": 1})
    lt_store.put(("users", "alice\n"), "k", {"v": 2})
    assert set(lt_store.list_namespaces(suffix=("alice",), limit=100)) == {("users", "alice")}
    assert set(lt_store.list_namespaces(prefix=("users", "alice"), limit=100)) == {
        ("users", "alice")
    }
    assert _namespaces(lt_store, ("users", "alice")) == {("users", "alice")}
    got = lt_store.get(("users", "alice\n"), "k")
    assert got is not None and got.value == {"v": 2}


def test_list_namespaces_metacharacter_labels(lt_store: BaseStore) -> None:
    """sqlite test_store.py::test_list_namespaces_metacharacter_labels: on the plain-prefix
    path and the wildcard/suffix path alike, metacharacters are literal."""
    pairs = [
        ("star*", "starX"),
        ("q?m", "qXm"),
        ("br[ack]et", "brXacXket"),
        ("user_1", "userX1"),
        ("a%b", "axxb"),
        ("plus+", "plusX"),
        ("dot.ted", "dotXted"),
        ("back\\slash", "backXslash"),
    ]
    for label, decoy in pairs:
        lt_store.put((label,), "k", {"v": 1})
        lt_store.put((decoy,), "k", {"v": 1})
        lt_store.put((label, "child"), "k", {"v": 1})
    for label, decoy in pairs:
        found = set(lt_store.list_namespaces(prefix=(label,), limit=100))
        assert found == {(label,), (label, "child")}, label
        assert (decoy,) not in found
        assert set(lt_store.list_namespaces(prefix=(label, "child"), limit=100)) == {
            (label, "child")
        }
        assert set(lt_store.list_namespaces(prefix=("*", "child"), suffix=(label,))) == set()
        assert set(lt_store.list_namespaces(suffix=(label,), limit=100)) == {(label,)}
        assert (label, "child") in lt_store.list_namespaces(prefix=(label, "*"), limit=100)


# ---------------------------------------------------------------- filters


def test_filter_keys_cannot_inject(lt_store: BaseStore) -> None:
    """sqlite test_store.py::test_sql_injection_vulnerability: a filter key written to
    break out of the query is refused (LangGraph: ValueError "Invalid filter key"; here a
    StoreError), and never reads the private item."""
    lt_store.put(("docs",), "public", {"access": "public", "data": "public info"})
    lt_store.put(("docs",), "private", {"access": "private", "data": "secret", "password": "1"})
    assert [i.key for i in lt_store.search(("docs",), filter={"access": "public"})] == ["public"]
    for bad in [
        "access') = 'public' OR '1'='1' OR json_extract(value, '$.",
        "access\" = 'public' OR 1=1 --",
    ]:
        with pytest.raises(StoreError):
            lt_store.search(("docs",), filter={bad: "dummy"})
    # keys that are odd but not malformed are plain field names: they match nothing
    for odd in ["access') OR ('1'='1", "a'b", "x]; DROP TABLE store; --", "$[0]", "a\\b"]:
        assert lt_store.search(("docs",), filter={odd: "public"}) == []
    assert len(lt_store.search(("docs",))) == 2


def test_filter_values_cannot_inject(lt_store: BaseStore) -> None:
    """sqlite test_store.py::test_sql_injection_filter_values: quoted, commented, UNION
    and non-ASCII attempts are literal values; a real quote in a value still matches.
    Difference: a value holding a NUL (or a lone surrogate), which LangGraph matches against
    nothing, is refused with a StoreError, as put refuses to store one (PostgreSQL cannot
    hold it, so no stored value can equal it on any backend)."""
    lt_store.put(("docs",), "doc1", {"access": "public", "title": "Public Document"})
    lt_store.put(("docs",), "doc2", {"access": "private", "title": "Private Document"})
    lt_store.put(("docs",), "doc3", {"access": "secret", "title": "Secret Document"})
    for bad in [
        "public' OR '1'='1",
        "public'; --",
        "public' UNION SELECT * FROM store --",
        "''''",
        "public' OR 'א'='א",
        'public" OR "1"="1',
        "public*",
        "publi?",
    ]:
        assert lt_store.search(("docs",), filter={"access": bad}) == [], bad
    for bad in ["public\x00' OR '1'='1", "\ud800"]:
        with pytest.raises(StoreError, match="NUL"):
            lt_store.search(("docs",), filter={"access": bad})
    lt_store.put(("docs",), "doc4", {"title": "O'Brien's Document", "access": "public"})
    found = lt_store.search(("docs",), filter={"title": "O'Brien's Document"})
    assert [i.key for i in found] == ["doc4"]


def test_numeric_filter_safety(lt_store: BaseStore) -> None:
    """sqlite test_store.py::test_numeric_filter_safety: comparisons, very large and
    negative numbers. Difference: LangGraph accepts infinities and NaN as operands;
    graphagent refuses a non-finite operand with a StoreError naming it (JSON cannot hold
    one, so no stored value is infinite or NaN, and the answer would differ by backend)."""
    lt_store.put(("items",), "item1", {"price": 10, "quantity": 5})
    lt_store.put(("items",), "item2", {"price": 20, "quantity": 3})
    lt_store.put(("items",), "item3", {"price": 30, "quantity": 1})
    found = lt_store.search(("items",), filter={"price": {"$gt": 15}})
    assert sorted(i.key for i in found) == ["item2", "item3"]
    for bad in [float("inf"), float("-inf"), float("nan")]:
        with pytest.raises(StoreError, match="finite"):
            lt_store.search(("items",), filter={"price": {"$lt": bad}})
    assert len(lt_store.search(("items",), filter={"price": {"$lt": 10**100}})) == 3
    assert len(lt_store.search(("items",), filter={"price": {"$gt": -(10**100)}})) == 3
    assert lt_store.search(("items",), filter={"price": {"$gt": 10**100}}) == []
    assert lt_store.search(("items",), filter={"price": 10**100}) == []
    assert len(lt_store.search(("items",), filter={"price": {"$lt": 1e300}})) == 3
    lt_store.put(("items",), "item4", {"price": -10, "quantity": 0})
    assert [i.key for i in lt_store.search(("items",), filter={"price": {"$lt": 0}})] == ["item4"]


def test_boolean_filter_safety(lt_store: BaseStore) -> None:
    """sqlite test_store.py::test_boolean_filter_safety: True and False match only
    booleans (not 1 and 0)."""
    lt_store.put(("flags",), "flag1", {"active": True, "name": "Feature A"})
    lt_store.put(("flags",), "flag2", {"active": False, "name": "Feature B"})
    lt_store.put(("flags",), "flag3", {"active": True, "name": "Feature C"})
    lt_store.put(("flags",), "one", {"active": 1, "name": "a number"})
    lt_store.put(("flags",), "zero", {"active": 0, "name": "a number"})
    assert sorted(i.key for i in lt_store.search(("flags",), filter={"active": True})) == [
        "flag1",
        "flag3",
    ]
    assert [i.key for i in lt_store.search(("flags",), filter={"active": False})] == ["flag2"]
    assert [i.key for i in lt_store.search(("flags",), filter={"active": 1})] == ["one"]


def test_filter_keys_with_hyphens_and_digits(lt_store: BaseStore) -> None:
    """sqlite test_store.py::test_filter_keys_with_hyphens_and_digits: keys a JSON path
    must quote work, at the top and nested."""
    lt_store.put(("docs",), "hyphen", {"access-level": "public", "user": {"access-level": "n"}})
    lt_store.put(("docs",), "digit", {"123abc": "ok", "user": {"123abc": "ok2"}})
    lt_store.put(("docs",), "spaced", {"a key": "x", "user": {"ü ber": "y", "$k": "z"}})
    found = lambda f: [i.key for i in lt_store.search(("docs",), filter=f)]  # noqa: E731
    assert found({"access-level": "public"}) == ["hyphen"]
    assert found({"user.access-level": "n"}) == ["hyphen"]
    assert found({"123abc": "ok"}) == ["digit"]
    assert found({"user.123abc": "ok2"}) == ["digit"]
    assert found({"a key": "x"}) == ["spaced"]
    assert found({"user.ü ber": "y"}) == ["spaced"]
    assert found({"user.$k": "z"}) == ["spaced"]


# ---------------------------------------------------------------- TTL


def test_store_ttl(make_store: MakeStore, clock: Any) -> None:
    """postgres test_store.py::test_store_ttl (and the async twin): reads with
    refresh_ttl=True restart the clock, refresh_ttl=False does not; the item is gone from
    search once it lapses. LangGraph sleeps through a real minute; here the clock moves."""
    store = make_store(ttl={"default_ttl": 2, "refresh_on_read": True})
    ns = ("foo",)
    store.put(ns, "item1", {"foo": "bar"}, ttl=1)
    clock.advance(0.9)
    assert store.get(ns, "item1", refresh_ttl=True) is not None
    clock.advance(0.9)
    assert len(store.search(ns, query="foo", refresh_ttl=True)) == 1
    clock.advance(0.9)
    assert store.get(ns, "item1", refresh_ttl=False) is not None
    clock.advance(0.2)
    assert store.search(ns, query="bar", refresh_ttl=False) == []
    assert store.get(ns, "item1") is None


def test_expired_items_are_omitted_before_any_sweep(make_store: MakeStore, clock: Any) -> None:
    """postgres test_store.py::test_omit_expired_filters_read_paths,
    ::test_omit_expired_refresh_ttl_only_refreshes_live_rows and
    ::test_omit_expired_search_pagination: an expired, unswept item is left out of get,
    search (before the page is cut) and list_namespaces, and a refreshing read does not
    bring it back. Difference: LangGraph makes this opt-in (``omit_expired``) and its
    default returns expired rows (::test_omit_expired_disabled_preserves_expired_rows);
    graphagent always omits them, as issue 27 asks."""
    store = make_store(ttl={"refresh_on_read": True})
    store.put(("omit", "expired"), "e", {"data": "gone"}, ttl=1)
    store.put(("omit", "control"), "c", {"data": "keep"}, ttl=None)
    for key in ("c", "b", "expired", "a"):  # newest first: a, expired, b, c
        store.put(("page",), key, {"k": key}, ttl=1 if key == "expired" else 10)
        clock.advance(0.01)
    clock.advance(1.5)
    assert store.get(("omit", "expired"), "e", refresh_ttl=True) is None
    assert store.get(("omit", "control"), "c") is not None
    assert store.search(("omit", "expired"), refresh_ttl=True) == []
    assert [i.key for i in store.search(("omit",))] == ["c"]
    spaces = store.list_namespaces(prefix=("omit",))
    assert ("omit", "expired") not in spaces and ("omit", "control") in spaces
    assert [i.key for i in store.search(("page",), limit=2)] == ["a", "b"]
    assert [i.key for i in store.search(("page",), limit=2, offset=2)] == ["c"]
    clock.advance(100)
    assert store.get(("omit", "expired"), "e") is None  # the refresh did not revive it
    assert len(store) == 1


# ---------------------------------------------------------------- threads and loops


def test_sync_methods_inside_a_running_loop_and_threads(lt_store: BaseStore) -> None:
    """postgres/sqlite test_async_store.py::test_no_running_loop: there the async-only
    store refuses its sync methods on the loop's thread and serves them from a worker
    thread. Difference: graphagent's stores are one class with both, so the sync methods
    also work on the loop's thread; from a worker thread they work as there."""

    async def run() -> Any:
        lt_store.put(("foo", "bar"), "baz", {"val": "baz"})
        got = lt_store.get(("foo", "bar"), "baz")
        assert got is not None and got.value == {"val": "baz"}
        assert lt_store.list_namespaces(prefix=("foo",)) == [("foo", "bar")]
        with ThreadPoolExecutor(max_workers=1) as pool:
            await asyncio.wrap_future(pool.submit(lt_store.put, ("foo", "bar"), "b2", {"v": 2}))
            item = await asyncio.wrap_future(pool.submit(lt_store.get, ("foo", "bar"), "b2"))
            assert item.value == {"v": 2}
            assert lt_store.delete(("foo", "bar"), "baz") is True
        return await lt_store.asearch(("foo",))

    assert [i.key for i in asyncio.run(run())] == ["b2"]


def test_large_batches(lt_store: BaseStore) -> None:
    """postgres test_async_store.py::test_large_batches: many threads put, get, list,
    search, re-put and delete at once; every call returns and the end state is exact.
    LangGraph runs 100 x 10 rounds; 20 x 4 keep the shape at a fraction of the time."""
    n, m = 20, 4
    ns = lambda j: ("test", "foo", "bar", "baz", str(j % 2))  # noqa: E731
    with ThreadPoolExecutor(max_workers=8) as pool:
        futures = []
        for j in range(m):
            for i in range(n):
                futures += [
                    pool.submit(lt_store.put, ns(j), f"key{i}", {"foo": f"bar{i}"}),
                    pool.submit(lt_store.get, ns(j), f"key{i}"),
                    pool.submit(lt_store.list_namespaces, max_depth=j + 1),
                    pool.submit(lt_store.search, ("test",)),
                    pool.submit(lt_store.put, ns(j), f"key{i}", {"foo": f"bar{i}"}),
                ]
        results = [f.result() for f in futures]
    assert len(results) == n * m * 5
    assert len(lt_store) == 2 * n
    assert lt_store.get(ns(1), "key3").value == {"foo": "bar3"}  # type: ignore[union-attr]


def test_large_batches_async(lt_store: BaseStore) -> None:
    """postgres/sqlite test_async_store.py::test_large_batches_async: the same through
    gathered coroutines, ending with every item deleted. LangGraph gathers 60,000
    coroutines; 600 keep the shape."""
    n, m = 25, 4
    ns = lambda j: ("test", "foo", "bar", "baz", str(j % 2))  # noqa: E731

    async def run() -> list[Any]:
        coros: list[Any] = []
        for j in range(m):
            for i in range(n):
                coros += [
                    lt_store.aput(ns(j), f"key{i}", {"foo": f"bar{i}"}),
                    lt_store.aget(ns(j), f"key{i}"),
                    lt_store.alist_namespaces(max_depth=j + 1),
                    lt_store.asearch(("test",)),
                    lt_store.aput(ns(j), f"key{i}", {"foo": f"bar{i}"}),
                    lt_store.adelete(ns(j), f"key{i}"),
                ]
        return await asyncio.gather(*coros)

    assert len(asyncio.run(run())) == n * m * 6
