"""The fused order: a confidence-weighted head, then consensus (plain RRF), so no leg is buried."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st
from simone.runtime.ranking import FUSION_HEAD, HeadThenConsensus, Pinned, PlainRRF, WeightedRRF

ids = st.text(alphabet="abcdefghij", min_size=1, max_size=2)
rankings = st.dictionaries(
    st.sampled_from(["lexical", "semantic", "semantic:usem3"]),
    st.lists(ids, unique=True, max_size=40),
    min_size=1,
)
weights = st.floats(min_value=0.001, max_value=1.0)


@given(rankings, weights, st.integers(min_value=0, max_value=30))
def test_the_head_is_the_inner_order_and_the_tail_is_consensus(
    legs: dict[str, list[str]], weight: float, head: int
) -> None:
    inner = WeightedRRF({"semantic": weight})
    fused = HeadThenConsensus(inner, head=head).fuse(legs)
    order = [item_id for item_id, _ in fused]
    every = {item_id for ranked in legs.values() for item_id in ranked}
    assert sorted(order) == sorted(every)  # each candidate once
    inner_order = [item_id for item_id, _ in inner.fuse(legs)]
    assert order[:head] == inner_order[:head]
    plain = [item_id for item_id, _ in PlainRRF().fuse(legs)]
    assert order[head:] == [item_id for item_id in plain if item_id not in set(order[:head])]
    scores = [score for _, score in fused]
    assert all(a >= b for a, b in zip(scores, scores[1:], strict=False))


def test_an_unsure_leg_is_not_buried_below_the_head() -> None:
    lexical = [f"l{i}" for i in range(30)]
    semantic = ["s0", "s1"]
    legs = {"lexical": lexical, "semantic": semantic}
    weighted = Pinned(WeightedRRF({"semantic": 0.02}), "l0")
    buried = [item_id for item_id, _ in weighted.fuse(legs)]
    assert buried.index("s0") > len(lexical) - 1  # weighted alone: after every lexical hit
    fused = [item_id for item_id, _ in HeadThenConsensus(weighted, head=5).fuse(legs)]
    assert fused[:5] == buried[:5]
    assert fused.index("s0") == 5  # first in the tail: plain RRF ranks a leg's best high


def test_a_head_as_long_as_the_order_changes_nothing() -> None:
    legs = {"lexical": ["a", "b", "c"], "semantic": ["c", "d"]}
    inner = Pinned(WeightedRRF({"semantic": 0.1}), "a")
    assert HeadThenConsensus(inner, head=FUSION_HEAD).fuse(legs) == inner.fuse(legs)


def test_a_negative_head_is_refused() -> None:
    with pytest.raises(ValueError, match="head"):
        HeadThenConsensus(PlainRRF(), head=-1)
