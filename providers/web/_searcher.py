"""Cached search with backend fallback, and cached page fetching with extraction.

:class:`WebSearcher` is the piece the web provider and the web-research workflow share: one query
across the configured backends (first that answers wins; every failure recorded), one page fetched
safely and reduced to its main text. Both go through the research cache's run-local session; failed
searches and fetches are never cached, partial ones never persisted as complete.

Every page outcome is a value: whatever the fetch or the extraction of one page raises or however
long it takes, :meth:`WebSearcher.fetch_page` returns a :class:`PageOutcome` with the failure, and
its ``timeout_s`` bounds the fetch *and* the extraction together.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import anyio
from pydantic import ValidationError
from simone.providers.web._backends import SearchBackend
from simone.providers.web._extract import extract_page
from simone.providers.web._fetcher import SafeFetcher
from simone.providers.web._types import ExtractedPage, FetchedPage, FetchError, SearchPage
from simone.runtime import (
    CacheLookup,
    CacheSession,
    CacheStatus,
    Freshness,
    ProviderError,
    ProviderFailure,
    ProviderNotConfigured,
    page_cache_key,
    search_cache_key,
    web_not_configured,
)


@dataclass(slots=True)
class SearchOutcome:
    """One query's outcome: the page of results (``None`` when every backend failed) and why."""

    query: str
    page: SearchPage | None
    cache: CacheStatus = CacheStatus.MISS
    age_s: float | None = None
    failures: list[ProviderFailure] = field(default_factory=list)
    elapsed_ms: float = 0.0


@dataclass(slots=True)
class PageOutcome:
    """One page's outcome: the extracted page, or the failure that stopped it."""

    url: str
    page: ExtractedPage | None
    cache: CacheStatus = CacheStatus.MISS
    age_s: float | None = None
    failure: ProviderFailure | None = None
    reason: str | None = None
    final_url: str | None = None
    charset_note: str | None = None
    elapsed_ms: float = 0.0


