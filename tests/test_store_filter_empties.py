"""A filter tells an empty list from an empty dict, a missing field and ``None``, at the
top and nested, on every store backend (the Redis store's Lua decoded ``[]`` and ``{}``
alike, so ``filter={"tags": []}`` matched an item whose ``tags`` was ``{}``)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from checkpoint.store import BaseStore

NS = ("empties",)
_MISSING = object()

# tags of each item (_MISSING: the item has no tags field)
TAGS: dict[str, Any] = {
    "list": [],
    "dict": {},
    "missing": _MISSING,
    "none": None,
    "list_in_list": [[]],
    "dict_in_list": [{}],
    "list_in_dict": {"x": []},
    "dict_in_dict": {"x": {}},
    "text": "[]",
    "text_in_dict": {"x": "[]", "y": "{}"},
    "full": ["a"],
    # what the Lua rewriting must leave alone: [] inside strings and keys, escapes
    "escaped": {"x": 'q"[]\\', "y": [], "z": '\\"[]'},
    "key_brackets": {"[]": [], "{}": {}, "é[]": ["[]"]},
}

OPERANDS: dict[str, Any] = {
    "list": [],
    "dict": {},
    "none": None,
    "list_in_list": [[]],
    "dict_in_list": [{}],
    "list_in_dict": {"x": []},
    "dict_in_dict": {"x": {}},
    "text": "[]",
    "text_in_dict": {"x": "[]", "y": "{}"},
    "escaped": {"x": 'q"[]\\', "y": [], "z": '\\"[]'},
    "escaped_other": {"x": 'q"[]\\', "y": {}, "z": '\\"[]'},
    "key_brackets": {"[]": [], "{}": {}, "é[]": ["[]"]},
    "key_brackets_swapped": {"[]": {}, "{}": [], "é[]": ["[]"]},
}


def _same(a: Any, b: Any) -> bool:
    """JSON equality for these values (no numbers beyond ints): a missing field is null."""
    a = None if a is _MISSING else a
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _fill(store: BaseStore) -> None:
    for key, tags in TAGS.items():
        store.put(NS, key, {"name": key} if tags is _MISSING else {"name": key, "tags": tags})


def _keys(items: list[Any]) -> set[str]:
    return {i.key for i in items}


@pytest.mark.parametrize("operand", list(OPERANDS))
def test_eq_and_ne_tell_empties_apart(lt_store: BaseStore, operand: str) -> None:
    """``$eq`` matches exactly the items whose tags equal the operand as JSON, ``$ne``
    the others, through a page, a text query and the async methods alike."""
    _fill(lt_store)
    want = OPERANDS[operand]
    equal = {k for k, v in TAGS.items() if _same(v, want)}
    other = set(TAGS) - equal
    assert _keys(lt_store.search(NS, filter={"tags": want}, limit=50)) == equal
    assert _keys(lt_store.search(NS, filter={"tags": {"$eq": want}}, limit=50)) == equal
    assert _keys(lt_store.search(NS, filter={"tags": {"$ne": want}}, limit=50)) == other
    # the text-query path filters candidates instead of a page
    hits = lt_store.search(NS, query="name", filter={"tags": want}, limit=50)
    assert _keys(hits) == equal
    got = asyncio.run(lt_store.asearch(NS, filter={"tags": {"$ne": want}}, limit=50))
    assert _keys(got) == other


def test_nested_path_tells_empties_apart(lt_store: BaseStore) -> None:
    """A dotted path reaching into a dict compares what it finds there the same way."""
    _fill(lt_store)
    assert _keys(lt_store.search(NS, filter={"tags.x": []})) == {"list_in_dict"}
    assert _keys(lt_store.search(NS, filter={"tags.x": {}})) == {"dict_in_dict"}
    assert _keys(lt_store.search(NS, filter={"tags.x": "[]"})) == {"text_in_dict"}
    # every item without a tags.x (a list has no field x) counts as null there
    nulls = {k for k, v in TAGS.items() if not (isinstance(v, dict) and "x" in v)}
    assert _keys(lt_store.search(NS, filter={"tags.y": []})) == {"escaped"}
    assert _keys(lt_store.search(NS, filter={"tags.[]": {}})) == set()
    assert _keys(lt_store.search(NS, filter={"tags.{}": {}})) == {"key_brackets"}
    assert _keys(lt_store.search(NS, filter={"tags.x": None}, limit=50)) == nulls


def test_paging_over_a_filter_on_empties(lt_store: BaseStore) -> None:
    """Offset and limit count only the items that pass the filter."""
    for i in range(6):
        lt_store.put(NS, f"l{i}", {"tags": []})
        lt_store.put(NS, f"d{i}", {"tags": {}})
    pages = [lt_store.search(NS, filter={"tags": {}}, limit=2, offset=o) for o in (0, 2, 4, 6)]
    assert [len(p) for p in pages] == [2, 2, 2, 0]
    assert set().union(*(_keys(p) for p in pages)) == {f"d{i}" for i in range(6)}


def test_numbers_beside_a_list_filter(lt_store: BaseStore) -> None:
    """Items holding a number, a bool or a text where the filter wants a list or a dict are
    simply no match (SQLite once raised: its JSON compare got a bare number)."""
    for key, tags in {"zero": 0, "false": False, "pi": 3.5, "text": "[]", "list": []}.items():
        lt_store.put(NS, key, {"tags": tags})
    assert _keys(lt_store.search(NS, filter={"tags": []})) == {"list"}
    assert _keys(lt_store.search(NS, filter={"tags": {}})) == set()
    assert _keys(lt_store.search(NS, filter={"tags": {"$ne": {}}})) == {
        "zero",
        "false",
        "pi",
        "text",
        "list",
    }
