"""HTTP for chat models: retries, error mapping, and a switch that blocks real requests.

The retry decision and error mapping are plain functions; ``ModelHTTP`` drives them
with a sync ``httpx.Client`` or an ``httpx.AsyncClient`` (each made once, reused).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import os
import random
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx

from graphagent.errors import ModelError, ModelHTTPError, ModelResponseError, ModelTimeoutError

__all__ = ["ModelHTTP", "allow_model_requests", "retry_delay"]

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_ALLOWED = [os.environ.get("GRAPHAGENT_ALLOW_MODEL_REQUESTS", "1") != "0"]


def allow_model_requests(allowed: bool) -> None:
    """Allow or block requests to real model servers (tests block them).

    Clients built with an explicit ``transport`` (e.g. ``httpx.MockTransport``) are
    never blocked. The environment variable ``GRAPHAGENT_ALLOW_MODEL_REQUESTS=0`` blocks
    from the start.
    """
    _ALLOWED[0] = allowed


def retry_delay(attempt: int, response: httpx.Response | None, backoff: float) -> float:
    """Seconds to wait before retry ``attempt`` (1-based).

    ``Retry-After`` (seconds or an HTTP date) wins, capped at 60 s; otherwise
    exponential backoff with full jitter, capped at 20 s.
    """
    if response is not None:
        header = response.headers.get("retry-after")
        if header:
            try:
                return min(60.0, max(0.0, float(header)))
            except ValueError:
                parsed = email.utils.parsedate_to_datetime(header)
                if parsed is not None:
                    return min(60.0, max(0.0, parsed.timestamp() - time.time()))
    return random.uniform(0, min(20.0, backoff * 2 ** (attempt - 1)))


def _redact(url: str) -> str:
    parsed = httpx.URL(url)
    return str(parsed.copy_with(username=None, password=None)) if parsed.userinfo else url


def _provider_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:500]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error)[:2000]
        return str(error)[:2000]
    return str(body)[:500]


class ModelHTTP:
    """POSTs JSON to a model server, with retries; holds one sync and one async client.

    Args:
        base_url: the API root (``https://api.openai.com/v1``).
        headers: sent with every request (API key headers included; never logged).
        timeout: seconds per request.
        max_retries: retries after the first attempt, on 408/409/425/429/5xx and
            connection errors.
        retry_backoff: first backoff step in seconds.
        transport: an ``httpx`` transport for the sync client (tests: ``MockTransport``).
        async_transport: the same for the async client.
    """

    def __init__(
        self,
        *,
        base_url: str,
        headers: Mapping[str, str],
        timeout: float,
        max_retries: int,
        retry_backoff: float = 0.5,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.where = _redact(self.base_url)
        self._headers = dict(headers)
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self._transport = transport
        self._async_transport = async_transport
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None

    def _check_allowed(self, explicit: object) -> None:
        if explicit is None and not _ALLOWED[0]:
            raise ModelError(
                f"real model requests are blocked (to {self.where}); in tests use "
                "FakeChatModel, FunctionChatModel or a client with transport=httpx.MockTransport"
            )

    def client(self) -> httpx.Client:
        """The sync client (made on first use)."""
        self._check_allowed(self._transport)
        if self._client is None:
            self._client = httpx.Client(
                base_url=self.base_url,
                headers=self._headers,
                timeout=self.timeout,
                transport=self._transport,
            )
        return self._client

    def aclient(self) -> httpx.AsyncClient:
        """The async client (made on first use)."""
        self._check_allowed(self._async_transport or self._transport)
        if self._aclient is None:
            transport = self._async_transport
            if transport is None and isinstance(self._transport, httpx.MockTransport):
                transport = self._transport  # MockTransport serves both
            self._aclient = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self._headers,
                timeout=self.timeout,
                transport=transport,
            )
        return self._aclient

    # -- outcomes ------------------------------------------------------------------------

    def _transport_error(self, exc: httpx.HTTPError) -> ModelError:
        if isinstance(exc, httpx.TimeoutException):
            err: ModelError = ModelTimeoutError(
                f"{self.where} did not answer within {self.timeout} s ({type(exc).__name__})"
            )
        else:
            err = ModelError(f"cannot reach {self.where}: {type(exc).__name__}")
        err.__cause__ = exc
        return err

    def _status_error(self, response: httpx.Response) -> ModelHTTPError:
        message = _provider_message(response)
        return ModelHTTPError(
            f"{self.where} answered HTTP {response.status_code}: {message}",
            status_code=response.status_code,
            body=message,
        )

    def _retry(self, attempt: int, response: httpx.Response | None) -> float | None:
        if attempt > self.max_retries:
            return None
        if response is not None and response.status_code not in RETRY_STATUS:
            return None
        return retry_delay(attempt, response, self.retry_backoff)

    @staticmethod
    def _json(response: httpx.Response, where: str) -> dict[str, Any]:
        try:
            body = response.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ModelResponseError(
                f"{where} answered with a body that is not JSON: {response.text[:200]!r}"
            ) from exc
        if not isinstance(body, dict):
            raise ModelResponseError(f"{where} answered with JSON that is not an object")
        return body

    # -- sync ------------------------------------------------------------------------------

    def post_json(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``body``; the JSON answer, after retries."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self.client().post(path, json=body)
            except httpx.HTTPError as exc:
                wait = self._retry(attempt, None)
                if wait is None:
                    raise self._transport_error(exc) from exc
                time.sleep(wait)
                continue
            if response.status_code < 400:
                return self._json(response, self.where)
            wait = self._retry(attempt, response)
            if wait is None:
                raise self._status_error(response)
            time.sleep(wait)

    def stream_lines(self, path: str, body: Mapping[str, Any]) -> Iterator[str]:
        """POST ``body`` and yield the answer's lines as they arrive.

        Retries happen only before the first line; a stream cut later raises.
        """
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.client().stream("POST", path, json=body) as response:
                    if response.status_code >= 400:
                        response.read()
                        wait = self._retry(attempt, response)
                        if wait is None:
                            raise self._status_error(response)
                    else:
                        yield from response.iter_lines()
                        return
            except httpx.HTTPError as exc:
                wait = self._retry(attempt, None)
                if wait is None:
                    raise self._transport_error(exc) from exc
            time.sleep(wait)

    # -- async -----------------------------------------------------------------------------

    async def apost_json(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Async :meth:`post_json`."""
        attempt = 0
        while True:
            attempt += 1
            try:
                response = await self.aclient().post(path, json=body)
            except httpx.HTTPError as exc:
                wait = self._retry(attempt, None)
                if wait is None:
                    raise self._transport_error(exc) from exc
                await asyncio.sleep(wait)
                continue
            if response.status_code < 400:
                return self._json(response, self.where)
            wait = self._retry(attempt, response)
            if wait is None:
                raise self._status_error(response)
            await asyncio.sleep(wait)

    async def astream_lines(self, path: str, body: Mapping[str, Any]) -> AsyncIterator[str]:
        """Async :meth:`stream_lines`."""
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self.aclient().stream("POST", path, json=body) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        wait = self._retry(attempt, response)
                        if wait is None:
                            raise self._status_error(response)
                    else:
                        async for line in response.aiter_lines():
                            yield line
                        return
            except httpx.HTTPError as exc:
                wait = self._retry(attempt, None)
                if wait is None:
                    raise self._transport_error(exc) from exc
            await asyncio.sleep(wait)

    def close(self) -> None:
        """Close the sync client."""
        if self._client is not None:
            self._client.close()
            self._client = None

    async def aclose(self) -> None:
        """Close the async client."""
        if self._aclient is not None:
            await self._aclient.aclose()
            self._aclient = None
