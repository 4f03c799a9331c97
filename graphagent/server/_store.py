"""The store endpoints over ``checkpoint``'s long-term memory stores.

With auth on, each user's items live under a namespace label of their own that the
server adds on the way in and takes off on the way out: a user never reads, lists or
deletes another's items, whatever namespace they name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint import BaseStore
from checkpoint.store import InvalidNamespaceError, Item, StoreError
from graphagent.server._errors import ApiError
from graphagent.server._records import Tenancy
from graphagent.server._wire import to_wire

__all__ = ["StoreApi"]


def _namespace(raw: Any, what: str = "namespace") -> tuple[str, ...]:
    if isinstance(raw, str):
        return tuple(p for p in raw.split(".") if p)
    if isinstance(raw, Sequence) and all(isinstance(p, str) for p in raw):
        return tuple(raw)
    raise ApiError(422, f"{what} must be a list of strings, got {raw!r:.100}")


class StoreApi:
    """``store.put_item/get_item/delete_item/search_items/list_namespaces``."""

    def __init__(self, store: BaseStore | None, tenancy: Tenancy) -> None:
        self.store = store
        self.tenancy = tenancy

    def _need(self) -> BaseStore:
        if self.store is None:
            raise ApiError(404, "this server has no store: start it with a storage flag")
        return self.store

    def _in(self, owner: str, namespace: tuple[str, ...]) -> tuple[str, ...]:
        return (self.tenancy.label(owner), *namespace) if self.tenancy.auth else namespace

    def _out(self, namespace: Sequence[str]) -> list[str]:
        return list(namespace[1:] if self.tenancy.auth else namespace)

    def _item(self, item: Item, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        out = {
            "namespace": self._out(item.namespace),
            "key": item.key,
            "value": to_wire(item.value),
            "created_at": item.created_at.isoformat(),
            "updated_at": item.updated_at.isoformat(),
        }
        out.update(extra or {})
        return out

    async def put(self, owner: str, body: Mapping[str, Any]) -> None:
        """Store ``value`` (an object) at ``namespace``/``key``."""
        store = self._need()
        namespace = self._in(owner, _namespace(body.get("namespace")))
        value = body.get("value")
        if not isinstance(value, dict):
            raise ApiError(422, f"value must be an object, got {value!r:.100}")
        options: dict[str, Any] = {}
        if "ttl" in body:
            options["ttl"] = body["ttl"]
        with _mapped():
            await store.aput(namespace, str(body.get("key")), value, body.get("index"), **options)

    async def get(self, owner: str, params: Mapping[str, Any]) -> dict[str, Any] | None:
        """The item, or ``None`` (``null`` on the wire) when there is none."""
        store = self._need()
        namespace = self._in(owner, _namespace(params.get("namespace", "")))
        refresh = params.get("refresh_ttl")
        with _mapped():
            item = await store.aget(
                namespace,
                str(params.get("key")),
                refresh_ttl=None if refresh is None else str(refresh).lower() == "true",
            )
        return None if item is None else self._item(item)

    async def delete(self, owner: str, body: Mapping[str, Any]) -> None:
        """Delete the item (no error when there is none)."""
        store = self._need()
        with _mapped():
            await store.adelete(
                self._in(owner, _namespace(body.get("namespace"))), str(body["key"])
            )

    async def search(self, owner: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Items under ``namespace_prefix``, by ``query`` and ``filter``."""
        store = self._need()
        prefix = self._in(owner, _namespace(body.get("namespace_prefix") or [], "namespace_prefix"))
        with _mapped():
            found = await store.asearch(
                prefix,
                query=body.get("query"),
                filter=body.get("filter"),
                limit=int(body.get("limit") or 10),
                offset=int(body.get("offset") or 0),
                refresh_ttl=body.get("refresh_ttl"),
            )
        return {"items": [self._item(i, {"score": getattr(i, "score", None)}) for i in found]}

    async def namespaces(self, owner: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Namespaces holding items, by ``prefix``, ``suffix`` and ``max_depth``."""
        store = self._need()
        prefix = _namespace(body.get("prefix") or [], "prefix")
        suffix = _namespace(body["suffix"], "suffix") if body.get("suffix") else None
        depth = body.get("max_depth")
        if self.tenancy.auth:
            prefix = self._in(owner, prefix)
            depth = None if depth is None else int(depth) + 1
        with _mapped():
            found = await store.alist_namespaces(
                prefix=prefix or None,
                suffix=suffix,
                max_depth=depth,
                limit=int(body.get("limit") or 100),
                offset=int(body.get("offset") or 0),
            )
        return {"namespaces": [self._out(n) for n in found]}


class _mapped:
    """A store's refusal of a namespace or value is the caller's mistake: a 422."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if isinstance(exc, (InvalidNamespaceError, ValueError)):
            raise ApiError(422, str(exc)) from exc
        if isinstance(exc, StoreError):
            raise ApiError(500, f"the store failed: {exc}") from exc
