"""What the command line says is true: versions, piped output, hints, the doctor's health, abstentions."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from simone.agents import Runtime
from simone.agents.cli import main
from simone.agents.cli._doctor import probe_health
from simone.agents.testing import ScriptedChatModel, text_reply
from simone.runtime import Settings


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"simone {importlib.metadata.version('simone')}"


def test_piped_output_never_splits_a_locator(isolated_env: Path) -> None:
    folder = isolated_env / "docs" / ("a-rather-long-folder-name-for-the-quarterly-budget-reports-" * 2)
    folder.mkdir(parents=True)
    (folder / "the-budget-report-of-the-third-quarter.md").write_text(
        "# Budget\n\nThe budget report lists every omitted item.\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "simone.agents.cli", "search", "budget report", str(isolated_env / "docs")],
        capture_output=True,
        text=True,
        cwd=isolated_env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    locator = f"{folder.name}/the-budget-report-of-the-third-quarter.md#L3-L3"
    assert len(locator) > 80
    assert any(locator in line for line in done.stdout.splitlines()), done.stdout


def test_a_search_without_project_says_that_other_projects_hold_chunks(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = isolated_env / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Budget\n\nThe budget report lists every omitted item.\n")
    data = str(isolated_env / "data")
    assert main(["--data-dir", data, "index", str(docs), "--project", "acme", "--no-embed", "--json"]) == 0
    capsys.readouterr()

    assert main(["--data-dir", data, "search", "budget report", "--mode", "lexical"]) == 0
    out = capsys.readouterr().out
    assert "status: no_results" in out
    assert "1 chunk(s) in 1 other project(s) (acme)" in out and "--project NAME" in out
    assert "omitted item" not in out, "the hint tells counts and project names, never content"

    assert (
        main(["--data-dir", data, "search", "budget report", "--mode", "lexical", "--project", "acme"]) == 0
    )
    out = capsys.readouterr().out
    assert "status: complete" in out and "other project" not in out


def test_probe_health_reports_what_the_probes_found() -> None:
    onnx = {"space": "onnx:m:384", "role": "chain", "ok": True}
    dead = {"space": "openai:m:8", "role": "chain", "ok": False}
    extra = {"space": "use:m:512", "role": "extra", "ok": True}
    assert probe_health([onnx, extra])["status"] == "healthy"
    degraded = probe_health([dead, onnx])
    assert degraded["status"] == "degraded" and degraded["serving"] == "onnx:m:384"
    assert "fall back to onnx:m:384" in degraded["summary"]
    down = probe_health([dead, extra])  # an extra space never serves a collection's own leg
    assert down["status"] == "down" and down["serving"] is None and down["degraded"] is True


def test_doctor_health_comes_from_its_probes_not_an_empty_per_process_window(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SIMONE_EMBEDDINGS__CHAIN", '["openai"]')
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OPENAI_DIMENSIONS", "8")
    monkeypatch.setenv("SIMONE_EMBEDDINGS__MAX_RETRIES", "0")
    monkeypatch.setenv("SIMONE_EMBEDDINGS__TIMEOUT_S", "2")
    data = str(isolated_env / "data")
    assert main(["--data-dir", data, "doctor", "--json"]) == 1, "a chain where nothing answers is a problem"
    health = json.loads(capsys.readouterr().out)["health"]
    assert health["status"] == "down" and "samples" not in health
    assert main(["--data-dir", data, "doctor"]) == 1
    out = capsys.readouterr().out
    assert "embedding chain: down — no embedder of the chain answered" in out
    assert "health window" not in out


def test_an_answer_without_any_search_does_not_claim_a_search(isolated_env: Path) -> None:
    settings = Settings(data_dir=isolated_env / "data")

    async def run() -> tuple[str, str, str]:
        model = ScriptedChatModel([text_reply("Deploys happen on Tuesdays.")])  # no tool called
        async with Runtime(settings, documents=False, model=model) as runtime:
            chat = await runtime.ask({"actor": "alice"}, "When do deploys happen?")
        async with Runtime(settings, documents=False) as runtime:
            plan = await runtime.ask({"actor": "alice"}, "Zyxqv wombleflarp?")
        return chat.status, chat.text, plan.text

    status, chat_text, plan_text = anyio.run(run)
    assert status == "abstained"
    assert chat_text.startswith("I did not search memory or the documents"), chat_text
    # no document index was open: only memory was searched, and the text says only that
    assert plan_text.startswith("I found no evidence for this in memory"), plan_text
    assert "documents" not in plan_text
