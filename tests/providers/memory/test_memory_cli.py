"""``simone memory …`` end to end through the real entry point, on a temporary data directory."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from simone.agents.cli import main


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("SIMONE_CONFIG", "SIMONE_DATA_DIR", "SIMONE_ACTOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


def test_add_list_search_done_export_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    me = ["--actor", "ana", "--project", "apollo"]
    note = _json(
        capsys,
        *data,
        "memory",
        "add",
        "note",
        "Deploy steps",
        "--body",
        "run the canary first",
        "--tag",
        "ops",
        *me,
        "--json",
    )
    assert isinstance(note, dict) and note["scope"] == {"actor": "ana", "project": "apollo"}
    todo = _json(capsys, *data, "memory", "add", "todo", "Rotate keys", "--priority", "urgent", *me, "--json")
    assert isinstance(todo, dict) and todo["priority"] == "urgent"
    _json(
        capsys,
        *data,
        "memory",
        "add",
        "checklist",
        "Release",
        "--item",
        "tag",
        "--item",
        "push",
        *me,
        "--json",
    )
    _json(capsys, *data, "memory", "add", "fact", "Paris", "is capital of", "France", *me, "--json")
    _json(capsys, *data, "memory", "add", "task", "Index wiki", "--phase", "crawl", *me, "--json")
    _json(
        capsys,
        *data,
        "memory",
        "add",
        "note",
        "Holidays",
        "--body",
        "office closed",
        "--global",
        *me,
        "--json",
    )

    listed = _json(capsys, *data, "memory", "list", *me, "--json")
    assert isinstance(listed, list) and len(listed) == 6
    hits = _json(capsys, *data, "memory", "search", "canary deploy", *me, "--json")
    assert isinstance(hits, list) and [h["id"] for h in hits] == [note["id"]] and hits[0]["score"] > 0
    assert main([*data, "memory", "search", "canary", "--actor", "intruder", "--json"]) == 3
    assert main([*data, "memory", "search", "holidays", "--actor", "intruder"]) == 0, "global is visible"

    done = _json(capsys, *data, "memory", "done", todo["id"], *me, "--json")
    assert isinstance(done, dict) and done["status"] == "completed"
    assert main([*data, "memory", "done", todo["id"], "--actor", "intruder"]) == 1, "not visible, not found"

    export_file = tmp_path / "export.json"
    assert main([*data, "memory", "export", str(export_file), "--all"]) == 0
    exported = json.loads(export_file.read_text())
    assert exported["format"] == "simone-memory" and len(exported["records"]) == 6

    other = ["--data-dir", str(tmp_path / "copy")]
    assert _json(capsys, *other, "memory", "import", str(export_file), "--json") == {"imported": 6}
    copied = _json(capsys, *other, "memory", "list", *me, "--json")
    assert copied == _json(capsys, *data, "memory", "list", *me, "--json")
    assert main([*other, "memory", "import", str(export_file)]) == 1, "ids already exist"


def test_bad_input_is_a_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "simone-memory", "records": [')
    assert main([*data, "memory", "import", str(bad)]) == 1
    assert "not valid JSON" in capsys.readouterr().err
    monkeypatch.setattr("sys.stdin", io.StringIO("[1, 2]"))
    assert main([*data, "memory", "import", "-"]) == 1
    assert "nothing was written" in capsys.readouterr().err
    assert main([*data, "memory", "add", "todo", "x", "--due", "tomorrow"]) == 1
    assert "not an ISO time" in capsys.readouterr().err
    assert main([*data, "memory", "add", "note", "big", "--body", "x" * 70_000]) == 1
    assert "max_body_chars" in capsys.readouterr().err
    assert main([*data, "memory", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
