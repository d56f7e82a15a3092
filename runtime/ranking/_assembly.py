"""The router's assembly as pure steps: collect → rank → pack → report.

Each step takes values and returns values (no I/O, no router state), so each is property-tested on its
own (tests/runtime/test_assembly.py). :meth:`Router._assemble <simone.runtime.Router>` chains them and
adds the request summary and the trace. This is the hot path of every request: plain dicts and C-level
sorts inside, models only where the result needs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from simone.runtime._contracts import (
    BudgetReport,
    Contribution,
    Evidence,
    Exclusion,
    FusedItem,
    ProviderFailure,
    ProviderHits,
    ProviderKind,
    ProviderSelection,
    ProviderTrace,
    Status,
)
from simone.runtime.ranking._dedup import DuplicateFinder
from simone.runtime.ranking._fusion import contributions_of, rank_positions, rrf_scores
from simone.runtime.ranking._packing import PackItem, TokenEstimator, pack

Outcome = ProviderHits | ProviderFailure


@dataclass(slots=True)
class Collected:
    """What the providers answered, one copy per id, each provider's ranking free of duplicates."""

    evidence: dict[str, Evidence] = field(default_factory=dict)
    """id → the item (the first provider's copy when two providers return the same id)."""
    rankings: dict[str, list[str]] = field(default_factory=dict)
    """provider → its ids, best first, each once."""
    traces: list[ProviderTrace] = field(default_factory=list)
    failures: list[ProviderFailure] = field(default_factory=list)
    """Provider failures and the leg failures of providers that answered, in outcome order."""
    exclusions: list[Exclusion] = field(default_factory=list)
    """The providers' own exclusions and the duplicates dropped within a provider."""
    returned: int = 0
    """Items the providers returned, duplicates included."""
    duplicates: int = 0
    """Copies dropped so far: within a provider, and an id returned by a second provider."""


@dataclass(slots=True)
class Candidate:
    """An item that survived fusion and duplicate detection, in fused order."""

    evidence: Evidence
    score: float
    """The fused RRF score."""
    rank: int
    """The best (lowest) 1-based rank any provider gave it."""


@dataclass(slots=True)
class Ranked:
    """The fused order cut to the request's limit, with cross-provider duplicates dropped."""

    candidates: list[Candidate] = field(default_factory=list)
    fusion: list[FusedItem] = field(default_factory=list)
    """The trace of each candidate's score: one entry per candidate, same order."""
    beyond_limit: list[str] = field(default_factory=list)
    """Ids not looked at because the limit was reached (fused order)."""
    exclusions: list[Exclusion] = field(default_factory=list)
    """The duplicates dropped, each naming the better copy it repeats."""


@dataclass(slots=True)
class Fitted:
    """The candidates that fit the token budget, as final evidence, and those that did not."""

    evidence: list[Evidence] = field(default_factory=list)
    truncated: int = 0
    exclusions: list[Exclusion] = field(default_factory=list)
    """``over_budget`` exclusions, in fused order."""
    used_tokens: int = 0


@dataclass(slots=True)
class Report:
    """The result's status, budget report and limitations."""

    status: Status
    budget: BudgetReport
    limitations: list[str]


# --- collect ---------------------------------------------------------------------------------------


def collect(outcomes: Sequence[Outcome]) -> Collected:
    """Gather the outcomes: failures, traces, each provider's deduplicated ranking and one copy per id."""
    out = Collected()
    for outcome in outcomes:
        if isinstance(outcome, ProviderFailure):
            out.failures.append(outcome)
            out.traces.append(_failure_trace(outcome))
            continue
        out.failures.extend(outcome.leg_failures)
        out.exclusions.extend(outcome.excluded)
        ranking, fresh, repeated = dedupe_within(outcome.provider, outcome.evidence)
        out.exclusions.extend(repeated)
        out.returned += len(outcome.evidence)
        out.duplicates += len(repeated)
        fresh.update(out.evidence)  # the same id from two providers is one item: the first copy wins
        out.evidence = fresh
        out.rankings[outcome.provider] = ranking
        out.traces.append(_hits_trace(outcome, len(ranking)))
    # an id returned by two providers is one item: count the extra copies as duplicates
    out.duplicates += sum(len(r) for r in out.rankings.values()) - len(out.evidence)
    return out


