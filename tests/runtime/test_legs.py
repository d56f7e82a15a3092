"""The legs mechanism: legs run together, a failing leg is a value, fusion rules are pluggable."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest
from hypothesis import given, strategies as st
from simone.runtime import (
    ProviderFailure,
    ProviderUnavailable,
    RetrievalRequest,
    TrustedContext,
)
from simone.runtime.ranking import (
    FunctionLeg,
    Pinned,
    PlainRRF,
    WeightedRRF,
    confidence_weights,
    error_for_failure,
    fuse_legs,
    rrf,
    run_legs,
)

REQUEST = RetrievalRequest.create("q")
CONTEXT = TrustedContext(actor="tester")

ids = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
ranking = st.lists(st.tuples(ids, st.floats(0, 10)), max_size=12)
rankings = st.dictionaries(st.sampled_from(["lexical", "semantic", "semantic:x"]), ranking, max_size=3)


def _leg(
    name: str, hits: Sequence[str], *, delay: float = 0.0, error: Exception | None = None
) -> FunctionLeg[str]:
    async def run(request: RetrievalRequest, context: TrustedContext) -> list[str]:
        await anyio.sleep(delay)
        if error is not None:
            raise error
        return list(hits)

    return FunctionLeg(name, run)


@pytest.mark.anyio
async def test_legs_run_together_and_keep_their_order() -> None:
    slow, fast = _leg("a", ["x"], delay=0.05), _leg("b", ["y"])
    started = anyio.current_time()
    results = await run_legs([slow, fast], REQUEST, CONTEXT, provider="p")
    assert anyio.current_time() - started < 0.09, "legs run concurrently"
    assert list(results.hits) == ["a", "b"] and results.failures == []
    assert set(results.elapsed_ms) == {"a", "b"}


@pytest.mark.anyio
async def test_a_failing_leg_is_a_value_made_by_from_error() -> None:
    down = ProviderUnavailable("embedder down", provider="x", retry_after_s=3.0)
    bug = RuntimeError("boom")
    results = await run_legs(
        [_leg("semantic", [], error=down), _leg("lexical", ["x"]), _leg("other", [], error=bug)],
        REQUEST,
        CONTEXT,
        provider="documents",
    )
    assert results.hits == {"lexical": ["x"]}
    assert results.failed("semantic") and results.failed("other") and not results.failed("lexical")
    first, second = results.failures
    expected = ProviderFailure.from_error("documents", down, elapsed_ms=first.elapsed_ms, leg="semantic")
    assert first == expected and first.kind == "unavailable" and first.retry_after_s == 3.0
    assert second.kind == "error" and second.leg == "other" and "RuntimeError: boom" in second.message
    assert results.errors["other"] is bug


@pytest.mark.anyio
async def test_a_later_leg_adds_to_the_same_results() -> None:
    results = await run_legs(
        [_leg("semantic", [], error=ProviderUnavailable("down"))], REQUEST, CONTEXT, provider="p"
    )
    again = await run_legs([_leg("lexical", ["x"])], REQUEST, CONTEXT, provider="p", into=results)
    assert again is results and results.hits == {"lexical": ["x"]} and len(results.failures) == 1


@pytest.mark.anyio
async def test_cancellation_is_not_swallowed() -> None:
    with anyio.move_on_after(0.01) as scope:
        await run_legs([_leg("slow", ["x"], delay=5)], REQUEST, CONTEXT, provider="p")
    assert scope.cancelled_caught


def test_no_answering_leg_gives_no_items_and_the_first_leg_names_the_method() -> None:
    fused = fuse_legs({"lexical": [], "semantic": []})
    assert fused.method == "lexical" and fused.items == []


def test_one_answering_leg_keeps_its_order_and_scores() -> None:
    fused = fuse_legs({"lexical": [("b", 9.0), ("a", 3.0), ("b", 1.0)], "semantic": []})
    assert fused.method == "lexical"
    assert [(i.id, i.score, i.ranks) for i in fused.items] == [
        ("b", 9.0, {"lexical": 1}),
        ("a", 3.0, {"lexical": 2}),
    ]


def test_two_legs_fuse_by_rrf_with_each_legs_rank_and_score() -> None:
    fused = fuse_legs({"lexical": [("x", 5.0), ("y", 4.0)], "semantic": [("y", 0.9)]})
    assert fused.method == "hybrid"
    assert [i.id for i in fused.items] == ["y", "x"]
    assert fused.items[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert fused.items[0].ranks == {"lexical": 2, "semantic": 1}
    assert fused.items[0].scores == {"lexical": 4.0, "semantic": 0.9}


@given(rankings)
def test_plain_rrf_is_rrf_of_the_first_copies(legs: dict[str, list[tuple[str, float]]]) -> None:
    fused = fuse_legs(legs)
    firsts = {leg: list(dict.fromkeys(i for i, _ in pairs)) for leg, pairs in legs.items()}
    answering = {leg: order for leg, order in firsts.items() if order}
    if len(answering) >= 2:
        assert [(i.id, i.score) for i in fused.items] == [(f.id, f.score) for f in rrf(answering)]
    elif answering:
        assert [i.id for i in fused.items] == next(iter(answering.values()))
    else:
        assert fused.items == []
    for item in fused.items:
        assert all(firsts[leg].index(item.id) + 1 == rank for leg, rank in item.ranks.items())


@given(rankings, st.dictionaries(st.sampled_from(["lexical", "semantic", "semantic:x"]), st.floats(-5, 5)))
def test_weighted_rrf_is_rrf_with_confidence_weights(
    legs: dict[str, list[tuple[str, float]]], log_odds: dict[str, float]
) -> None:
    rule = WeightedRRF.from_confidence(log_odds, sharpness=2.0)
    assert dict(rule.weights) == confidence_weights(log_odds, sharpness=2.0)
    order = {leg: list(dict.fromkeys(i for i, _ in pairs)) for leg, pairs in legs.items()}
    expected = [(f.id, f.score) for f in rrf(order, weights=rule.weights)]
    assert rule.fuse(order) == expected


@given(rankings, ids)
def test_pinned_keeps_its_id_first_tied_with_the_head(
    legs: dict[str, list[tuple[str, float]]], pin: str
) -> None:
    order = {leg: list(dict.fromkeys(i for i, _ in pairs)) for leg, pairs in legs.items()}
    plain = PlainRRF().fuse(order)
    pinned = Pinned(PlainRRF(), pin).fuse(order)
    if not plain:
        assert pinned == []
    else:
        assert pinned[0] == (pin, plain[0][1])
        assert [i for i, _ in pinned[1:]] == [i for i, _ in plain if i != pin]
    assert Pinned(PlainRRF(), None).fuse(order) == plain


def test_error_for_failure_keeps_the_kind_and_retry_hints() -> None:
    failure = ProviderFailure(
        provider="p", kind="rate_limited", message="slow down", retryable=True, retry_after_s=2.0
    )
    error = error_for_failure(failure, "every leg failed", provider="docs")
    assert error.kind == "rate_limited" and error.retry_after_s == 2.0 and error.retryable
    other = error_for_failure(failure, "m", provider="docs", default=ProviderUnavailable, kinds=("timeout",))
    assert isinstance(other, ProviderUnavailable) and other.retry_after_s == 2.0
