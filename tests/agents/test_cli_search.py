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
    assert main(["search", "  ", str(docs)]) == 1
    assert "query is empty" in capsys.readouterr().err
    assert main(["search", "x", str(docs / "missing")]) == 1
    assert "does not exist" in capsys.readouterr().err
    assert main(["search", "x", str(docs), "--limit", "0"]) == 1
    assert "limit" in capsys.readouterr().err
