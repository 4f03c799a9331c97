"""Long-term memory stores: one behaviour on memory, SQLite, PostgreSQL and Redis."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import redis
from _ltstores import DURABLE, Clock, MakeStore

import checkpoint
from checkpoint.store import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    RedisStore,
    SearchOp,
    StoreError,
)


def keys(items: list[Any]) -> list[str]:
    return [i.key for i in items]


def test_exports_from_checkpoint() -> None:
    """The stores, items and ops are importable from ``checkpoint`` itself."""
    for name in ("MemoryStore", "InMemoryStore", "SqliteStore", "PostgresStore", "RedisStore"):
        assert name in checkpoint.__all__
    assert checkpoint.InMemoryStore is checkpoint.MemoryStore


def test_put_get_keeps_created_at(lt_store: BaseStore, clock: Clock) -> None:
    """An update replaces the value and updated_at and keeps created_at."""
    lt_store.put(("users", "u1"), "tea", {"text": "likes tea", "n": 1})
    first = lt_store.get(("users", "u1"), "tea")
    assert first is not None and first.value == {"text": "likes tea", "n": 1}
    assert first.namespace == ("users", "u1") and first.key == "tea"
    clock.advance(1)
    lt_store.put(("users", "u1"), "tea", {"text": "likes green tea"})
    second = lt_store.get(("users", "u1"), "tea")
    assert second is not None and second.value == {"text": "likes green tea"}
    assert second.created_at == first.created_at
    assert (second.updated_at - first.updated_at).total_seconds() == pytest.approx(60, abs=0.01)
    assert lt_store.get(("users", "u1"), "coffee") is None
    assert lt_store.get(("users",), "tea") is None


def test_reads_hand_out_copies(lt_store: BaseStore) -> None:
    """Changing a value after put, or a value a read returned, changes nothing stored."""
    value: dict[str, Any] = {"tags": ["a"], "deep": {"x": 1}}
    lt_store.put(("ns",), "k", value)
    value["tags"].append("mutated")
    got = lt_store.get(("ns",), "k")
    assert got is not None and got.value == {"tags": ["a"], "deep": {"x": 1}}
    got.value["deep"]["x"] = 99
    lt_store.search(("ns",))[0].value["tags"].clear()
    again = lt_store.get(("ns",), "k")
    assert again is not None and again.value == {"tags": ["a"], "deep": {"x": 1}}


def test_get_checks_what_it_does_not_find_and_copies_what_it_does(lt_store: BaseStore) -> None:
    """The fast get (memory: a lookup before any check) still refuses a namespace holding
    an unhashable or non-text label, finds an item under a list namespace, and hands out a
    copy of a flat value too."""
    lt_store.put(("ns", "a"), "k", {"text": "tea", "n": 1})
    with pytest.raises(InvalidNamespaceError):
        lt_store.get(("ns", ["a"]), "k")  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        lt_store.get(("ns", 1), "k")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="non-empty string"):
        lt_store.get(("ns", "a"), ["k"])  # type: ignore[arg-type]
    found = lt_store.get(["ns", "a"], "k")  # type: ignore[arg-type]
    assert found is not None and found.namespace == ("ns", "a")
    assert found.value == {"text": "tea", "n": 1}
    found.value["text"] = "changed"
    found.value["extra"] = True
    again = lt_store.get(("ns", "a"), "k")
    assert again is not None and again.value == {"text": "tea", "n": 1}
    assert again.value is not found.value


def test_delete_says_whether_it_existed(lt_store: BaseStore) -> None:
    """delete returns True once, then False; the emptied namespace is no longer listed."""
    lt_store.put(("a", "b"), "k", {"v": 1})
    lt_store.put(("a", "c"), "k", {"v": 2})
    assert lt_store.delete(("a", "b"), "k") is True
    assert lt_store.delete(("a", "b"), "k") is False
    assert lt_store.get(("a", "b"), "k") is None
    assert lt_store.list_namespaces() == [("a", "c")]
    assert len(lt_store) == 1


def test_len_and_clear(lt_store: BaseStore) -> None:
    """len counts live items; clear empties the store."""
    for i in range(5):
        lt_store.put(("n", str(i % 2)), f"k{i}", {"i": i})
    assert len(lt_store) == 5
    lt_store.clear()
    assert len(lt_store) == 0 and lt_store.list_namespaces() == []
    lt_store.put(("n",), "again", {"i": 0})
    assert len(lt_store) == 1


def test_search_newest_first_and_complete_across_pages(lt_store: BaseStore) -> None:
    """Without a query, search is newest-updated first, and pages cover every item once."""
    for i in range(23):
        lt_store.put(("docs", f"g{i % 3}"), f"d{i:02d}", {"i": i})
    lt_store.put(("docs", "g0"), "d00", {"i": 100})  # updated last: first now
    lt_store.put(("other",), "x", {"i": -1})
    pages = [lt_store.search(("docs",), limit=5, offset=o) for o in range(0, 30, 5)]
    seen = [k for page in pages for k in keys(page)]
    assert seen[0] == "d00"
    assert sorted(seen) == sorted(f"d{i:02d}" for i in range(23))
    assert seen[1:] == [f"d{i:02d}" for i in range(22, 0, -1)]
    assert lt_store.search(("docs",), limit=0) == []
    assert keys(lt_store.search((), limit=1)) == ["x"]


def test_filters_compare_numbers_as_numbers_and_strings_as_strings(lt_store: BaseStore) -> None:
    """A number filter never matches a string (or a bool), and the reverse; missing is None."""
    rows: dict[str, dict[str, Any]] = {
        "ten": {"v": 10},
        "nine-str": {"v": "9"},
        "nine-half": {"v": 9.5},
        "true": {"v": True},
        "null": {"v": None},
        "missing": {"w": 1},
        "nested": {"v": {"x": 3}, "a": {"b": 2}},
        "hundred-str": {"v": "100"},
    }
    for key, value in rows.items():
        lt_store.put(("f",), key, value)

    def found(flt: dict[str, Any]) -> set[str]:
        return set(keys(lt_store.search(("f",), filter=flt, limit=100)))

    assert found({"v": {"$gt": 9}}) == {"ten", "nine-half"}
    assert found({"v": {"$gte": 9.5, "$lt": 10}}) == {"nine-half"}
    assert found({"v": {"$gt": "8"}}) == {"nine-str"}
    assert found({"v": {"$lt": "9"}}) == {"hundred-str"}
    assert found({"v": 10}) == {"ten"}
    assert found({"v": 10.0}) == {"ten"}
    assert found({"v": "9"}) == {"nine-str"}
    assert found({"v": True}) == {"true"}
    assert found({"v": 1}) == set()
    assert found({"v": None}) == {"null", "missing"}
    assert found({"v": {"$ne": None}}) == set(rows) - {"null", "missing"}
    assert found({"v": {"$ne": 10}}) == set(rows) - {"ten"}
    assert found({"a.b": 2}) == {"nested"}
    assert found({"a.b": {"$lte": 2}, "v": {"$ne": 3}}) == {"nested"}
    assert found({"v": {"$eq": 10}, "w": 1}) == set()


def test_filter_mistakes_are_named(lt_store: BaseStore) -> None:
    """Unknown operators, ordering a list or a bool, and operands that are not JSON are
    refused with the fix (a list or dict is compared whole by $eq and $ne, as LangGraph's
    stores do)."""
    with pytest.raises(StoreError, match=r"unknown filter operator '\$in'"):
        lt_store.search(("f",), filter={"v": {"$in": [1]}})
    with pytest.raises(StoreError, match="takes a string, number, bool or None"):
        lt_store.search(("f",), filter={"v": {"$gt": [1, 2]}})
    with pytest.raises(StoreError, match="takes a string, number, bool or None"):
        lt_store.search(("f",), filter={"v": (1, 2)})
    with pytest.raises(StoreError, match="orders values"):
        lt_store.search(("f",), filter={"v": {"$gt": True}})


def test_text_query_without_index(lt_store: BaseStore) -> None:
    """A query on a store without an index is a case-insensitive substring match."""
    lt_store.put(("m",), "1", {"text": "Loves GREEN tea"})
    lt_store.put(("m",), "2", {"text": "drinks coffee"})
    lt_store.put(("m",), "3", {"text": "Straße"})
    found = lt_store.search(("m",), query="green TEA")
    assert keys(found) == ["1"] and found[0].score is None
    assert keys(lt_store.search(("m",), query="STRASSE")) == ["3"]  # Unicode case folding
    assert keys(lt_store.search(("m",), query="straße")) == ["3"]
    assert keys(lt_store.search(("m",), query="e", limit=2)) == ["3", "2"]


NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("a-x",),
    ("b", "a", "f"),
    ("users", "123"),
]


def test_list_namespaces(lt_store: BaseStore) -> None:
    """Sorted as tuples, with prefix/suffix wildcards, max_depth and pages."""
    for i, ns in enumerate(reversed(NAMESPACES)):
        lt_store.put(ns, f"k{i}", {"i": i})
    assert lt_store.list_namespaces() == sorted(NAMESPACES)
    assert lt_store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "f"),
    ]
    assert lt_store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert lt_store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert lt_store.list_namespaces(prefix=("a",), max_depth=2) == [("a", "b"), ("a", "c")]
    assert lt_store.list_namespaces(limit=2, offset=1) == sorted(NAMESPACES)[1:3]
    assert lt_store.list_namespaces(prefix=("zzz",)) == []


def test_invalid_input_is_refused_clearly(lt_store: BaseStore) -> None:
    """Empty namespaces, empty labels, empty keys and non-JSON values never reach storage."""
    with pytest.raises(InvalidNamespaceError, match="empty"):
        lt_store.put((), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError, match="empty or non-text label"):
        lt_store.put(("a", ""), "k", {"v": 1})
    with pytest.raises(InvalidNamespaceError, match="tuple of strings"):
        lt_store.put("users", "k", {"v": 1})  # type: ignore[arg-type]
    with pytest.raises(InvalidNamespaceError):
        lt_store.get(("a", 1), "k")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="non-empty string"):
        lt_store.put(("a",), "", {"v": 1})
    with pytest.raises(StoreError, match="must be a dict"):
        lt_store.put(("a",), "k", [1, 2])  # type: ignore[arg-type]
    with pytest.raises(StoreError, match=r"value\.x .*nan"):
        lt_store.put(("a",), "k", {"x": float("nan")})
    with pytest.raises(StoreError, match="non-string key"):
        lt_store.put(("a",), "k", {1: "x"})  # type: ignore[dict-item]
    with pytest.raises(StoreError, match="set"):
        lt_store.put(("a",), "k", {"x": {1, 2}})
    with pytest.raises(StoreError, match="lone surrogate"):
        lt_store.put(("a",), "k", {"x": "\ud800"})
    with pytest.raises(StoreError, match=r"value\.x holds a NUL"):
        lt_store.put(("a",), "k", {"x": "a\x00b"})
    with pytest.raises(StoreError, match=r"value\.x\.y holds a NUL"):
        lt_store.put(("a",), "k", {"x": {"y": "\x00"}})
    with pytest.raises(StoreError, match="minutes"):
        lt_store.put(("a",), "k", {"x": 1}, ttl=-1)
    assert len(lt_store) == 0


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a\x00": 1}, "value"),
        ({"\ud800": "x"}, "value"),
        ({"x": {"b\x00c": None}}, r"value\.x"),
        ({"x": [{"\x00": 1}]}, r"value\.x\[0\]"),
        ({"ok": "fine", "k\x00": "v"}, "value"),  # beside the flat fields a put checks inline
    ],
)
def test_a_dict_key_holding_a_nul_is_refused_on_every_backend(
    lt_store: BaseStore, value: dict[str, Any], where: str
) -> None:
    """A NUL or a lone surrogate in a key of the value is refused, as in a text value:
    PostgreSQL's JSONB cannot hold either, so no backend stores what another would refuse
    (memory once kept ``{"a\x00": 1}`` while PostgreSQL failed with a storage error)."""
    lt_store.put(("a",), "seed", {"v": 1})  # the namespace is held: the inline put path
    with pytest.raises(StoreError, match=rf"{where} has a key holding a NUL or a lone surrogate"):
        lt_store.put(("a",), "k", value)
    with pytest.raises(StoreError, match="NUL or a lone surrogate"):
        lt_store.batch([PutOp(("a",), "k2", value)])
    assert lt_store.get(("a",), "k") is None and lt_store.get(("a",), "k2") is None


def test_labels_and_keys_with_separators_stay_apart(lt_store: BaseStore) -> None:
    """'/', '%', ':', braces, NUL and lone surrogates in labels and keys never alias."""
    odd = [("a/b",), ("a", "b"), ("a%2F",), ("{x}:y",), ("nul\x00",), ("s\udc80",)]
    for i, ns in enumerate(odd):
        lt_store.put(ns, "k/%\x00", {"i": i})
    for i, ns in enumerate(odd):
        got = lt_store.get(ns, "k/%\x00")
        assert got is not None and got.value == {"i": i} and got.namespace == ns
    assert sorted(lt_store.list_namespaces()) == sorted(odd)
    assert [i.namespace for i in lt_store.search(("a",))] == [("a", "b")]
    lt_store.put(("ab",), "k", {"i": 9})
    assert [i.namespace for i in lt_store.search(("a",))] == [("a", "b")]


def test_ttl_per_put_expires_before_any_sweep(lt_store: BaseStore, clock: Clock) -> None:
    """An expired item reads as absent everywhere at once, swept or not."""
    lt_store.put(("t",), "short", {"v": 1}, ttl=1)
    lt_store.put(("t",), "long", {"v": 2}, ttl=10)
    lt_store.put(("t2",), "short", {"v": 3}, ttl=1.5)
    lt_store.put(("t",), "forever", {"v": 4})
    clock.advance(2)
    assert lt_store.get(("t",), "short") is None
    assert set(keys(lt_store.search(("t",)))) == {"long", "forever"}
    assert set(keys(lt_store.search(("t",), filter={"v": {"$lt": 3}}))) == {"long"}
    assert keys(lt_store.search(("t",), query="1")) == []
    assert lt_store.list_namespaces() == [("t",)]
    assert len(lt_store) == 2
    assert lt_store.delete(("t2",), "short") is False
    clock.advance(11)  # the reads above restarted "long"'s 10 minutes
    assert keys(lt_store.search(())) == ["forever"]


def test_store_default_ttl_and_refresh_on_read(make_store: MakeStore, clock: Clock) -> None:
    """default_ttl applies to puts; a read restarts it unless refresh_ttl=False; ttl=None
    opts an item out."""
    store = make_store(ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(("t",), "read", {"v": 1})
    store.put(("t",), "unread", {"v": 2})
    store.put(("t",), "searched", {"v": 3})
    store.put(("t",), "kept", {"v": 4}, ttl=None)
    clock.advance(8)
    assert store.get(("t",), "read") is not None
    assert store.get(("t",), "unread", refresh_ttl=False) is not None
    assert keys(store.search(("t",), filter={"v": 3})) == ["searched"]
    clock.advance(8)
    assert store.get(("t",), "read") is not None
    assert store.get(("t",), "unread") is None
    assert store.get(("t",), "searched") is not None
    clock.advance(60)
    assert keys(store.search(("t",))) == ["kept"]


def test_no_refresh_when_the_store_says_so(make_store: MakeStore, clock: Clock) -> None:
    """refresh_on_read=False keeps the deadline from the write."""
    store = make_store(ttl={"default_ttl": 10, "refresh_on_read": False})
    store.put(("t",), "k", {"v": 1})
    clock.advance(8)
    assert store.get(("t",), "k") is not None
    clock.advance(3)
    assert store.get(("t",), "k") is None


def test_put_over_an_expired_item_starts_fresh(lt_store: BaseStore, clock: Clock) -> None:
    """Writing a key whose item expired reports it absent and gives a new created_at."""
    lt_store.put(("t",), "k", {"v": 1}, ttl=1)
    first = lt_store.get(("t",), "k")
    clock.advance(5)
    lt_store.put(("t",), "k", {"v": 2})
    again = lt_store.get(("t",), "k")
    assert first is not None and again is not None
    assert again.created_at > first.created_at
    assert lt_store.delete(("t",), "k") is True


def test_batch_runs_every_op_in_order(lt_store: BaseStore) -> None:
    """batch takes the four ops; a PutOp with value None deletes."""
    results = lt_store.batch(
        [
            PutOp(("b",), "1", {"v": 1}),
            PutOp(("b", "c"), "2", {"v": 2}),
            GetOp(("b",), "1"),
            SearchOp(("b",), filter={"v": {"$gte": 2}}),
            ListNamespacesOp(prefix=("b",)),
            PutOp(("b",), "1", None),
            GetOp(("b",), "1"),
        ]
    )
    assert results[0] is None and results[1] is None
    assert results[2].value == {"v": 1}
    assert keys(results[3]) == ["2"]
    assert results[4] == [("b",), ("b", "c")]
    assert results[5] is None and results[6] is None


def test_async_twins(lt_store: BaseStore) -> None:
    """Every method has its async twin on the same object."""

    async def main() -> None:
        await lt_store.aput(("a",), "k", {"v": 1})
        got = await lt_store.aget(("a",), "k")
        assert got is not None and got.value == {"v": 1}
        assert keys(await lt_store.asearch(("a",))) == ["k"]
        assert await lt_store.alist_namespaces() == [("a",)]
        results = await lt_store.abatch([GetOp(("a",), "k"), PutOp(("a",), "j", {"v": 2})])
        assert results[0].value == {"v": 1}
        assert await lt_store.adelete(("a",), "k") is True
        assert await lt_store.adelete(("a",), "k") is False
        await lt_store.aclear()
        assert len(lt_store) == 0

    asyncio.run(main())


@pytest.mark.parametrize("make_store", DURABLE, indirect=True)
def test_two_store_objects_share_storage(make_store: MakeStore) -> None:
    """Two stores on the same file, schema or prefix (two processes) see each other."""
    one, two = make_store(), make_store()
    one.put(("s",), "k", {"v": 1})
    got = two.get(("s",), "k")
    assert got is not None and got.value == {"v": 1}
    assert two.delete(("s",), "k") is True
    assert one.get(("s",), "k") is None


def test_concurrent_writers_last_write_wins_whole(lt_store: BaseStore) -> None:
    """Threads writing one key leave one of the written values, never a mix."""

    def write(n: int) -> None:
        for i in range(15):
            lt_store.put(("c",), "key", {"n": n, "i": i, "pad": [n] * (n + 1)})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    got = lt_store.get(("c",), "key")
    assert got is not None and got.value["i"] == 14
    assert got.value["pad"] == [got.value["n"]] * (got.value["n"] + 1)
    assert len(lt_store) == 1


def test_item_equality_and_dict(lt_store: BaseStore) -> None:
    """Items compare by content and turn into plain data."""
    lt_store.put(("e",), "k", {"v": 1})
    a, b = lt_store.get(("e",), "k"), lt_store.get(("e",), "k")
    assert a == b and a is not None
    plain = a.dict()
    assert plain["namespace"] == ["e"] and plain["value"] == {"v": 1}
    assert plain["created_at"].endswith("+00:00")


def test_redis_put_and_get_are_one_round_trip_each(redis_url: str, redis_prefix: str) -> None:
    """A Redis put and a get each send one command (a script), well within 3 round trips."""
    store = RedisStore.from_url(redis_url, prefix=redis_prefix)
    store.put(("warm",), "k", {"v": 0})  # loads the scripts
    store.get(("warm",), "k")
    sent: list[Any] = []
    original = store.client.execute_command

    def counting(*args: Any, **kw: Any) -> Any:
        sent.append(args[0])
        return original(*args, **kw)

    store.client.execute_command = counting  # type: ignore[method-assign]
    store.put(("r",), "k", {"v": 1})
    assert len(sent) == 1
    store.get(("r",), "k")
    assert len(sent) == 2
    store.close()


def test_redis_prefixes_isolate_tenants(redis_url: str, redis_prefix: str) -> None:
    """Stores on two prefixes never see, count or clear each other's items."""
    a = RedisStore.from_url(redis_url, prefix=redis_prefix)
    b = RedisStore.from_url(redis_url, prefix=redis_prefix + "-b")
    try:
        a.put(("n",), "k", {"v": "a"})
        b.put(("n",), "k", {"v": "b"})
        b.clear()
        got = a.get(("n",), "k")
        assert got is not None and got.value == {"v": "a"} and len(b) == 0
        with pytest.raises(StoreError, match="invalid key prefix"):
            RedisStore.from_url(redis_url, prefix="a:b")
    finally:
        b.clear()
        a.close()
        b.close()


