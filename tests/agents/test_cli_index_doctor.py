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
    assert payload["files_total"] == 0 and payload["chunks"] == 0  # nothing indexed: only the rebuild
    (note,) = payload["rebuilt_ann"]
    assert "exact search (no vector index)" in note  # a handful of chunks: exact search is right
    code, out, _ = _run(capsys, "--data-dir", data, "index", "--rebuild-ann")
    assert code == 0 and "exact search" in out


def test_index_json_is_one_shape_whatever_the_options(
    docs: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(isolated_env / "data")
    shapes = []
    for options in (
        [str(docs)],
        ["--embed-pending"],
        ["--rebuild-ann"],
        [str(docs), "--embed-pending", "--rebuild-ann"],
    ):
        code, out, _ = _run(capsys, "--data-dir", data, "index", *options, "--json")
        assert code == 0, options
        payload = json.loads(out)
        assert isinstance(payload, dict) and payload["collection"] == "documents"
        assert payload["space"] == "onnx:all-MiniLM-L6-v2:384"
        assert isinstance(payload["rebuilt_ann"], list)
        assert bool(payload["rebuilt_ann"]) == ("--rebuild-ann" in options)
        shapes.append(sorted(payload))
    assert all(shape == shapes[0] for shape in shapes), shapes


def test_doctor_finds_duplicated_chunks_and_a_rerun_repairs_them(
    docs: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import anyio
    from simone.providers.documents import DocumentStore

    data = isolated_env / "data"
    assert _run(capsys, "--data-dir", str(data), "index", str(docs), "--json")[0] == 0

    async def duplicate() -> int:
        async with DocumentStore(data / "index") as store:
            collection = await store.open_collection("documents")
            assert collection is not None
            rows = await collection.rows()
            await collection.table.add(rows)  # what two indexers at once left behind
            return int(rows.num_rows)

    copies = anyio.run(duplicate)
    code, out, _ = _run(capsys, "--data-dir", str(data), "doctor", "--json")
    assert code == 1
    (collection,) = json.loads(out)["collections"]
    assert collection["duplicates"] == copies and "simone index PATH" in collection["repair"]
    code, out, _ = _run(capsys, "--data-dir", str(data), "search", "budget report", "--mode", "lexical")
    assert code == 0 and out.count("a.md") >= 1

    code, out, _ = _run(capsys, "--data-dir", str(data), "index", str(docs), "--json")
    assert code == 0 and any("duplicate" in note for note in json.loads(out)["maintenance"])
    code, out, _ = _run(capsys, "--data-dir", str(data), "doctor", "--json")
    assert code == 0
    (collection,) = json.loads(out)["collections"]
    assert collection["duplicates"] == 0 and "repair" not in collection


def test_index_a_folder_with_a_file_name_that_is_not_utf8(
    docs: Path, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    with open(os.path.join(os.fsencode(docs), b"bad\xff.md"), "wb") as handle:
        handle.write(b"# Odd name\n\nA note whose file name is Latin-1 bytes.\n")
    data = str(isolated_env / "data")
    code, out, _ = _run(capsys, "--data-dir", data, "index", str(docs), "--json")
    assert code == 0
    report = json.loads(out)
    assert report["files_indexed"] == 2
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert "not valid UTF-8" in reasons["bad\\xff.md"]
    code, out, _ = _run(capsys, "--data-dir", data, "index", str(docs))
    assert code == 0 and "skipped bad\\xff.md" in out
