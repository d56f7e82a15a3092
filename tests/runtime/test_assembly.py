"""Properties of the router's pure assembly steps: collect → rank → pack → report."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings, strategies as st
from simone.runtime import (
    Evidence,
    Exclusion,
    ProviderFailure,
    ProviderHits,
    ProviderKind,
    ProviderSelection,
    Status,
)
from simone.runtime.ranking import CharEstimator
from simone.runtime.ranking._assembly import (
    Candidate,
    Collected,
    Fitted,
    Outcome,
    Ranked,
    Report,
    collect,
    compute_status,
    dedupe_within,
    limitations,
    pack_candidates,
    rank,
    report,
    result_status,
)
from simone.runtime.ranking._dedup import is_url, normalize_url

EST = CharEstimator()
K = 60
FAILURE_KINDS = ["forbidden", "timeout", "unavailable", "error"]

# Small pools, so the same passage, id, digest or page turns up in several places.
TEXTS = [
    "alpha beta gamma",
    "delta epsilon. zeta eta. theta iota.",
    "shared passage",
    "x" * 300,
    "y" * 900,
    "one two three four five six seven eight nine ten eleven",
    "one two three four five six seven eight nine ten twelve",  # a near-duplicate of the one above
    "Sentence one is here. Sentence two is longer than one. " * 8,
]
LOCATORS = ["doc#1", "doc#2", "https://www.example.com/a?utm_source=x", "https://example.com/a", "note:7"]

evidence_items = st.builds(
    lambda text, locator, score, kind: Evidence.create(
        provider=kind, provider_name="any", locator=locator, content=text, score=score
    ),
    st.sampled_from(TEXTS),
    st.sampled_from(LOCATORS),
    st.floats(-5, 5),
    st.sampled_from([ProviderKind.CUSTOM, ProviderKind.WEB_SEARCH]),
)


@st.composite
def outcomes_of(draw: st.DrawFn, names: list[str]) -> list[Outcome]:
    out: list[Outcome] = []
    for name in names:
        if draw(st.integers(0, 4)) == 0:
            kind = draw(st.sampled_from(FAILURE_KINDS))
            out.append(ProviderFailure(provider=name, kind=kind, message="down", elapsed_ms=1.0))
            continue
        items = [
            e.model_copy(update={"provider_name": name}) for e in draw(st.lists(evidence_items, max_size=8))
        ]
        leg = ProviderFailure(provider=name, kind="timeout", leg="semantic", message="slow leg")
        irrelevant = Exclusion(id="z", provider=name, locator="doc#9", reason="not_relevant")
        out.append(
            ProviderHits(
                provider=name,
                kind=ProviderKind.CUSTOM,
                evidence=items,
                degraded=draw(st.lists(st.sampled_from(["lexical only", "stale index"]), max_size=1)),
                leg_failures=draw(st.lists(st.just(leg), max_size=1)),
                excluded=draw(st.lists(st.just(irrelevant), max_size=1)),
            )
        )
    return out


outcome_lists = st.integers(0, 4).flatmap(lambda n: outcomes_of([f"p{i}" for i in range(n)]))
weight_maps = st.dictionaries(st.sampled_from(["p0", "p1", "p2", "p3"]), st.floats(0, 3), max_size=3)
dropped_lists = st.lists(
    st.builds(
        lambda reason: ProviderSelection(provider="web", reason=reason),
        st.sampled_from(["forbidden for this caller", "not needed for this question"]),
    ),
    max_size=2,
)
PROPERTY = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def hits_of(outcomes: list[Outcome]) -> list[ProviderHits]:
    return [o for o in outcomes if isinstance(o, ProviderHits)]


def oracle_scores(collected: Collected, weights: dict[str, float]) -> dict[str, float]:
    """Σ w_p / (k + rank_p), summed in provider-name order, written out independently of fusion."""
    scores: dict[str, float] = {}
    for name in sorted(collected.rankings):
        for position, item_id in enumerate(collected.rankings[name], start=1):
            scores[item_id] = scores.get(item_id, 0.0) + weights.get(name, 1.0) / (K + position)
    return scores


def run_steps(
    outcomes: list[Outcome],
    weights: dict[str, float],
    limit: int,
    budget: int,
    room: int = 32,
    dropped: list[ProviderSelection] | None = None,
) -> tuple[Collected, Ranked, Fitted, Report]:
    collected = collect(outcomes)
    ranked = rank(collected.evidence, collected.rankings, limit=limit, k=K, weights=weights)
    fitted = pack_candidates(ranked.candidates, budget, EST, min_truncation_tokens=room)
    summary = report(
        outcomes,
        collected,
        ranked,
        fitted,
        max_tokens=budget,
        estimator_label=EST.label,
        dropped=dropped or [],
    )
    return collected, ranked, fitted, summary


# --- collect ---------------------------------------------------------------------------------------


@PROPERTY
@given(outcome_lists)
def test_collect_counts_every_returned_item_once(outcomes: list[Outcome]) -> None:
    collected = collect(outcomes)
    hits = hits_of(outcomes)
    assert collected.returned == sum(len(h.evidence) for h in hits)
    # every item returned is either the one copy of its id, or a counted duplicate
    assert collected.returned == len(collected.evidence) + collected.duplicates
    assert list(collected.rankings) == [h.provider for h in hits]
    assert set(collected.evidence) == {i for r in collected.rankings.values() for i in r}
    assert [t.provider for t in collected.traces] == [o.provider for o in outcomes]


@PROPERTY
@given(outcome_lists)
def test_collect_rankings_hold_each_item_once_in_the_providers_order(outcomes: list[Outcome]) -> None:
    collected = collect(outcomes)
    for hits, trace in zip(
        hits_of(outcomes), [t for t in collected.traces if t.outcome == "hits"], strict=True
    ):
        ranking = collected.rankings[hits.provider]
        by_id = {e.id: e for e in hits.evidence}
        keys = [k for i in ranking for k in (i, by_id[i].digest)]
        assert len(keys) == len(set(keys))  # no id or digest twice in one ranking
        first_index: dict[str, int] = {}
        for n, item in enumerate(hits.evidence):
            first_index.setdefault(item.id, n)
        places = [first_index[i] for i in ranking]
        assert places == sorted(places)  # the provider's own order: ranks 1..n follow it
        assert (trace.returned, trace.kept) == (len(hits.evidence), len(ranking))
        assert trace.duplicates_within == trace.returned - trace.kept


@PROPERTY
@given(outcome_lists)
def test_collect_keeps_the_first_providers_copy_of_an_id(outcomes: list[Outcome]) -> None:
    collected = collect(outcomes)
    for item_id, kept in collected.evidence.items():
        first = next(
            e
            for h in hits_of(outcomes)
            if item_id in collected.rankings[h.provider]
            for e in h.evidence
            if e.id == item_id
        )
        assert kept is first


@PROPERTY
@given(outcome_lists)
def test_collect_lists_failures_and_exclusions_in_outcome_order(outcomes: list[Outcome]) -> None:
    collected = collect(outcomes)
    expected: list[ProviderFailure] = []
    for outcome in outcomes:
        expected.extend([outcome] if isinstance(outcome, ProviderFailure) else outcome.leg_failures)
    assert collected.failures == expected
    repeats = [e for e in collected.exclusions if e.detail == "repeated within its provider"]
    within = sum(len(h.evidence) - len(collected.rankings[h.provider]) for h in hits_of(outcomes))
    assert len(repeats) == within
    assert len(collected.exclusions) == within + sum(len(h.excluded) for h in hits_of(outcomes))


@given(st.lists(evidence_items, max_size=10))
def test_dedupe_within_keeps_the_first_of_each_id_or_digest(items: list[Evidence]) -> None:
    ranking, fresh, repeated = dedupe_within("p", items)
    assert list(fresh) == ranking
    assert len(ranking) + len(repeated) == len(items)
    seen: set[str] = set()
    for item in items:
        if item.id in seen or item.digest in seen:
            continue
        seen |= {item.id, item.digest}
        assert fresh[item.id] is item
    assert all(e.reason == "duplicate" and e.provider == "p" for e in repeated)


# --- rank ------------------------------------------------------------------------------------------


@PROPERTY
@given(outcome_lists, weight_maps, st.integers(1, 12))
def test_rank_partitions_the_items_within_the_limit(
    outcomes: list[Outcome], weights: dict[str, float], limit: int
) -> None:
    collected = collect(outcomes)
    ranked = rank(collected.evidence, collected.rankings, limit=limit, k=K, weights=weights)
    kept = [c.evidence.id for c in ranked.candidates]
    dropped = [e.id for e in ranked.exclusions]
    assert len(kept) <= limit
    assert sorted(kept + dropped + ranked.beyond_limit) == sorted(collected.evidence)
    assert [f.id for f in ranked.fusion] == kept
    if ranked.beyond_limit:
        assert len(kept) == limit


@PROPERTY
@given(outcome_lists, weight_maps, st.integers(1, 12))
def test_rank_orders_by_weighted_rrf_with_ranks_one_to_n(
    outcomes: list[Outcome], weights: dict[str, float], limit: int
) -> None:
    collected = collect(outcomes)
    ranked = rank(collected.evidence, collected.rankings, limit=limit, k=K, weights=weights)
    scores = oracle_scores(collected, weights)
    keys = [(-c.score, c.evidence.id) for c in ranked.candidates]
    assert keys == sorted(keys)  # score descending, ties by id
    for candidate, fused in zip(ranked.candidates, ranked.fusion, strict=True):
        assert math.isclose(candidate.score, scores[candidate.evidence.id], rel_tol=1e-12, abs_tol=1e-15)
        assert fused.fused_score == candidate.score
        assert math.isclose(sum(c.contribution for c in fused.contributions), candidate.score, abs_tol=1e-12)
        for part in fused.contributions:  # each provider's ranks are 1..n, its own order
            assert collected.rankings[part.provider][part.rank - 1] == candidate.evidence.id
        assert candidate.rank == min(p.rank for p in fused.contributions)
        assert [p.provider for p in fused.contributions] == sorted(
            n for n, r in collected.rankings.items() if candidate.evidence.id in r
        )


def page(item: Evidence) -> str | None:
    return normalize_url(item.locator) if is_url(item.locator) else None


@PROPERTY
@given(outcome_lists, weight_maps, st.integers(1, 12))
def test_rank_dedup_keeps_the_best_copy(
    outcomes: list[Outcome], weights: dict[str, float], limit: int
) -> None:
    collected = collect(outcomes)
    ranked = rank(collected.evidence, collected.rankings, limit=limit, k=K, weights=weights)
    scores = oracle_scores(collected, weights)
    digests = [c.evidence.digest for c in ranked.candidates]
    pages = [p for c in ranked.candidates if (p := page(c.evidence)) is not None]
    assert len(set(digests)) == len(digests)
    assert len(set(pages)) == len(pages)
    for exclusion in ranked.exclusions:
        assert exclusion.reason == "duplicate"
        kept_prefix = exclusion.detail.rsplit(" as ", 1)[1]
        kept = [c for c in ranked.candidates if c.evidence.id.startswith(kept_prefix)]
        assert kept, exclusion
        best = kept[0]
        assert (-best.score, best.evidence.id) < (-scores[exclusion.id], exclusion.id)
        copy = collected.evidence[exclusion.id]
        if exclusion.detail.startswith("same content digest"):
            assert best.evidence.digest == copy.digest
        elif exclusion.detail.startswith("same normalised URL"):
            assert page(best.evidence) == page(copy)


# --- pack ------------------------------------------------------------------------------------------

candidate_lists = st.lists(
    st.builds(Candidate, evidence_items, st.floats(0, 1), st.integers(1, 50)),
    max_size=10,
    unique_by=lambda c: c.evidence.id,
)


@PROPERTY
@given(candidate_lists, st.integers(1, 800), st.integers(1, 64))
def test_packing_never_exceeds_the_budget_and_keeps_fused_order(
    candidates: list[Candidate], budget: int, room: int
) -> None:
    fitted = pack_candidates(candidates, budget, EST, min_truncation_tokens=room)
    assert fitted.used_tokens <= budget
    assert fitted.used_tokens == sum(EST.count(e.content) for e in fitted.evidence)
    kept = [e.id for e in fitted.evidence]
    left_out = [e.id for e in fitted.exclusions]
    order = [c.evidence.id for c in candidates]
    assert sorted(kept + left_out) == sorted(order)  # every candidate kept or left out, once
    assert kept == [i for i in order if i in set(kept)]
    assert left_out == [i for i in order if i in set(left_out)]
    assert all(e.reason == "over_budget" for e in fitted.exclusions)


@PROPERTY
@given(candidate_lists, st.integers(1, 800), st.integers(1, 64))
def test_packed_evidence_carries_its_fused_score_rank_and_truncation(
    candidates: list[Candidate], budget: int, room: int
) -> None:
    fitted = pack_candidates(candidates, budget, EST, min_truncation_tokens=room)
    source = {c.evidence.id: c for c in candidates}
    truncated = 0
    for item in fitted.evidence:
        origin = source[item.id]
        assert (item.fused_score, item.rank) == (origin.score, origin.rank)
        if item.metadata.get("truncated"):
            truncated += 1
            assert item.metadata["original_tokens"] == EST.count(origin.evidence.content)
            assert item.metadata["tokens"] == EST.count(item.content)
            assert origin.evidence.content.startswith(item.content.removesuffix(" …"))
        else:
            assert item == origin.evidence.model_copy(
                update={"fused_score": origin.score, "rank": origin.rank}
            )
    assert truncated == fitted.truncated <= 1
    for exclusion in fitted.exclusions:
        assert (
            exclusion.tokens == EST.count(source[exclusion.id].evidence.content) > budget - fitted.used_tokens
        )


# --- report ----------------------------------------------------------------------------------------


@PROPERTY
@given(outcome_lists, weight_maps, st.integers(1, 12), st.integers(1, 600), st.integers(1, 64))
def test_the_budget_report_accounts_for_every_returned_item(
    outcomes: list[Outcome], weights: dict[str, float], limit: int, budget: int, room: int
) -> None:
    collected, ranked, fitted, summary = run_steps(outcomes, weights, limit, budget, room)
    b = summary.budget
    assert b.included + b.truncated + b.omitted + b.duplicates_dropped == collected.returned
    assert b.used_tokens <= b.max_tokens == budget
    assert b.included + b.truncated == len(fitted.evidence)
    assert b.exclusions == collected.exclusions + ranked.exclusions + fitted.exclusions
    assert b.beyond_limit == ranked.beyond_limit
    assert b.omitted == len(fitted.exclusions) + len(ranked.beyond_limit)
    assert b.estimator == EST.label


def oracle_status(
    outcomes: list[Outcome], found: int, packed: int, dropped: list[ProviderSelection]
) -> Status:
    """README "Decisions", written out from the prose."""
    if not outcomes:
        if not dropped:
            return Status.FAILED
        return Status.FORBIDDEN if all("forbidden" in d.reason for d in dropped) else Status.NO_RESULTS
    failed = [o for o in outcomes if isinstance(o, ProviderFailure)]
    if len(failed) == len(outcomes):
        return Status.FORBIDDEN if all(f.kind == "forbidden" for f in failed) else Status.FAILED
    impaired = bool(failed) or any(h.degraded for h in hits_of(outcomes))
    if found:  # found but nothing fits the budget is partial, never complete
        return Status.COMPLETE if packed and not impaired else Status.PARTIAL
    return Status.FAILED if impaired else Status.NO_RESULTS  # an incomplete search never says "nothing"


@PROPERTY
@given(outcome_lists, st.integers(0, 5), st.integers(0, 5), dropped_lists)
def test_status_follows_the_decisions(
    outcomes: list[Outcome], found: int, packed: int, dropped: list[ProviderSelection]
) -> None:
    packed = min(packed, found)
    status = result_status(outcomes, found, packed, dropped)
    assert status is oracle_status(outcomes, found, packed, dropped)
    if outcomes:  # compute_status is the same rules before packing: whatever was found, fitted
        assert compute_status(outcomes, found) is oracle_status(outcomes, found, found, [])


@PROPERTY
@given(outcome_lists, weight_maps, st.integers(1, 12), st.integers(1, 600), dropped_lists)
def test_report_status_and_limitations_follow_the_pipeline(
    outcomes: list[Outcome],
    weights: dict[str, float],
    limit: int,
    budget: int,
    dropped: list[ProviderSelection],
) -> None:
    collected, _, fitted, summary = run_steps(outcomes, weights, limit, budget, dropped=dropped)
    assert summary.status is oracle_status(outcomes, len(collected.evidence), len(fitted.evidence), dropped)
    if summary.status in (Status.FAILED, Status.NO_RESULTS, Status.FORBIDDEN):
        assert fitted.evidence == []
    notes = summary.limitations
    assert sum(" failed (" in n for n in notes) == len(collected.failures)
    assert sum(" was degraded: " in n for n in notes) == sum(len(h.degraded) for h in hits_of(outcomes))
    assert any("truncated" in n for n in notes) == bool(summary.budget.truncated)
    assert any("none of it fit" in n for n in notes) == (bool(collected.evidence) and not fitted.evidence)
    assert notes == limitations(outcomes, collected.failures, summary.status, summary.budget, fitted.evidence)
