"""Search backends behind one protocol: SearXNG (JSON API), Brave Search and Tavily.

Each backend takes its ``httpx.AsyncClient`` from the caller, cuts a query that is longer than the
service accepts (and says so), retries a 429 under the shared :class:`~simone.runtime.RetryPolicy`
(``Retry-After`` is a floor for the pause; a pause that does not fit in the time it was given is not
taken: ``RateLimited`` with ``retry_after_s`` at once), and translates every HTTP or JSON problem
into the error tree (``RateLimited``, ``ProviderTimeout``, ``ProviderUnavailable``,
``InvalidResponse``, ``ProviderNotConfigured``). The backend URL is configuration the owner trusts
(SearXNG often runs on localhost), so the SSRF guard of the page fetcher does not apply to it;
result URLs are checked when they are fetched.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

import anyio
import httpx
from simone.providers.web._types import SearchHit, SearchPage, scrub_surrogates
from simone.runtime import (
    InvalidResponse,
    ProviderNotConfigured,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    RetryPolicy,
    loads_untrusted,
    parse_retry_after as _parse_retry_after,
)

MAX_RESPONSE_BYTES = 8 * 1024 * 1024
"""A search answer larger than this is refused as malformed (they are a few kB)."""

MAX_RATE_LIMIT_RETRIES = 2
"""How many times a 429 is waited out before the backend gives up."""


@runtime_checkable
class SearchBackend(Protocol):
    """A web search service. ``search`` returns hits best first or raises a ProviderError."""

    @property
    def name(self) -> str:
        """The backend's name (``searxng``, ``brave``, ``tavily`` or a custom one)."""
        ...

    async def search(self, query: str, *, count: int, timeout_s: float) -> SearchPage:
        """Run ``query`` for at most ``count`` results within ``timeout_s`` seconds."""
        ...


