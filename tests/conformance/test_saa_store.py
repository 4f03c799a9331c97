"""Spring AI Alibaba's store contract, translated, on every backend.

Origin: spring-ai-alibaba-graph-core ``store/stores/MemoryStoreTest.java``,
``RedisStoreTest.java`` and ``DatabaseStoreTest.java`` (the three run the same cases
against MemoryStore, RedisStore and DatabaseStore). Here one test runs on memory, SQLite,
PostgreSQL (its own schema) and Redis (its own prefix). ``putItem(StoreItem.of(ns, key,
value))`` is ``put(ns, key, value)``; ``getItem`` is ``get``; ``deleteItem`` is ``delete``;
``searchItems(request)`` is ``search``; ``size()``/``isEmpty()`` is ``len``.

Also translated below: ``store/StoreIntegrationTest.java``, ``FileSystemStoreTest.java``
(the cases not shared with the three above), ``DatabaseStorePostgreSqlIntegrationTest``,
``DatabaseStorePostgreSqlLocalIntegrationTest`` and ``DatabaseStoreAllDialectTest``.
``MongoStoreTest.java`` runs the same eleven cases as ``MemoryStoreTest`` (graphagent has no
MongoDB store; the cases run on its four backends instead).
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


# ---------------------------------------------------------------- StoreIntegrationTest


def _hierarchy(store: BaseStore) -> None:
    store.put(("company", "engineering"), "team_size", {"count": 50})
    store.put(
        ("company", "engineering", "backend"), "languages", {"primary": "Java", "secondary": "Go"}
    )
    store.put(
        ("company", "engineering", "frontend"),
        "frameworks",
        {"primary": "React", "secondary": "Vue"},
    )
    store.put(("company", "marketing"), "budget", {"annual": 1000000})
    store.put(("company", "hr"), "policies", {"remote_work": True})


def test_store_basic_operations_and_consistency(lt_store: BaseStore) -> None:
    """StoreIntegrationTest.testAllStoreImplementations and
    .testStoreConsistencyAcrossImplementations: put, get, size, isEmpty, delete and clear
    behave the same on every backend."""
    value = {"message": "hello world", "count": 42}
    lt_store.put(("test", "consistency"), "data", value)
    got = lt_store.get(("test", "consistency"), "data")
    assert got is not None
    assert (got.namespace, got.key, got.value) == (("test", "consistency"), "data", value)
    assert len(lt_store) == 1 and bool(lt_store)
    assert lt_store.delete(("test", "consistency"), "data") is True
    assert lt_store.get(("test", "consistency"), "data") is None and len(lt_store) == 0
    lt_store.put(("test", "consistency"), "data", value)
    lt_store.clear()
    assert len(lt_store) == 0


def test_store_search_and_namespace_operations(lt_store: BaseStore) -> None:
    """StoreIntegrationTest.testStoreSearchAndNamespaceOperations (run there on MemoryStore
    only; here on every backend): search all, by prefix (the prefix's own items
    included), by text, by a boolean filter, a page; namespaces all, under a prefix, and
    cut to a depth. Spring's result also carries totalCount; here a page is a list."""
    _hierarchy(lt_store)
    assert len(lt_store.search(())) == 5
    assert len(lt_store.search(("company", "engineering"))) == 3
    assert [i.key for i in lt_store.search((), query="Java")] == ["languages"]
    assert [i.key for i in lt_store.search((), filter={"remote_work": True})] == ["policies"]
    assert len(lt_store.search((), offset=1, limit=2)) == 2
    everything = set(lt_store.list_namespaces())
    ancestors = {ns for d in (1, 2) for ns in lt_store.list_namespaces(max_depth=d)}
    assert everything | ancestors >= {
        ("company",),
        ("company", "engineering"),
        ("company", "engineering", "backend"),
        ("company", "engineering", "frontend"),
        ("company", "marketing"),
        ("company", "hr"),
    }
    engineering = lt_store.list_namespaces(prefix=("company", "engineering"))
    assert set(engineering) == {
        ("company", "engineering"),
        ("company", "engineering", "backend"),
        ("company", "engineering", "frontend"),
    }
    assert all(len(ns) <= 2 for ns in lt_store.list_namespaces(max_depth=2))


# ---------------------------------------------------------------- FileSystemStoreTest


