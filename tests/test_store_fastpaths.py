"""The stores' inline put and get paths (the ones that skip the batch machinery) keep every
rule of the general path: private copies both ways, the same refusals, created_at kept,
expiry and other writers seen."""

from __future__ import annotations

import math

import pytest
from _ltstores import Clock, MakeStore

from checkpoint.store import BaseStore, StoreError


def _warm(store: BaseStore) -> tuple[str, ...]:
    """A namespace the store already holds (the inline put takes only those)."""
    ns = ("fast", "u1")
    store.put(ns, "warm", {"text": "warm"})
    return ns


def test_a_put_keeps_a_private_copy_of_a_flat_value(lt_store: BaseStore) -> None:
    ns = _warm(lt_store)
    value = {"text": "likes tea", "n": 1, "ok": True, "none": None, "x": 1.5}
    lt_store.put(ns, "k", value)
    value["text"] = "changed after put"
    value["new"] = 1
    item = lt_store.get(ns, "k")
    assert item is not None
    assert item.value == {"text": "likes tea", "n": 1, "ok": True, "none": None, "x": 1.5}


def test_a_read_hands_out_a_copy(lt_store: BaseStore) -> None:
    ns = _warm(lt_store)
    lt_store.put(ns, "k", {"text": "likes tea", "tags": ["a"]})
    first = lt_store.get(ns, "k")
    assert first is not None
    first.value["text"] = "mutated by a reader"
    first.value["tags"].append("b")
    again = lt_store.get(ns, "k")
    assert again is not None
    assert again.value == {"text": "likes tea", "tags": ["a"]}


@pytest.mark.parametrize(
    "bad",
    [
        {"text": "a\x00b"},
        {"text": "lone \ud800 surrogate"},
        {"x": math.inf},
        {"x": math.nan},
        {1: "int key"},
        {"when": object()},
        {"s": {1, 2}},
    ],
    ids=["nul", "surrogate", "inf", "nan", "int-key", "object", "set"],
)
def test_a_held_namespace_refuses_what_a_new_one_refuses(lt_store: BaseStore, bad: dict) -> None:
    ns = _warm(lt_store)
    with pytest.raises(StoreError):
        lt_store.put(ns, "k", bad)
    with pytest.raises(StoreError):
        lt_store.put(("fast", "fresh"), "k", bad)
    assert lt_store.get(ns, "k") is None


def test_a_held_namespace_takes_what_a_new_one_takes(lt_store: BaseStore) -> None:
    ns = _warm(lt_store)
    value = {"text": "café ☕", "nested": {"a": [1, 2.5, None]}, "n": -3, "": "empty key"}
    lt_store.put(ns, "k", value)
    item = lt_store.get(ns, "k")
    assert item is not None and item.value == value


def test_refused_keys_and_namespaces_on_a_held_namespace(lt_store: BaseStore) -> None:
    ns = _warm(lt_store)
    for key in ("", 5, None):
        with pytest.raises(StoreError):
            lt_store.put(ns, key, {"a": 1})  # type: ignore[arg-type]
    for bad_ns in ((), ("fast", ""), ("fast", 1), "fast/u1", ["fast", ["u1"]]):
        with pytest.raises(StoreError):
            lt_store.put(bad_ns, "k", {"a": 1})  # type: ignore[arg-type]
        with pytest.raises(StoreError):
            lt_store.get(bad_ns, "k")  # type: ignore[arg-type]


def test_an_update_keeps_created_at_and_moves_updated_at(lt_store: BaseStore, clock: Clock) -> None:
    ns = _warm(lt_store)
    lt_store.put(ns, "k", {"v": 1})
    first = lt_store.get(ns, "k")
    clock.advance(1)
    lt_store.put(ns, "k", {"v": 2})
    second = lt_store.get(ns, "k")
    assert first is not None and second is not None
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at
    assert second.value == {"v": 2}
    # newest first: the updated item leads a search
    assert [i.key for i in lt_store.search(ns)][:2] == ["k", "warm"]


def test_a_put_after_an_expired_item_starts_a_new_created_at(
    lt_store: BaseStore, clock: Clock
) -> None:
    ns = _warm(lt_store)
    lt_store.put(ns, "k", {"v": 1}, ttl=1)
    clock.advance(2)
    assert lt_store.get(ns, "k") is None
    lt_store.put(ns, "k", {"v": 2})
    item = lt_store.get(ns, "k")
    assert item is not None and item.value == {"v": 2}
    assert item.created_at == item.updated_at


