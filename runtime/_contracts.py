"""The contracts every layer speaks: trusted context, evidence, outcomes, requests and results.

All models are frozen pydantic models and serialise to JSON (``model_dump(mode="json")``), because
agents and the MCP server send them over the wire.
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from enum import StrEnum
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from simone.runtime._config import MAX_QUERY_CHARS, describe_validation_error
from simone.runtime._errors import FailureKind, InvalidRequest, ProviderError

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


FAILURE_KINDS: frozenset[str] = frozenset(get_args(FailureKind))
"""The documented failure kinds (:data:`~simone.runtime.FailureKind`)."""

MAX_MESSAGE_CHARS = 2000
"""The longest failure message :meth:`ProviderFailure.from_error` keeps (longer ones are cut)."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(value: object, *, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``str(value)`` that never raises: cut to ``limit`` characters, lone surrogates replaced.

    An object whose ``__str__`` raises (or returns something that is not text) is described by its
    type instead, so a failure message can always be built and serialised to JSON.
    """
    try:
        text = str(value)
    except Exception as exc:  # noqa: BLE001 -- describing a broken object must not raise in turn
        text = f"<{_type_name(value)} whose str() raised {_type_name(exc)}>"
    if len(text) > limit:
        text = text[: max(0, limit - 1)] + "…"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates cannot be written as JSON: U+FFFD instead
        text = _SURROGATE.sub("\ufffd", text)
    return text


def _type_name(value: object) -> str:
    try:
        name = type(value).__name__
    except Exception:  # noqa: BLE001 -- a metaclass may break even this
        return "object"
    return name if isinstance(name, str) else "object"


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

    @classmethod
    def from_error(
        cls, provider: str, error: BaseException, *, elapsed_ms: float = 0.0, leg: str | None = None
    ) -> ProviderFailure:
        """The failure an exception stands for; never raises, whatever the exception carries.

        A well-formed :class:`~simone.runtime.ProviderError` keeps its kind, message, ``retryable``
        and ``retry_after_s``. One with an undocumented kind, a ``retryable`` that is not a bool, a
        ``retry_after_s`` that is not a finite number >= 0 or a message that is not text is recorded
        as kind ``error`` (not retryable) with what was wrong in the message. Any other exception is
        kind ``error`` with its type and text. Messages come from :func:`safe_text`.
        """
        try:
            return cls._from_error(provider, error, elapsed_ms=elapsed_ms, leg=leg)
        except Exception:  # noqa: BLE001 -- e.g. a kind whose __eq__ raises; say so rather than raise
            return cls(
                provider=safe_text(provider, limit=200),
                kind="error",
                message=f"{safe_text(provider, limit=200)} raised an exception that could not be described",
                leg=leg if isinstance(leg, str) else None,
            )

    @classmethod
    def _from_error(
        cls, provider: str, error: BaseException, *, elapsed_ms: float, leg: str | None
    ) -> ProviderFailure:
        name = _type_name(error)
        text = safe_text(error)
        if isinstance(error, ProviderError):
            problems: list[str] = []
            kind = _attribute(error, "kind", problems)
            retryable = _attribute(error, "retryable", problems)
            retry_after_s = _attribute(error, "retry_after_s", problems)
            message = _attribute(error, "message", problems)
            if not (isinstance(kind, str) and kind in FAILURE_KINDS):
                problems.append(f"undocumented failure kind {_safe_repr(kind)}")
            if not isinstance(retryable, bool):
                problems.append(f"retryable is {_type_name(retryable)}, not a bool")
            if retry_after_s is not None and not (
                isinstance(retry_after_s, int | float)
                and not isinstance(retry_after_s, bool)
                and math.isfinite(retry_after_s)
                and retry_after_s >= 0
            ):
                problems.append(f"retry_after_s {_safe_repr(retry_after_s)} is not a number >= 0")
            if not isinstance(message, str):
                problems.append(f"its message is {_type_name(message)}, not text")
            if not problems:
                return cls(
                    provider=provider,
                    kind=kind,
                    message=safe_text(message or text),  # an empty message falls back to str()
                    retryable=retryable,
                    retry_after_s=retry_after_s,
                    leg=leg,
                    elapsed_ms=elapsed_ms,
                )
            text = f"{provider} raised a malformed {name} ({'; '.join(problems)}): {text}"
        else:
            text = f"{provider} raised {name}: {text}"
        return cls(provider=provider, kind="error", message=safe_text(text), leg=leg, elapsed_ms=elapsed_ms)


def _safe_repr(value: object) -> str:
    try:
        return safe_text(repr(value), limit=80)
    except Exception:  # noqa: BLE001 -- repr() of a broken object may raise too
        return f"<{_type_name(value)}>"


def _attribute(error: BaseException, attribute: str, problems: list[str]) -> object:
    try:
        return getattr(error, attribute)
    except Exception as exc:  # noqa: BLE001 -- a broken property is one more problem to report
        problems.append(f"reading {attribute} raised {_type_name(exc)}")
        return None


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
        skipped_legs: legs the provider left out on purpose (leg → why: e.g. its model does not
            cover the question's language). A note, not an impairment: the router records them in
            the trace and the limitations, and the status stays ``complete`` when the other legs
            answered. A leg that was meant to run and could not belongs in ``degraded``.
    """

    evidence: list[Evidence] = Field(default_factory=list)
    degraded: list[str] = Field(default_factory=list)
    leg_failures: list[ProviderFailure] = Field(default_factory=list)
    details: dict[str, JsonValue] = Field(default_factory=dict)
    excluded: list[Exclusion] = Field(default_factory=list)
    skipped_legs: dict[str, str] = Field(default_factory=dict)


