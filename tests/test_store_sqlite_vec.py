"""SqliteStore's sqlite-vec path ranks exactly as its Python scan does.

SqliteStore loads sqlite-vec itself when the package is installed and this Python's
``sqlite3`` can load extensions. Some builds cannot (pyenv's default build, which the
project's machines use, has no ``enable_load_extension``): there the test turns extension
loading on through SQLite's own C function, so the store's sqlite-vec SQL still runs here.
"""

from __future__ import annotations

import ctypes
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
import sqlite_vec  # the `vector` extra, which `make test` installs
from _ltstores import same_ranking

from checkpoint.store import SqliteStore
from checkpoint.store import sqlite as sqlite_store
from graphagent.models import FakeEmbeddings

DIMS = 24


def index(**kw: Any) -> dict[str, Any]:
    return {"embed": FakeEmbeddings(DIMS), "dims": DIMS, **kw}


def with_sqlite_vec(store: SqliteStore) -> SqliteStore:
    """``store`` ranking with sqlite-vec: loaded by the store itself where this Python
    allows, else loaded here through ``sqlite3_enable_load_extension``."""
    if hasattr(store.conn, "enable_load_extension"):
        assert store.vec, "sqlite-vec is installed and loadable, yet the store did not load it"
        return store
    assert not store.vec
    if sys.implementation.name != "cpython":
        pytest.fail("cannot reach the SQLite handle of this Python's sqlite3 connection")
    import _sqlite3

    # CPython's Connection object starts with its `sqlite3 *db`, right after the header
    handle = ctypes.c_void_p.from_address(id(store.conn) + object.__basicsize__).value
    lib = ctypes.CDLL(_sqlite3.__file__)
    lib.sqlite3_enable_load_extension.argtypes = [ctypes.c_void_p, ctypes.c_int]
    assert lib.sqlite3_enable_load_extension(handle, 1) == 0
    store.conn.execute("SELECT load_extension(?)", [sqlite_vec.loadable_path()])
    lib.sqlite3_enable_load_extension(handle, 0)
    store.vec = True
    return store


def fill(store: SqliteStore) -> None:
    for i in range(50):
        value = {"text": f"entry {i} on subject {i % 6}", "n": i, "title": f"t{i % 5}"}
        store.put(("docs", f"s{i % 3}"), f"k{i}", value)
    store.put(("docs", "s0"), "plain", {"text": "subject 2"}, index=False)


SEARCHES: list[dict[str, Any]] = [
    {"query": "subject 2", "limit": 10},
    {"query": "entry 17 on subject 5", "limit": 6, "offset": 4},
    {"query": "subject 1", "limit": 10, "filter": {"n": {"$lt": 20}}},
    {"query": "subject 3", "limit": 5, "offset": 48},  # past the scored: `plain` last
    {"query": "t3", "limit": 60},
]


@pytest.mark.parametrize("fields", [None, ["text", "title"]])
def test_sqlite_vec_ranks_as_the_python_scan(tmp_path: Path, fields: list[str] | None) -> None:
    """Keys in the same order and scores equal to float32 precision, with filters, pages,
    an unindexed item and items embedded on two fields (the best one counts)."""
    kw = {} if fields is None else {"fields": fields}
    with (
        SqliteStore(tmp_path / "vec.sqlite", index=index(**kw)) as fast,
        SqliteStore(tmp_path / "scan.sqlite", index=index(**kw)) as scan,
    ):
        with_sqlite_vec(fast)
        scan.vec = False
        fill(fast)
        fill(scan)
        for search in SEARCHES:
            got = [(f.key, f.score) for f in fast.search(("docs",), **search)]
            want = [(f.key, f.score) for f in scan.search(("docs",), **search)]
            same_ranking(got, want)
        assert fast.search(("docs",), query="subject 3", limit=5, offset=48)[-1].key == "plain"


def test_without_extension_loading_the_store_scans(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python whose sqlite3 cannot load extensions (or has no sqlite-vec) gets the exact
    scan, with no error."""

    class NoLoading(sqlite3.Connection):
        def enable_load_extension(self, enabled: bool) -> None:
            raise sqlite3.OperationalError("not authorized")

    conn = sqlite3.connect(":memory:", factory=NoLoading)
    assert sqlite_store._load_vec(conn) is False
    conn.close()
    store = SqliteStore(":memory:", index=index(fields=["text"]))
    monkeypatch.setattr(store, "vec", False)
    store.put(("a",), "k", {"text": "subject 2"})
    assert store.search(("a",), query="subject 2")[0].score == pytest.approx(1.0, abs=1e-5)
    store.close()
