"""Legs: the ranked-candidate sources inside one provider, run together and fused.

A provider with several ways to search (BM25, one semantic leg per embedding space, …) is *legs plus
a row reader*: each :class:`Leg` ranks candidates for the request, :func:`run_legs` runs them in one
anyio task group and records a leg that raises as a :class:`~simone.runtime.ProviderFailure` value
(cancellation is never swallowed), and :func:`fuse_legs` fuses the rankings with a pluggable
:class:`FusionRule` — :class:`PlainRRF`, :class:`WeightedRRF` (each leg weighted by its confidence)
or :class:`Pinned` (one item kept first) — into one order the provider then reads rows for.

Fusion rules of :func:`fuse_legs`: each leg is first reduced to the first copy of each id (a copy must
not vote twice); legs without candidates do not take part; a single answering leg keeps its own order
and scores (method: the leg's name); two or more are fused by the rule (method ``hybrid``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

import anyio
from simone.runtime._contracts import ProviderFailure, RetrievalRequest, TrustedContext
from simone.runtime._errors import (
    AccessDenied,
    InvalidResponse,
    ProviderError,
    ProviderNotConfigured,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)
from simone.runtime.ranking._fusion import RRF_K, confidence_weights, rrf_scores

HitT = TypeVar("HitT")
HitT_co = TypeVar("HitT_co", covariant=True)

HYBRID = "hybrid"
"""The method of a ranking fused from two or more legs."""


def seconds_left(context: TrustedContext) -> float | None:
    """Seconds before the tighter of the context's deadline and the enclosing cancel scope's.

    ``None`` when neither has one. The router runs a provider under ``anyio.fail_after``; reading
    that deadline lets a provider cut optional work short *before* the router cancels it and every
    result is lost.
    """
    left = context.remaining_s()
    scope = anyio.current_effective_deadline() - anyio.current_time()
    if math.isfinite(scope):
        left = max(0.0, scope) if left is None else min(left, max(0.0, scope))
    return left


class Leg(Protocol[HitT_co]):
    """A named source of ranked candidates, run for one request within one trusted context."""

    @property
    def name(self) -> str:
        """The leg's name (``lexical``, ``semantic``, ``semantic:<provider>``…), unique in a provider."""
        ...

    async def search(self, request: RetrievalRequest, context: TrustedContext) -> Sequence[HitT_co]:
        """The candidates, best first; raising makes the leg a failure, never the provider's."""
        ...


@dataclass(frozen=True, slots=True)
class FunctionLeg(Generic[HitT]):
    """A :class:`Leg` from a name and an async function of the request and the context."""

    name: str
    run: Callable[[RetrievalRequest, TrustedContext], Awaitable[Sequence[HitT]]]

    async def search(self, request: RetrievalRequest, context: TrustedContext) -> Sequence[HitT]:
        """Run the function."""
        return await self.run(request, context)


@dataclass(slots=True)
class LegResults(Generic[HitT]):
    """What the legs of one request gave: hits of the legs that answered, failures of the others.

    Attributes:
        hits: leg name → its candidates, in the order the legs were given (not the order they ended).
        failures: one :class:`~simone.runtime.ProviderFailure` per leg that raised, in leg order.
        errors: leg name → the exception it raised (for a provider that must re-raise it).
        elapsed_ms: leg name → milliseconds the leg ran.
    """

    hits: dict[str, list[HitT]] = field(default_factory=dict)
    failures: list[ProviderFailure] = field(default_factory=list)
    errors: dict[str, Exception] = field(default_factory=dict)
    elapsed_ms: dict[str, float] = field(default_factory=dict)

    def failed(self, leg: str) -> bool:
        """Whether ``leg`` ran and raised."""
        return leg in self.errors