def test_redis_store_runs_on_a_cluster(redis_cluster_url: str, cluster_prefix: str) -> None:
    """Every key of a store shares one hash tag, so the store works on Redis Cluster."""
    store = RedisStore(redis.RedisCluster.from_url(redis_cluster_url), prefix=cluster_prefix)
    try:
        for i in range(12):
            store.put(("c", str(i % 3)), f"k{i}", {"i": i}, ttl=5)
        assert len(store) == 12
        got = store.get(("c", "1"), "k4")
        assert got is not None and got.value == {"i": 4}
        assert keys(store.search(("c",), filter={"i": {"$gte": 10}})) == ["k11", "k10"]
        assert store.list_namespaces() == [("c", "0"), ("c", "1"), ("c", "2")]
        assert store.delete(("c", "0"), "k0") is True
    finally:
        store.clear()
        store.client.close()


def test_filtered_search_finds_old_matches_behind_many_new_items(lt_store: BaseStore) -> None:
    """A filter or prefix matching only old items still gets the right page, however many
    newer items come first (SQL stores look in the newest rows first, then widen)."""
    lt_store.batch([PutOp(("old",), f"o{i}", {"kind": "rare", "i": i}) for i in range(5)])
    lt_store.batch([PutOp(("new",), f"n{i:04d}", {"kind": "common"}) for i in range(4200)])
    assert keys(lt_store.search((), filter={"kind": "rare"}, limit=3)) == ["o4", "o3", "o2"]
    assert keys(lt_store.search(("old",), limit=2, offset=3)) == ["o1", "o0"]
    assert keys(lt_store.search((), filter={"i": {"$lt": 2}})) == ["o1", "o0"]
    assert keys(lt_store.search((), limit=2)) == ["n4199", "n4198"]