class ProviderHits(_Frozen):
    """A provider answered (possibly with nothing relevant); ``skipped_legs`` never impairs it."""

    outcome: Literal["hits"] = "hits"
    provider: str
    kind: ProviderKind
    evidence: list[Evidence] = Field(default_factory=list)
    elapsed_ms: float = 0.0
    degraded: list[str] = Field(default_factory=list)
    leg_failures: list[ProviderFailure] = Field(default_factory=list)
    details: dict[str, JsonValue] = Field(default_factory=dict)
    excluded: list[Exclusion] = Field(default_factory=list)
    skipped_legs: dict[str, str] = Field(default_factory=dict)


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
        rerank: ``True`` asks the router's reranker to reorder the first fused candidates, ``False``
            keeps the fused order; ``None`` follows ``[rerank] by_default``. Without a reranker it is
            ignored (the trace says so).
    """

    query: str
    providers: tuple[str, ...] | None = None
    limit: Annotated[int, Field(ge=1, le=1000)] = 10
    max_tokens: Annotated[int, Field(ge=1)] | None = None
    mode: SearchMode | None = None
    filters: dict[str, FilterValue] = Field(default_factory=dict)
    min_similarity: Annotated[float, Field(ge=-1.0, le=1.0)] | None = None
    rerank: bool | None = None

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
    def create(cls, query: str, *, max_query_chars: int = MAX_QUERY_CHARS, **fields: Any) -> RetrievalRequest:
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
            reasons = describe_validation_error(exc, limit=None, root="request")
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
    unserved: list[ProviderSelection] = Field(default_factory=list)
    """Selection rules that fired but asked nobody: ``provider`` is what the rule selects (a kind or a
    name) that no registered provider the caller may use matched, ``reason`` is the rule's
    (e.g. the web rule for an orchestrator, who delegates instead)."""
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
    """Per-provider timing and counts; ``skipped_legs``: legs it left out on purpose (leg → why)."""

    provider: str
    outcome: Literal["hits", "failure"]
    elapsed_ms: float
    returned: int
    kept: int
    duplicates_within: int
    degraded: list[str] = Field(default_factory=list)
    details: dict[str, JsonValue] = Field(default_factory=dict)
    skipped_legs: dict[str, str] = Field(default_factory=dict)


class RerankMove(_Frozen):
    """One candidate of the rerank stage: its 1-based place in the fused order and after the rerank."""

    id: str
    before: int
    after: int
    score: float | None = None
    """The reranker's score (higher is more relevant); ``None``: the reranker did not score it."""


RerankStatus = Literal["reranked", "kept_fused", "skipped"]
"""``reranked``: the order is the reranker's; ``kept_fused``: it failed, the fused order stands;
``skipped``: it was not asked (not wanted, not configured, fewer than two candidates)."""


class RerankTrace(_Frozen):
    """What the rerank stage did after fusion (see docs/rerank.md).

    Attributes:
        reranker: the reranker's name (``""`` when none is configured).
        status: ``reranked``, ``kept_fused`` (it failed: the failure is in the result) or ``skipped``.
        reason: why, in plain words.
        candidates: how many of the first fused candidates were sent.
        elapsed_ms: the time the stage took.
        moves: each candidate sent, in the final order, with its fused and reranked place.
    """

    reranker: str
    status: RerankStatus
    reason: str = ""
    candidates: int = 0
    elapsed_ms: float = 0.0
    moves: list[RerankMove] = Field(default_factory=list)


class Trace(_Frozen):
    """Where the time went and how the ranking came about (``rerank``: the stage after fusion, if any)."""

    providers: list[ProviderTrace]
    fusion: list[FusedItem]
    rrf_k: int
    weights: dict[str, float]
    total_ms: float
    router_ms: float
    rerank: RerankTrace | None = None


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
