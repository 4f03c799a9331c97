"""Spring AI Alibaba's store contract, translated, on every backend.

Origin: spring-ai-alibaba-graph-core ``store/stores/MemoryStoreTest.java``,
``RedisStoreTest.java`` and ``DatabaseStoreTest.java`` (the three run the same cases
against MemoryStore, RedisStore and DatabaseStore). Here one test runs on memory, SQLite,
PostgreSQL (its own schema) and Redis (its own prefix). ``putItem(StoreItem.of(ns, key,
value))`` is ``put(ns, key, value)``; ``getItem`` is ``get``; ``deleteItem`` is ``delete``;
``searchItems(request)`` is ``search``; ``size()``/``isEmpty()`` is ``len``.
"""

from __future__ import annotations

import pytest

from checkpoint.store import BaseStore, InvalidNamespaceError, StoreError


def _setup_test_data(store: BaseStore) -> None:
    store.put(("users", "admin"), "profile", {"name": "Administrator", "role": "admin"})
    store.put(
        ("users", "user1", "preferences"), "ui_settings", {"theme": "dark", "language": "en-US"}
    )
    store.put(
        ("users", "user2", "preferences"), "ui_settings", {"theme": "light", "language": "zh-CN"}
    )


def test_put_and_get_item(lt_store: BaseStore) -> None:
    """MemoryStoreTest/RedisStoreTest/DatabaseStoreTest.testPutAndGetItem: what is put reads
    back with its namespace, key and value."""
    value = {"theme": "dark", "language": "en-US"}
    lt_store.put(("users", "user123"), "preferences", value)
    got = lt_store.get(("users", "user123"), "preferences")
    assert got is not None
    assert (got.namespace, got.key, got.value) == (("users", "user123"), "preferences", value)


def test_delete_item(lt_store: BaseStore) -> None:
    """...StoreTest.testDeleteItem: delete says True, then the item is gone and a second
    delete says False."""
    lt_store.put(("test", "namespace"), "test_key", {"data": "test_value"})
    assert lt_store.get(("test", "namespace"), "test_key") is not None
    assert lt_store.delete(("test", "namespace"), "test_key") is True
    assert lt_store.get(("test", "namespace"), "test_key") is None
    assert lt_store.delete(("test", "namespace"), "test_key") is False


def test_search_items(lt_store: BaseStore) -> None:
    """...StoreTest.testSearchItems: a search with no prefix finds every item."""
    _setup_test_data(lt_store)
    assert len(lt_store.search(())) == 3


def test_list_namespaces(lt_store: BaseStore) -> None:
    """...StoreTest.testListNamespaces: Spring lists every namespace and its ancestors
    ("users", "users/admin", ...); here ``list_namespaces`` lists those holding items and
    ``max_depth`` gives the ancestors, which together are the same six."""
    _setup_test_data(lt_store)
    holding = lt_store.list_namespaces()
    ancestors = {ns for depth in (1, 2) for ns in lt_store.list_namespaces(max_depth=depth)}
    assert sorted(set(holding) | ancestors) == [
        ("users",),
        ("users", "admin"),
        ("users", "user1"),
        ("users", "user1", "preferences"),
        ("users", "user2"),
        ("users", "user2", "preferences"),
    ]


def test_validation_errors(lt_store: BaseStore) -> None:
    """...StoreTest.testValidationErrors: a missing namespace, a missing or empty key, and a
    missing value are refused (Spring's IllegalArgumentException is a ValueError here)."""
    with pytest.raises(InvalidNamespaceError):
        lt_store.get(None, "key")  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        lt_store.get(("namespace",), None)  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        lt_store.get(("namespace",), "")
    with pytest.raises(StoreError):
        lt_store.put(("namespace",), "k", None)  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        lt_store.search(None)  # type: ignore[arg-type]


def test_size_and_clear(lt_store: BaseStore) -> None:
    """...StoreTest.testSizeAndClear: size counts items, clear empties the store."""
    assert len(lt_store) == 0
    _setup_test_data(lt_store)
    assert len(lt_store) == 3
    lt_store.clear()
    assert len(lt_store) == 0


def test_search_by_namespace(lt_store: BaseStore) -> None:
    """...StoreTest.testSearchByNamespace: a namespace prefix finds the items below it."""
    _setup_test_data(lt_store)
    found = lt_store.search(("users", "user1"))
    assert [f.namespace for f in found] == [("users", "user1", "preferences")]


def test_search_by_query(lt_store: BaseStore) -> None:
    """...StoreTest.testSearchByQuery: a text query on a store without an index matches
    the items whose value contains it."""
    _setup_test_data(lt_store)
    found = lt_store.search((), query="Administrator")
    assert [f.value["name"] for f in found] == ["Administrator"]


def test_search_with_filters(lt_store: BaseStore) -> None:
    """...StoreTest.testSearchWithFilters: an equality filter on a value field."""
    _setup_test_data(lt_store)
    found = lt_store.search((), filter={"theme": "dark"})
    assert [f.value["theme"] for f in found] == ["dark"]


def test_pagination(lt_store: BaseStore) -> None:
    """...StoreTest.testPagination: offset 1, limit 1 gives one item, the second newest."""
    _setup_test_data(lt_store)
    page = lt_store.search((), offset=1, limit=1)
    assert [(f.namespace, f.key) for f in page] == [
        (("users", "user1", "preferences"), "ui_settings")
    ]


def test_update_existing_item(lt_store: BaseStore) -> None:
    """...StoreTest.testUpdateExistingItem: a second put replaces the value; still one item."""
    lt_store.put(("test",), "updatable_item", {"version": 1})
    lt_store.put(("test",), "updatable_item", {"version": 2, "updated": True})
    got = lt_store.get(("test",), "updatable_item")
    assert got is not None and got.value == {"version": 2, "updated": True}
    assert len(lt_store) == 1
