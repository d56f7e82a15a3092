"""The web search provider: researcher-only, cached, with page fetches and passage selection.

Time: the provider works within the tighter of the context's deadline and the deadline of the scope
it runs in (the router's per-provider timeout), keeps a reserve to rank and assemble, and gives each
page its share of the rest; a page that fails or runs out of time is a per-page failure, and the
other pages' evidence is returned.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

import anyio
from simone.providers.web._extract import rank_passages, split_passages
from simone.providers.web._searcher import PageOutcome, WebSearcher, failure_from
from simone.runtime import (
    CONTAINMENT_VERSION,
    AccessDenied,
    CacheSession,
    Caller,
    Evidence,
    Freshness,
    InvalidResponse,
    ProviderError,
    ProviderFailure,
    ProviderKind,
    ProviderNotConfigured,
    ProviderResponse,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
    ResearchCache,
    RetrievalRequest,
    TrustedContext,
    contain_untrusted,
    find_instruction_like,
    normalize_url,
    strip_hidden,
)

FINISH_RESERVE_S = 1.0
"""At most this much of the time left is kept to rank passages and assemble the answer."""

WEB_CALLERS = frozenset({Caller.RESEARCHER, Caller.RESEARCH_WORKFLOW})
"""The only callers that may search the web (DESIGN.md): the researcher and the research workflow."""

_ERRORS: dict[str, type[ProviderError]] = {
    "timeout": ProviderTimeout,
    "unavailable": ProviderUnavailable,
    "not_configured": ProviderNotConfigured,
    "rate_limited": RateLimited,
    "forbidden": AccessDenied,
    "invalid_response": InvalidResponse,
}


def check_web_caller(context: TrustedContext, provider: str = "web") -> None:
    """Refuse every caller but the researcher and the research workflow.

    Raises:
        AccessDenied: for the orchestrator, the system or anyone else (kind ``forbidden``).
    """
    if context.caller not in WEB_CALLERS:
        raise AccessDenied(
            f"web search is only for the researcher and the research workflow, not the {context.caller.value}; "
            "delegate the question to a researcher child session",
            provider=provider,
        )


def seconds_left(context: TrustedContext) -> float | None:
    """Seconds before the tighter of the context's deadline and the enclosing cancel scope's.

    ``None`` when neither has one. The router runs a provider under ``anyio.fail_after``; reading
    that deadline lets work be cut short *before* the router cancels it and every result is lost.
    """
    left = context.remaining_s()
    scope = anyio.current_effective_deadline() - anyio.current_time()
    if math.isfinite(scope):
        left = max(0.0, scope) if left is None else min(left, max(0.0, scope))
    return left


def finish_reserve(left: float | None) -> float:
    """The part of ``left`` seconds kept to finish (rank, assemble): a fifth, at most one second."""
    return 0.0 if left is None else min(FINISH_RESERVE_S, left * 0.2)


def error_from_failures(failures: Sequence[ProviderFailure], provider: str) -> ProviderError:
    """One error that stands for every backend failing (the kind of the first failure)."""
    if not failures:
        return ProviderError("the web search gave no answer", provider=provider)
    first = failures[0]
    summary = "; ".join(f"{f.provider}: {f.message}" for f in failures)
    error_type = _ERRORS.get(first.kind, ProviderError)
    return error_type(
        f"every web search backend failed — {summary}",
        provider=provider,
        retryable=any(f.retryable for f in failures),
        retry_after_s=first.retry_after_s,
    )


def web_evidence(
    *,
    provider_name: str,
    url: str,
    title: str,
    content: str,
    score: float,
    metadata: dict[str, Any],
    scan: bool = True,
) -> Evidence:
    """Untrusted web evidence: hidden characters stripped and, with ``scan``, instructions flagged.

    ``scan=False`` leaves the instruction scan of the content to :func:`with_instruction_flags`, for
    callers that first pack many candidates and only scan what they keep.
    """
    cleaned = strip_hidden(content)
    title_clean = contain_untrusted(title)
    meta = dict(metadata)
    meta["containment"] = CONTAINMENT_VERSION
    meta["hidden_removed"] = cleaned.removed + title_clean.hidden_removed
    if title_clean.flags:
        meta["instruction_like"] = [flag.model_dump() for flag in title_clean.flags]
    item = Evidence.create(
        provider=ProviderKind.WEB_SEARCH,
        provider_name=provider_name,
        locator=url,
        content=cleaned.text,
        title=" ".join(title_clean.text.split()),
        score=score,
        metadata=meta,
    )
    return with_instruction_flags(item) if scan else item


def with_instruction_flags(item: Evidence) -> Evidence:
    """``item`` with the instruction-like passages of its content added to ``metadata``."""
    flags = [flag.model_dump() for flag in find_instruction_like(item.content)]
    if not flags:
        return item
    metadata = dict(item.metadata)
    metadata["instruction_like"] = [*metadata.get("instruction_like", []), *flags]
    return item.model_copy(update={"metadata": metadata})


class WebSearchProvider:
    """Web search as a router provider, for the researcher and the research workflow only.

    One search (the first backend that answers), the top results fetched and reduced to the passages
    relevant to the query, one evidence item per page (snippet-only when the fetch failed, with the
    failure on the item). The caller is checked here, not only by which agent got the tool.

    Args:
        searcher: backends, fetcher and extraction.
        cache: the research cache (open).
        name: the instance name.
        fetch_top: how many of the results are fetched (0: snippets only).
        max_results: the most results asked of the backend.
        passages_per_source: the most passages kept from one page.
        freshness: how the cache is used.
    """

    def __init__(
        self,
        searcher: WebSearcher,
        cache: ResearchCache,
        *,
        name: str = "web",
        fetch_top: int = 2,
        max_results: int = 8,
        passages_per_source: int = 3,
        freshness: Freshness = Freshness.AUTO,
    ) -> None:
        self._name = name
        self.searcher = searcher
        self.cache = cache
        self.fetch_top = max(0, fetch_top)
        self.max_results = max(1, max_results)
        self.passages_per_source = max(1, passages_per_source)
        self.freshness = freshness

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """Always ``web-search``."""
        return ProviderKind.WEB_SEARCH

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Search, fetch the best pages, select passages; refuse callers other than the researcher."""
        check_web_caller(context, self._name)
        if not self.searcher.configured:
            raise ProviderNotConfigured(
                "no web search backend is configured; set web.searxng_url or a Brave/Tavily key",
                provider=self._name,
            )
        started = time.perf_counter()
        session = self.cache.session()
        remaining = seconds_left(context)
        reserve = finish_reserve(remaining)
        outcome = await self.searcher.search(
            request.query,
            count=min(request.limit, self.max_results),
            cache=session,
            freshness=self.freshness,
            timeout_s=None if remaining is None else max(0.0, remaining - reserve),
        )
        if outcome.page is None:
            raise error_from_failures(outcome.failures, self._name)
        hits = []
        seen: set[str] = set()
        for hit in outcome.page.hits:
            key = normalize_url(hit.url)
            if key not in seen:
                seen.add(key)
                hits.append(hit)
        duplicates = len(outcome.page.hits) - len(hits)
        pages: dict[str, PageOutcome] = {}

        async def fetch(url: str) -> None:
            left = seconds_left(context)
            share = None if left is None else max(0.0, left - reserve)
            pages[url] = await self._page(url, session, share)

        async with anyio.create_task_group() as group:
            for hit in hits[: self.fetch_top]:
                group.start_soon(fetch, hit.url)
        documents = []
        for hit in hits:
            page = pages.get(hit.url)
            text = page.page.text if page is not None and page.page is not None else ""
            documents.append((hit.url, split_passages(text) if text.strip() else [hit.snippet]))
        selected = await rank_passages(request.query, documents, per_source=self.passages_per_source)
        by_url: dict[str, list[str]] = {}
        best: dict[str, float] = {}
        for passage in selected:
            by_url.setdefault(passage.source, []).append(passage.text)
            best[passage.source] = max(best.get(passage.source, 0.0), passage.score)
        evidence: list[Evidence] = []
        leg_failures: list[ProviderFailure] = list(outcome.failures)
        for hit in sorted(hits, key=lambda h: (-best.get(h.url, 0.0), h.rank)):
            if hit.url not in by_url:
                continue
            page = pages.get(hit.url)
            extracted = page.page if page is not None else None
            metadata: dict[str, Any] = {
                "search_backend": outcome.page.backend,
                "search_rank": hit.rank,
                "search_cache": outcome.cache.value,
                "fetched": extracted is not None,
                "page_cache": page.cache.value if page is not None else None,
                "published": (extracted.date if extracted else None) or hit.published,
                "site": extracted.site if extracted else None,
            }
            if page is not None and page.failure is not None:
                metadata["fetch_status"] = page.reason
                metadata["fetch_error"] = page.failure.message
                leg_failures.append(page.failure)
            evidence.append(
                web_evidence(
                    provider_name=self._name,
                    url=hit.url,
                    title=(extracted.title if extracted and extracted.title else hit.title),
                    content="\n…\n".join(by_url[hit.url]),
                    score=best.get(hit.url, 0.0),
                    metadata=metadata,
                )
            )
        degraded = []
        if outcome.failures:
            degraded.append(
                f"{len(outcome.failures)} search backend(s) failed before {outcome.page.backend} answered"
            )
        fetch_failures = [p for p in pages.values() if p.failure is not None]
        if fetch_failures:
            degraded.append(
                f"{len(fetch_failures)} page(s) could not be fetched; their search snippets are used"
            )
        if outcome.page.partial:
            degraded.append(f"{outcome.page.backend} reported engines that did not answer")
        return ProviderResponse(
            evidence=evidence,
            degraded=degraded,
            leg_failures=leg_failures,
            details={
                "query": outcome.page.query,
                "query_truncated": outcome.page.query_truncated,
                "duplicates_in_results": duplicates,
                "cache": session.stats().model_dump(),
                "elapsed_ms": (time.perf_counter() - started) * 1000,
            },
        )

    async def _page(self, url: str, session: CacheSession, share: float | None) -> PageOutcome:
        """One page within ``share`` seconds; anything it raises or a timeout is its failure alone."""
        with anyio.move_on_after(share):
            try:
                return await self.searcher.fetch_page(
                    url, cache=session, freshness=self.freshness, timeout_s=share
                )
            except Exception as exc:  # noqa: BLE001 - one page must not cost the others their evidence
                bug = ProviderError(
                    f"the page failed unexpectedly ({type(exc).__name__}: {exc})", provider="web-fetch"
                )
                return PageOutcome(
                    url=url, page=None, failure=failure_from(bug, "web-fetch", "fetch"), reason="error"
                )
        late = ProviderTimeout(
            f"the page was not read within its {share or 0:.1f} s share of the deadline", provider="web-fetch"
        )
        return PageOutcome(
            url=url, page=None, failure=failure_from(late, "web-fetch", "fetch"), reason="timeout"
        )
