"""The bundled handbook is its own collection: it answers only while the user has no documents (or is asked
for), never shows up in the user's search, and ``simone index --drop`` removes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simone.agents.cli import main
from simone.agents.cli._ask import HANDBOOK_COLLECTION

pytestmark = pytest.mark.slow

QUESTION = "How are the rankings of several providers fused?"


def _json(capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    out: dict[str, object] = json.loads(capsys.readouterr().out)
    return out


def test_the_handbook_answers_a_fresh_machine_apart_from_the_users_documents(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SIMONE_DATA_DIR", str(isolated_env / "data"))
    # a fresh machine: the handbook answers, from its own collection
    assert main(["ask", QUESTION]) == 0
    captured = capsys.readouterr()
    assert "handbook" in captured.out and "retrieval.md" in captured.out
    assert f"answering from simone's handbook (collection {HANDBOOK_COLLECTION})" in captured.err
    # ... and the user's own collection holds none of it: their search does not find the handbook
    main(["search", "reciprocal rank fusion", "--json"])
    found = _json(capsys)
    assert found["evidence"] == []
    assert "the document collection 'documents' is empty" in " ".join(found["limitations"])  # type: ignore[arg-type]

    # once the user has documents, they answer; the handbook is not searched
    docs = isolated_env / "mine"
    docs.mkdir()
    (docs / "gateway.md").write_text("# Gateway\n\nOur gateway timeout is 30 s for every route.\n")
    assert main(["index", str(docs)]) == 0
    capsys.readouterr()
    assert main(["ask", "What timeout does the gateway use?", "--json"]) == 0
    answer = _json(capsys)
    locators = [cite["locator"] for cite in answer["citations"]]  # type: ignore[index, union-attr]
    assert locators and all("gateway.md" in loc for loc in locators), locators
    assert main(["ask", "How does reciprocal rank fusion combine rankings?", "--json"]) in (0, 3)
    mine_only = _json(capsys)
    assert not any("handbook" in c["locator"] for c in mine_only["citations"])  # type: ignore[index, union-attr]

    # asked for on purpose, the handbook still answers
    assert main(["ask", "--handbook", QUESTION, "--json"]) == 0
    asked = _json(capsys)
    assert any("retrieval.md" in c["locator"] for c in asked["citations"])  # type: ignore[index, union-attr]

    # and it can be removed; removing it twice says what the index holds
    assert main(["index", "--drop", HANDBOOK_COLLECTION]) == 0
    assert f"dropped collection {HANDBOOK_COLLECTION}" in capsys.readouterr().out
    assert main(["index", "--drop", HANDBOOK_COLLECTION]) == 1
    err = capsys.readouterr().err
    assert f"holds no collection '{HANDBOOK_COLLECTION}'" in err and "it holds documents" in err


def test_drop_runs_alone_and_handbook_excludes_docs(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SIMONE_DATA_DIR", str(isolated_env / "data"))
    assert main(["index", "--drop", "simone", str(isolated_env)]) == 1
    assert "--drop COLLECTION runs alone" in capsys.readouterr().err
    assert main(["index", "--drop", "simone"]) == 1
    assert "there is no index at" in capsys.readouterr().err
    assert main(["ask", "--handbook", "--docs", str(isolated_env), QUESTION]) == 1
    assert "give one" in capsys.readouterr().err


def test_the_handbook_answers_when_the_users_locators_map_only_their_own_folder(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a team's locator_base maps the user's docs root; the handbook lives in the package, outside it
    root = isolated_env / "team-docs"
    root.mkdir()
    monkeypatch.setenv("SIMONE_DATA_DIR", str(isolated_env / "data"))
    monkeypatch.setenv("SIMONE_INDEX__LOCATOR_BASE", str(root))
    assert main(["ask", QUESTION, "--json"]) == 0
    answer = _json(capsys)
    assert any("retrieval.md" in c["locator"] for c in answer["citations"])  # type: ignore[index, union-attr]
    # the user's own folder is still stored under the mapped, root-relative locators
    (root / "gateway.md").write_text("# Gateway\n\nOur gateway timeout is 30 s for every route.\n")
    assert main(["index", str(root)]) == 0
    capsys.readouterr()
    assert main(["search", "gateway timeout", "--json"]) == 0
    locators = [item["locator"] for item in _json(capsys)["evidence"]]  # type: ignore[union-attr]
    assert locators and all(str(isolated_env) not in loc for loc in locators), locators