def test_traversal_like_labels_and_keys_stay_inside_the_store(lt_store: BaseStore) -> None:
    """FileSystemStoreTest.testRejectsNamespaceTraversalSegments and
    .testRejectsKeyTraversalSegments: Spring's file store refuses ".." and "../x" because
    they would leave its directory. Difference: no graphagent store keeps items as paths,
    so such labels and keys are ordinary text: they are kept apart from their look-alikes
    and never reach another namespace."""
    lt_store.put(("..",), "escaped", {"x": "y"})
    lt_store.put(("safe",), "../escaped", {"x": "z"})
    lt_store.put(("safe", ".."), "k", {"x": "w"})
    lt_store.put((".", "/", "a/b"), "/", {"x": "v"})
    assert lt_store.get(("..",), "escaped").value == {"x": "y"}  # type: ignore[union-attr]
    assert lt_store.get(("safe",), "../escaped").value == {"x": "z"}  # type: ignore[union-attr]
    assert lt_store.get(("safe",), "escaped") is None
    assert lt_store.get((".", "/", "a/b"), "/").value == {"x": "v"}  # type: ignore[union-attr]
    assert [i.key for i in lt_store.search(("safe",))] == ["k", "../escaped"]
    assert lt_store.list_namespaces(prefix=(".",)) == [(".", "/", "a/b")]
    assert lt_store.list_namespaces(prefix=("a",)) == []
    assert len(lt_store) == 4


def test_deep_namespaces(lt_store: BaseStore) -> None:
    """FileSystemStoreTest.testDirectoryCreation: a four-level namespace holds an item
    (Spring checks the directories it made; here the item and its namespace read back)."""
    ns = ("level1", "level2", "level3", "level4")
    lt_store.put(ns, "deep_item", {"depth": 4})
    assert lt_store.get(ns, "deep_item").value == {"depth": 4}  # type: ignore[union-attr]
    assert lt_store.list_namespaces() == [ns]
    assert lt_store.list_namespaces(max_depth=2) == [("level1", "level2")]


# ---------------------------------------------------------------- DatabaseStore tests


def test_database_store_insert_read_and_upsert(lt_store: BaseStore) -> None:
    """DatabaseStorePostgreSqlIntegrationTest.shouldInsertAndReadItemOnPostgresql17 and
    .shouldUpsertUpdateItemOnPostgresql17 (and their ...LocalIntegrationTest twins): a
    put reads back; a second put to the key replaces the whole value, not a merge."""
    ns = ("user_profiles",)
    lt_store.put(ns, "user_001", {"name": "Wang", "age": 28})
    assert lt_store.get(ns, "user_001").value == {"name": "Wang", "age": 28}  # type: ignore[union-attr]
    lt_store.put(ns, "user_002", {"version": 1, "old": "gone"})
    lt_store.put(ns, "user_002", {"version": 2, "updated": True})
    assert lt_store.get(ns, "user_002").value == {"version": 2, "updated": True}  # type: ignore[union-attr]


def test_database_store_sql_paths(lt_store: BaseStore) -> None:
    """DatabaseStoreAllDialectTest.shouldUseGetItemSqlAndDeserializeResult,
    .shouldUseDeleteItemSql, .shouldUseClearAndSizeSql,
    .shouldUseSelectAllSqlForSearchAndNamespaces and .shouldValidateInputForPutItem
    (there against a mocked JDBC connection per dialect; here against each real backend):
    get, delete, size, clear, search-all and namespaces, and a missing item refused. Its
    dialect cases (MySQL, Oracle, H2 upsert and DDL text, JDBC URLs) have no counterpart:
    graphagent speaks SQLite and PostgreSQL and creates its own tables."""
    lt_store.put(("users",), "k1", {"name": "a"})
    lt_store.put(("products",), "p1", {"name": "b"})
    lt_store.put(("products",), "p2", {"name": "c"})
    assert lt_store.get(("users",), "k1").key == "k1"  # type: ignore[union-attr]
    assert len(lt_store) == 3
    assert lt_store.delete(("products",), "p2") is True
    assert len(lt_store.search(())) == 2
    assert set(lt_store.list_namespaces()) == {("users",), ("products",)}
    with pytest.raises(StoreError):
        lt_store.put(("users",), "k2", None)  # type: ignore[arg-type]
    with pytest.raises(StoreError):
        lt_store.put(("users",), "k2", "not a dict")  # type: ignore[arg-type]
    lt_store.clear()
    assert len(lt_store) == 0
