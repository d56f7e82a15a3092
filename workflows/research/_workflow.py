"""The web-research workflow: plan → search → fetch → passages → pack → critic, iterated within budgets.

One run, for the researcher or the research workflow only:

1. resolve the budget (depth preset, lowered by the request, bounded by the configured caps and the
   caller's token budget);
2. per iteration: plan queries (the question first, later what the critic found missing), search them
   concurrently through the cache (backends fall back in order), merge results into sources by
   normalised URL, fetch pages (``auto``: only while the snippets do not satisfy the critic), select
   the passages relevant to the question, pack them into the context budget, run the critic;
3. stop when the critic is satisfied, a budget is spent, the deadline passes or nothing new is left
   to ask — and say which.

Nothing is invented: when every backend fails the result is ``failed`` with no source.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import anyio
from simone.providers.web import (
    Gathered,
    PageOutcome,
    PassageSource,
    SearchOutcome,
    SearchPage,
    WebSearcher,
    WebStack,
    check_web_caller,
    fetch_pages,
    fetch_status,
    gather_passages,
    page_failure,
    source_metadata,
    web_evidence,
    with_instruction_flags,
)
from simone.runtime import (
    AccessDenied,
    CacheSession,
    CacheStatus,
    Evidence,
    EvidenceKey,
    ProviderFailure,
    ProviderTimeout,
    ResearchCache,
    TrustedContext,
    WebSettings,
    strip_hidden,
    web_not_configured,
)
from simone.runtime.ranking import (
    CharEstimator,
    DuplicateFinder,
    PackItem,
    TokenEstimator,
    normalize_url,
    pack,
)
from simone.runtime.text import (
    Analyzer,
    default_analyzer,
)
from simone.workflows.research._budget import resolve_budget
from simone.workflows.research._critic import SourceView, critique
from simone.workflows.research._limitations import limitations_of
from simone.workflows.research._models import (
    BUDGET_STOPS,
    Confidence,
    FetchMode,
    QueryRun,
    ResearchBudget,
    ResearchStatus,
    Source,
    StopReason,
    WebResearchRequest,
    WebResearchResult,
)
from simone.workflows.research._plan import PlannedQuery, follow_up_queries, initial_queries

PROVIDER_NAME = "web"
"""The provider name on web evidence."""

_INTERRUPTED = ProviderTimeout("the fetch was interrupted at the research deadline", provider="web-fetch")


def site_of(url: str) -> str:
    """The host of ``url`` without ``www.`` (what independent sources are counted by)."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


@dataclass(slots=True)
class _SourceState:
    url: str
    key: str
    order: int
    title: str
    snippet: str
    site: str
    provider: str
    rank: int
    published: str | None
    search_cache: CacheStatus | None
    spellings: set[str] = field(default_factory=set)
    page: PageOutcome | None = None


@dataclass(slots=True)
class _Assembly:
    evidence: list[Evidence]
    views: list[SourceView]
    scores: dict[str, float]
    used_tokens: int
    truncated: int
    omitted: int
    flags: dict[str, int]
    duplicates: dict[str, str] = field(default_factory=dict)
    """Sources whose passages repeat another source's text (syndicated copies): key → kept key."""


@dataclass(slots=True)
class _RunState:
    request: WebResearchRequest
    budget: ResearchBudget
    session: CacheSession
    sources: dict[str, _SourceState] = field(default_factory=dict)
    queries: list[QueryRun] = field(default_factory=list)
    failures: list[ProviderFailure] = field(default_factory=list)
    queries_used: int = 0
    fetches_used: int = 0
    iterations: int = 0
    attempted: int = 0
    failed: int = 0
    truncated_queries: int = 0


