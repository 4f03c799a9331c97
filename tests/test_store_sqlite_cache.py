"""SqliteStore keeps items it has read for repeated gets: every way the stored item can
change under it (another process, another connection, this store's own writes, a TTL)
is seen by the next get, and what a caller does with what it read changes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _ltstores import Clock

from checkpoint.store import SqliteStore
from checkpoint.store import sqlite as sqlite_store

NS = ("cache", "u1")
ROOT = Path(__file__).resolve().parent.parent


def _other_process(path: Path, code: str) -> None:
    script = f"from checkpoint.store import SqliteStore\ns = SqliteStore({str(path)!r})\n{code}\n"
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT, timeout=60)


def _value(store: SqliteStore, key: str = "k") -> object:
    item = store.get(NS, key)
    return None if item is None else item.value


def test_another_process_replacing_or_deleting_an_item_is_seen(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    store = SqliteStore(path)
    store.put(NS, "k", {"v": 1})
    assert _value(store) == {"v": 1}
    assert _value(store) == {"v": 1}  # now from the cache
    _other_process(path, f"s.put({NS!r}, 'k', {{'v': 2}})")
    assert _value(store) == {"v": 2}
    _other_process(path, f"s.put({NS!r}, 'other', {{'x': 1}})")  # any commit drops it all
    assert _value(store) == {"v": 2}
    _other_process(path, f"s.delete({NS!r}, 'k')")
    assert _value(store) is None
    _other_process(path, f"s.put({NS!r}, 'k', {{'v': 3}}, ttl=0.0001)")
    assert _value(store) in ({"v": 3}, None)  # a TTL item is never cached


def test_another_connection_in_this_process_is_seen(tmp_path: Path) -> None:
    one, two = SqliteStore(tmp_path / "s.sqlite"), SqliteStore(tmp_path / "s.sqlite")
    one.put(NS, "k", {"v": 1})
    for round_ in range(5):
        assert _value(two) == {"v": round_ + 1}
        assert _value(two) == {"v": round_ + 1}
        one.put(NS, "k", {"v": round_ + 2})
    one.clear()
    assert _value(two) is None


def test_this_stores_own_writes_are_seen(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite")
    store.put(NS, "k", {"v": 1})
    assert _value(store) == {"v": 1}
    store.put(NS, "k", {"v": 2})
    assert _value(store) == {"v": 2}
    store.batch([])
    from checkpoint.store import PutOp

    store.batch([PutOp(NS, "k", {"v": 3})])
    assert _value(store) == {"v": 3}
    assert store.delete(NS, "k")
    assert _value(store) is None
    store.put(NS, "k", {"v": 4})
    _value(store)
    store.clear()
    assert _value(store) is None


def test_a_write_rolled_back_leaves_the_item_as_it_was(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite")
    store.put(NS, "k", {"v": 1})
    assert _value(store) == {"v": 1}
    with pytest.raises(ZeroDivisionError), store._transaction(True):
        store.conn.execute(f"UPDATE {store.table} SET value = '{{\"v\": 9}}'")
        raise ZeroDivisionError
    assert _value(store) == {"v": 1}


def test_what_a_caller_does_with_a_read_value_changes_nothing(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite")
    store.put(NS, "k", {"text": "tea", "tags": ["a"], "meta": {"n": 1}})
    store.put(NS, "flat", {"text": "tea"})
    for _ in range(3):  # a miss, then hits
        item = store.get(NS, "k")
        flat = store.get(NS, "flat")
        assert item is not None and flat is not None
        assert item.value == {"text": "tea", "tags": ["a"], "meta": {"n": 1}}
        assert flat.value == {"text": "tea"}
        item.value["tags"].append("b")
        item.value["meta"]["n"] = 2
        item.value["text"] = "coffee"
        flat.value["text"] = "coffee"


def test_ttl_items_expire_and_refresh_as_without_a_cache(tmp_path: Path, clock: Clock) -> None:
    store = SqliteStore(tmp_path / "s.sqlite", ttl={"default_ttl": 10, "refresh_on_read": True})
    store.put(NS, "k", {"v": 1})
    clock.advance(8)
    assert _value(store) == {"v": 1}  # restarts the 10 minutes
    clock.advance(8)
    assert _value(store) == {"v": 1}
    clock.advance(11)
    assert _value(store) is None
    store.put(NS, "never", {"v": 1}, ttl=None)
    assert _value(store, "never") == {"v": 1}
    clock.advance(1000)
    assert _value(store, "never") == {"v": 1}


def test_more_items_than_the_cache_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sqlite_store, "CACHED_ITEMS", 4)
    store = SqliteStore(tmp_path / "s.sqlite")
    for i in range(10):
        store.put(NS, f"k{i}", {"i": i})
    for _ in range(2):
        for i in range(10):
            assert _value(store, f"k{i}") == {"i": i}
    assert len(store._cache) <= 4
    assert _value(store, "missing") is None
    with pytest.raises(Exception, match="namespace"):
        store.get(("cache", ""), "k0")


def test_a_first_read_between_a_commit_and_a_repeat_read_hides_nothing(tmp_path: Path) -> None:
    """A first read (which skips the version check) cannot make a stale cached item pass."""
    one, two = SqliteStore(tmp_path / "s.sqlite"), SqliteStore(tmp_path / "s.sqlite")
    one.put(NS, "a", {"v": 1})
    one.put(NS, "b", {"v": 1})
    assert _value(two, "a") == {"v": 1}  # cached
    one.put(NS, "a", {"v": 2})
    assert _value(two, "b") == {"v": 1}  # a first read, after the commit
    assert _value(two, "a") == {"v": 2}
    two.put(NS, "c", {"v": 1})
    assert _value(two, "c") == {"v": 1}
    assert _value(two, "missing") is None
    one.delete(NS, "b")
    assert _value(two, "c") == {"v": 1}
    assert _value(two, "b") is None


@pytest.mark.parametrize("ns", [("a/b", "%"), ("x\x00y",), ("caf\u00e9", "\ud800")])
def test_first_and_repeat_reads_of_labels_that_need_escaping(tmp_path: Path, ns: tuple) -> None:
    """Namespaces whose labels need escaping read back the same, first time and again."""
    store = SqliteStore(tmp_path / "s.sqlite")
    store.put(ns, "k/%", {"v": 1})
    for _ in range(3):
        item = store.get(ns, "k/%")
        assert item is not None and item.value == {"v": 1}
        assert item.namespace == ns and item.key == "k/%"
    for bad_ns, bad_key in [(("ok", ""), "k"), (ns, ""), ([*ns], 5), ("flat", "k")]:
        with pytest.raises(Exception, match=r"namespace|key"):
            store.get(bad_ns, bad_key)


def test_an_unhashable_label_is_refused_on_first_and_repeat_reads(tmp_path: Path) -> None:
    """A namespace holding a list is refused with the namespace error, cache or not."""
    store = SqliteStore(tmp_path / "s.sqlite")
    store.put(NS, "k", {"v": 1})
    for _ in range(2):
        with pytest.raises(Exception, match="namespace"):
            store.get(("cache", ["u1"]), "k")  # type: ignore[arg-type]
        assert _value(store) == {"v": 1}


def test_first_reads_after_this_stores_write_stay_cached(tmp_path: Path) -> None:
    """After this store's own write, items first read are kept again (all but the first,
    read before the cache had a version), and a miss leaves the cache as it was."""
    store = SqliteStore(tmp_path / "s.sqlite")
    for i in range(4):
        store.put(NS, f"k{i}", {"i": i})
    _value(store, "k0")
    _value(store, "k0")
    assert set(store._cache) == {(NS, "k0")}
    store.put(NS, "k0", {"i": 9})
    assert _value(store, "missing") is None
    assert not store._cache
    for key in ("k1", "k2", "k3"):
        _value(store, key)
    assert set(store._cache) == {(NS, "k2"), (NS, "k3")}
    assert _value(store, "k2") == {"i": 2}
    assert _value(store, "k0") == {"i": 9}
    assert set(store._cache) == {(NS, "k0"), (NS, "k2"), (NS, "k3")}


def test_brackets_inside_text_and_nested_values_are_copied_for_each_read(tmp_path: Path) -> None:
    """Whether a cached value is copied shallow or deep, no reader reaches what is kept."""
    store = SqliteStore(tmp_path / "s.sqlite")
    values = {
        "text": {"text": "a [b] {c}", "n": 1},
        "nested": {"t": "x", "n": {"a": [1, {"b": 2}]}},
        "list": {"l": [1, 2]},
    }
    for key, value in values.items():
        store.put(NS, key, value)
    for _ in range(4):  # first read, the read that takes the version, then hits
        for key, value in values.items():
            item = store.get(NS, key)
            assert item is not None and item.value == value
            for field in list(item.value):
                inner = item.value[field]
                if isinstance(inner, dict):
                    inner["a"] = "changed"
                elif isinstance(inner, list):
                    inner.append("changed")
                item.value[field] = "changed"
