"""The contracts of web research: the request, the depth presets and the WebResearchResult."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from simone.runtime import (
    CacheStats,
    CacheStatus,
    Caller,
    Depth as Depth,  # re-exported: the one Depth lives in simone.runtime
    Evidence,
    Freshness,
    InvalidRequest,
    ProviderFailure,
    describe_validation_error,
)

MAX_QUESTION_CHARS = 2000
"""A research question longer than this is refused: ask about one thing at a time."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FetchMode(StrEnum):
    """Whether result pages are fetched: ``auto`` when the snippets do not satisfy the critic."""

    AUTO = "auto"
    ALWAYS = "always"
    NEVER = "never"


class ResearchStatus(StrEnum):
    """The retrieval statuses plus ``budget_exhausted`` (stopped on a budget, critic not satisfied)."""

    COMPLETE = "complete"
    PARTIAL = "partial"
    NO_RESULTS = "no_results"
    FAILED = "failed"
    FORBIDDEN = "forbidden"
    BUDGET_EXHAUSTED = "budget_exhausted"


class StopReason(StrEnum):
    """Why the research loop stopped."""

    SATISFIED = "satisfied"
    MAX_ITERATIONS = "max_iterations"
    MAX_QUERIES = "max_queries"
    DEADLINE = "deadline"
    NO_NEW_QUERIES = "no_new_queries"
    ALL_BACKENDS_FAILED = "all_backends_failed"
    NOT_CONFIGURED = "not_configured"
    FORBIDDEN = "forbidden"


BUDGET_STOPS = frozenset({StopReason.MAX_ITERATIONS, StopReason.MAX_QUERIES, StopReason.DEADLINE})
"""Stops that mean "a budget ran out" rather than "done" or "cannot"."""


class ResearchLimits(_Frozen):
    """Web searches, page fetches and evidence tokens: what research may use, or what it used.

    The one spelling of the triple: a depth's preset, a researcher's caps, a session's budget and what
    a run spent are all one (see :func:`lowest` for how they bound each other).
    """

    queries: Annotated[int, Field(ge=0)] = 0
    fetches: Annotated[int, Field(ge=0)] = 0
    tokens: Annotated[int, Field(ge=0)] = 0

    def limits(self) -> ResearchLimits:
        """Just the triple (of a preset, caps or a budget that carry more)."""
        return ResearchLimits(queries=self.queries, fetches=self.fetches, tokens=self.tokens)


LimitsT = TypeVar("LimitsT", bound=ResearchLimits)

LimitBound = ResearchLimits | Mapping[str, int | None] | None
"""A bound on limits: a whole set (a configured cap, what a ledger has left), or some fields by name
mapped to a number or ``None`` (a request's optional values: ``None`` bounds nothing)."""


def lowest(limits: LimitsT, *bounds: LimitBound) -> LimitsT:
    """``limits`` with every field lowered to the smallest of its bounds: research's one ``min(preset, request, cap)``.

    ``limits`` is what a depth allows (or what was wanted); a request may only lower it, and caps bound
    both. A :class:`ResearchLimits` bound lowers the triple; a mapping lowers the fields it names, which
    may be any integer field of ``limits`` (a :class:`DepthPreset`'s ``iterations`` too). The result has
    the type of ``limits``, its other fields unchanged.

    Raises:
        ValueError: a mapping names a field ``limits`` does not have.
    """
    current = limits.model_dump()
    lowered: dict[str, int] = {}
    for bound in bounds:
        if bound is None:
            continue
        pairs = bound.limits().model_dump() if isinstance(bound, ResearchLimits) else bound
        for name, value in pairs.items():
            if name not in current:
                raise ValueError(f"{type(limits).__name__} has no limit named {name!r}")
            if value is not None:
                lowered[name] = min(lowered.get(name, current[name]), value)
    return type(limits).model_validate({**current, **lowered}) if lowered else limits


class DepthPreset(ResearchLimits):
    """The numbers of one depth (DESIGN.md); requests may lower them, configuration caps bound them.

    ``queries``, ``fetches`` and ``tokens`` (evidence tokens) are what a researcher child at this
    depth is given; ``iterations``, ``results_per_query`` and ``min_sources`` shape the run itself.
    """

    iterations: int
    results_per_query: int
    min_sources: int


