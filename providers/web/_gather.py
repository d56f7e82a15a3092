"""Passage gathering: the step the web provider and the web-research workflow share.

Search results (each a *source*: its snippet and, once fetched, its page) become passages: pages are
fetched concurrently, each within its share of the deadline and each failure a value
(:func:`fetch_pages`); the fetched text is split into passages (the snippet stands in for a page that
was not read), all passages are ranked together against the question by BM25 and at most
``per_source`` are kept per source (:func:`gather_passages`). The provider runs this once for one
search; the workflow runs it every iteration over everything its queries found.

Time: a caller works within the tighter of its context's deadline and the deadline of the scope it
runs in (the router's per-provider timeout), keeps a reserve to rank and assemble
(:func:`finish_reserve`), and gives each page what is left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
from simone.providers.web._extract import rank_passages, split_passages
from simone.providers.web._searcher import PageOutcome, WebSearcher
from simone.runtime import (
    CacheSession,
    CacheStatus,
    EvidenceKey,
    Freshness,
    ProviderError,
    ProviderFailure,
    ProviderTimeout,
    TrustedContext,
)
from simone.runtime.ranking import seconds_left

FINISH_RESERVE_S = 1.0
"""At most this much of the time left is kept to rank passages and assemble the answer."""

FETCH_PROVIDER = "web-fetch"
"""The provider name on a page's failure."""


def finish_reserve(left: float | None) -> float:
    """The part of ``left`` seconds kept to finish (rank, assemble): a fifth, at most one second."""
    return 0.0 if left is None else min(FINISH_RESERVE_S, left * 0.2)


@dataclass(frozen=True, slots=True)
class PassageSource:
    """One search result to gather passages from.

    Attributes:
        key: what its passages are grouped by (e.g. the normalised URL); unique per call.
        rank: its best rank in the search results (lower is better).
        order: when it was first found (breaks rank ties).
        snippet: the search snippet, used when there is no page text.
        page: the fetch outcome, ``None`` when it was not fetched.
    """

    key: str
    rank: int
    order: int
    snippet: str
    page: PageOutcome | None = None


@dataclass(frozen=True, slots=True)
class Gathered:
    """The passages kept from one source, best first, and the best passage's score."""

    source: PassageSource
    passages: list[str]
    score: float


async def fetch_page(
    searcher: WebSearcher, url: str, *, cache: CacheSession, freshness: Freshness, share: float | None
) -> PageOutcome:
    """One page within ``share`` seconds; anything it raises or a timeout is its failure alone."""
    with anyio.move_on_after(share):
        try:
            return await searcher.fetch_page(url, cache=cache, freshness=freshness, timeout_s=share)
        except Exception as exc:  # noqa: BLE001 - one page must not cost the others their evidence
            bug = ProviderError(
                f"the page failed unexpectedly ({type(exc).__name__}: {exc})", provider=FETCH_PROVIDER
            )
            return PageOutcome(url=url, page=None, failure=page_failure(bug), reason="error")
    late = ProviderTimeout(
        f"the page was not read within its {share or 0:.1f} s share of the deadline", provider=FETCH_PROVIDER
    )
    return PageOutcome(url=url, page=None, failure=page_failure(late), reason="timeout")


def page_failure(error: ProviderError) -> ProviderFailure:
    """The failure value of one page."""
    return ProviderFailure.from_error(FETCH_PROVIDER, error, leg="fetch")


async def fetch_pages(
    searcher: WebSearcher,
    urls: Sequence[str],
    *,
    cache: CacheSession,
    freshness: Freshness,
    context: TrustedContext,
    reserve_s: float | None = None,
    pages: dict[str, PageOutcome] | None = None,
) -> dict[str, PageOutcome]:
    """Fetch ``urls`` concurrently; each page gets the time left less a reserve, its failure a value.

    Args:
        searcher: fetches and extracts through the cache.
        urls: the pages to read.
        cache: the run's cache session.
        freshness: how the cache is used.
        context: whose deadline bounds the fetches.
        reserve_s: seconds kept to finish; ``None``: :func:`finish_reserve` of the time left per page.
        pages: filled in as pages finish (what a caller cancelled meanwhile still sees).

    Returns:
        url → outcome (``pages`` when given).
    """
    out: dict[str, PageOutcome] = {} if pages is None else pages

    async def one(url: str) -> None:
        left = seconds_left(context)
        reserve = finish_reserve(left) if reserve_s is None else reserve_s
        share = None if left is None else max(0.0, left - reserve)
        out[url] = await fetch_page(searcher, url, cache=cache, freshness=freshness, share=share)

    async with anyio.create_task_group() as group:
        for url in urls:
            group.start_soon(one, url)
    return out


async def gather_passages(
    question: str, sources: Sequence[PassageSource], *, per_source: int, analyzer: Any = None
) -> list[Gathered]:
    """The passages relevant to ``question``, grouped by source; best source first.

    Every source's passages (its page's text split into passages, else its snippet) are ranked
    together, at most ``per_source`` kept per source. Sources are offered in (rank, order) and come
    back by their best passage's score, then rank, then order; a source without a relevant passage is
    left out.
    """
    ordered = sorted(sources, key=lambda s: (s.rank, s.order))
    documents: list[tuple[str, list[str]]] = []
    for source in ordered:
        extracted = source.page.page if source.page is not None else None
        if extracted is not None and extracted.text.strip():
            documents.append((source.key, split_passages(extracted.text)))
        elif source.snippet:
            documents.append((source.key, [source.snippet]))
    selected = await rank_passages(question, documents, per_source=per_source, analyzer=analyzer)
    texts: dict[str, list[str]] = {}
    scores: dict[str, float] = {}
    for passage in selected:
        texts.setdefault(passage.source, []).append(passage.text)
        scores[passage.source] = max(scores.get(passage.source, 0.0), passage.score)
    chosen = sorted((s for s in ordered if s.key in texts), key=lambda s: (-scores[s.key], s.rank, s.order))
    return [Gathered(source, texts[source.key], scores[source.key]) for source in chosen]


def fetch_status(page: PageOutcome | None) -> str:
    """``snippet_only`` (not fetched), ``fetched``, or why the fetch failed."""
    if page is None:
        return "snippet_only"
    if page.page is not None:
        return "fetched"
    return page.reason or "error"


def source_metadata(
    page: PageOutcome | None,
    *,
    backend: str,
    rank: int,
    search_cache: CacheStatus | None,
    published: str | None,
) -> dict[str, Any]:
    """The metadata every web evidence item carries about its source (see :class:`EvidenceKey`).

    ``cache`` is the status of the text the item holds: the page's when it was read, else the search's.
    """
    extracted = page.page if page is not None else None
    cache = page.cache if page is not None and extracted is not None else search_cache
    return {
        EvidenceKey.SEARCH_BACKEND: backend,
        EvidenceKey.SEARCH_RANK: rank,
        EvidenceKey.FETCHED: extracted is not None,
        EvidenceKey.FETCH_STATUS: fetch_status(page),
        EvidenceKey.CACHE: cache.value if cache is not None else None,
        EvidenceKey.PUBLISHED: (extracted.date if extracted and extracted.date else published),
    }