def test_a_namespace_emptied_by_delete_takes_puts_again(lt_store: BaseStore) -> None:
    ns = _warm(lt_store)
    assert lt_store.delete(ns, "warm")
    assert ns not in lt_store.list_namespaces(prefix=("fast",))
    lt_store.put(ns, "k", {"v": 1})
    assert lt_store.list_namespaces(prefix=("fast",)) == [ns]
    assert [i.key for i in lt_store.search(ns)] == ["k"]


def test_a_store_default_ttl_applies_to_every_put(make_store: MakeStore, clock: Clock) -> None:
    store = make_store(ttl={"default_ttl": 1, "refresh_on_read": False})
    ns = _warm(store)
    store.put(ns, "k", {"v": 1})
    clock.advance(2)
    assert store.get(ns, "k") is None
    assert store.get(ns, "warm") is None


def test_two_stores_on_one_storage_see_each_others_writes(make_store: MakeStore) -> None:
    one, two = make_store(), make_store()
    if make_store.kind == "memory":  # type: ignore[attr-defined]
        # each MemoryStore is its own storage: a write to one never shows in another
        ns = _warm(one)
        assert two.get(ns, "warm") is None and two.list_namespaces() == []
        return
    ns = _warm(one)
    assert two.get(ns, "warm") is not None  # read once: anything cached is now stale below
    for round_ in range(3):
        one.put(ns, "k", {"round": round_})
        got = two.get(ns, "k")
        assert got is not None and got.value == {"round": round_}
        two.put(ns, "k", {"round": -round_})
        got = one.get(ns, "k")
        assert got is not None and got.value == {"round": -round_}
    assert one.delete(ns, "k")
    assert two.get(ns, "k") is None
    two.put(ns, "k", {"back": True})
    got = one.get(ns, "k")
    assert got is not None and got.value == {"back": True}


def test_equal_spellings_of_a_namespace_and_key_read_the_item(lt_store: BaseStore) -> None:
    """A tuple subclass namespace or a str subclass key equal to a stored one reads it."""
    from enum import Enum
    from typing import NamedTuple

    class Space(NamedTuple):
        kind: str
        user: str

    class Key(str, Enum):
        TEA = "tea"

    ns = _warm(lt_store)
    lt_store.put(ns, "tea", {"text": "green"})
    for space, key in [(Space(*ns), "tea"), (ns, Key.TEA), (Space(*ns), Key.TEA)]:
        item = lt_store.get(space, key)  # type: ignore[arg-type]
        assert item is not None and item.value == {"text": "green"}
        assert item.namespace == ns and item.key == "tea"
        item.value["text"] = "changed"
    assert lt_store.get(ns, "tea").value == {"text": "green"}  # type: ignore[union-attr]


def test_a_get_on_a_held_namespace_refuses_bad_keys(lt_store: BaseStore) -> None:
    """The lock-free lookup of a get must not answer ``None`` (or raise ``TypeError``) for
    a key the general path refuses."""
    ns = _warm(lt_store)
    for key in ("", 5, None, ["warm"], ("warm",)):
        with pytest.raises(StoreError):
            lt_store.get(ns, key)  # type: ignore[arg-type]


def test_a_get_during_updates_of_its_key_always_finds_it() -> None:
    """An update moves its key (pop, then store): a get in between, without the lock, must
    look again under it rather than answer that an existing item is missing."""
    import sys
    import threading

    from checkpoint.store import MemoryStore

    store = MemoryStore()
    ns = ("race", "u1")
    store.put(ns, "k", {"n": 0})
    store.put(ns, "other", {"n": 0})
    done = threading.Event()

    def write() -> None:
        for i in range(20_000):
            store.put(ns, "k", {"n": i})
        done.set()

    writer = threading.Thread(target=write)
    missed = 0
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often, so gets land inside updates
    try:
        writer.start()
        while not done.is_set():
            if store.get(ns, "k") is None:
                missed += 1
        writer.join()
    finally:
        sys.setswitchinterval(interval)
    assert missed == 0
