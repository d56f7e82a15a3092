"""The web search provider: researcher-only, cached, with page fetches and passage selection.

Time: the provider works within the tighter of the context's deadline and the deadline of the scope
it runs in (the router's per-provider timeout), keeps a reserve to rank and assemble, and gives each
page its share of the rest; a page that fails or runs out of time is a per-page failure, and the
other pages' evidence is returned.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from simone.providers.web._gather import (
    Gathered,
    PassageSource,
    fetch_pages,
    finish_reserve,
    gather_passages,
    source_metadata,
)
from simone.providers.web._searcher import PageOutcome, SearchOutcome, WebSearcher
from simone.providers.web._types import SearchHit
from simone.runtime import (
    CONTAINMENT_VERSION,
    AccessDenied,
    Caller,
    Evidence,
    EvidenceKey,
    Freshness,
    ProviderError,
    ProviderFailure,
    ProviderKind,
    ProviderNotConfigured,
    ProviderResponse,
    ResearchCache,
    RetrievalRequest,
    TrustedContext,
    contain_untrusted,
    find_instruction_like,
    strip_hidden,
    web_not_configured,
)
from simone.runtime.ranking import (
    error_for_failure,
    normalize_url,
    seconds_left,
)

WEB_CALLERS = frozenset({Caller.RESEARCHER, Caller.RESEARCH_WORKFLOW})
"""The only callers that may search the web (DESIGN.md): the researcher and the research workflow."""


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


def error_from_failures(failures: Sequence[ProviderFailure], provider: str) -> ProviderError:
    """One error that stands for every backend failing (the kind of the first failure)."""
    if not failures:
        return ProviderError("the web search gave no answer", provider=provider)
    first = failures[0]
    summary = "; ".join(f"{f.provider}: {f.message}" for f in failures)
    return error_for_failure(
        first,
        f"every web search backend failed — {summary}",
        provider=provider,
        retryable=any(f.retryable for f in failures),
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
    meta[EvidenceKey.CONTAINMENT] = CONTAINMENT_VERSION
    meta[EvidenceKey.HIDDEN_REMOVED] = cleaned.removed + title_clean.hidden_removed
    if title_clean.flags:
        meta[EvidenceKey.INSTRUCTION_LIKE] = [flag.model_dump() for flag in title_clean.flags]
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
    metadata[EvidenceKey.INSTRUCTION_LIKE] = [*metadata.get(EvidenceKey.INSTRUCTION_LIKE, []), *flags]
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
                web_not_configured("web search"),
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
        unique: dict[str, SearchHit] = {}
        for hit in outcome.page.hits:
            unique.setdefault(normalize_url(hit.url), hit)
        hits = list(unique.values())
        pages = await fetch_pages(
            self.searcher,
            [hit.url for hit in hits[: self.fetch_top]],
            cache=session,
            freshness=self.freshness,
            context=context,
            reserve_s=reserve,
        )
        sources = [
            PassageSource(
                key=hit.url, rank=hit.rank, order=order, snippet=hit.snippet, page=pages.get(hit.url)
            )
            for order, hit in enumerate(hits)
        ]
        gathered = await gather_passages(request.query, sources, per_source=self.passages_per_source)
        evidence = [self._evidence(item, hits, outcome) for item in gathered]
        leg_failures = [
            *outcome.failures,
            *(f for g in gathered if (f := _failure(g.source.page)) is not None),
        ]
        return ProviderResponse(
            evidence=evidence,
            degraded=_degraded(outcome, pages),
            leg_failures=leg_failures,
            details={
                "query": outcome.page.query,
                "query_truncated": outcome.page.query_truncated,
                "duplicates_in_results": len(outcome.page.hits) - len(hits),
                "cache": session.stats().model_dump(),
                "elapsed_ms": (time.perf_counter() - started) * 1000,
            },
        )

    def _evidence(self, item: Gathered, hits: Sequence[SearchHit], outcome: SearchOutcome) -> Evidence:
        """One page's evidence: its passages, untrusted, with its source's metadata."""
        hit = hits[item.source.order]
        page = item.source.page
        extracted = page.page if page is not None else None
        assert outcome.page is not None
        metadata = source_metadata(
            page,
            backend=outcome.page.backend,
            rank=hit.rank,
            search_cache=outcome.cache,
            published=hit.published,
        )
        metadata[EvidenceKey.SITE] = extracted.site if extracted else None
        if page is not None and page.failure is not None:
            metadata[EvidenceKey.FETCH_ERROR] = page.failure.message
        return web_evidence(
            provider_name=self._name,
            url=hit.url,
            title=(extracted.title if extracted and extracted.title else hit.title),
            content="\n…\n".join(item.passages),
            score=item.score,
            metadata=metadata,
        )


def _failure(page: PageOutcome | None) -> ProviderFailure | None:
    return page.failure if page is not None else None


def _degraded(outcome: SearchOutcome, pages: dict[str, PageOutcome]) -> list[str]:
    """What the answer lacks: backends that failed first, pages not read, engines that did not answer."""
    assert outcome.page is not None
    degraded = []
    if outcome.failures:
        degraded.append(
            f"{len(outcome.failures)} search backend(s) failed before {outcome.page.backend} answered"
        )
    fetch_failures = [p for p in pages.values() if p.failure is not None]
    if fetch_failures:
        degraded.append(f"{len(fetch_failures)} page(s) could not be fetched; their search snippets are used")
    if outcome.page.partial:
        degraded.append(f"{outcome.page.backend} reported engines that did not answer")
    return degraded
