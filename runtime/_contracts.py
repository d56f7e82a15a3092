"""The contracts every layer speaks: trusted context, evidence, outcomes, requests and results.

All models are frozen pydantic models and serialise to JSON (``model_dump(mode="json")``), because
agents and the MCP server send them over the wire.
"""

from __future__ import annotations

import hashlib
import math
import time
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from simone.runtime._errors import FailureKind, InvalidRequest

JsonValue = Any
"""Any value that ``json.dumps`` accepts (kept loose on purpose: metadata is open-ended)."""

SCOPE_KEYS: tuple[str, ...] = ("actor", "conversation", "client", "project", "task", "thread")
"""The keys a scope is made of, in a fixed order."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Caller(StrEnum):
    """Who is asking. Only the runtime sets it, when it admits an event."""

    ORCHESTRATOR = "orchestrator"
    RESEARCHER = "researcher"
    RESEARCH_WORKFLOW = "research-workflow"
    SYSTEM = "system"


class ProviderKind(StrEnum):
    """The kind of evidence source; ``custom`` is for a developer's own provider."""

    MEMORY = "memory"
    SESSION_MEMORY = "session-memory"
    DOCUMENT_INDEX = "document-index"
    WEB_SEARCH = "web-search"
    CUSTOM = "custom"


class Trust(StrEnum):
    """Own memory and documents are trusted; anything from the web is not."""

    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"