async def run_legs(
    legs: Sequence[Leg[HitT]],
    request: RetrievalRequest,
    context: TrustedContext,
    *,
    provider: str,
    into: LegResults[HitT] | None = None,
) -> LegResults[HitT]:
    """Run ``legs`` concurrently in one task group; a leg that raises is a failure value.

    Args:
        legs: the legs to run (names unique).
        request: the request every leg serves.
        context: the trusted context every leg runs in.
        provider: the provider name on the failures.
        into: results of legs run before (a fallback leg run after the others); added to in place.

    Returns:
        ``into`` (or new results) with every leg's hits or failure, in the order of ``legs``.
    """
    results: LegResults[HitT] = into if into is not None else LegResults()
    hits: dict[str, list[HitT]] = {}
    errors: dict[str, tuple[Exception, float]] = {}

    async def one(leg: Leg[HitT]) -> None:
        started = time.perf_counter()
        try:
            hits[leg.name] = list(await leg.search(request, context))
        except Exception as exc:  # noqa: BLE001 - any leg error is that leg's failure; cancellation is not caught
            errors[leg.name] = (exc, started)
        finally:
            results.elapsed_ms[leg.name] = (time.perf_counter() - started) * 1000

    async with anyio.create_task_group() as group:
        for leg in legs:
            group.start_soon(one, leg)
    for leg in legs:
        if leg.name in hits:
            results.hits[leg.name] = hits[leg.name]
        elif leg.name in errors:
            exc, _ = errors[leg.name]
            results.errors[leg.name] = exc
            results.failures.append(
                ProviderFailure.from_error(
                    provider, exc, elapsed_ms=results.elapsed_ms[leg.name], leg=leg.name
                )
            )
    return results


_ERROR_TYPES: dict[str, type[ProviderError]] = {
    "timeout": ProviderTimeout,
    "unavailable": ProviderUnavailable,
    "not_configured": ProviderNotConfigured,
    "rate_limited": RateLimited,
    "forbidden": AccessDenied,
    "invalid_response": InvalidResponse,
}


def error_for_failure(
    failure: ProviderFailure,
    message: str,
    *,
    provider: str,
    default: type[ProviderError] = ProviderError,
    kinds: Sequence[str] | None = None,
    retryable: bool | None = None,
) -> ProviderError:
    """The error a provider raises when no leg answered: the class of ``failure``'s kind.

    Args:
        failure: the failure that stands for all of them (its retry hints are kept).
        message: the error's message.
        provider: the provider name on the error.
        default: the class for a kind not mapped (or not in ``kinds``).
        kinds: only these kinds get their own class (default: every documented kind).
        retryable: whether trying again may help (default: ``failure``'s).
    """
    mapped = _ERROR_TYPES.get(failure.kind) if kinds is None or failure.kind in kinds else None
    return (mapped or default)(
        message,
        provider=provider,
        retryable=failure.retryable if retryable is None else retryable,
        retry_after_s=failure.retry_after_s,
    )


# -- fusion -----------------------------------------------------------------------------------------


class FusionRule(Protocol):
    """How two or more legs' rankings (leg → ids, best first, no duplicates) become one order."""

    def fuse(self, rankings: Mapping[str, Sequence[str]]) -> list[tuple[str, float]]:
        """``(id, fused score)`` pairs, best first."""
        ...


@dataclass(frozen=True, slots=True)
class PlainRRF:
    """Reciprocal rank fusion with equal weights: score(d) = Σ 1/(k + rank)."""

    k: int = RRF_K

    def fuse(self, rankings: Mapping[str, Sequence[str]]) -> list[tuple[str, float]]:
        """RRF, ties by id."""
        return _rrf_order(rankings, k=self.k)


@dataclass(frozen=True, slots=True)
class WeightedRRF:
    """Reciprocal rank fusion with a weight per leg (a leg without one weighs 1).

    Build it from each leg's confidence with :meth:`from_confidence` (see
    :func:`~simone.runtime.ranking.confidence_weights`).
    """

    weights: Mapping[str, float]
    k: int = RRF_K

    @classmethod
    def from_confidence(
        cls, log_odds: Mapping[str, float], *, sharpness: float, k: int = RRF_K
    ) -> WeightedRRF:
        """Weights ``exp(sharpness × (z − max z))`` from each leg's log-odds of being right."""
        return cls(confidence_weights(log_odds, sharpness=sharpness), k)

    def fuse(self, rankings: Mapping[str, Sequence[str]]) -> list[tuple[str, float]]:
        """Weighted RRF, ties by id."""
        return _rrf_order(rankings, k=self.k, weights=self.weights)


@dataclass(frozen=True, slots=True)
class Pinned:
    """Another rule's order with one id kept first (tied with the fused head); ``None`` pins nothing.

    RRF's head is flat (k = 60: rank 1 and rank 2 differ by 1.6 % of a vote), so a candidate that two
    legs rank second can overtake one a sure leg ranks first; pinning keeps the sure leg's best first.
    """

    inner: FusionRule
    pinned: str | None

    def fuse(self, rankings: Mapping[str, Sequence[str]]) -> list[tuple[str, float]]:
        """The inner order, the pinned id moved to the front with the head's score."""
        order = self.inner.fuse(rankings)
        if self.pinned is not None and order and order[0][0] != self.pinned:
            order = [(self.pinned, order[0][1])] + [item for item in order if item[0] != self.pinned]
        return order