@pytest.mark.parametrize("make_store", DURABLE, indirect=True)
def test_damaged_stored_values_are_named_not_crashes(lt_store: BaseStore) -> None:
    """A stored value that is not a JSON object (edited by hand, another program) reads as a
    StoreError naming the item, on get and on search."""
    from checkpoint.store import PostgresStore, SqliteStore

    lt_store.put(("d", "x"), "k", {"v": 1})
    if isinstance(lt_store, SqliteStore):
        lt_store.conn.execute("UPDATE graphagent_store SET value = 'not json{'")
    elif isinstance(lt_store, PostgresStore):
        lt_store.conn.execute(f"UPDATE {lt_store.table} SET value = '[1, 2]'::jsonb")
    elif isinstance(lt_store, RedisStore):
        lt_store.client.hset(lt_store.keys[0], "d/x/k", b"\xff not json")
    else:
        raise AssertionError(f"no way to damage {type(lt_store).__name__}'s bytes")
    with pytest.raises(StoreError, match=r"d/x 'k' is not"):
        lt_store.get(("d", "x"), "k")
    with pytest.raises(StoreError, match="delete the item"):
        lt_store.search(("d",))
    assert lt_store.delete(("d", "x"), "k") is True


def test_postgres_schemas_isolate_tenants(postgres_url: str, pg_schema: str) -> None:
    """Stores on two schemas never see, count or clear each other's items; a schema name
    that could break out of its quotes is refused."""
    from checkpoint.store import PostgresStore

    other_schema = pg_schema + "_b"
    a = PostgresStore.from_url(postgres_url, schema=pg_schema)
    b = PostgresStore.from_url(postgres_url, schema=other_schema)
    try:
        a.put(("n",), "k", {"v": "a"})
        b.put(("n",), "k", {"v": "b"})
        b.clear()
        got = a.get(("n",), "k")
        assert got is not None and got.value == {"v": "a"} and len(b) == 0
        assert a.list_namespaces() == [("n",)] and b.list_namespaces() == []
        with pytest.raises(StoreError, match="invalid schema name"):
            PostgresStore(a.conn, schema='x"; DROP TABLE y; --')
    finally:
        b.conn.execute(f'DROP SCHEMA IF EXISTS "{other_schema}" CASCADE')
        a.close()
        b.close()


