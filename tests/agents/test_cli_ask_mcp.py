"""The CLI and the MCP server end to end: real LanceDB, the bundled ONNX model, SQLite, stdio."""

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.agents import Runtime, bundled_docs
from simone.agents._synthesis import split_units
from simone.agents.cli import main
from simone.agents.mcp.testing import stdio_mcp_client
from simone.providers.documents import DOCUMENT_INDEX
from simone.runtime import Settings

pytestmark = pytest.mark.slow


def _lines(locator: str) -> str:
    path, _, span = locator.partition("#")
    match = re.fullmatch(r"L(\d+)-L(\d+)", span)
    assert match, f"locator {locator!r} has no line range"
    start, end = int(match.group(1)), int(match.group(2))
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    assert 1 <= start <= end <= len(lines)
    return "\n".join(lines[start - 1 : end])


def test_simone_ask_indexes_the_sample_docs_and_cites_real_chunks(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = bundled_docs()
    assert docs is not None, "simone ships its handbook as sample docs"
    data = isolated_env / "data"
    code = main(
        ["--data-dir", str(data), "ask", "--json", "How are the rankings of several providers fused?"]
    )
    answer = json.loads(capsys.readouterr().out)
    assert code == 0 and answer["status"] == "answered"
    assert answer["citations"]
    for cite in answer["citations"]:
        assert f"[{cite['number']}]" in answer["text"]
        assert cite["provider"] == "document-index" and cite["trust"] == "trusted"
        assert Path(cite["locator"].partition("#")[0]).resolve().is_relative_to(docs.resolve())
        chunk = _lines(cite["locator"])  # the cited lines exist, and hold the quoted sentence
        units = " ".join(" ".join(unit.text.split()) for unit in split_units(chunk))
        for piece in cite["quote"].split(" … "):  # a unit, or a unit with its neighbours
            assert " ".join(piece.split()) in units, piece

    # a second ask reuses the index (no re-indexing) and abstains on what the docs do not hold
    code = main(["--data-dir", str(data), "ask", "--json", "What is the boiling point of tungsten?"])
    out = json.loads(capsys.readouterr().out)
    assert code == 3 and out["status"] == "abstained" and out["citations"] == []
    assert any("search backend" in note for note in out["limitations"])


def test_simone_research_without_a_backend_says_so(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["--data-dir", str(isolated_env / "data"), "research", "--json", "latest news"])
    captured = capsys.readouterr()
    assert code == 2
    assert json.loads(captured.out)["error"] == "not_configured"
    assert "SIMONE_WEB__SEARXNG_URL" in captured.err


def test_an_mcp_client_lists_the_tools_and_calls_retrieve_context(isolated_env: Path) -> None:
    data = isolated_env / "data"
    docs = bundled_docs()
    assert docs is not None

    async def main_() -> None:
        async with Runtime(Settings(data_dir=data), memory=False, web=False) as runtime:
            await runtime.published.require(DOCUMENT_INDEX).index_paths([docs])

        errlog = isolated_env / "mcp-server.log"  # the server's stderr (pytest owns sys.stderr)
        async with stdio_mcp_client(data, actor="alice", cwd=isolated_env, errlog=errlog) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert {"retrieve_context", "retrieve_memory", "delegate_research", "memory"} == set(tools)
            assert "web_research" not in tools
            assert "actor" not in json.dumps(tools["retrieve_context"].input_schema)
            result = await client.call_tool("retrieve_context", {"query": "reciprocal rank fusion"})
            assert not result.is_error
            data_out: Any = result.structured_content
            assert data_out["request"]["caller"] == "orchestrator"
            assert data_out["status"] in ("complete", "partial")
            assert any("retrieval.md" in item["locator"] for item in data_out["evidence"])
            forged = await client.call_tool("retrieve_context", {"query": "x", "actor": "bob"})
            assert forged.is_error and "ScopeViolation" in forged.content[0].text  # type: ignore[union-attr]
            refused = await client.call_tool("web_research", {"question": "x"})
            assert refused.is_error

        async with stdio_mcp_client(
            data,
            actor="alice",
            args=["--role", "researcher"],
            env={"SIMONE_WEB__SEARXNG_URL": "http://127.0.0.1:9"},
            cwd=isolated_env,
            errlog=errlog,
        ) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            assert names == {"web_research", "retrieve_context"}

    anyio.run(main_)