def dedupe_within(
    provider: str, items: Sequence[Evidence]
) -> tuple[list[str], dict[str, Evidence], list[Exclusion]]:
    """One provider's ranking with one rank per item (by id or digest), its items by id, the repeats."""
    ids = [item.id for item in items]
    digests = [item.digest for item in items]
    if len(set(ids)) == len(ids) and len(set(digests)) == len(digests) and not set(ids) & set(digests):
        return ids, dict(zip(ids, items, strict=True)), []  # the common case: nothing repeated
    seen: set[str] = set()
    ranking: list[str] = []
    fresh: dict[str, Evidence] = {}
    repeated: list[Exclusion] = []
    for item in items:
        if item.id in seen or item.digest in seen:
            repeated.append(
                Exclusion(
                    id=item.id,
                    provider=provider,
                    locator=item.locator,
                    reason="duplicate",
                    detail="repeated within its provider",
                )
            )
            continue
        seen.add(item.id)
        seen.add(item.digest)
        ranking.append(item.id)
        fresh[item.id] = item
    return ranking, fresh, repeated


def _failure_trace(failure: ProviderFailure) -> ProviderTrace:
    return ProviderTrace(
        provider=failure.provider,
        outcome="failure",
        elapsed_ms=failure.elapsed_ms,
        returned=0,
        kept=0,
        duplicates_within=0,
    )


def _hits_trace(hits: ProviderHits, kept: int) -> ProviderTrace:
    return ProviderTrace(
        provider=hits.provider,
        outcome="hits",
        elapsed_ms=hits.elapsed_ms,
        returned=len(hits.evidence),
        kept=kept,
        duplicates_within=len(hits.evidence) - kept,
        degraded=list(hits.degraded),
        details=dict(hits.details),
        skipped_legs=dict(hits.skipped_legs),
    )


# --- rank ------------------------------------------------------------------------------------------


def rank(
    evidence: Mapping[str, Evidence],
    rankings: Mapping[str, Sequence[str]],
    *,
    limit: int,
    k: int,
    weights: Mapping[str, float],
) -> Ranked:
    """Fuse the rankings by weighted RRF and walk the fused order until ``limit`` candidates are kept.

    The order is score descending, ties by id. An item that duplicates one kept before it (same
    digest, same normalised URL or near-duplicate text) is dropped, so the best-scored copy stays.
    """
    scores = rrf_scores(rankings, k=k, weights=weights)
    positions = rank_positions(rankings)
    order = sorted(sorted(scores), key=scores.__getitem__, reverse=True)
    finder = DuplicateFinder()
    out = Ranked()
    position = 0
    while position < len(order) and len(out.candidates) < limit:
        item = evidence[order[position]]
        position += 1
        # a document chunk's URL locator ([index] locator_base) cites it; it does not identify it
        by_url = item.provider is not ProviderKind.DOCUMENT_INDEX
        duplicate = finder.check(item.id, item.digest, item.locator, item.content, by_url=by_url)
        if duplicate is not None:
            kept_id, why = duplicate
            out.exclusions.append(
                Exclusion(
                    id=item.id,
                    provider=item.provider_name,
                    locator=item.locator,
                    reason="duplicate",
                    detail=f"{why} as {kept_id[:12]}",
                )
            )
            continue
        score = scores[item.id]
        parts = contributions_of(item.id, positions, k=k, weights=weights)
        out.candidates.append(Candidate(item, score, min(r for _, r, _ in parts)))
        out.fusion.append(
            FusedItem(
                id=item.id,
                fused_score=score,
                contributions=[Contribution(provider=n, rank=r, contribution=c) for n, r, c in parts],
            )
        )
    out.beyond_limit = order[position:]
    return out


# --- pack ------------------------------------------------------------------------------------------


def pack_candidates(
    candidates: Sequence[Candidate],
    max_tokens: int,
    estimator: TokenEstimator,
    *,
    min_truncation_tokens: int,
) -> Fitted:
    """Pack the candidates in fused order into ``max_tokens`` (see :func:`~simone.runtime.ranking.pack`).

    Kept items get their fused score and rank; a truncated one its cut text and ``truncated``,
    ``original_tokens`` and ``tokens`` in its metadata. The rest are ``over_budget`` exclusions.
    """
    packed = pack(
        [
            PackItem(c.evidence.id, c.evidence.content, c.evidence.provider_name, c.evidence.locator)
            for c in candidates
        ],
        max_tokens,
        estimator,
        min_truncation_tokens=min_truncation_tokens,
    )
    out = Fitted(used_tokens=packed.used_tokens)
    for index, text, cut, tokens in packed.kept:
        candidate = candidates[index]
        item = candidate.evidence
        update: dict[str, object] = {"fused_score": candidate.score, "rank": candidate.rank}
        if cut:
            out.truncated += 1
            update["content"] = text
            update["metadata"] = {
                **item.metadata,
                "truncated": True,
                "original_tokens": estimator.count(item.content),
                "tokens": tokens,
            }
        out.evidence.append(item.model_copy(update=update))
    for index, tokens in packed.over_budget:
        item = candidates[index].evidence
        out.exclusions.append(
            Exclusion(
                id=item.id,
                provider=item.provider_name,
                locator=item.locator,
                reason="over_budget",
                tokens=tokens,
                detail=f"needs {tokens} tokens; the budget is {max_tokens}",
            )
        )
    return out


