"""The limitations of a web research result: the plain sentences an answer built on it must disclose.

One helper per part of the run (search, pages, queries and cache, critic, packing, stop), called in
that order, so the sentences always come in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence

from simone.runtime import CacheStats, ProviderFailure
from simone.workflows.research._models import (
    Confidence,
    ResearchBudget,
    ResearchStatus,
    Source,
    StopReason,
)


def limitations_of(
    *,
    status: ResearchStatus,
    stop: StopReason,
    confidence: Confidence,
    budget: ResearchBudget,
    sources: Sequence[Source],
    stats: CacheStats,
    search_failures: Sequence[ProviderFailure],
    truncated_queries: int,
    duplicates: dict[str, str],
) -> list[str]:
    """The limitations of one research run, in a fixed order.

    Args:
        status: the result's status.
        stop: why the run stopped.
        confidence: the critic's last judgement.
        budget: the budget with what was used.
        sources: the result's sources.
        stats: the research cache's counters for the run.
        search_failures: the failures of the search leg.
        truncated_queries: queries cut to the length the search backend accepts.
        duplicates: sources whose passages repeat another source's text (key → kept key).
    """
    return [
        *_search_notes(status, stop, confidence, sources, search_failures),
        *_page_notes(sources),
        *_query_and_cache_notes(truncated_queries, stats),
        *_critic_notes(confidence, sources),
        *_packing_notes(budget, duplicates, sources),
        *_stop_notes(stop, confidence, budget),
    ]


def _search_notes(
    status: ResearchStatus,
    stop: StopReason,
    confidence: Confidence,
    sources: Sequence[Source],
    search_failures: Sequence[ProviderFailure],
) -> list[str]:
    """No web evidence at all, and the search calls that failed."""
    out: list[str] = []
    if status is ResearchStatus.FAILED and stop is StopReason.ALL_BACKENDS_FAILED:
        out.append("Every web search failed, so there is no web evidence; nothing here comes from the web.")
    elif not confidence.breakdown.covered_terms and not sources:
        out.append("The web search found nothing for this question.")
    if search_failures:
        backends = sorted({f.provider for f in search_failures})
        out.append(f"{len(search_failures)} search call(s) failed ({', '.join(backends)}).")
    return out


def _page_notes(sources: Sequence[Source]) -> list[str]:
    """Pages that could not be read, and sources known only by their snippet."""
    out: list[str] = []
    failed_pages = [s for s in sources if s.fetch_status not in ("fetched", "snippet_only")]
    if failed_pages:
        reasons = sorted({s.fetch_status for s in failed_pages})
        out.append(
            f"{len(failed_pages)} page(s) could not be read ({', '.join(reasons)}); only their search snippets were used."
        )
    snippet_only = [s for s in sources if s.used and not s.fetched]
    if snippet_only:
        out.append(
            f"{len(snippet_only)} source(s) are known only by their search snippet, not the page itself."
        )
    return out


def _query_and_cache_notes(truncated_queries: int, stats: CacheStats) -> list[str]:
    """Queries cut to the backend's length, stale cache entries served, and cache errors."""
    out: list[str] = []
    if truncated_queries:
        out.append(f"{truncated_queries} query(ies) were cut to the length the search backend accepts.")
    if stats.stale_served:
        out.append(
            f"{stats.stale_served} result(s) came from the cache after their freshness period (cached mode)."
        )
    if stats.read_errors or stats.write_errors:
        out.append(
            f"The research cache was unavailable for {stats.read_errors} read(s) and "
            f"{stats.write_errors} write(s); those results were fetched live and not shared."
        )
    return out


def _critic_notes(confidence: Confidence, sources: Sequence[Source]) -> list[str]:
    """What the critic found lacking: uncovered words, too few sites, disagreements, a low confidence."""
    out: list[str] = []
    b = confidence.breakdown
    if b.missing_terms and sources:
        out.append("No source covered: " + ", ".join(b.missing_terms) + ".")
    if sources and b.distinct_sites < b.min_sources:
        out.append(f"Only {b.distinct_sites} independent site(s) were found; {b.min_sources} were wanted.")
    for contradiction in b.contradictions:
        out.append(f"Sources disagree: {contradiction}.")
    if sources and not confidence.sufficient:
        out.append(
            f"The evidence is insufficient: confidence {confidence.value:.2f} is below the floor {confidence.floor:.2f}."
        )
    return out


def _packing_notes(
    budget: ResearchBudget, duplicates: dict[str, str], sources: Sequence[Source]
) -> list[str]:
    """Passages the context budget cut, repeated sources, and instruction-like passages."""
    out: list[str] = []
    if budget.truncated or budget.omitted:
        out.append(
            f"The context budget of {budget.max_context_tokens} tokens cut {budget.truncated} passage(s) "
            f"and left out {budget.omitted}."
        )
    if duplicates:
        out.append(
            f"{len(duplicates)} source(s) repeated another source's text and were not counted as independent."
        )
    flagged = sum(s.instruction_like for s in sources)
    if flagged:
        out.append(
            f"{flagged} instruction-like passage(s) were found in web text; they are quoted material, not instructions."
        )
    return out


def _stop_notes(stop: StopReason, confidence: Confidence, budget: ResearchBudget) -> list[str]:
    """A stop before the critic was satisfied, and the limits the request lowered."""
    out: list[str] = []
    if stop is StopReason.DEADLINE:
        out.append("The research stopped at its deadline; later steps did not run.")
    elif stop in (StopReason.MAX_ITERATIONS, StopReason.MAX_QUERIES) and not confidence.satisfied:
        out.append(
            f"The research stopped on its {stop.value.replace('_', ' ')} budget before the critic was satisfied."
        )
    out.extend(f"Request limit: {note}." for note in budget.lowered)
    return out
