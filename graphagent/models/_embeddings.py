"""Embeddings: ``OpenAIEmbeddings`` over httpx, ``init_embeddings("provider:model")`` and
``FakeEmbeddings`` for tests. Stores take them as ``index={"embed": ...}``.

Every embeddings object has ``embed_documents(texts)``, ``embed_query(text)`` and their
async twins, the shape LangChain's ``Embeddings`` has, so either kind fits either library.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Sequence
from typing import Any

import httpx

from graphagent.errors import ModelResponseError, UserError
from graphagent.models._http import ModelHTTP
from graphagent.models._init import PROVIDERS

__all__ = ["FakeEmbeddings", "OpenAIEmbeddings", "init_embeddings"]

Vector = list[float]


class OpenAIEmbeddings:
    """Vectors from an OpenAI-compatible ``/embeddings`` endpoint (OpenAI, DashScope
    compatible mode, Ollama, llama.cpp server, vLLM).

    Args:
        model: the embedding model, e.g. ``"text-embedding-3-small"``.
        base_url: the API root (default ``OPENAI_BASE_URL`` or OpenAI's), e.g.
            ``"http://localhost:11434/v1"`` for Ollama.
        api_key: the key (default ``OPENAI_API_KEY``); local servers need none.
        dimensions: ask the server for shorter vectors (models that support it).
        batch_size: texts per request.
        timeout: seconds to wait for any one read.
        max_retries: retries on 408/409/425/429/5xx and connection errors.
        transport: an ``httpx`` transport (``httpx.MockTransport`` in tests).

    Example::

        embed = OpenAIEmbeddings("nomic-embed-text", base_url="http://localhost:11434/v1")
        store = MemoryStore(index={"embed": embed, "dims": 768})
    """

    path = "/embeddings"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 256,
        timeout: float = 60,
        max_retries: int = 2,
        key_env: str | None = None,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if batch_size < 1:
            raise UserError(f"batch_size must be at least 1; got {batch_size}")
        url = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        if key_env is None and httpx.URL(url).host == "api.openai.com":
            key_env = "OPENAI_API_KEY"
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.http = ModelHTTP(
            base_url=url,
            headers={"Authorization": f"Bearer {key}"} if key else {},
            timeout=timeout,
            max_retries=max_retries,
            secrets=[key] if key else [],
            missing_key=None if key else key_env,
            transport=transport,
            async_transport=async_transport,
        )

    def __repr__(self) -> str:
        return f"<OpenAIEmbeddings {self.model!r} at {self.http.where}>"

    def _body(self, texts: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self.dimensions is not None:
            body["dimensions"] = self.dimensions
        return body

    def _vectors(self, answer: dict[str, Any], count: int) -> list[Vector]:
        data = answer.get("data")
        if not isinstance(data, list) or len(data) != count:
            raise ModelResponseError(
                f"{self.http.where} answered /embeddings without one 'data' entry per text "
                f"({count} texts)"
            )
        try:
            ordered = sorted(data, key=lambda d: int(d.get("index", 0)))
            return [[float(x) for x in d["embedding"]] for d in ordered]
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise ModelResponseError(
                f"{self.http.where} answered /embeddings with an entry that is not a vector "
                f"({type(exc).__name__})"
            ) from None

    def _batches(self, texts: Sequence[str]) -> list[list[str]]:
        texts = list(texts)
        return [texts[i : i + self.batch_size] for i in range(0, len(texts), self.batch_size)]

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text, in order."""
        out: list[Vector] = []
        for batch in self._batches(texts):
            out += self._vectors(self.http.post_json(self.path, self._body(batch)), len(batch))
        return out

    def embed_query(self, text: str) -> Vector:
        """The vector of one query text."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Async :meth:`embed_documents`."""
        out: list[Vector] = []
        for batch in self._batches(texts):
            answer = await self.http.apost_json(self.path, self._body(batch))
            out += self._vectors(answer, len(batch))
        return out

    async def aembed_query(self, text: str) -> Vector:
        """Async :meth:`embed_query`."""
        return (await self.aembed_documents([text]))[0]


def init_embeddings(spec: str, **kwargs: Any) -> OpenAIEmbeddings:
    """Embeddings from ``"provider:model"`` (``openai``, ``dashscope``, ``ollama``, ``vllm``,
    ``llamacpp``, ...), with base URL and key from the provider's environment variables
    unless given as ``base_url=`` / ``api_key=``.

    Raises:
        UserError: an unknown provider, one without an embeddings API, or no ``provider:``.
    """
    provider_name, sep, model = spec.partition(":")
    provider = PROVIDERS.get(provider_name.lower())
    if not sep or not model or provider is None or provider.anthropic:
        names = ", ".join(n for n, p in PROVIDERS.items() if not p.anthropic)
        raise UserError(
            f"cannot read embeddings spec {spec!r}: write 'provider:model' with provider one "
            f"of {names} (e.g. 'openai:text-embedding-3-small', 'ollama:nomic-embed-text')"
        )
    base_url = kwargs.pop("base_url", None) or os.environ.get(provider.url_env) or provider.base_url
    api_key = kwargs.pop("api_key", None)
    if api_key is None and provider.key_env:
        api_key = os.environ.get(provider.key_env)
    if provider.key_required and provider.key_env:
        kwargs.setdefault("key_env", provider.key_env)
    return OpenAIEmbeddings(model, base_url=base_url, api_key=api_key or "", **kwargs)


_WORDS = re.compile(r"\w+")


class FakeEmbeddings:
    """Deterministic embeddings for tests: texts sharing words and letter trigrams get
    similar vectors, the same text always the same vector, and nothing leaves the process.

    Args:
        dims: the vectors' length.
    """

    def __init__(self, dims: int = 64) -> None:
        if type(dims) is not int or dims < 1:
            raise UserError(f"dims must be a positive int; got {dims!r}")
        self.dims = dims
        self.calls = 0

    def _slot(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(feature.encode("utf-8", "surrogatepass"), digest_size=8).digest()
        number = int.from_bytes(digest, "little")
        return number % self.dims, 1.0 if (number >> 32) & 1 else -1.0

    def _one(self, text: str) -> Vector:
        vector = [0.0] * self.dims
        lowered = text.lower()
        # whole words weigh most, a word's first four letters next ("drink"/"drinks"),
        # letter trigrams least: similar wording scores high, shared letters a little
        for word in _WORDS.findall(lowered):
            for feature, weight in (("w:" + word, 3.0), ("s:" + word[:4], 2.0)):
                slot, sign = self._slot(feature)
                vector[slot] += weight * sign
            padded = f" {word} "
            for i in range(len(padded) - 2):
                slot, sign = self._slot("t:" + padded[i : i + 3])
                vector[slot] += 0.5 * sign
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector

    def embed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """One vector per text."""
        self.calls += 1
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> Vector:
        """The vector of one text."""
        self.calls += 1
        return self._one(text)

    async def aembed_documents(self, texts: Sequence[str]) -> list[Vector]:
        """Async :meth:`embed_documents`."""
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> Vector:
        """Async :meth:`embed_query`."""
        return self.embed_query(text)
