"""Turning ``index={"embed": ..., "dims": N, "fields": [...]}`` into vectors.

``embed`` may be an embeddings object (``embed_documents``/``embed_query`` and, when it has
them, ``aembed_documents``/``aembed_query``), a function from a list of texts to a list of
vectors (sync or async), or a ``"provider:model"`` string. The string form is resolved the
first time a vector is needed, by importing ``graphagent.models.init_embeddings``: the
``checkpoint`` package never imports ``graphagent`` itself, so a program that only reads
stored items needs nothing else.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from checkpoint.store._core import StoreError, normalize

__all__ = ["Index", "make_index"]

Vectors = list[list[float]]


class Index:
    """A store's semantic index: how to embed, how many dimensions, which fields."""

    def __init__(self, embed: Any, dims: int, fields: Sequence[str]) -> None:
        self._embed = embed
        self.dims = dims
        self.fields = tuple(fields)

    @property
    def embedder(self) -> Any:
        """The embeddings object or function, a ``"provider:model"`` string resolved now."""
        if isinstance(self._embed, str):
            try:
                models = importlib.import_module("graphagent.models")
            except ImportError as exc:  # pragma: no cover - graphagent ships with checkpoint
                raise StoreError(
                    f"index embed {self._embed!r} names a provider, which needs graphagent "
                    "installed; pass an embeddings object or a function instead"
                ) from exc
            self._embed = models.init_embeddings(self._embed)
        return self._embed

    def embed(self, texts: list[str], query: bool = False) -> Vectors:
        """Vectors for ``texts`` (normalized), calling the embedder synchronously."""
        if not texts:
            return []
        embedder = self.embedder
        if callable(embedder) and not hasattr(embedder, "embed_documents"):
            got = embedder(texts)
            if inspect.isawaitable(got):
                got = _run_coroutine(got)
        elif query and len(texts) == 1 and hasattr(embedder, "embed_query"):
            got = [embedder.embed_query(texts[0])]
        else:
            got = embedder.embed_documents(texts)
        return self._check(texts, got)

    async def aembed(self, texts: list[str], query: bool = False) -> Vectors:
        """Vectors for ``texts``, using the embedder's async methods when it has them."""
        if not texts:
            return []
        embedder = self.embedder
        if callable(embedder) and not hasattr(embedder, "embed_documents"):
            got = embedder(texts)
            if inspect.isawaitable(got):
                got = await got
        elif query and len(texts) == 1 and hasattr(embedder, "aembed_query"):
            got = [await embedder.aembed_query(texts[0])]
        elif hasattr(embedder, "aembed_documents"):
            got = await embedder.aembed_documents(texts)
        else:
            checked: Vectors = await asyncio.to_thread(self.embed, texts, query)
            return checked
        return self._check(texts, got)

    def _check(self, texts: list[str], got: Any) -> Vectors:
        vectors = list(got)
        if len(vectors) != len(texts):
            raise StoreError(f"the embedder returned {len(vectors)} vectors for {len(texts)} texts")
        return [normalize(v, self.dims) for v in vectors]


def _run_coroutine(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise StoreError(
        "the index's embed function is async and this sync store call runs inside an event "
        "loop: use the store's async methods (aput, asearch) there"
    )


def make_index(index: Mapping[str, Any] | None) -> Index | None:
    """Check an ``index=`` configuration and build it (``None``: no semantic index)."""
    if index is None:
        return None
    if not isinstance(index, Mapping):
        raise StoreError(
            "index must be a dict like {'embed': embeddings, 'dims': 1536, 'fields': ['text']}"
        )
    # LangGraph's names: "text_fields" for fields; "distance_type", which must be cosine
    unknown = set(index) - {"embed", "dims", "fields", "text_fields", "distance_type"}
    if index.get("distance_type", "cosine") != "cosine":
        raise StoreError(
            f"index distance_type {index['distance_type']!r}: graphagent stores rank by "
            "cosine similarity only; leave it out or pass 'cosine'"
        )
    if unknown:
        raise StoreError(
            f"unknown index option(s) {sorted(unknown)}: use 'embed', 'dims' and 'fields'"
        )
    embed = index.get("embed")
    dims = index.get("dims")
    if embed is None:
        raise StoreError(
            "index needs 'embed': an embeddings object, a function or 'provider:model'"
        )
    if not isinstance(embed, str) and not callable(embed) and not hasattr(embed, "embed_documents"):
        raise StoreError(
            f"index 'embed' must be an embeddings object (with embed_documents), a function "
            f"from texts to vectors, or a 'provider:model' string; got {type(embed).__name__}"
        )
    if isinstance(embed, str) and ":" not in embed:
        raise StoreError(f"index 'embed' string {embed!r} must look like 'provider:model'")
    if type(dims) is not int or dims < 1:
        raise StoreError(f"index needs 'dims', the vectors' length as a positive int; got {dims!r}")
    fields = index.get("fields") or index.get("text_fields") or ["$"]
    if isinstance(fields, str) or not all(isinstance(f, str) and f for f in fields):
        raise StoreError(f"index 'fields' must be a list of field names; got {fields!r}")
    return Index(embed, dims, fields)