DEPTH_PRESETS: dict[Depth, DepthPreset] = {
    Depth.BASIC: DepthPreset(
        queries=1, fetches=1, tokens=1500, iterations=1, results_per_query=3, min_sources=1
    ),
    Depth.STANDARD: DepthPreset(
        queries=3, fetches=2, tokens=4000, iterations=1, results_per_query=5, min_sources=2
    ),
    Depth.DEEP: DepthPreset(
        queries=6, fetches=5, tokens=10_000, iterations=3, results_per_query=8, min_sources=5
    ),
}
"""The one preset table of research depths (DESIGN.md): the workflow's budget and the size of a
researcher child's budget (queries, fetches, tokens) both come from here."""


def depth_of(depth: Depth | str) -> Depth:
    """``depth`` as a :class:`~simone.runtime.Depth` (it may be given by name).

    Raises:
        InvalidRequest: not a depth's name (the message lists them).
    """
    try:
        return Depth(depth)
    except ValueError:
        names = ", ".join(d.value for d in Depth)
        raise InvalidRequest(f"unknown research depth {depth!r}; use one of {names}") from None


def depth_preset(depth: Depth | str) -> DepthPreset:
    """The preset of ``depth`` (a :class:`~simone.runtime.Depth` or its name).

    Raises:
        InvalidRequest: not a depth's name.
    """
    return DEPTH_PRESETS[depth_of(depth)]


