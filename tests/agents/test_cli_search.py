from __future__ import annotations

import json
from pathlib import Path

import pytest
from simone.agents.cli import main


@pytest.fixture
def docs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Budget\n\nThe budget report lists every omitted item.\n")
    return folder


def test_search_json(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "omitted items budget", str(docs), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "complete"
    assert data["evidence"][0]["locator"] == "a.md#L3-L3"
    assert data["budget"]["estimator"] == "chars/4 ESTIMATED"


def test_search_readable(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "budget", str(docs)]) == 0
    out = capsys.readouterr().out
    assert "a.md#L3-L3" in out and "status: complete" in out


def test_bad_input_is_a_clear_error(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # usage errors (exit 2) are caught by the argument parser; a missing folder is an error (exit 1)
    assert main(["search", "  ", str(docs)]) == 2
    assert "argument query: must not be empty" in capsys.readouterr().err
    assert main(["search", "x", str(docs / "missing")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["search", "x", str(docs), "--limit", "0"]) == 2
    assert "--limit: must be at least 1" in capsys.readouterr().err


def test_explain_shows_the_analysis(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "what is the budget?", str(docs), "--explain", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert "budget" in data["explain"]["words_used"]
    assert {"what", "is", "the"} <= set(data["explain"]["words_ignored"])
    assert data["result"]["status"] == "complete"


def test_all_stop_words_say_so_and_match_nothing(docs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "what is the", str(docs), "--explain", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["explain"]["all_ignored"] is True
    assert data["result"]["status"] == "no_results"


def test_search_over_the_index(docs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data_dir = str(tmp_path / "data")
    assert main(["--data-dir", data_dir, "index", str(docs), "--no-embed", "--json"]) == 0
    capsys.readouterr()
    code = main(["--data-dir", data_dir, "search", "omitted budget", "--mode", "lexical", "--json"])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["status"] == "complete"
    assert result["evidence"][0]["locator"].endswith("a.md#L1-L3")
    assert result["evidence"][0]["provider"] == "document-index"
