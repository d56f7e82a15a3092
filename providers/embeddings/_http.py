"""What the HTTP embedders share: one POST with retries, error translation and vector validation.

httpx errors and bad answers are translated here, in one place, into the typed errors of
:mod:`simone.runtime` (timeout, unavailable, rate limited, access denied, invalid response). Retries
follow the shared :class:`~simone.runtime.RetryPolicy`: 429 and the statuses of :data:`RETRY_STATUSES`
are retried (the server's Retry-After is a floor for the pause), a failure of the connection itself
is not (a server that is down fails fast, so the chain and the index degrade at once).
"""

from __future__ import annotations

import base64
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import anyio
import httpx
import numpy as np
import numpy.typing as npt
from simone.runtime import (
    AccessDenied,
    AsyncResource,
    EmbeddingSpace,
    EmbeddingSpaceMismatch,
    InvalidResponse,
    ProviderError,
    ProviderNotConfigured,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    RetryPolicy,
    loads_untrusted,
    retry_after_from_headers,
)

#: Statuses worth retrying after a pause (the service may recover): timeout, conflict, server errors.
RETRY_STATUSES = frozenset({408, 409, 500, 502, 503, 504})
#: How much of an unexpected body an error message quotes.
SNIPPET_CHARS = 200

T = TypeVar("T")
R = TypeVar("R")


