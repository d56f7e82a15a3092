"""A leg skipped on purpose is a note, not a failure (issue 21).

The English-only bundled model does not cover a German question: the document-index provider skips
its semantic leg and says why. The router records the skip in the trace and the limitations, and the
status stays ``complete`` (or an honest ``no_results``) when the other legs answered. Real LanceDB,
the real ONNX model, the real CLI.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.agents.cli import main
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, DocumentStore
from simone.providers.embeddings import OnnxMiniLMEmbedder
from simone.runtime import (
    EmbeddingChain,
    IndexSettings,
    ProviderHits,
    ProviderKind,
    ProviderResponse,
    RetrievalRequest,
    Router,
    SearchMode,
    Status,
    TrustedContext,
)
from simone.runtime.ranking import compute_status

CONTEXT = TrustedContext(actor="tester")

DOCS = {
    "kuendigung.md": "# Kündigung\n\nDie Kündigungsfrist für einen Vertrag beträgt drei Monate zum Monatsende.\n",
    "urlaub.md": "# Urlaub\n\nDer Urlaubsanspruch beträgt dreißig Tage im Jahr.\n",
    "bread.md": "# Baking bread\n\nKnead the dough for ten minutes, then let it rise for an hour.\n",
    "tennis.md": "# Tennis\n\nA set is won by the first player to take six games with a lead of two.\n",
}
QUESTION = "Kündigungsfrist Vertrag"


@pytest.fixture(scope="module")
def onnx() -> Iterator[OnnxMiniLMEmbedder]:
    embedder = OnnxMiniLMEmbedder(intra_op_threads=2)
    anyio.run(embedder.open)
    yield embedder
    anyio.run(embedder.close)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("mode", [SearchMode.HYBRID, SearchMode.SEMANTIC])
def test_a_german_question_skips_the_english_leg_and_stays_complete(
    tmp_path: Path, docs: Path, onnx: OnnxMiniLMEmbedder, mode: SearchMode
) -> None:
    async def go() -> None:
        index = DocumentIndex(
            DocumentStore(tmp_path / "index"), EmbeddingChain([onnx]), settings=IndexSettings()
        )
        async with index:
            await index.index_paths([docs])
            provider = DocumentIndexProvider(index)
            response = await provider.retrieve(RetrievalRequest.create(QUESTION, mode=mode), CONTEXT)
            assert response.degraded == [] and response.leg_failures == []
            assert set(response.skipped_legs) == {"semantic"}
            assert "all-MiniLM-L6-v2 does not cover" in response.skipped_legs["semantic"]

            router = Router([provider])
            result = await router.retrieve(router.request(QUESTION, mode=mode), CONTEXT)
            assert result.status is Status.COMPLETE, result.limitations
            assert "kuendigung.md" in result.evidence[0].locator
            (trace,) = result.trace.providers
            assert trace.skipped_legs == response.skipped_legs and trace.degraded == []
            assert [note for note in result.limitations if "skipped its semantic leg on purpose" in note] == [
                f"documents skipped its semantic leg on purpose: {response.skipped_legs['semantic']}"
            ]
            assert result.failures == []

            # nothing shares a word with it: an honest no_results, not a failure
            nothing = await router.retrieve(router.request("Mängelrüge Gewährleistung", mode=mode), CONTEXT)
            assert nothing.status is Status.NO_RESULTS, nothing.limitations
            assert nothing.trace.providers[0].skipped_legs.keys() == {"semantic"}
            # an English question runs the leg: nothing skipped, nothing noted
            english = await router.retrieve(router.request("how long to knead dough", mode=mode), CONTEXT)
            assert english.trace.providers[0].skipped_legs == {}
            assert not any("on purpose" in note for note in english.limitations)

    anyio.run(go)


def test_a_skip_changes_no_status() -> None:
    evidence_free = ProviderHits(
        provider="documents", kind=ProviderKind.DOCUMENT_INDEX, skipped_legs={"semantic": "not covered"}
    )
    assert compute_status([evidence_free], found=0) is Status.NO_RESULTS
    assert compute_status([evidence_free], found=3) is Status.COMPLETE
    degraded = evidence_free.model_copy(update={"degraded": ["lexical leg unavailable"]})
    assert compute_status([degraded], found=3) is Status.PARTIAL


class _Skips:
    """A provider whose answer carries ``skipped_legs`` as given (possibly malformed)."""

    name = "skips"
    kind = ProviderKind.DOCUMENT_INDEX

    def __init__(self, skipped: Any) -> None:
        self.skipped = skipped

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        return ProviderResponse.model_construct(
            evidence=[], degraded=[], leg_failures=[], details={}, excluded=[], skipped_legs=self.skipped
        )


@pytest.mark.parametrize("skipped", [["semantic"], {"semantic": 3}, "semantic"])
def test_malformed_skipped_legs_are_an_invalid_response(skipped: object) -> None:
    async def go() -> None:
        router = Router([_Skips(skipped)])
        result = await router.retrieve(router.request("anything"), CONTEXT)
        assert result.status is Status.FAILED
        assert [f.kind for f in result.failures] == ["invalid_response"]
        assert "skipped legs" in result.failures[0].message

    anyio.run(go)


def test_the_cli_exits_0_for_a_german_question(
    docs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for key in [k for k in os.environ if k.startswith("SIMONE_")]:
        monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    data_dir = str(tmp_path / "data")
    assert main(["--data-dir", data_dir, "index", str(docs), "--json"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", data_dir, "search", QUESTION, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "complete"
    assert "kuendigung.md#" in result["evidence"][0]["locator"]
    assert result["trace"]["providers"][0]["skipped_legs"].keys() == {"semantic"}
    assert any("skipped its semantic leg on purpose" in note for note in result["limitations"])
    assert main(["--data-dir", data_dir, "search", QUESTION]) == 0
    readable = capsys.readouterr().out
    assert "status: complete" in readable and "on purpose" in readable
    # a German question the index has no word of: an honest no_results (exit 0), not "failed" (exit 1)
    assert main(["--data-dir", data_dir, "search", "Mängelrüge Gewährleistung", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "no_results"