def truncate_query(query: str, max_chars: int, max_words: int | None = None) -> tuple[str, bool]:
    """``query`` cut to ``max_chars`` characters (at a word boundary) and ``max_words`` words."""
    text = " ".join(query.split())
    cut = False
    if max_words is not None:
        words = text.split(" ")
        if len(words) > max_words:
            text = " ".join(words[:max_words])
            cut = True
    if len(text) > max_chars:
        head = text[: max_chars + 1]
        space = head.rfind(" ")
        text = head[:space] if space > max_chars // 2 else text[:max_chars]
        cut = True
    return text.strip(), cut


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date).

    The reading of :func:`simone.runtime.parse_retry_after`, which the retry policy uses.
    """
    return _parse_retry_after(value, now=now)


def _text(value: Any, limit: int = 2000) -> str:
    # valid JSON can carry a lone surrogate ("\\ud800"): it would break every later UTF-8 write
    return scrub_surrogates(" ".join(value.split())[:limit]) if isinstance(value, str) else ""


def _is_web_url(value: Any) -> bool:
    if not isinstance(value, str) or len(value) > 4096 or scrub_surrogates(value) != value:
        return False
    head = value[:8].lower()
    return head.startswith("http://") or head.startswith("https://")


class _HttpBackend:
    """Shared HTTP plumbing: deadline, 429 handling, error translation, size cap, JSON parsing."""

    max_query_chars = 400
    max_query_words: int | None = None

    def __init__(self, name: str, client: httpx.AsyncClient) -> None:
        self._name = name
        self._client = client

    @property
    def name(self) -> str:
        """The backend's name."""
        return self._name

    async def _json(self, request: httpx.Request, timeout_s: float) -> Any:
        deadline = anyio.current_time() + timeout_s
        policy = RetryPolicy(max_attempts=MAX_RATE_LIMIT_RETRIES + 1, max_wait_s=timeout_s)
        return await policy.run(
            lambda _attempt: self._json_once(request, deadline, timeout_s),
            deadline=deadline,
            retry_if=lambda error: isinstance(error, RateLimited),  # other backends are the fallback
        )

    async def _json_once(self, request: httpx.Request, deadline: float, timeout_s: float) -> Any:
        remaining = deadline - anyio.current_time()
        if remaining <= 0:
            raise ProviderTimeout(f"{self.name} did not answer within {timeout_s:.1f} s", provider=self.name)
        status, headers, body = await self._send(request, remaining, timeout_s)
        if status == 429:
            wait = parse_retry_after(headers.get("retry-after"))
            hint = f" (it asked to wait {wait:.0f} s)" if wait is not None else ""
            raise RateLimited(
                f"{self.name} is rate limiting this client{hint}; try again later or configure another backend",
                provider=self.name,
                retry_after_s=wait,
            )
        if status in (401, 403):
            raise ProviderNotConfigured(
                f"{self.name} refused the request ({status}); check its API key or URL in the configuration",
                provider=self.name,
            )
        if status >= 500:
            raise ProviderUnavailable(f"{self.name} answered {status}; it may be down", provider=self.name)
        if status >= 400:
            raise InvalidResponse(f"{self.name} refused the query with {status}", provider=self.name)
        try:
            return loads_untrusted(body)
        except ValueError as exc:  # not JSON, not UTF-8, or nested too deep
            raise InvalidResponse(
                f"{self.name} answered with malformed JSON; is the URL its JSON API?", provider=self.name
            ) from exc

    async def _send(
        self, request: httpx.Request, remaining: float, timeout_s: float
    ) -> tuple[int, Mapping[str, str], bytes]:
        try:
            with anyio.fail_after(remaining):
                response = await self._client.send(request, stream=True)
                try:
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in response.aiter_bytes():
                        size += len(chunk)
                        if size > MAX_RESPONSE_BYTES:
                            raise InvalidResponse(
                                f"{self.name} sent more than {MAX_RESPONSE_BYTES:,} bytes for one search",
                                provider=self.name,
                            )
                        chunks.append(chunk)
                finally:
                    await response.aclose()
        except TimeoutError as exc:
            raise ProviderTimeout(
                f"{self.name} did not answer within {timeout_s:.1f} s", provider=self.name
            ) from exc
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(f"{self.name} timed out: {type(exc).__name__}", provider=self.name) from exc
        except httpx.HTTPError as exc:
            raise ProviderUnavailable(
                f"cannot reach {self.name} at {request.url.host}: {type(exc).__name__}; is it running?",
                provider=self.name,
            ) from exc
        return response.status_code, response.headers, b"".join(chunks)

    def _prepare(self, query: str) -> tuple[str, bool]:
        if not query.strip():
            raise InvalidResponse("an empty query cannot be searched", provider=self.name)
        return truncate_query(scrub_surrogates(query), self.max_query_chars, self.max_query_words)

    def _page(
        self,
        query: str,
        truncated: bool,
        raw_results: Any,
        count: int,
        *,
        partial: bool = False,
        notes: list[str] | None = None,
    ) -> SearchPage:
        if not isinstance(raw_results, list):
            raise InvalidResponse(f"{self.name} answered without a result list", provider=self.name)
        hits: list[SearchHit] = []
        skipped = 0
        for item in raw_results:
            if len(hits) >= count:
                break
            hit = self._hit(item, len(hits) + 1) if isinstance(item, dict) else None
            if hit is None:
                skipped += 1
            else:
                hits.append(hit)
        notes = list(notes or [])
        if truncated:
            notes.append(f"the query was cut to {len(query)} characters, the most {self.name} accepts")
        if skipped:
            notes.append(f"{skipped} malformed result(s) from {self.name} were left out")
        return SearchPage(
            backend=self.name,
            query=query,
            query_truncated=truncated,
            hits=hits,
            skipped=skipped,
            partial=partial,
            notes=notes,
        )

    def _hit(self, item: dict[str, Any], rank: int) -> SearchHit | None:  # pragma: no cover - overridden
        raise NotImplementedError