def parse_retry_after(headers: httpx.Headers, *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` (seconds or an HTTP date).

    The same reading as :func:`simone.runtime.retry_after_from_headers` (kept for callers of this name).
    """
    return retry_after_from_headers(headers, now=now)


def _not_a_connection_failure(error: ProviderError) -> bool:
    """Retry what the server answered (429, 5xx), not a connection that failed or timed out."""
    return not isinstance(error.__cause__, httpx.HTTPError | TimeoutError)


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else "")


def _server_message(response: httpx.Response) -> str:
    try:
        body = loads_untrusted(response.content)
    except ValueError:
        return _snippet(response.text)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _snippet(error["message"])
        if isinstance(error, str):
            return _snippet(error)
    return _snippet(response.text)


class HttpEmbedderBase(AsyncResource):
    """An embedder that talks to a server over an ``httpx.AsyncClient``.

    A client passed in is used as is and never closed; otherwise one is opened by the async start-up
    (``async with`` or :meth:`open`, or lazily by the first call) and closed by :meth:`close`.
    """

    _who: str

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | None,
        timeout_s: float,
        max_retries: int,
        max_retry_wait_s: float,
        retry_backoff_s: float,
        concurrency: int = 1,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._concurrency = concurrency
        self._client = client
        self._owns_client = client is None
        self._timeout_s = timeout_s
        self._max_retries = max(0, max_retries)
        self._max_retry_wait_s = max(0.0, max_retry_wait_s)
        self._retry_backoff_s = max(0.0, retry_backoff_s)

    async def open(self) -> None:
        """Open the HTTP client when none was given."""
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self._timeout_s))
            self._owns_client = True

    async def close(self) -> None:
        """Close the HTTP client if this embedder opened it."""
        client, owned = self._client, self._owns_client
        if owned and client is not None:
            self._client = None
            await client.aclose()

    async def post_json(self, url: str, payload: Mapping[str, Any], headers: Mapping[str, str]) -> Any:
        """POST ``payload`` and return the decoded JSON body, retrying what is worth retrying.

        Raises:
            ProviderTimeout, ProviderUnavailable, RateLimited, AccessDenied, ProviderNotConfigured,
            InvalidResponse: translated from httpx errors, HTTP statuses and bodies.
        """
        if self._client is None:
            await self.open()
        client = self._client
        assert client is not None

        async def once(attempt: int) -> Any:
            response = await self._send(client, url, payload, headers)
            return self._answer(response, url, attempt)

        return await self.retry_policy.run(once, retry_if=_not_a_connection_failure)

    @property
    def concurrency(self) -> int:
        """Requests this embedder sends at once at most (one call's batches)."""
        return self._concurrency

    async def in_parallel(self, items: Sequence[T], one: Callable[[T], Awaitable[R]]) -> list[R]:
        """``one(item)`` for every item, at most :attr:`concurrency` at a time; results in ``items``' order.

        The first failure cancels the requests still running and is raised as it is (a
        :class:`ProviderError`, so a rate limit keeps its ``retry_after_s``); each request retries on
        its own under :attr:`retry_policy`, within the caller's deadline.
        """
        if self._concurrency == 1 or len(items) <= 1:
            return [await one(item) for item in items]
        results: list[R | None] = [None] * len(items)
        errors: list[BaseException] = []
        limiter = anyio.CapacityLimiter(self._concurrency)

        async def run(position: int, item: T, scope: anyio.CancelScope) -> None:
            async with limiter:
                try:
                    results[position] = await one(item)
                except Exception as exc:  # noqa: BLE001 - re-raised unwrapped after the task group
                    errors.append(exc)
                    scope.cancel()

        async with anyio.create_task_group() as group:
            for position, item in enumerate(items):
                group.start_soon(run, position, item, group.cancel_scope)
        if errors:
            raise errors[0]
        return cast("list[R]", results)

    @property
    def retry_policy(self) -> RetryPolicy:
        """The shared retry policy with this embedder's settings (``max_retries`` retries at most)."""
        return RetryPolicy(
            max_attempts=self._max_retries + 1,
            backoff_s=self._retry_backoff_s,
            max_backoff_s=self._max_retry_wait_s,
            max_wait_s=self._max_retry_wait_s,
        )

    def _answer(self, response: httpx.Response, url: str, attempt: int) -> Any:
        status = response.status_code
        if status == 429:
            wait = retry_after_from_headers(response.headers)
            hint = f"; it asks to wait {wait:.1f} s" if wait is not None else ""
            raise RateLimited(
                f"{self._who} refused with 429 Too Many Requests after {attempt} attempt(s){hint}: "
                f"{_server_message(response)}",
                provider=self._who,
                retry_after_s=wait,
            )
        if status in RETRY_STATUSES:
            raise ProviderUnavailable(
                f"{self._who} answered HTTP {status} after {attempt} attempt(s): "
                f"{_server_message(response)}; check the server and try again",
                provider=self._who,
                retry_after_s=retry_after_from_headers(response.headers) if status == 503 else None,
            )
        if status in (401, 403):
            raise AccessDenied(
                f"{self._who} refused the request (HTTP {status}): {_server_message(response)}; "
                "check the API key",
                provider=self._who,
            )
        if status == 404:
            raise ProviderNotConfigured(
                f"{self._who} answered 404 for {url}: {_server_message(response)}; "
                "check the base URL and the model name",
                provider=self._who,
            )
        if status >= 400:
            raise InvalidResponse(
                f"{self._who} rejected the request (HTTP {status}): {_server_message(response)}",
                provider=self._who,
            )
        return self._decode(response)

    async def _send(
        self, client: httpx.AsyncClient, url: str, payload: Mapping[str, Any], headers: Mapping[str, str]
    ) -> httpx.Response:
        try:
            with anyio.fail_after(self._timeout_s):
                return await client.post(url, json=payload, headers=dict(headers))
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise ProviderTimeout(
                f"{self._who} did not answer within {self._timeout_s:g} s; "
                "raise [embeddings] timeout_s or check the server",
                provider=self._who,
            ) from exc
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(
                f"{self._who} is unreachable at {url}: {type(exc).__name__}: {exc}; "
                "start the server or fix its base URL",
                provider=self._who,
            ) from exc

    def _decode(self, response: httpx.Response) -> Any:
        content_type = response.headers.get("content-type", "")
        text = response.text
        if "json" not in content_type.lower():
            looks_html = "html" in content_type.lower() or text.lstrip()[:1] == "<"
            what = "HTML" if looks_html else f"{content_type or 'an untyped body'}"
            raise InvalidResponse(
                f"{self._who} answered with {what} instead of JSON ({_snippet(text)!r}); "
                "the base URL probably points at a web page or a proxy, not the API",
                provider=self._who,
            )
        try:
            return loads_untrusted(text)
        except ValueError as exc:  # not JSON, or nested too deep
            raise InvalidResponse(
                f"{self._who} answered with malformed JSON: {exc}; body starts {_snippet(text)!r}",
                provider=self._who,
            ) from exc


def to_vectors(
    rows: Sequence[Any], *, count: int, space: EmbeddingSpace, who: str
) -> npt.NDArray[np.float32]:
    """Turn decoded embeddings (lists of numbers, or base64 float32) into validated unit vectors.

    Raises:
        InvalidResponse: wrong count, a non-numeric row, NaN or infinity, an all-zero vector.
        EmbeddingSpaceMismatch: vectors of another dimension than the space's.
    """
    if len(rows) != count:
        raise InvalidResponse(
            f"{who} returned {len(rows)} embeddings for {count} inputs; the server is misbehaving",
            provider=who,
        )
    decoded: list[npt.NDArray[np.float32]] = []
    for position, row in enumerate(rows):
        try:
            if isinstance(row, str):
                vector = np.frombuffer(base64.b64decode(row, validate=True), dtype="<f4").astype(np.float32)
            elif isinstance(row, list) and all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in row
            ):
                vector = np.asarray(row, dtype=np.float32)
            else:
                raise TypeError(f"embedding {position} is a {type(row).__name__}, not a list of numbers")
        except (TypeError, ValueError) as exc:
            raise InvalidResponse(f"{who} returned an unreadable embedding: {exc}", provider=who) from exc
        if vector.shape != (space.dimension,):
            raise EmbeddingSpaceMismatch(
                f"{who} returned a {vector.shape[0]}-dimensional vector but the space {space.key} has "
                f"{space.dimension}; set the model's dimensions in [embeddings] to what the server returns",
                provider=who,
            )
        decoded.append(vector)
    array = np.stack(decoded) if decoded else np.empty((0, space.dimension), dtype=np.float32)
    if not np.isfinite(array).all():
        raise InvalidResponse(f"{who} returned NaN or infinite values in its embeddings", provider=who)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if count and not (norms > 0).all():
        raise InvalidResponse(f"{who} returned an all-zero embedding", provider=who)
    result: npt.NDArray[np.float32] = (array / norms).astype(np.float32) if count else array
    return result


def batches(items: Sequence[str], size: int) -> list[list[str]]:
    """``items`` cut into consecutive batches of at most ``size``."""
    return [list(items[start : start + size]) for start in range(0, len(items), size)]
