from __future__ import annotations

import pytest
from hypothesis import given, strategies as st
from simone.runtime.ranking import rrf
from simone.runtime.ranking._fusion import dedupe_ranking

ids = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
ranking = st.lists(ids, max_size=12, unique=True)
rankings = st.dictionaries(st.sampled_from(["p1", "p2", "p3", "p4"]), ranking, max_size=4)


def test_scores_are_the_rrf_formula_with_one_based_ranks() -> None:
    fused = rrf({"a": ["x", "y"], "b": ["y"]}, k=60)
    scores = {item.id: item.score for item in fused}
    assert scores["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["x"] == pytest.approx(1 / 61)
    assert [item.id for item in fused] == ["y", "x"]
    (contribution,) = [c for c in fused[0].contributions if c[0] == "b"]
    assert contribution == ("b", 1, pytest.approx(1 / 61))


def test_ties_break_by_id() -> None:
    fused = rrf({"a": ["zeta"], "b": ["alpha"]})
    assert [item.id for item in fused] == ["alpha", "zeta"]


def test_weights_scale_contributions_and_reorder() -> None:
    fused = rrf({"a": ["x"], "b": ["y"]}, weights={"a": 1.0, "b": 2.0})
    assert [item.id for item in fused] == ["y", "x"]
    assert fused[0].score == pytest.approx(2 / 61)


def test_zero_weight_keeps_the_item_at_the_bottom() -> None:
    fused = rrf({"a": ["x"], "b": ["y"]}, weights={"b": 0.0})
    assert [item.id for item in fused] == ["x", "y"]


def test_bad_parameters_are_refused() -> None:
    with pytest.raises(ValueError, match="k must be"):
        rrf({"a": ["x"]}, k=0)
    with pytest.raises(ValueError, match="weight"):
        rrf({"a": ["x"]}, weights={"a": -1})


@given(rankings)
def test_provider_order_does_not_matter(rs: dict[str, list[str]]) -> None:
    forward = rrf(rs)
    backward = rrf(dict(reversed(list(rs.items()))))
    assert [(i.id, i.score) for i in forward] == [(i.id, i.score) for i in backward]


@given(rankings)
def test_fused_order_is_sorted_by_score_then_id(rs: dict[str, list[str]]) -> None:
    fused = rrf(rs)
    keys = [(-item.score, item.id) for item in fused]
    assert keys == sorted(keys)
    assert {item.id for item in fused} == {i for r in rs.values() for i in r}


@given(st.lists(ids, max_size=20))
def test_within_provider_dedup_keeps_first_occurrence(items: list[str]) -> None:
    kept, dropped = dedupe_ranking(items)
    kept_ids = [items[i] for i in kept]
    assert kept_ids == list(dict.fromkeys(items))
    assert dropped == len(items) - len(kept_ids)


def test_dedup_by_extra_key_such_as_digest() -> None:
    kept, dropped = dedupe_ranking(["a", "b", "c"], [("d1",), ("d1",), ("d2",)])
    assert kept == [0, 2] and dropped == 1
