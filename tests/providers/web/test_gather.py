"""Passage gathering, shared by the web provider and the web-research workflow."""

from __future__ import annotations

import pytest
from simone.providers.web import (
    ExtractedPage,
    PageOutcome,
    PassageSource,
    fetch_status,
    gather_passages,
    page_failure,
    source_metadata,
)
from simone.runtime import CacheStatus, EvidenceKey, ProviderTimeout

pytestmark = pytest.mark.anyio

PAGE_TEXT = (
    "The museum opens at nine in the morning.\n\nTickets cost twelve euros for adults.\n\n"
    "The cafe on the roof serves lunch."
)


def _fetched(url: str, text: str, *, cache: CacheStatus = CacheStatus.MISS) -> PageOutcome:
    return PageOutcome(url=url, page=ExtractedPage(url=url, text=text, date="2024-05-01"), cache=cache)


async def test_pages_and_snippets_become_passages_best_source_first() -> None:
    sources = [
        PassageSource("a", rank=1, order=0, snippet="a page about the weather"),
        PassageSource(
            "b", rank=2, order=1, snippet="ignored: the page was read", page=_fetched("b", PAGE_TEXT)
        ),
        PassageSource("c", rank=3, order=2, snippet=""),
        PassageSource("d", rank=4, order=3, snippet="museum tickets and opening hours"),
    ]
    gathered = await gather_passages("museum tickets opening", sources, per_source=2)
    assert {g.source.key for g in gathered} == {"b", "d"}
    by_key = {g.source.key: g for g in gathered}
    assert "a" not in by_key and "c" not in by_key, "no shared word, no snippet: nothing gathered"
    assert by_key["b"].passages and all(p in PAGE_TEXT for p in by_key["b"].passages), (
        "the page, not its snippet"
    )
    assert [g.score for g in gathered] == sorted((g.score for g in gathered), reverse=True)


async def test_rank_then_order_break_score_ties() -> None:
    same = "museum tickets"
    sources = [
        PassageSource("late", rank=2, order=0, snippet=same),
        PassageSource("first", rank=1, order=1, snippet=same),
        PassageSource("second", rank=1, order=2, snippet=same),
    ]
    gathered = await gather_passages("museum tickets", sources, per_source=1)
    assert [g.source.key for g in gathered] == ["first", "second", "late"]


def test_source_metadata_says_which_cache_the_text_came_from() -> None:
    read = source_metadata(
        _fetched("u", PAGE_TEXT, cache=CacheStatus.HIT),
        backend="searxng",
        rank=3,
        search_cache=CacheStatus.MISS,
        published=None,
    )
    assert read[EvidenceKey.CACHE] == "hit" and read[EvidenceKey.FETCHED] is True
    assert read[EvidenceKey.FETCH_STATUS] == "fetched" and read[EvidenceKey.PUBLISHED] == "2024-05-01"
    failed = PageOutcome(url="u", page=None, failure=page_failure(ProviderTimeout("late")), reason="timeout")
    snippet = source_metadata(failed, backend="brave", rank=1, search_cache=CacheStatus.HIT, published="2020")
    assert snippet[EvidenceKey.CACHE] == "hit" and snippet[EvidenceKey.FETCHED] is False
    assert snippet[EvidenceKey.FETCH_STATUS] == "timeout" and snippet[EvidenceKey.PUBLISHED] == "2020"
    assert fetch_status(None) == "snippet_only"
    assert failed.failure is not None and failed.failure.leg == "fetch" and failed.failure.retryable