_WRITER = """
import sys
from checkpoint.store import PostgresStore, RedisStore, SqliteStore
kind, target, name, who = sys.argv[1:5]
if kind == "sqlite":
    store = SqliteStore(target)
elif kind == "postgres":
    store = PostgresStore.from_url(target, schema=name)
else:
    store = RedisStore.from_url(target, prefix=name)
for i in range(40):
    store.put(("shared",), "key", {"who": who, "i": i, "pad": [who] * (i + 1)})
store.put(("shared",), who, {"done": True})
store.close()
"""


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "redis"])
def test_two_processes_share_a_store_and_never_tear_a_value(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """Two processes writing one key concurrently: each sees the other's items, and the key
    holds one whole write (last wins), never a mix of the two."""
    import subprocess
    import sys

    from checkpoint.store import PostgresStore, SqliteStore

    if kind == "sqlite":
        target, name = str(request.getfixturevalue("tmp_path") / "shared.sqlite"), ""
        store: BaseStore = SqliteStore(target)
    elif kind == "postgres":
        target, name = request.getfixturevalue("postgres_url"), request.getfixturevalue("pg_schema")
        store = PostgresStore.from_url(target, schema=name)
    else:
        target, name = request.getfixturevalue("redis_url"), request.getfixturevalue("redis_prefix")
        store = RedisStore.from_url(target, prefix=name)
    store.setup()  # idempotent: the writers create nothing twice
    store.setup()
    import os
    from pathlib import Path

    # the writers import this checkout's code, as this process does
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, kind, target, name, who], env=env)
        for who in ("a", "b")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    got = store.get(("shared",), "key")
    assert got is not None and got.value["i"] == 39
    assert got.value["pad"] == [got.value["who"]] * 40
    assert {i.key for i in store.search(("shared",))} == {"key", "a", "b"}
    store.close()


