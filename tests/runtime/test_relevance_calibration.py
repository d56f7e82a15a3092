"""The relevance rule's numbers in the code are the ones benchmarks/multilingual.py chose on data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from simone.runtime.ranking import rule_for

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "multilingual.json"


@pytest.fixture(scope="module")
def calibration() -> dict[str, Any]:
    if not RESULTS.exists():
        pytest.skip("benchmarks/results/multilingual.json is not in this checkout")
    data: dict[str, Any] = json.loads(RESULTS.read_text(encoding="utf-8"))
    return data


def test_each_model_uses_the_margin_band_and_floor_chosen_by_the_benchmark(
    calibration: dict[str, Any],
) -> None:
    for model, entry in calibration["relevance_rule"].items():
        rule = rule_for(entry["space"])
        chosen = entry["chosen"]
        assert (rule.margin, rule.band, rule.floor) == (chosen["margin"], chosen["band"], chosen["floor"]), (
            model
        )