def _score(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


class SearxngBackend(_HttpBackend):
    """A SearXNG instance's JSON API (``/search?format=json``; enable ``json`` in its settings)."""

    max_query_chars = 500

    def __init__(self, base_url: str, client: httpx.AsyncClient, *, name: str = "searxng") -> None:
        super().__init__(name, client)
        if not _is_web_url(base_url):
            raise ProviderNotConfigured(f"the SearXNG URL {base_url!r} is not an http(s) URL", provider=name)
        self.base_url = base_url.rstrip("/")

    async def search(self, query: str, *, count: int, timeout_s: float) -> SearchPage:
        """Query ``/search?format=json`` and keep the first ``count`` results."""
        sent, truncated = self._prepare(query)
        request = self._client.build_request(
            "GET",
            f"{self.base_url}/search",
            params={"q": sent, "format": "json", "pageno": 1},
            headers={"Accept": "application/json"},
        )
        data = await self._json(request, timeout_s)
        if not isinstance(data, dict):
            raise InvalidResponse(f"{self.name} answered with JSON that is not an object", provider=self.name)
        unresponsive = data.get("unresponsive_engines") or []
        notes = []
        if isinstance(unresponsive, list) and unresponsive:
            names = sorted(
                {str(entry[0]) if isinstance(entry, list) and entry else str(entry) for entry in unresponsive}
            )
            notes.append(f"{self.name} engines that did not answer: {', '.join(names[:8])}")
        return self._page(sent, truncated, data.get("results"), count, partial=bool(notes), notes=notes)

    def _hit(self, item: dict[str, Any], rank: int) -> SearchHit | None:
        url = item.get("url")
        if not _is_web_url(url):
            return None
        return SearchHit(
            url=url,
            title=_text(item.get("title"), 500),
            snippet=_text(item.get("content")),
            rank=rank,
            score=_score(item.get("score")),
            published=_text(item.get("publishedDate"), 64) or None,
            engine=_text(item.get("engine"), 64),
        )


class _KeyedBackend(_HttpBackend):
    """A hosted search API that needs a key (read from ``key_env`` by the settings)."""

    label: str
    key_env: str

    def __init__(self, api_key: str, client: httpx.AsyncClient, *, url: str, name: str | None = None) -> None:
        name = name or self.label.lower()
        super().__init__(name, client)
        if not api_key:
            raise ProviderNotConfigured(f"{self.label} needs an API key: set {self.key_env}", provider=name)
        self._key = api_key
        self.url = url


class BraveBackend(_KeyedBackend):
    """Brave Search's web API (``X-Subscription-Token``; at most 400 characters and 50 words)."""

    label = "Brave"
    key_env = "SIMONE_WEB__BRAVE_API_KEY"
    max_query_chars = 400
    max_query_words = 50

    async def search(self, query: str, *, count: int, timeout_s: float) -> SearchPage:
        """Query the web endpoint for ``count`` (≤ 20) results."""
        sent, truncated = self._prepare(query)
        request = self._client.build_request(
            "GET",
            self.url,
            params={"q": sent, "count": max(1, min(count, 20))},
            headers={"Accept": "application/json", "X-Subscription-Token": self._key},
        )
        data = await self._json(request, timeout_s)
        web = data.get("web") if isinstance(data, dict) else None
        results = web.get("results") if isinstance(web, dict) else None
        if results is None and isinstance(data, dict) and "web" not in data:
            results = []  # Brave omits "web" when nothing matched
        return self._page(sent, truncated, results, count)

    def _hit(self, item: dict[str, Any], rank: int) -> SearchHit | None:
        url = item.get("url")
        if not _is_web_url(url):
            return None
        return SearchHit(
            url=url,
            title=_text(item.get("title"), 500),
            snippet=_text(item.get("description")),
            rank=rank,
            published=_text(item.get("page_age") or item.get("age"), 64) or None,
            engine=self.name,
        )


class TavilyBackend(_KeyedBackend):
    """Tavily's search API (bearer key; queries of at most 400 characters)."""

    label = "Tavily"
    key_env = "SIMONE_WEB__TAVILY_API_KEY"
    max_query_chars = 400

    async def search(self, query: str, *, count: int, timeout_s: float) -> SearchPage:
        """POST the query for ``count`` (≤ 20) results."""
        sent, truncated = self._prepare(query)
        request = self._client.build_request(
            "POST",
            self.url,
            json={"query": sent, "max_results": max(1, min(count, 20)), "search_depth": "basic"},
            headers={"Accept": "application/json", "Authorization": f"Bearer {self._key}"},
        )
        data = await self._json(request, timeout_s)
        results = data.get("results") if isinstance(data, dict) else None
        return self._page(sent, truncated, results, count)

    def _hit(self, item: dict[str, Any], rank: int) -> SearchHit | None:
        url = item.get("url")
        if not _is_web_url(url):
            return None
        return SearchHit(
            url=url,
            title=_text(item.get("title"), 500),
            snippet=_text(item.get("content")),
            rank=rank,
            score=_score(item.get("score")),
            published=_text(item.get("published_date"), 64) or None,
            engine=self.name,
        )