def test_stored_values_read_back_through_the_fast_decoder(lt_store: BaseStore) -> None:
    """Values with whitespace, escapes, unicode and nesting read back equal, by get and by
    search (the SQL stores decode stored JSON with the C scanner, json.loads otherwise)."""
    values = [
        {"text": " padded  ", "tab": "\t", "quote": '"', "uni": "thé ☕ 𝄞"},
        {"deep": {"list": [1, 2.5, None, True, {"x": "}"}]}, "empty": {}},
        {"n": -0.0, "big": 10**18, "e": 1e-300},
    ]
    for i, value in enumerate(values):
        lt_store.put(("dec", "x/y"), f"k{i}", value)
        got = lt_store.get(("dec", "x/y"), f"k{i}")
        assert got is not None and got.value == value
    found = {f.key: f.value for f in lt_store.search(("dec",), limit=10)}
    assert found == {f"k{i}": v for i, v in enumerate(values)}
    assert lt_store.list_namespaces(prefix=("dec",)) == [("dec", "x/y")]


def test_a_namespace_renders_as_an_escaped_table(lt_store: BaseStore) -> None:
    """``store.namespace(...)`` is a Jupyter table of the newest items (deeper namespaces
    shown by their rest), every stored text HTML-escaped; its repr is one line per item."""
    lt_store.put(("m", "u1"), "old", {"text": "likes tea"})
    lt_store.put(("m", "u1", "work"), "<b>k</b>", {"text": "<script>alert(1)</script>"})
    lt_store.put(("other",), "x", {"text": "not shown"})
    view = lt_store.namespace("m", "u1")
    page = view._repr_html_()
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "&lt;b&gt;k&lt;/b&gt;" in page and "not shown" not in page
    assert "(2 items, newest first)" in page
    assert page.index("&lt;b&gt;k") < page.index("likes tea")  # newest first
    assert "<td>work</td>" in page
    assert repr(view).splitlines()[1:] == [
        '  <b>k</b>: {"text": "<script>alert(1)</script>"}',
        '  old: {"text": "likes tea"}',
    ]