# --- report ----------------------------------------------------------------------------------------


def report(
    outcomes: Sequence[Outcome],
    collected: Collected,
    ranked: Ranked,
    fitted: Fitted,
    *,
    max_tokens: int,
    estimator_label: str,
    dropped: Sequence[ProviderSelection] = (),
) -> Report:
    """The budget report (every returned item accounted for), the status and the limitations.

    ``dropped``: providers the selection policy left out; they decide the status when no provider
    was asked (``outcomes`` is empty).
    """
    truncated = fitted.truncated
    omitted = len(fitted.exclusions) + len(ranked.beyond_limit)
    duplicates = collected.duplicates + len(ranked.exclusions)
    budget = BudgetReport(
        max_tokens=max_tokens,
        used_tokens=fitted.used_tokens,
        included=len(fitted.evidence) - truncated,
        truncated=truncated,
        omitted=omitted,
        duplicates_dropped=duplicates,
        estimator=estimator_label,
        exclusions=[*collected.exclusions, *ranked.exclusions, *fitted.exclusions],
        beyond_limit=ranked.beyond_limit,
    )
    if budget.included + truncated + omitted + duplicates != collected.returned:  # pragma: no cover
        raise AssertionError("packing lost track of an item; please report this as a bug")
    status = result_status(outcomes, len(collected.evidence), len(fitted.evidence), dropped)
    return Report(status, budget, limitations(outcomes, collected.failures, status, budget, fitted.evidence))


def compute_status(outcomes: Sequence[Outcome], found: int) -> Status:
    """The status of a result from its outcomes and the number of distinct items found.

    * every provider failed → ``forbidden`` when every failure is ``forbidden``, else ``failed``;
    * items found → ``complete`` if no provider failed or was degraded, else ``partial``;
    * nothing found → ``no_results`` if every provider answered fully; if one failed or was
      degraded the search was incomplete, so it is ``failed`` (never reported as "nothing found").

    A leg a provider skipped on purpose (``skipped_legs``: its model does not cover the question) is
    a note, not an impairment: it changes neither case.
    """
    if not outcomes:
        return Status.FAILED
    failures = [o for o in outcomes if isinstance(o, ProviderFailure)]
    if len(failures) == len(outcomes):
        return Status.FORBIDDEN if all(f.kind == "forbidden" for f in failures) else Status.FAILED
    impaired = bool(failures) or any(isinstance(o, ProviderHits) and o.degraded for o in outcomes)
    if found:
        return Status.PARTIAL if impaired else Status.COMPLETE
    return Status.FAILED if impaired else Status.NO_RESULTS


def result_status(
    outcomes: Sequence[Outcome], found: int, packed: int, dropped: Sequence[ProviderSelection] = ()
) -> Status:
    """:func:`compute_status`, refined by what was packed and by what the selection dropped.

    Evidence found but none of it packed is ``partial``. When no provider was asked because the
    selection dropped every one, the result is ``forbidden`` if each was dropped for a ``forbidden``
    reason, else ``no_results``.
    """
    status = compute_status(outcomes, found)
    if status in (Status.COMPLETE, Status.PARTIAL) and not packed:
        status = Status.PARTIAL
    if not outcomes and dropped:
        status = Status.FORBIDDEN if all("forbidden" in d.reason for d in dropped) else Status.NO_RESULTS
    return status


def limitations(
    outcomes: Sequence[Outcome],
    failures: Sequence[ProviderFailure],
    status: Status,
    budget: BudgetReport,
    evidence: Sequence[Evidence],
) -> list[str]:
    """What the caller should know the result is missing: failures, degradations, budget cuts.

    Legs a provider skipped on purpose are listed too, as notes: they never change the status.
    """
    notes: list[str] = []
    for failure in failures:
        where = f"{failure.provider} ({failure.leg})" if failure.leg else failure.provider
        notes.append(f"{where} failed ({failure.kind}): {failure.message}")
    for outcome in outcomes:
        if isinstance(outcome, ProviderHits):
            notes.extend(f"{outcome.provider} was degraded: {reason}" for reason in outcome.degraded)
            notes.extend(
                f"{outcome.provider} skipped its {leg} leg on purpose: {reason}"
                for leg, reason in outcome.skipped_legs.items()
            )
    if budget.truncated:
        notes.append(
            f"{budget.truncated} item(s) were truncated to fit the budget of {budget.max_tokens} tokens"
        )
    over = sum(1 for e in budget.exclusions if e.reason == "over_budget")
    if over:
        notes.append(f"{over} item(s) did not fit the budget of {budget.max_tokens} tokens and were left out")
    if status in (Status.COMPLETE, Status.PARTIAL) and not evidence:
        notes.append("evidence was found but none of it fit the token budget")
    return notes