class WebResearchRequest(_Frozen):
    """What to research. Build it with :meth:`create` to get :class:`InvalidRequest` on bad input.

    Attributes:
        question: the question (1 … 2000 characters).
        depth: basic, standard or deep.
        max_queries, max_fetches, max_iterations, results_per_query, min_sources,
            max_context_tokens: per-request values; they may lower the depth's preset, never raise it.
        fetch: auto / always / never.
        freshness: auto / fresh / cached (how the cache is used).
        recency_days: how recent sources must be to count as fresh (inferred from the question when
            ``None``: "latest", "current", this year… ask for one year).
    """

    question: str
    depth: Depth = Depth.STANDARD
    max_queries: Annotated[int, Field(ge=1)] | None = None
    max_fetches: Annotated[int, Field(ge=0)] | None = None
    max_iterations: Annotated[int, Field(ge=1)] | None = None
    results_per_query: Annotated[int, Field(ge=1)] | None = None
    min_sources: Annotated[int, Field(ge=1)] | None = None
    max_context_tokens: Annotated[int, Field(ge=1)] | None = None
    fetch: FetchMode = FetchMode.AUTO
    freshness: Freshness = Freshness.AUTO
    recency_days: Annotated[float, Field(gt=0)] | None = None

    @field_validator("question")
    @classmethod
    def _question_ok(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is empty; ask something with at least one word")
        if len(value) > MAX_QUESTION_CHARS:
            raise ValueError(
                f"the question has {len(value):,} characters; the limit is {MAX_QUESTION_CHARS:,}"
            )
        return value

    @classmethod
    def create(cls, question: str, **fields: Any) -> WebResearchRequest:
        """Validate and build a request; bad input raises :class:`InvalidRequest` with the reason."""
        if not isinstance(question, str):
            raise InvalidRequest(f"the question must be text, not {type(question).__name__}")
        try:
            return cls(question=question, **fields)
        except ValidationError as exc:
            raise InvalidRequest(
                f"invalid web research request: {describe_validation_error(exc, limit=None, root='request')}"
            ) from exc


class ResearchBudget(_Frozen):
    """The limits a run worked under and what it used (every ``*_used`` ≤ its ``max_*``)."""

    depth: Depth
    max_queries: int
    max_fetches: int
    max_iterations: int
    results_per_query: int
    min_sources: int
    max_context_tokens: int
    queries_used: int = 0
    fetches_used: int = 0
    iterations_run: int = 0
    used_tokens: int = 0
    truncated: int = 0
    omitted: int = 0
    estimator: str = "chars/4 ESTIMATED"
    lowered: list[str] = Field(default_factory=list)
    """Plain notes on request values that were lowered to the preset or a configured cap."""

    def limits(self) -> ResearchLimits:
        """The run's ``max_queries``, ``max_fetches`` and ``max_context_tokens`` as one value."""
        return ResearchLimits(
            queries=self.max_queries, fetches=self.max_fetches, tokens=self.max_context_tokens
        )

    def used(self) -> ResearchLimits:
        """What the run used: ``queries_used``, ``fetches_used`` and ``used_tokens`` as one value."""
        return ResearchLimits(queries=self.queries_used, fetches=self.fetches_used, tokens=self.used_tokens)


class QueryRun(_Frozen):
    """One query the run sent (or took from the cache)."""

    query: str
    iteration: int
    purpose: str
    backend: str | None = None
    results: int = 0
    new_sources: int = 0
    cache: CacheStatus | None = None
    query_truncated: bool = False
    failed: bool = False
    notes: list[str] = Field(default_factory=list)


class Source(_Frozen):
    """One unique page (by normalised URL) the searches found.

    Attributes:
        url: the first spelling seen; ``normalized_url`` is the key all spellings share.
        spellings: how many distinct spellings of this URL the results held.
        site: the host without ``www.`` (what "independent sources" counts).
        provider: the search backend that found it first.
        score: the best passage score (0 when nothing relevant was found on it).
        rank: its best rank in any result list.
        fetched: whether the page itself was read (else only the snippet).
        fetch_status: ``fetched``, ``snippet_only`` (not fetched) or the fetch failure's reason.
        cache: the page cache status when fetched, else the search cache status.
        used: whether it contributed evidence.
        instruction_like: instruction-like passages flagged in its evidence.
    """

    url: str
    normalized_url: str
    spellings: int = 1
    title: str = ""
    site: str = ""
    provider: str = ""
    score: float = 0.0
    rank: int = 1
    fetched: bool = False
    fetch_status: str = "snippet_only"
    fetch_error: str | None = None
    cache: CacheStatus | None = None
    published: str | None = None
    used: bool = False
    instruction_like: int = 0
    duplicate_of: str | None = None
    """The normalised URL of the source whose text this one repeats (not counted as independent)."""


class CriticBreakdown(_Frozen):
    """The critic's components, each in [0, 1], and what they were computed from."""

    coverage: float
    independence: float
    authority: float
    freshness: float
    corroboration: float
    failures: float
    covered_terms: list[str] = Field(default_factory=list)
    missing_terms: list[str] = Field(default_factory=list)
    sites_per_term: dict[str, int] = Field(default_factory=dict)
    """For each question word, how many distinct sites' evidence contains it."""
    distinct_sites: int = 0
    min_sources: int = 1
    contradictions: list[str] = Field(default_factory=list)
    recency_days: float | None = None
    weights: dict[str, float] = Field(default_factory=dict)


class Confidence(_Frozen):
    """How far the evidence can be trusted to answer the question. Metadata, not permission.

    ``sufficient`` is ``value >= floor``; ``satisfied`` additionally needs every term covered, enough
    independent sites and no contradiction (the research loop stops on it).
    """

    value: Annotated[float, Field(ge=0, le=1)]
    floor: float
    sufficient: bool
    satisfied: bool
    version: str
    breakdown: CriticBreakdown
    explanation: str


class WebResearchResult(_Frozen):
    """The answer of a web research run (DESIGN.md "WebResearchResult").

    ``evidence`` is packed into ``budget.max_context_tokens`` (untrusted, contained); ``limitations``
    holds the plain sentences an answer built on it must disclose.
    """

    request: WebResearchRequest
    caller: Caller
    status: ResearchStatus
    stop_reason: StopReason
    queries_run: list[QueryRun] = Field(default_factory=list)
    sources: list[Source] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    confidence: Confidence
    cache: CacheStats = Field(default_factory=CacheStats)
    budget: ResearchBudget
    provider_failures: list[ProviderFailure] = Field(default_factory=list)
    limitations: list[str] = Field(default_factory=list)
    elapsed_ms: float = 0.0

    def to_json(self) -> str:
        """The result as a JSON document."""
        return self.model_dump_json(indent=2)