class TrustedContext(_Frozen):
    """The admitted scope of one request, built by the runtime, never by model output.

    Attributes:
        actor: who the event came from (required).
        conversation, client, project, task, thread: optional scope keys.
        caller: the role asking (decides which providers may answer).
        deadline: absolute wall-clock time (``time.time()`` seconds) after which work must stop;
            ``None`` means no deadline beyond each provider's own timeout.
        token_budget: the most evidence tokens this context may receive.
    """

    actor: Annotated[str, Field(min_length=1, max_length=256)]
    conversation: str | None = None
    client: str | None = None
    project: str | None = None
    task: str | None = None
    thread: str | None = None
    caller: Caller = Caller.ORCHESTRATOR
    deadline: float | None = None
    token_budget: Annotated[int, Field(ge=1)] = 4000

    @field_validator("actor")
    @classmethod
    def _actor_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("actor must not be blank")
        return value

    def scope(self) -> dict[str, str]:
        """The scope keys that are set, in the fixed order of :data:`SCOPE_KEYS`."""
        return {key: value for key in SCOPE_KEYS if (value := getattr(self, key)) is not None}

    def remaining_s(self, now: float | None = None) -> float | None:
        """Seconds left before the deadline (never negative), or ``None`` without a deadline."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - (time.time() if now is None else now))


def content_digest(text: str) -> str:
    """sha256 of the normalised content (whitespace collapsed, case folded)."""
    normalised = " ".join(text.split()).casefold()
    return hashlib.sha256(normalised.encode("utf-8", "surrogatepass")).hexdigest()


def evidence_id(kind: str, locator: str, digest: str) -> str:
    """Stable evidence id: sha256 of provider kind + locator + content digest."""
    raw = f"{kind}\x1f{locator}\x1f{digest}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()


class Evidence(_Frozen):
    """One piece of evidence, as a provider found it and as the router packed it.

    Build it with :meth:`create`, which computes ``id`` and ``digest``.
    """

    id: str
    provider: ProviderKind
    provider_name: str
    title: str = ""
    content: str
    locator: str
    score: float = 0.0
    rank: int | None = None
    fused_score: float | None = None
    digest: str
    trust: Trust = Trust.TRUSTED
    metadata: dict[str, JsonValue] = Field(default_factory=dict)

    @field_validator("score")
    @classmethod
    def _finite_score(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("score must be a finite number")
        return value

    @classmethod
    def create(
        cls,
        *,
        provider: ProviderKind | str,
        provider_name: str,
        locator: str,
        content: str,
        title: str = "",
        score: float = 0.0,
        trust: Trust | None = None,
        metadata: dict[str, JsonValue] | None = None,
    ) -> Evidence:
        """Build evidence with its stable id and digest; web evidence defaults to untrusted."""
        kind = ProviderKind(provider)
        digest = content_digest(content)
        if trust is None:
            trust = Trust.UNTRUSTED if kind is ProviderKind.WEB_SEARCH else Trust.TRUSTED
        return cls(
            id=evidence_id(kind.value, locator, digest),
            provider=kind,
            provider_name=provider_name,
            title=title,
            content=content,
            locator=locator,
            score=score,
            digest=digest,
            trust=trust,
            metadata=dict(metadata or {}),
        )


class ProviderFailure(_Frozen):
    """Why a provider (or one leg inside it) gave no answer. Empty and failed are never the same."""

    outcome: Literal["failure"] = "failure"
    provider: str
    kind: FailureKind
    message: str
    retryable: bool = False
    retry_after_s: float | None = None
    leg: str | None = None
    elapsed_ms: float = 0.0


ExclusionReason = Literal["duplicate", "over_budget", "not_relevant"]


class Exclusion(_Frozen):
    """One item that was found but left out of the packed evidence, and why."""

    id: str
    provider: str
    locator: str
    reason: ExclusionReason
    detail: str = ""
    tokens: int | None = None


class ProviderResponse(_Frozen):
    """What a provider returns: its evidence in its own order, plus honest notes.

    Attributes:
        evidence: best first; the router assigns 1-based ranks after within-provider dedup.
        degraded: plain reasons the answer is weaker than usual ("semantic leg unavailable…").
        leg_failures: failures of internal legs the provider survived (they appear in the result).
        details: free-form trace data (per-leg counts, timings, spaces).
        excluded: items found but left out by the provider itself (reason ``not_relevant``: they
            matched neither by words nor by meaning); the router lists them in the budget report.
    """

    evidence: list[Evidence] = Field(default_factory=list)
    degraded: list[str] = Field(default_factory=list)
    leg_failures: list[ProviderFailure] = Field(default_factory=list)
    details: dict[str, JsonValue] = Field(default_factory=dict)
    excluded: list[Exclusion] = Field(default_factory=list)


class ProviderHits(_Frozen):
    """A provider answered (possibly with nothing relevant)."""

    outcome: Literal["hits"] = "hits"
    provider: str
    kind: ProviderKind
    evidence: list[Evidence] = Field(default_factory=list)
    elapsed_ms: float = 0.0
    degraded: list[str] = Field(default_factory=list)
    leg_failures: list[ProviderFailure] = Field(default_factory=list)
    details: dict[str, JsonValue] = Field(default_factory=dict)
    excluded: list[Exclusion] = Field(default_factory=list)


ProviderOutcome = Annotated[ProviderHits | ProviderFailure, Field(discriminator="outcome")]
"""Per selected provider: hits, or a failure."""


class SearchMode(StrEnum):
    """How a provider with several legs should search."""

    LEXICAL = "lexical"
    SEMANTIC = "semantic"
    HYBRID = "hybrid"


FilterValue = str | int | float | bool


class RetrievalRequest(_Frozen):
    """What the caller asks for. Build it with :meth:`create` to get typed errors on bad input.

    Attributes:
        query: the question (1 … ``max_query_chars`` characters, not only whitespace).
        providers: an explicit provider list (wins over any selection policy); duplicates are
            collapsed in order.
        limit: how many fused items to consider for packing (1 … 1000).
        max_tokens: the evidence budget in tokens (>= 1); ``None`` takes the context's budget.
        mode: lexical / semantic / hybrid for providers with several legs (``None``: their default).
        filters: metadata filters (exact match) for providers that support them.
        min_similarity: an explicit similarity floor for semantic legs.
    """

    query: str
    providers: tuple[str, ...] | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 10
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    mode: SearchMode | None = None
    filters: dict[str, FilterValue] = Field(default_factory=dict)
    min_similarity: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None

    @field_validator("query")
    @classmethod
    def _query_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the query is empty; ask a question with at least one word")
        return value

    @field_validator("providers")
    @classmethod
    def _dedupe_providers(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("an explicit provider list must name at least one provider")
        return tuple(dict.fromkeys(value))

    @classmethod
    def create(cls, query: str, *, max_query_chars: int = 8192, **fields: Any) -> RetrievalRequest:
        """Validate and build a request; bad input raises :class:`InvalidRequest` with the reason."""
        if not isinstance(query, str):
            raise InvalidRequest(f"the query must be text, not {type(query).__name__}")
        if len(query) > max_query_chars:
            raise InvalidRequest(
                f"the query has {len(query):,} characters; the limit is {max_query_chars:,} "
                "(router.max_query_chars). Shorten it or ask about one thing at a time."
            )
        try:
            return cls(query=query, **fields)
        except ValidationError as exc:
            reasons = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'request'}: {err['msg']}" for err in exc.errors()
            )
            raise InvalidRequest(f"invalid retrieval request: {reasons}") from exc


class ProviderSelection(_Frozen):
    """Why a provider was selected for, or dropped from, a request."""

    provider: str
    reason: str


class RequestSummary(_Frozen):
    """The request as it was served: who asked, what was selected and why."""

    query: str
    caller: Caller
    selected: list[ProviderSelection]
    dropped: list[ProviderSelection] = Field(default_factory=list)
    limit: int
    max_tokens: int
    mode: SearchMode | None = None


class Status(StrEnum):
    """The five statuses of a retrieval result (see DESIGN.md)."""

    COMPLETE = "complete"
    PARTIAL = "partial"
    NO_RESULTS = "no_results"
    FAILED = "failed"
    FORBIDDEN = "forbidden"


class BudgetReport(_Frozen):
    """How the evidence was packed into the token budget.

    ``included + truncated + omitted + duplicates_dropped`` equals the number of items the
    providers returned. Every item left out is listed: duplicates and items over budget in
    ``exclusions`` (with the reason and detail), items ranked below the request's ``limit`` by id in
    ``beyond_limit`` (fused order; a provider returning 100 hits for a limit of 10 would otherwise
    cost a model object per hit on every request).
    """

    max_tokens: int
    used_tokens: int
    included: int
    truncated: int
    omitted: int
    duplicates_dropped: int
    estimator: str
    exclusions: list[Exclusion] = Field(default_factory=list)
    beyond_limit: list[str] = Field(default_factory=list)


class Contribution(_Frozen):
    """One provider's share of an item's fused score."""

    provider: str
    rank: int
    contribution: float


class FusedItem(_Frozen):
    """The fusion trace of one item."""

    id: str
    fused_score: float
    contributions: list[Contribution]


class ProviderTrace(_Frozen):
    """Per-provider timing and counts."""

    provider: str
    outcome: Literal["hits", "failure"]
    elapsed_ms: float
    returned: int
    kept: int
    duplicates_within: int
    degraded: list[str] = Field(default_factory=list)
    details: dict[str, JsonValue] = Field(default_factory=dict)


class Trace(_Frozen):
    """Where the time went and how the ranking came about."""

    providers: list[ProviderTrace]
    fusion: list[FusedItem]
    rrf_k: int
    weights: dict[str, float]
    total_ms: float
    router_ms: float


class RetrievalResult(_Frozen):
    """The answer of the router: packed evidence in fused order, failures, budget and trace."""

    request: RequestSummary
    status: Status
    evidence: list[Evidence]
    failures: list[ProviderFailure]
    budget: BudgetReport
    trace: Trace
    limitations: list[str] = Field(default_factory=list)

    def to_json(self) -> str:
        """The result as a JSON document."""
        return self.model_dump_json(indent=2)
