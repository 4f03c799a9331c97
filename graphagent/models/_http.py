"""HTTP for chat models: retries, error mapping, and a switch that blocks real requests.

The retry decision and error mapping are plain functions; ``ModelHTTP`` drives them
with a sync ``httpx.Client`` or an ``httpx.AsyncClient`` (each made once, reused).
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import json
import math
import os
import random
import re
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

import httpx

from graphagent.errors import (
    ModelConfigError,
    ModelError,
    ModelHTTPError,
    ModelResponseError,
    ModelTimeoutError,
)

__all__ = ["ModelHTTP", "allow_model_requests", "retry_delay"]

_NEWLINE = re.compile(r"\r\n|\r|\n")
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

    ``Retry-After`` (seconds or an HTTP date) wins, capped at 60 s; otherwise, and when
    the header is neither (``Retry-After: soon``), exponential backoff with full jitter,
    capped at 20 s.
    """
    if response is not None:
        told = _retry_after(response.headers.get("retry-after") or "")
        if told is not None:
            return min(60.0, max(0.0, told))
    return random.uniform(0, min(20.0, backoff * 2 ** (attempt - 1)))


def _retry_after(header: str) -> float | None:
    try:
        seconds = float(header)
    except ValueError:
        pass
    else:
        return seconds if math.isfinite(seconds) else None
    try:
        parsed = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError, IndexError):  # what malformed dates raise, by version
        return None
    if parsed is None:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.timestamp() - time.time()


def _redact_url(url: str) -> str:
    parsed = httpx.URL(url)
    return str(parsed.copy_with(username=None, password=None)) if parsed.userinfo else url


def _provider_message(raw: bytes) -> str:
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return raw.decode("utf-8", "replace")[:500]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return str(error.get("message") or error)[:2000]
        return str(error)[:2000]
    return str(body)[:500]


class _Lines:
    """Splits decoded text pieces into lines ending in \\n, \\r\\n or \\r, as SSE does.

    (``str.splitlines`` would also split at U+2028 and friends inside JSON text.)
    """

    def __init__(self) -> None:
        self._rest = ""

    def feed(self, text: str) -> list[str]:
        text = self._rest + text
        # a final \r may be the first half of \r\n: it waits for the next piece
        hold = text.endswith("\r")
        parts = _NEWLINE.split(text[:-1] if hold else text)
        self._rest = parts.pop() + ("\r" if hold else "")
        return parts

    def flush(self) -> list[str]:
        rest, self._rest = self._rest, ""
        return [rest.removesuffix("\r")] if rest else []


class _Attempts:
    """One request's retry policy, shared by the four loops (sync/async x JSON/stream).

    A request is retried on connection errors and retryable statuses, within
    ``max_retries`` and the overall deadline; a stream is retried only until its first
    byte has arrived (a retry later would replay tokens the caller already has).
    """

    def __init__(self, http: ModelHTTP, *, stream: bool) -> None:
        self.http = http
        self.stream = stream
        self.attempt = 0
        self.received = False
        self.ends = None if http.deadline is None else time.monotonic() + http.deadline

    def remaining(self) -> float:
        return math.inf if self.ends is None else self.ends - time.monotonic()

    def start(self) -> httpx.Timeout:
        """Counts an attempt; the httpx timeout for it (per read, within the deadline)."""
        self.attempt += 1
        self.received = False
        per_read = self.http.stream_idle_timeout if self.stream else self.http.timeout
        left = self.remaining()
        if left <= 0:
            raise self.http.deadline_error()
        return httpx.Timeout(min(per_read, left))

    def got(self, piece: bytes | str) -> None:
        """Notes bytes received; raises once the deadline has passed."""
        if piece:
            self.received = True
        if self.remaining() <= 0:
            raise self.http.deadline_error()

    def _wait(self, response: httpx.Response | None) -> float | None:
        if self.attempt > self.http.max_retries:
            return None
        wait = retry_delay(self.attempt, response, self.http.retry_backoff)
        return wait if wait < self.remaining() else None

    def after_error(self, exc: httpx.HTTPError) -> float:
        """Seconds to wait before retrying after ``exc``; raises when there is no retry."""
        if self.stream and self.received:
            raise self.http.cut_error(exc) from exc
        if isinstance(exc, httpx.TimeoutException) and self.remaining() <= 0:
            raise self.http.deadline_error() from exc
        wait = self._wait(None)
        if wait is None:
            raise self.http.transport_error(exc, self.stream) from exc
        return wait

    def after_status(self, response: httpx.Response, raw: bytes) -> float:
        """Seconds to wait before retrying after an error status; raises when there is none."""
        wait = self._wait(response) if response.status_code in RETRY_STATUS else None
        if wait is None:
            raise self.http.status_error(response, raw)
        return wait


