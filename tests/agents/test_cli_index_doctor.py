"""``simone index`` and ``simone doctor`` end to end (real ONNX model, real LanceDB, temp data dir)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simone.agents.cli import main


@pytest.fixture
def docs(isolated_env: Path) -> Path:
    folder = isolated_env / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("# Budget\n\nThe budget report lists every omitted item.\n")
    (folder / "b.py").write_text("def total(items):\n    return sum(items)\n")
    (folder / "c.bin.txt").write_bytes(b"\x00\x01\x02")
    return folder


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_index_then_reindex_then_doctor(
    docs: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(isolated_env / "data")
    code, out, _ = _run(capsys, "--data-dir", data, "index", str(docs), "--json")
    assert code == 0
    first = json.loads(out)
    assert first["space"] == "onnx:all-MiniLM-L6-v2:384"
    assert first["files_indexed"] == 2 and first["chunks"] == first["embedded"] >= 2
    assert first["skipped"] == [{"path": "c.bin.txt", "reason": "binary file (NUL bytes); not text"}]

    code, out, _ = _run(capsys, "--data-dir", data, "index", str(docs))
    assert code == 0
    assert "files unchanged" in out and "skipped c.bin.txt" in out

    code, out, _ = _run(capsys, "--data-dir", data, "doctor", "--json")
    assert code == 0
    report = json.loads(out)
    (collection,) = report["collections"]
    assert collection["name"] == "documents" and collection["files"] == 2
    assert collection["pending"] == 0 and collection["space_answering"] is True
    assert report["embedders"][0]["ok"] is True
    assert report["embedding_cache"]["vectors"] >= first["embedded"]


def test_a_collection_whose_space_is_gone_is_reported_and_rows_wait(
    docs: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = str(isolated_env / "data")
    assert _run(capsys, "--data-dir", data, "index", str(docs), "--json")[0] == 0
    # The owner switches the chain to a (dead) server only: the ONNX space is no longer configured.
    monkeypatch.setenv("SIMONE_EMBEDDINGS__CHAIN", '["openai"]')
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OPENAI_MODEL", "local-model")
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OPENAI_DIMENSIONS", "8")
    monkeypatch.setenv("SIMONE_EMBEDDINGS__MAX_RETRIES", "0")
    monkeypatch.setenv("SIMONE_EMBEDDINGS__TIMEOUT_S", "2")
    (docs / "d.md").write_text("# New\n\nA note added while the model is missing.\n")
    code, out, _ = _run(capsys, "--data-dir", data, "index", str(docs), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["space"] == "onnx:all-MiniLM-L6-v2:384", "the collection keeps its space"
    assert report["pending"] == report["pending_left"] >= 1
    assert "not_configured" in report["failures"][0]

    code, out, _ = _run(capsys, "--data-dir", data, "doctor", "--json")
    assert code == 1
    doctor = json.loads(out)
    (collection,) = doctor["collections"]
    assert collection["space_configured"] is False and collection["pending"] >= 1
    assert "Configure that model again" in collection["advice"]
    assert doctor["embedders"][0]["ok"] is False

    code, out, _ = _run(capsys, "--data-dir", data, "doctor")
    assert code == 1 and "no embedder of onnx:all-MiniLM-L6-v2:384 answers" in out


def test_index_usage_errors(docs: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(isolated_env / "data")
    code, _, err = _run(capsys, "--data-dir", data, "index")
    assert code == 1 and "--embed-pending" in err
    code, _, err = _run(capsys, "--data-dir", data, "index", str(docs / "missing"))
    assert code == 1 and "does not exist" in err
    code, _, err = _run(capsys, "--data-dir", data, "index", "--embed-pending")
    assert code == 1 and "simone index PATH" in err


def test_index_rebuild_ann(docs: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(isolated_env / "data")
    code, _, err = _run(capsys, "--data-dir", data, "index", "--rebuild-ann")
    assert code == 1 and "simone index PATH" in err
    assert _run(capsys, "--data-dir", data, "index", str(docs), "--json")[0] == 0
    code, out, _ = _run(capsys, "--data-dir", data, "index", "--rebuild-ann", "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["reports"] == []
    (note,) = payload["rebuilt_ann"]
    assert "exact search (no vector index)" in note  # a handful of chunks: exact search is right
    code, out, _ = _run(capsys, "--data-dir", data, "index", "--rebuild-ann")
    assert code == 0 and "exact search" in out