class WebSearcher:
    """Search and fetch through the cache.

    Args:
        backends: tried in order; the first that answers serves the query.
        fetcher: the safe fetcher (open); ``None`` makes every fetch fail as not configured.
        search_ttl_s: how long search results stay fresh (30 min).
        page_ttl_s: how long an extracted page stays fresh (24 h).
        search_timeout_s: the most one backend call may take.
        extraction_threads: how many trafilatura extractions run at once (it is CPU-bound).
    """

    def __init__(
        self,
        backends: Sequence[SearchBackend],
        fetcher: SafeFetcher | None,
        *,
        search_ttl_s: float = 30 * 60,
        page_ttl_s: float = 24 * 3600,
        search_timeout_s: float = 10.0,
        extraction_threads: int = 2,
    ) -> None:
        self.backends = list(backends)
        self.fetcher = fetcher
        self.search_ttl_s = search_ttl_s
        self.page_ttl_s = page_ttl_s
        self.search_timeout_s = search_timeout_s
        self._extract_limiter = anyio.CapacityLimiter(extraction_threads)

    @property
    def configured(self) -> bool:
        """Whether at least one backend is configured."""
        return bool(self.backends)

    async def search(
        self,
        query: str,
        *,
        count: int,
        cache: CacheSession,
        freshness: Freshness = Freshness.AUTO,
        timeout_s: float | None = None,
    ) -> SearchOutcome:
        """Run ``query`` on the first backend that answers (cache first); failures are values."""
        started = time.perf_counter()
        outcome = SearchOutcome(query=query, page=None)
        if not self.backends:
            error = ProviderNotConfigured(
                web_not_configured("web search"),
                provider="web",
            )
            outcome.failures.append(ProviderFailure.from_error("web", error, leg="search"))
            return outcome
        for backend in self.backends:
            key = search_cache_key(backend.name, query, count)
            lookup = await cache.get("search", key, freshness)
            if lookup.found:
                try:
                    outcome.page = SearchPage.model_validate(lookup.value)
                except ValidationError:
                    outcome.page = None
                else:
                    outcome.cache, outcome.age_s = lookup.status, lookup.age_s
                    break
            outcome.cache = lookup.status
            limit = self.search_timeout_s if timeout_s is None else min(self.search_timeout_s, timeout_s)
            call_started = time.perf_counter()
            try:
                if limit <= 0:
                    raise ProviderError("no time was left for this search", provider=backend.name)
                page = await backend.search(query, count=count, timeout_s=limit)
            except ProviderError as exc:
                outcome.failures.append(
                    ProviderFailure.from_error(
                        backend.name,
                        exc,
                        leg="search",
                        elapsed_ms=(time.perf_counter() - call_started) * 1000,
                    )
                )
                continue
            except Exception as exc:  # noqa: BLE001 - a backend's bug must not end the run; try the next
                bug = ProviderError(
                    f"{backend.name} failed unexpectedly ({type(exc).__name__}: {exc})", provider=backend.name
                )
                outcome.failures.append(
                    ProviderFailure.from_error(
                        backend.name,
                        bug,
                        leg="search",
                        elapsed_ms=(time.perf_counter() - call_started) * 1000,
                    )
                )
                continue
            await cache.put(
                "search",
                key,
                page.model_dump(mode="json"),
                ttl_s=self.search_ttl_s,
                complete=not page.partial,
            )
            outcome.page = page
            break
        outcome.elapsed_ms = (time.perf_counter() - started) * 1000
        return outcome

    async def fetch_page(
        self,
        url: str,
        *,
        cache: CacheSession,
        freshness: Freshness = Freshness.AUTO,
        timeout_s: float | None = None,
    ) -> PageOutcome:
        """Fetch and extract ``url`` (cache first, keyed by the normalised URL); failures are values.

        ``timeout_s`` bounds the fetch and the extraction together (the fetcher's own total timeout
        at most); past it the page is a ``timeout`` failure. An extraction that overruns is abandoned
        (its worker thread ends on its own, bounded by the extraction budget).
        """
        started = time.perf_counter()
        deadline = None if timeout_s is None else anyio.current_time() + max(0.0, timeout_s)
        outcome = PageOutcome(url=url, page=None)
        key = page_cache_key(url)
        lookup = await cache.get("page", key, freshness)
        if _from_cache(outcome, lookup):
            return outcome
        if self.fetcher is None:
            error = ProviderNotConfigured("page fetching is not configured", provider="web-fetch")
            outcome.failure, outcome.reason = (
                ProviderFailure.from_error("web-fetch", error, leg="fetch"),
                "not_configured",
            )
            return outcome
        fetched = await _fetch(self.fetcher, url, timeout_s, deadline)
        if isinstance(fetched, FetchError):
            return self._failed(outcome, fetched, started)
        page = await self._extract(fetched, url, timeout_s, deadline)
        if isinstance(page, FetchError):
            return self._failed(outcome, page, started)
        outcome.page, outcome.final_url, outcome.charset_note = page, fetched.final_url, fetched.charset_note
        # A page with no main text is still an honest answer about that page, so it is cached.
        await cache.put("page", key, page.to_cache(), ttl_s=self.page_ttl_s)
        if fetched.final_url != url:
            await cache.put("page", page_cache_key(fetched.final_url), page.to_cache(), ttl_s=self.page_ttl_s)
        outcome.elapsed_ms = (time.perf_counter() - started) * 1000
        return outcome

    async def _extract(
        self, fetched: FetchedPage, url: str, timeout_s: float | None, deadline: float | None
    ) -> ExtractedPage | FetchError:
        """``fetched``'s main text, extracted in a worker thread before ``deadline``; a failure as a value."""
        left = None if deadline is None else deadline - anyio.current_time()
        try:
            with anyio.fail_after(left):
                return await anyio.to_thread.run_sync(
                    lambda: extract_page(fetched.text, fetched.final_url, content_type=fetched.content_type),
                    limiter=self._extract_limiter,
                    abandon_on_cancel=True,
                )
        except TimeoutError:
            return FetchError(
                "timeout",
                f"extracting the page took longer than its {timeout_s or 0:.1f} s share of the deadline",
                url=url,
            )
        except Exception as exc:  # noqa: BLE001 - a page that breaks the extractor fails alone, not the run
            return FetchError(
                "invalid_content", f"the page could not be extracted ({type(exc).__name__}: {exc})", url=url
            )

    @staticmethod
    def _failed(outcome: PageOutcome, error: FetchError, started: float) -> PageOutcome:
        elapsed = (time.perf_counter() - started) * 1000
        outcome.failure = ProviderFailure.from_error("web-fetch", error, leg="fetch", elapsed_ms=elapsed)
        outcome.reason, outcome.elapsed_ms = error.reason, elapsed
        return outcome


def _from_cache(outcome: PageOutcome, lookup: CacheLookup) -> bool:
    """Fill ``outcome`` from a cached page; whether one was found (an unreadable entry is a miss)."""
    if lookup.found:
        try:
            outcome.page = ExtractedPage.model_validate(lookup.value)
        except ValidationError:
            outcome.page = None
        else:
            outcome.cache, outcome.age_s, outcome.final_url = (
                lookup.status,
                lookup.age_s,
                outcome.page.url,
            )
            return True
    outcome.cache = lookup.status
    return False


async def _fetch(
    fetcher: SafeFetcher, url: str, timeout_s: float | None, deadline: float | None
) -> FetchedPage | FetchError:
    """``url`` fetched before ``deadline`` (the wait for a connection slot included); a failure as a value."""
    try:
        # the fetcher's own deadline starts once it has a connection slot; this one includes the wait
        with anyio.fail_after(None if deadline is None else deadline - anyio.current_time() + 0.05):
            return await fetcher.fetch(url, timeout_s=timeout_s)
    except TimeoutError:
        return FetchError(
            "timeout",
            f"the page was not fetched within its {timeout_s or 0:.1f} s share of the deadline",
            url=url,
        )
    except Exception as exc:  # noqa: BLE001 - whatever one page raises, it fails alone
        if isinstance(exc, FetchError):
            return exc
        return FetchError(
            "invalid_content", f"the page could not be fetched ({type(exc).__name__}: {exc})", url=url
        )
