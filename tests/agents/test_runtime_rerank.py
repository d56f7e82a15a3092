"""``[rerank]`` reaches the router the runtime builds, and the one ``simone search`` builds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from simone.agents import Runtime
from simone.agents.cli import main
from simone.providers.documents import DOCUMENT_INDEX
from simone.providers.testing import LoopbackRerankServer
from simone.runtime import RerankSettings, Settings

pytestmark = pytest.mark.slow

DOCS = {
    "deploy.md": "# Deploys\n\nDeploys happen on Tuesdays after the review.\n",
    "lunch.md": "# Lunch\n\nLunch is served at noon; deploys never happen during lunch.\n",
}


def _docs(root: Path) -> Path:
    folder = root / "docs"
    folder.mkdir()
    for name, text in DOCS.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.mark.anyio
async def test_the_runtime_reranks_with_the_configured_server_and_a_request_can_opt_out(
    isolated_env: Path,
) -> None:
    folder = _docs(isolated_env)
    with LoopbackRerankServer() as server:
        settings = Settings(
            data_dir=isolated_env / "data", rerank=RerankSettings(backend="http", url=server.url, api="tei")
        )
        async with Runtime.open(settings, memory=False, web=False) as runtime:
            await runtime.published.require(DOCUMENT_INDEX).index_paths([folder])
            context = runtime.admit({"actor": "alice"})
            reranked = await runtime.retrieve(context, "when do deploys happen", limit=2)
            assert reranked.trace.rerank is not None and reranked.trace.rerank.status == "reranked"
            assert len(server.requests) == 1 and reranked.evidence
            kept = await runtime.retrieve(context, "when do deploys happen", limit=2, rerank=False)
            assert kept.trace.rerank is not None and kept.trace.rerank.status == "skipped"
            assert len(server.requests) == 1  # the opted-out request never reached the server
        # the server gone: the fused order is kept and the result says why
        async with Runtime.open(settings, memory=False, web=False) as runtime:
            server.mode = "malformed_json"
            context = runtime.admit({"actor": "alice"})
            failed = await runtime.retrieve(context, "when do deploys happen", limit=2)
            assert failed.evidence and failed.trace.rerank is not None
            assert failed.trace.rerank.status == "kept_fused"
            assert any("reranker" in note for note in failed.limitations), failed.limitations


def test_simone_search_reranks_with_the_configured_server(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _docs(isolated_env)
    monkeypatch.setenv("SIMONE_DATA_DIR", str(isolated_env / "data"))
    assert main(["index", str(folder)]) == 0
    capsys.readouterr()
    with LoopbackRerankServer() as server:
        monkeypatch.setenv("SIMONE_RERANK__BACKEND", "http")
        monkeypatch.setenv("SIMONE_RERANK__URL", server.url)
        monkeypatch.setenv("SIMONE_RERANK__API", "tei")
        assert main(["search", "when do deploys happen", "--json"]) == 0
        found = json.loads(capsys.readouterr().out)
        assert found["evidence"] and len(server.requests) == 1
