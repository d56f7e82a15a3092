"""A rerank server over HTTP: the Cohere-style ``POST /v1/rerank`` and its relatives.

One client, four request shapes (``api``), one tolerant reading of the answers:

================  =====================================================  ==========================================
``api``           request body                                           answer
================  =====================================================  ==========================================
``cohere``        ``model, query, documents, top_n, return_documents``   ``{"results": [{index, relevance_score}]}``
                  (Cohere, Jina, vLLM, Infinity, llama.cpp's server)
``voyage``        ``model, query, documents, top_k, return_documents``   ``{"data": [{index, relevance_score}]}``
``mixedbread``    ``model, query, input, top_k, return_input``           ``{"data": [{index, score}]}``
``tei``           ``query, texts, raw_scores, truncate``                 ``[{index, score}]`` (a bare list)
================  =====================================================  ==========================================

Any answer is read the same way: the rows under ``results`` or ``data`` (or the bare list), each with an
``index`` into the documents sent and a ``relevance_score`` or ``score``. An index out of range or given
twice, a score that is not a finite number, or a body that is not such JSON is an
:class:`~simone.runtime.InvalidResponse`. A document the server left out is unscored (``None``).

httpx errors and statuses are translated here, once (:func:`_translated`): a timeout, a refused
connection, 401/403, 404, 429 (``RateLimited`` with the server's Retry-After), 5xx. A 429 or a 5xx is
retried once when the server's Retry-After (or a short backoff) fits before the stage's deadline and
within ``max_retry_wait_s`` (:class:`~simone.runtime.RetryPolicy`); otherwise it is raised at once.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import httpx
from simone.runtime import (
    AccessDenied,
    AsyncResource,
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

RerankApi = Literal["cohere", "voyage", "mixedbread", "tei"]
"""The request shapes :class:`HttpReranker` speaks (see the module's table)."""

RETRY_STATUSES = frozenset({408, 500, 502, 503, 504})
"""Statuses worth one retry within the deadline (besides 429)."""

SNIPPET_CHARS = 200
"""How much of an unexpected body a message quotes."""


def request_body(api: RerankApi, query: str, documents: Sequence[str], model: str | None) -> dict[str, Any]:
    """The JSON body ``api`` expects for ``query`` over ``documents`` (every document scored, none echoed)."""
    count = len(documents)
    if api == "tei":
        return {"query": query, "texts": list(documents), "raw_scores": False, "truncate": True}
    body: dict[str, Any] = {"query": query}
    if model is not None:
        body["model"] = model
    if api == "mixedbread":
        body.update(input=list(documents), top_k=count, return_input=False)
    elif api == "voyage":
        body.update(documents=list(documents), top_k=count, return_documents=False)
    else:
        body.update(documents=list(documents), top_n=count, return_documents=False)
    return body


def read_scores(who: str, body: object, count: int) -> list[float | None]:
    """One score per document (``None`` where the server left one out) from any answer shape.

    Raises:
        InvalidResponse: no list of rows, a row without a valid ``index``, an index out of range or
            given twice, a score that is not a finite number.
    """
    rows: object = body
    if isinstance(body, dict):
        rows = body.get("results", body.get("data"))
    if not isinstance(rows, list):
        raise InvalidResponse(
            f"{who} answered without a list of results (expected 'results', 'data' or a bare list)",
            provider=who,
        )
    scores: list[float | None] = [None] * count
    for row in rows:
        if not isinstance(row, dict):
            raise InvalidResponse(f"{who} answered with a result that is not an object", provider=who)
        index = row.get("index")
        score = row.get("relevance_score", row.get("score"))
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise InvalidResponse(
                f"{who} answered with index {_short(index)} for {count} document(s)", provider=who
            )
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            raise InvalidResponse(
                f"{who} answered with a score that is not a finite number ({_short(score)}) for document {index}",
                provider=who,
            )
        if scores[index] is not None:
            raise InvalidResponse(f"{who} answered twice for document {index}", provider=who)
        scores[index] = float(score)
    return scores


class HttpReranker(AsyncResource):
    """A reranker behind a rerank server (see the module's table of shapes).

    Args:
        url: the full endpoint (``https://api.jina.ai/v1/rerank``, ``http://localhost:8080/rerank``).
        api: the request shape.
        model: the model name sent (TEI serves one model and takes none).
        api_key: sent as ``Authorization: Bearer <key>`` when given.
        client: an ``httpx.AsyncClient`` to use (never closed here); one is opened otherwise.
        timeout_s: each request's timeout (the stage's deadline cuts it further).
        max_retry_wait_s: the longest Retry-After honoured for the one retry.
        name: the name in traces and failures.
    """

    def __init__(
        self,
        url: str,
        *,
        api: RerankApi = "cohere",
        model: str | None = None,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        timeout_s: float = 10.0,
        max_retry_wait_s: float = 1.0,
        name: str = "rerank:http",
    ) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the rerank URL must start with http:// or https://, not {url[:40]!r}")
        self.url = url
        self.api: RerankApi = api
        self.model = model
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = client
        self._owns_client = client is None
        self._timeout_s = timeout_s
        self._policy = RetryPolicy(
            max_attempts=2, backoff_s=0.05, max_backoff_s=max_retry_wait_s, max_wait_s=max_retry_wait_s
        )
        self._name = name

    @property
    def name(self) -> str:
        """The reranker's name (``rerank:http``)."""
        return self._name

    async def open(self) -> None:
        """Open the HTTP client when none was given."""
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=httpx.Timeout(self._timeout_s))
            self._owns_client = True

    async def close(self) -> None:
        """Close the HTTP client if this reranker opened it."""
        client, owned = self._client, self._owns_client
        if owned and client is not None:
            self._client = None
            await client.aclose()

    async def rerank(self, query: str, documents: Sequence[str]) -> list[float | None]:
        """One score per document, from the server.

        Raises:
            ProviderTimeout, ProviderUnavailable, RateLimited, AccessDenied, ProviderNotConfigured,
            InvalidResponse: what the server (or the connection) did, translated.
        """
        if not documents:
            return []
        if self._client is None:
            await self.open()
        client = self._client
        assert client is not None
        body = request_body(self.api, query, documents, self.model)

        async def once(attempt: int) -> list[float | None]:
            with _translated(self._name, self.url, self._timeout_s):
                response = await client.post(self.url, json=body, headers=self._headers)
            return read_scores(self._name, self._decoded(response, attempt), len(documents))

        return await self._policy.run(once, retry_if=_server_said)

    def _decoded(self, response: httpx.Response, attempt: int) -> object:
        who, status = self._name, response.status_code
        if status == 429:
            wait = retry_after_from_headers(response.headers)
            hint = f"; it asks to wait {wait:.1f} s" if wait is not None else ""
            raise RateLimited(
                f"{who} refused with 429 Too Many Requests after {attempt} attempt(s){hint}",
                provider=who,
                retry_after_s=wait,
            )
        if status in RETRY_STATUSES:
            raise ProviderUnavailable(
                f"{who} answered HTTP {status} after {attempt} attempt(s): {_snippet(response.text)}",
                provider=who,
                retry_after_s=retry_after_from_headers(response.headers),
            )
        if status in (401, 403):
            raise AccessDenied(
                f"{who} refused the request (HTTP {status}); check SIMONE_RERANK__API_KEY", provider=who
            )
        if status == 404:
            raise ProviderNotConfigured(
                f"{who} answered 404 for {self.url}; check [rerank] url (the full endpoint) and model",
                provider=who,
            )
        if status >= 400:
            raise InvalidResponse(
                f"{who} rejected the request (HTTP {status}): {_snippet(response.text)}", provider=who
            )
        try:
            return loads_untrusted(response.content)
        except ValueError as exc:
            raise InvalidResponse(
                f"{who} answered with malformed JSON ({_snippet(response.text)!r}); is [rerank] url the API?",
                provider=who,
            ) from exc


def _server_said(error: ProviderError) -> bool:
    """Retry what the server answered (429, 5xx), never a connection that failed or timed out."""
    return not isinstance(error.__cause__, httpx.HTTPError)


@contextmanager
def _translated(who: str, url: str, timeout_s: float) -> Iterator[None]:
    """Translate httpx's errors into simone's: the one place they are translated."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise ProviderTimeout(f"{who} did not answer within {timeout_s:g} s", provider=who) from exc
    except httpx.HTTPError as exc:
        raise ProviderUnavailable(
            f"{who} is unreachable at {url}: {type(exc).__name__}; start the server or fix [rerank] url",
            provider=who,
        ) from exc


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else "")


def _short(value: object) -> str:
    return _snippet(repr(value))[:40]