class WebResearch:
    """Bounded web research over a :class:`~simone.providers.web.WebSearcher`.

    Args:
        searcher: backends, fetcher and extraction.
        cache: the research cache (open).
        settings: the web settings (hard caps, confidence floor, passages per source).
        analyzer: the lexical analysis (the shared default when ``None``).
        estimator: counts tokens for packing (``chars/4 ESTIMATED`` by default).
        clock: the time source for freshness judgements.

    Example:
        ``async with open_web(settings) as stack: result = await WebResearch.from_stack(stack).run(request, ctx)``
    """

    def __init__(
        self,
        searcher: WebSearcher,
        cache: ResearchCache,
        settings: WebSettings | None = None,
        *,
        analyzer: Analyzer | None = None,
        estimator: TokenEstimator | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.searcher = searcher
        self.cache = cache
        self.settings = settings or WebSettings()
        self.analyzer = analyzer
        self.estimator: TokenEstimator = estimator or CharEstimator()
        self.clock = clock

    @classmethod
    def from_stack(cls, stack: WebStack, **options: Any) -> WebResearch:
        """The workflow over an open web stack (same searcher, cache and settings)."""
        return cls(stack.searcher, stack.cache, stack.settings, clock=stack.cache.clock, **options)

    async def run(self, request: WebResearchRequest, context: TrustedContext) -> WebResearchResult:
        """Research ``request`` for ``context``; never raises for a failing web, returns a result."""
        started = time.perf_counter()
        budget = resolve_budget(request, self.settings, context_tokens=context.token_budget)
        budget = budget.model_copy(update={"estimator": self.estimator.label})
        refused = self._refused(request, context, budget, started)
        if refused is not None:
            return refused
        analyzer = self.analyzer or default_analyzer()
        state = _RunState(request=request, budget=budget, session=self.cache.session())
        stop = StopReason.MAX_ITERATIONS
        assembly = _Assembly([], [], {}, 0, 0, 0, {})
        confidence = self._critique(state, assembly, analyzer)
        remaining = context.remaining_s()
        with anyio.move_on_after(math.inf if remaining is None else remaining) as scope:
            for iteration in range(1, budget.max_iterations + 1):
                queries_left = budget.max_queries - state.queries_used
                if queries_left <= 0:
                    stop = StopReason.MAX_QUERIES
                    break
                iterations_left = budget.max_iterations - iteration + 1
                allowance = max(1, math.ceil(queries_left / iterations_left))
                planned = _plan(state, iteration, allowance, confidence, analyzer)
                if not planned:
                    stop = StopReason.NO_NEW_QUERIES
                    break
                state.iterations = iteration
                await self._search(state, planned, iteration, context)
                if not state.sources and all(q.failed for q in state.queries):
                    stop = StopReason.ALL_BACKENDS_FAILED
                    break
                fetch_allowance = math.ceil((budget.max_fetches - state.fetches_used) / iterations_left)
                up_to_date = False
                if request.fetch is FetchMode.AUTO and fetch_allowance > 0:
                    # auto: fetch only while the snippets alone do not satisfy the critic
                    assembly = await self._assemble(state, analyzer)
                    confidence = self._critique(state, assembly, analyzer)
                    up_to_date = True
                    wants_fetch = not confidence.satisfied
                else:
                    wants_fetch = request.fetch is FetchMode.ALWAYS and fetch_allowance > 0
                if wants_fetch and await self._fetch(state, fetch_allowance, context):
                    up_to_date = False
                if not up_to_date:
                    assembly = await self._assemble(state, analyzer)
                    confidence = self._critique(state, assembly, analyzer)
                if confidence.satisfied:
                    stop = StopReason.SATISFIED
                    break
                if state.queries_used >= budget.max_queries:
                    stop = StopReason.MAX_QUERIES
                    break
            else:
                stop = StopReason.MAX_ITERATIONS
        if scope.cancelled_caught:
            stop = StopReason.DEADLINE
            assembly = await self._assemble(state, analyzer)
            confidence = self._critique(state, assembly, analyzer)
        return self._result(request, context, state, assembly, confidence, stop, started)

    def _refused(
        self, request: WebResearchRequest, context: TrustedContext, budget: ResearchBudget, started: float
    ) -> WebResearchResult | None:
        """The result for a caller that may not search the web or a web that is not configured."""
        try:
            check_web_caller(context, PROVIDER_NAME)
        except AccessDenied as exc:
            failure = ProviderFailure.from_error(PROVIDER_NAME, exc)
            return self._empty(
                request,
                context,
                budget,
                ResearchStatus.FORBIDDEN,
                StopReason.FORBIDDEN,
                [failure],
                [exc.message],
                started,
            )
        if not self.searcher.configured:
            message = web_not_configured("web research")
            failure = ProviderFailure(provider=PROVIDER_NAME, kind="not_configured", message=message)
            return self._empty(
                request,
                context,
                budget,
                ResearchStatus.FAILED,
                StopReason.NOT_CONFIGURED,
                [failure],
                [message],
                started,
            )
        return None

    # -- steps --------------------------------------------------------------------------------------

    async def _search(
        self, state: _RunState, planned: Sequence[PlannedQuery], iteration: int, context: TrustedContext
    ) -> None:
        outcomes: list[SearchOutcome | None] = [None] * len(planned)

        async def one(index: int, query: str) -> None:
            outcomes[index] = await self.searcher.search(
                query,
                count=state.budget.results_per_query,
                cache=state.session,
                freshness=state.request.freshness,
                timeout_s=context.remaining_s(),
            )

        state.queries_used += len(planned)
        try:
            async with anyio.create_task_group() as group:
                for index, item in enumerate(planned):
                    group.start_soon(one, index, item.query)
        finally:  # also on cancellation at the deadline: every query sent is accounted for
            self._record_searches(state, planned, outcomes, iteration)

    def _record_searches(
        self,
        state: _RunState,
        planned: Sequence[PlannedQuery],
        outcomes: Sequence[SearchOutcome | None],
        iteration: int,
    ) -> None:
        for item, outcome in zip(planned, outcomes, strict=True):
            state.attempted += 1
            if outcome is None:
                state.failed += 1
                state.queries.append(
                    QueryRun(
                        query=item.query,
                        iteration=iteration,
                        purpose=item.purpose,
                        failed=True,
                        notes=["interrupted at the deadline"],
                    )
                )
                continue
            state.failures.extend(outcome.failures)
            page = outcome.page
            if page is None:
                state.failed += 1
                state.queries.append(
                    QueryRun(
                        query=item.query,
                        iteration=iteration,
                        purpose=item.purpose,
                        failed=True,
                        notes=[f.message for f in outcome.failures],
                    )
                )
                continue
            new = _merge_hits(state, page, outcome.cache)
            if page.query_truncated:
                state.truncated_queries += 1
            state.queries.append(
                QueryRun(
                    query=item.query,
                    iteration=iteration,
                    purpose=item.purpose,
                    backend=page.backend,
                    results=len(page.hits),
                    new_sources=new,
                    cache=outcome.cache,
                    query_truncated=page.query_truncated,
                    notes=list(page.notes),
                )
            )

    async def _fetch(self, state: _RunState, allowance: int, context: TrustedContext) -> bool:
        candidates = sorted(
            (s for s in state.sources.values() if s.page is None), key=lambda s: (s.rank, s.order)
        )[: min(allowance, state.budget.max_fetches - state.fetches_used)]
        if not candidates:
            return False
        state.fetches_used += len(candidates)
        pages: dict[str, PageOutcome] = {}
        try:
            # each page gets the time left, less a reserve to assemble the answer; whatever one page
            # raises is that page's failure
            await fetch_pages(
                self.searcher,
                [source.url for source in candidates],
                cache=state.session,
                freshness=state.request.freshness,
                context=context,
                pages=pages,
            )
        finally:  # also on cancellation at the deadline
            for source in candidates:
                state.attempted += 1
                source.page = pages.get(source.url) or PageOutcome(
                    url=source.url, page=None, failure=page_failure(_INTERRUPTED), reason="timeout"
                )
                if source.page.failure is not None:
                    state.failed += 1
                    state.failures.append(source.page.failure)
        return True

    async def _assemble(self, state: _RunState, analyzer: Analyzer) -> _Assembly:
        gathered = await gather_passages(
            state.request.question,
            [PassageSource(s.key, s.rank, s.order, s.snippet, s.page) for s in state.sources.values()],
            per_source=self.settings.passages_per_source,
            analyzer=analyzer,
        )
        scores = {item.source.key: item.score for item in gathered}
        candidates = [self._candidate(state.sources[item.source.key], item) for item in gathered]
        candidates, duplicates = _without_copies(candidates)
        packed = pack(
            [
                PackItem(id=e.id, text=e.content, provider=e.provider_name, locator=e.locator)
                for e in candidates
            ],
            state.budget.max_context_tokens,
            self.estimator,
        )
        evidence: list[Evidence] = []
        views: list[SourceView] = []
        flags: dict[str, int] = {}
        for index, text, truncated, tokens in packed.kept:
            item = with_instruction_flags(
                _packed(candidates[index], text, truncated=truncated, tokens=tokens)
            )
            evidence.append(item.model_copy(update={"rank": len(evidence) + 1}))
            source = state.sources[normalize_url(item.locator)]
            views.append(
                SourceView(
                    site=source.site,
                    text=item.content,
                    fetched=bool(item.metadata.get(EvidenceKey.FETCHED)),
                    published=item.metadata.get(EvidenceKey.PUBLISHED),
                )
            )
            flags[source.key] = len(item.metadata.get(EvidenceKey.INSTRUCTION_LIKE, []))
        return _Assembly(
            evidence,
            views,
            scores,
            packed.used_tokens,
            sum(1 for k in packed.kept if k[2]),
            len(packed.over_budget),
            flags,
            duplicates,
        )

    def _candidate(self, source: _SourceState, item: Gathered) -> Evidence:
        """One source's passages as web evidence (scanned for instructions only once packed)."""
        extracted = source.page.page if source.page is not None else None
        age = (source.page.age_s or 0.0) if source.page is not None else 0.0
        metadata = source_metadata(
            source.page,
            backend=source.provider,
            rank=source.rank,
            search_cache=source.search_cache,
            published=source.published,
        )
        metadata |= {
            EvidenceKey.SITE: source.site,
            EvidenceKey.PASSAGES: len(item.passages),
            # when the text was fetched (a cached page is as old as its cache entry)
            EvidenceKey.RETRIEVED_AT: round(self.clock() - (age if extracted is not None else 0.0), 3),
        }
        return web_evidence(
            provider_name=PROVIDER_NAME,
            url=source.url,
            title=extracted.title if extracted and extracted.title else source.title,
            content="\n…\n".join(item.passages),
            score=round(item.score, 6),
            metadata=metadata,
            scan=False,  # only what is packed is scanned
        )

    def _critique(self, state: _RunState, assembly: _Assembly, analyzer: Analyzer) -> Confidence:
        return critique(
            state.request.question,
            assembly.views,
            min_sources=state.budget.min_sources,
            floor=self.settings.confidence_floor,
            attempted=state.attempted,
            failed=state.failed,
            now=self.clock(),
            recency_days=state.request.recency_days,
            analyzer=analyzer,
        )

    # -- the result ---------------------------------------------------------------------------------

    def _result(
        self,
        request: WebResearchRequest,
        context: TrustedContext,
        state: _RunState,
        assembly: _Assembly,
        confidence: Confidence,
        stop: StopReason,
        started: float,
    ) -> WebResearchResult:
        budget = state.budget.model_copy(
            update={
                "queries_used": state.queries_used,
                "fetches_used": state.fetches_used,
                "iterations_run": state.iterations,
                "used_tokens": assembly.used_tokens,
                "truncated": assembly.truncated,
                "omitted": assembly.omitted,
            }
        )
        sources = _sources(state, assembly)
        search_failures = [f for f in state.failures if f.leg == "search"]
        status = _status(state, assembly, confidence, stop)
        stats = state.session.stats()
        limitations = limitations_of(
            status=status,
            stop=stop,
            confidence=confidence,
            budget=budget,
            sources=sources,
            stats=stats,
            search_failures=search_failures,
            truncated_queries=state.truncated_queries,
            duplicates=assembly.duplicates,
        )
        return WebResearchResult(
            request=request,
            caller=context.caller,
            status=status,
            stop_reason=stop,
            queries_run=state.queries,
            sources=sources,
            evidence=assembly.evidence,
            confidence=confidence,
            cache=stats,
            budget=budget,
            provider_failures=state.failures,
            limitations=limitations,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )

    def _empty(
        self,
        request: WebResearchRequest,
        context: TrustedContext,
        budget: ResearchBudget,
        status: ResearchStatus,
        stop: StopReason,
        failures: list[ProviderFailure],
        limitations: list[str],
        started: float,
    ) -> WebResearchResult:
        confidence = critique(
            request.question,
            [],
            min_sources=budget.min_sources,
            floor=self.settings.confidence_floor,
            attempted=0,
            failed=0,
            now=self.clock(),
            analyzer=self.analyzer,
        )
        return WebResearchResult(
            request=request,
            caller=context.caller,
            status=status,
            stop_reason=stop,
            confidence=confidence,
            budget=budget,
            provider_failures=failures,
            limitations=limitations,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )


def _without_copies(candidates: list[Evidence]) -> tuple[list[Evidence], dict[str, str]]:
    """Syndicated copies (same text at another URL) are not independent evidence: keep the first.

    Returns the kept items and, for each copy left out, its normalised URL → the kept one's.
    """
    finder = DuplicateFinder()
    duplicates: dict[str, str] = {}
    unique: list[Evidence] = []
    for item in candidates:
        seen = finder.check(item.id, item.digest, item.locator, item.content)
        if seen is None:
            unique.append(item)
        else:
            kept = next(e for e in unique if e.id == seen[0])
            duplicates[normalize_url(item.locator)] = normalize_url(kept.locator)
    return unique, duplicates


def _packed(item: Evidence, text: str, *, truncated: bool, tokens: int) -> Evidence:
    """``item`` as packed: cut to ``text`` when ``truncated``, with its token count."""
    if not truncated:
        return item.model_copy(update={"metadata": {**item.metadata, EvidenceKey.TOKENS: tokens}})
    return Evidence.create(
        provider=item.provider,
        provider_name=item.provider_name,
        locator=item.locator,
        content=text,
        title=item.title,
        score=item.score,
        trust=item.trust,
        metadata={**item.metadata, EvidenceKey.TRUNCATED: True, EvidenceKey.TOKENS: tokens},
    )


def _plan(
    state: _RunState, iteration: int, allowance: int, confidence: Confidence, analyzer: Analyzer
) -> list[PlannedQuery]:
    """The iteration's queries: the question first, later what the critic found missing."""
    question = state.request.question
    if iteration == 1:
        return initial_queries(question, analyzer, allowance)
    return follow_up_queries(
        question,
        analyzer,
        confidence.breakdown,
        sorted({s.site for s in state.sources.values()}),
        [q.query for q in state.queries],
        allowance,
    )


def _merge_hits(state: _RunState, page: SearchPage, cache: CacheStatus) -> int:
    """Merge one page of results into the sources by normalised URL; returns how many are new."""
    new = 0
    for hit in page.hits:
        key = normalize_url(hit.url)
        existing = state.sources.get(key)
        if existing is None:
            state.sources[key] = _SourceState(
                url=hit.url,
                key=key,
                order=len(state.sources),
                title=hit.title,
                snippet=hit.snippet,
                site=site_of(key),
                provider=page.backend,
                rank=hit.rank,
                published=hit.published,
                search_cache=cache,
                spellings={hit.url},
            )
            new += 1
        else:
            existing.spellings.add(hit.url)
            existing.rank = min(existing.rank, hit.rank)
            if not existing.snippet and hit.snippet:
                existing.snippet = hit.snippet
    return new


def _sources(state: _RunState, assembly: _Assembly) -> list[Source]:
    """Every source found, best passage score first, with what became of it."""
    used = {normalize_url(e.locator) for e in assembly.evidence}
    return [
        Source(
            url=s.url,
            normalized_url=s.key,
            spellings=len(s.spellings),
            title=strip_hidden(
                s.page.page.title if s.page and s.page.page and s.page.page.title else s.title
            ).text[:500],
            site=s.site,
            provider=s.provider,
            score=round(assembly.scores.get(s.key, 0.0), 6),
            rank=s.rank,
            fetched=bool(s.page and s.page.page),
            fetch_status=fetch_status(s.page),
            fetch_error=s.page.failure.message if s.page and s.page.failure else None,
            cache=(s.page.cache if s.page is not None and s.page.page is not None else s.search_cache),
            published=(s.page.page.date if s.page and s.page.page and s.page.page.date else s.published),
            used=s.key in used,
            instruction_like=assembly.flags.get(s.key, 0),
            duplicate_of=assembly.duplicates.get(s.key),
        )
        for s in sorted(
            state.sources.values(), key=lambda s: (-assembly.scores.get(s.key, 0.0), s.rank, s.order)
        )
    ]


def _status(
    state: _RunState, assembly: _Assembly, confidence: Confidence, stop: StopReason
) -> ResearchStatus:
    """The result's status from why the run stopped, what it found and what failed."""
    search_failures = [f for f in state.failures if f.leg == "search"]
    fetch_failures = [f for f in state.failures if f.leg == "fetch"]
    if stop is StopReason.ALL_BACKENDS_FAILED:
        return ResearchStatus.FAILED
    if not assembly.evidence:
        if stop is StopReason.DEADLINE:
            return ResearchStatus.BUDGET_EXHAUSTED
        if search_failures:  # an impaired search cannot claim that nothing exists
            return ResearchStatus.FAILED
        return ResearchStatus.NO_RESULTS
    if stop in BUDGET_STOPS and not confidence.satisfied:
        return ResearchStatus.BUDGET_EXHAUSTED
    if search_failures or fetch_failures or any(q.failed for q in state.queries):
        return ResearchStatus.PARTIAL
    return ResearchStatus.COMPLETE
