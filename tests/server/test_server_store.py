"""The store endpoints through ``langgraph-sdk``."""

from __future__ import annotations

import uuid

from langgraph_sdk.client import LangGraphClient


async def test_put_get_search_list_delete(client: LangGraphClient) -> None:
    """An item put is read back, found under its prefix, listed, and gone once deleted;
    a missing item is None."""
    ns = ["users", uuid.uuid4().hex]
    await client.store.put_item(ns, "prefs", {"theme": "dark"})
    item = await client.store.get_item(ns, "prefs")
    assert item is not None
    assert item["value"] == {"theme": "dark"} and item["namespace"] == ns
    assert await client.store.get_item(ns, "nothing") is None
    found = await client.store.search_items(ns[:1] + ns[1:], limit=10)
    assert [i["key"] for i in found["items"]] == ["prefs"]
    spaces = await client.store.list_namespaces(prefix=ns)
    assert spaces["namespaces"] == [ns]
    await client.store.delete_item(ns, "prefs")
    assert await client.store.get_item(ns, "prefs") is None


async def test_search_filter(client: LangGraphClient) -> None:
    """search_items filters on value fields."""
    ns = ["docs", uuid.uuid4().hex]
    await client.store.put_item(ns, "a", {"kind": "x", "n": 1})
    await client.store.put_item(ns, "b", {"kind": "y", "n": 2})
    found = await client.store.search_items(ns, filter={"kind": "y"})
    assert [i["key"] for i in found["items"]] == ["b"]