class ModelHTTP:
    """POSTs JSON to a model server, with retries; holds one sync and one async client.

    Args:
        base_url: the API root (``https://api.openai.com/v1``).
        headers: sent with every request (API key headers included; never logged).
        timeout: seconds to wait for any one read (and to connect).
        max_retries: retries after the first attempt, on 408/409/425/429/5xx and
            connection errors; a stream only before its first byte.
        retry_backoff: first backoff step in seconds.
        deadline: seconds for a whole request, retries and streaming included (``None``:
            no limit); a server that drips a byte at a time stops here.
        stream_idle_timeout: seconds a stream may stay silent (default ``timeout``).
        secrets: the client's own credentials: replaced by ``***`` in every error.
        missing_key: the environment variable the API key should have come from, when
            it is required and missing: every request then raises a ``ModelConfigError``
            naming it, before anything is sent.
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
        deadline: float | None = 600.0,
        stream_idle_timeout: float | None = None,
        secrets: Iterable[str] = (),
        missing_key: str | None = None,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.where = _redact_url(self.base_url)
        self._headers = dict(headers)
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.deadline = deadline
        self.stream_idle_timeout = timeout if stream_idle_timeout is None else stream_idle_timeout
        # longest first, so a key that contains another is replaced whole
        self._secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)
        self.missing_key = missing_key
        self._transport = transport
        self._async_transport = async_transport
        self._client: httpx.Client | None = None
        self._aclient: httpx.AsyncClient | None = None

    def redact(self, text: str) -> str:
        """``text`` with the client's own credentials replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def scrub(self, exc: BaseException) -> None:
        """Redacts the client's credentials from ``exc`` (its text and ``body``) in place."""
        exc.args = tuple(self.redact(a) if isinstance(a, str) else a for a in exc.args)
        body = getattr(exc, "body", None)
        if isinstance(body, str):
            exc.body = self.redact(body)  # type: ignore[attr-defined]

    def _check(self, explicit: object) -> None:
        if self.missing_key is not None:
            raise ModelConfigError(
                f"no API key for {self.where}: set the environment variable "
                f"{self.missing_key} or pass api_key=...",
                self.missing_key,
            )
        if explicit is None and not _ALLOWED[0]:
            raise ModelError(
                f"real model requests are blocked (to {self.where}); in tests use "
                "FakeChatModel, FunctionChatModel or a client with transport=httpx.MockTransport"
            )

    def client(self) -> httpx.Client:
        """The sync client (made on first use)."""
        self._check(self._transport)
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
        self._check(self._async_transport or self._transport)
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

    def deadline_error(self) -> ModelTimeoutError:
        """The request ran past ``deadline``."""
        return ModelTimeoutError(
            f"{self.where} did not finish within the request deadline of {self.deadline} s "
            "(raise deadline= for longer answers)"
        )

    def transport_error(self, exc: httpx.HTTPError, stream: bool) -> ModelError:
        """The error for a request that failed in transport, after retries."""
        if isinstance(exc, httpx.TimeoutException):
            limit = self.stream_idle_timeout if stream else self.timeout
            return ModelTimeoutError(
                f"{self.where} did not answer within {limit} s ({type(exc).__name__})"
            )
        return ModelError(self.redact(f"cannot reach {self.where}: {type(exc).__name__}"))

    def cut_error(self, exc: httpx.HTTPError) -> ModelError:
        """The error for a stream that failed after it began (never retried)."""
        if isinstance(exc, httpx.TimeoutException):
            return ModelTimeoutError(
                f"the stream from {self.where} was idle for {self.stream_idle_timeout} s "
                "(stream_idle_timeout)"
            )
        return ModelError(
            f"the stream from {self.where} was cut after it began ({type(exc).__name__}); "
            "not retried, as a retry would repeat what was already received"
        )

    def status_error(self, response: httpx.Response, raw: bytes) -> ModelHTTPError:
        """The error for an HTTP error status."""
        message = self.redact(_provider_message(raw))
        return ModelHTTPError(
            f"{self.where} answered HTTP {response.status_code}: {message}",
            status_code=response.status_code,
            body=message,
        )

    def _json(self, raw: bytes) -> dict[str, Any]:
        try:
            body = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            text = self.redact(raw[:200].decode("utf-8", "replace"))
            raise ModelResponseError(
                f"{self.where} answered with a body that is not JSON: {text!r}"
            ) from None if self._secrets else exc
        if not isinstance(body, dict):
            raise ModelResponseError(f"{self.where} answered with JSON that is not an object")
        return body

    # -- sync ------------------------------------------------------------------------------

    def _read(self, response: httpx.Response, tries: _Attempts) -> bytes:
        parts = []
        for part in response.iter_bytes():
            tries.got(part)
            parts.append(part)
        return b"".join(parts)

    def _lines(self, response: httpx.Response, tries: _Attempts) -> Iterator[str]:
        lines = _Lines()
        for text in response.iter_text():
            tries.got(text)
            yield from lines.feed(text)
        yield from lines.flush()

    def post_json(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """POST ``body``; the JSON answer, after retries."""
        tries = _Attempts(self, stream=False)
        while True:
            try:
                timeout = tries.start()
                with self.client().stream("POST", path, json=body, timeout=timeout) as response:
                    raw = self._read(response, tries)
                if response.status_code < 400:
                    return self._json(raw)
                wait = tries.after_status(response, raw)
            except httpx.HTTPError as exc:
                wait = tries.after_error(exc)
            time.sleep(wait)

    def stream_lines(self, path: str, body: Mapping[str, Any]) -> Iterator[str]:
        """POST ``body`` and yield the answer's lines as they arrive.

        Retries happen only before the first byte; a stream cut later raises.
        """
        tries = _Attempts(self, stream=True)
        while True:
            try:
                timeout = tries.start()
                with self.client().stream("POST", path, json=body, timeout=timeout) as response:
                    if response.status_code < 400:
                        yield from self._lines(response, tries)
                        return
                    raw = self._read(response, tries)
                wait = tries.after_status(response, raw)
            except httpx.HTTPError as exc:
                wait = tries.after_error(exc)
            time.sleep(wait)

    # -- async -----------------------------------------------------------------------------

    async def _aread(self, response: httpx.Response, tries: _Attempts) -> bytes:
        parts = []
        async for part in response.aiter_bytes():
            tries.got(part)
            parts.append(part)
        return b"".join(parts)

    async def _alines(self, response: httpx.Response, tries: _Attempts) -> AsyncIterator[str]:
        lines = _Lines()
        async for text in response.aiter_text():
            tries.got(text)
            for line in lines.feed(text):
                yield line
        for line in lines.flush():
            yield line

    async def apost_json(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """Async :meth:`post_json`."""
        tries = _Attempts(self, stream=False)
        while True:
            try:
                timeout = tries.start()
                client = self.aclient()
                async with client.stream("POST", path, json=body, timeout=timeout) as response:
                    raw = await self._aread(response, tries)
                if response.status_code < 400:
                    return self._json(raw)
                wait = tries.after_status(response, raw)
            except httpx.HTTPError as exc:
                wait = tries.after_error(exc)
            await asyncio.sleep(wait)

    async def astream_lines(self, path: str, body: Mapping[str, Any]) -> AsyncIterator[str]:
        """Async :meth:`stream_lines`."""
        tries = _Attempts(self, stream=True)
        while True:
            try:
                timeout = tries.start()
                client = self.aclient()
                async with client.stream("POST", path, json=body, timeout=timeout) as response:
                    if response.status_code < 400:
                        async for line in self._alines(response, tries):
                            yield line
                        return
                    raw = await self._aread(response, tries)
                wait = tries.after_status(response, raw)
            except httpx.HTTPError as exc:
                wait = tries.after_error(exc)
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