def test_langgraph_and_spring_constructors(
    tmp_path: Path, postgres_url: str, pg_schema: str, redis_url: str, redis_prefix: str
) -> None:
    """``SqliteStore.from_path``, and LangGraph's ``with X.from_conn_string(...) as store``
    on SQLite, PostgreSQL and Redis, reach the same storage as the usual constructors."""
    from checkpoint.store import PostgresStore, RedisStore, SqliteStore

    path = tmp_path / "c.sqlite"
    pairs: list[tuple[Any, Any]] = [
        (lambda: SqliteStore.from_path(path), lambda: SqliteStore(path)),
        (lambda: SqliteStore.from_conn_string(str(path)), lambda: SqliteStore(path)),
        (
            lambda: PostgresStore.from_conn_string(postgres_url, schema=pg_schema),
            lambda: PostgresStore.from_url(postgres_url, schema=pg_schema),
        ),
        (
            lambda: RedisStore.from_conn_string(redis_url, prefix=redis_prefix),
            lambda: RedisStore.from_url(redis_url, prefix=redis_prefix),
        ),
    ]
    for i, (make, usual) in enumerate(pairs):
        with make() as store:
            store.put(("c",), f"k{i}", {"i": i})
        with usual() as again:
            got = again.get(("c",), f"k{i}")
            assert got is not None and got.value == {"i": i}


def test_a_filter_or_query_naming_a_nul_key_matches_nothing_on_every_backend(
    lt_store: BaseStore,
) -> None:
    """No stored key holds a NUL, so a filter on such a field is refused by name, alike on
    every backend (never a storage error from one of them)."""
    lt_store.put(("a",), "k", {"v": 1, "x": {"y": 2}})
    for flt in ({"v\x00": 1}, {"x.y\x00": 2}, {"v\x00": {"$ne": 1}}):
        field = next(iter(flt))
        with pytest.raises(
            StoreError, match=rf"filter field {re.escape(repr(field))} .* a NUL or a lone surrogate"
        ):
            lt_store.search(("a",), filter=flt)