FUSION_HEAD = 10
"""How many fused items :class:`HeadThenConsensus` takes from the confidence-weighted order."""


@dataclass(frozen=True, slots=True)
class HeadThenConsensus:
    """The head from another rule (the confidence-weighted order), the tail by plain RRF.

    Confidence weights decide which leg's best candidates come first, and they are steep: a leg
    whose best does not stand out weighs a few percent, so each of its candidates lands behind every
    candidate of the sure leg — on SciFact the whole semantic leg fell below the lexical leg's 100th
    hit, and recall@100 below a plain RRF of the same legs. Beyond the first ``head`` items no leg is
    buried: the rest follow consensus (plain RRF), which is what recall needs. Fused scores never rise
    down the list (a tail item's score is capped at the one before it).

    Args:
        inner: the head's rule (e.g. :class:`Pinned` over :class:`WeightedRRF`).
        head: how many items ``inner`` decides (:data:`FUSION_HEAD`).
        k: the tail's RRF constant.
    """

    inner: FusionRule
    head: int = FUSION_HEAD
    k: int = RRF_K

    def __post_init__(self) -> None:
        if self.head < 0:
            raise ValueError(f"the head must be >= 0, got {self.head}")

    def fuse(self, rankings: Mapping[str, Sequence[str]]) -> list[tuple[str, float]]:
        """``inner``'s first ``head`` items, then the others in plain RRF order."""
        order = self.inner.fuse(rankings)
        first = order[: self.head]
        if len(first) == len(order):
            return order
        taken = {item_id for item_id, _ in first}
        out = list(first)
        last = first[-1][1] if first else math.inf
        for item_id, score in _rrf_order(rankings, k=self.k):
            if item_id not in taken:
                last = min(last, score)
                out.append((item_id, last))
        return out


@dataclass(frozen=True, slots=True)
class LegRank:
    """One candidate in fused order: its fused score and each leg's rank and score for it."""

    id: str
    score: float
    ranks: dict[str, int]
    scores: dict[str, float]


@dataclass(frozen=True, slots=True)
class FusedLegs:
    """The fused order of a provider's legs and the method it came from (a leg's name or ``hybrid``)."""

    method: str
    items: list[LegRank]


def first_of_each(hits: Sequence[HitT], key: Callable[[HitT], str]) -> list[HitT]:
    """``hits`` in order, each id once (its best-ranked copy)."""
    unique: dict[str, HitT] = {}
    for hit in hits:
        unique.setdefault(key(hit), hit)
    return list(unique.values())


def fuse_legs(
    rankings: Mapping[str, Sequence[tuple[str, float]]], rule: FusionRule | None = None
) -> FusedLegs:
    """Fuse legs' ``(id, score)`` rankings (best first) into one order; see the module's rules.

    Args:
        rankings: leg name → its candidates; the first leg names the method when none answered.
        rule: how two or more answering legs fuse (default :class:`PlainRRF`).
    """
    legs = {leg: first_of_each(pairs, _id) for leg, pairs in rankings.items()}
    ranks: dict[str, dict[str, int]] = {}
    scores: dict[str, dict[str, float]] = {}
    for leg, pairs in legs.items():
        for rank, (item_id, score) in enumerate(pairs, start=1):
            scores.setdefault(item_id, {})[leg] = score
            ranks.setdefault(item_id, {})[leg] = rank
    fusing = {leg: pairs for leg, pairs in legs.items() if pairs}
    if not fusing:
        return FusedLegs(next(iter(legs), HYBRID), [])
    if len(fusing) == 1:
        ((method, order),) = fusing.items()
    else:
        method = HYBRID
        order = (rule or PlainRRF()).fuse(
            {leg: [item_id for item_id, _ in pairs] for leg, pairs in fusing.items()}
        )
    return FusedLegs(method, [LegRank(i, s, ranks[i], scores[i]) for i, s in order])


def _rrf_order(
    rankings: Mapping[str, Sequence[str]], *, k: int, weights: Mapping[str, float] | None = None
) -> list[tuple[str, float]]:
    """RRF's order and scores (ties by id), without the per-item contributions ``rrf`` also builds.

    :func:`fuse_legs` keeps each leg's rank itself; building contributions for every candidate only
    to drop them cost ~0.4 ms a hybrid query.
    """
    scores = rrf_scores(rankings, k=k, weights=weights)
    return [
        (item_id, scores[item_id]) for item_id in sorted(sorted(scores), key=scores.__getitem__, reverse=True)
    ]


def _id(pair: tuple[str, float]) -> str:
    return pair[0]
