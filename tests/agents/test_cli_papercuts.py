"""A first day's papercuts (issue 31.5), each with a test that fails without its fix.

* ``retrieve_context``'s headline counted an item cut by the limit twice ("1 over budget, 1 beyond the
  limit": ``BudgetReport.omitted`` already counts ``beyond_limit``);
* ``--json`` worked only after the command name;
* a mistyped command got the list of choices but no "did you mean";
* ``simone memory search`` and the MCP memory search printed every score as 0.000 (FTS5's BM25 of a
  small memory is ~1e-6);
* pip's "lxml does not provide the extra 'html_clean'" was unexplained;
* the README: its size, its test command block, its layout table.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
from pathlib import Path

import anyio
import pytest
import simone.runtime
import simone.workflows.retrieval
from simone.agents import render_tool_result
from simone.agents.cli import main
from simone.providers.memory import (
    HitsResult,
    NoteCreate,
    ScoredRecord,
    SearchQuery,
    open_memory_store,
    render,
)
from simone.runtime import Router, Settings, TrustedContext
from simone.runtime.testing import StaticProvider, make_evidence

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


# -- retrieve_context's headline ---------------------------------------------------------------------


def _headline(texts: list[str], **fields: object) -> tuple[str, simone.runtime.RetrievalResult]:
    router = Router([StaticProvider("p", make_evidence("p", texts))])

    async def main() -> simone.runtime.RetrievalResult:
        return await router.retrieve(router.request("alpha", **fields), TrustedContext(actor="a"))

    result = anyio.run(main)
    return render_tool_result("retrieve_context", result).splitlines()[0], result


def test_an_item_cut_by_the_limit_is_counted_once() -> None:
    line, result = _headline(["alpha one", "alpha two"], limit=1)
    assert result.budget.omitted == 1 and len(result.budget.beyond_limit) == 1  # the same item
    assert "1 beyond the limit" in line
    assert "over budget" not in line, line  # was "1 over budget, 1 beyond the limit"


def test_the_headline_counts_add_up_to_what_the_providers_returned() -> None:
    texts = [f"alpha {n} " + "word " * 120 for n in range(4)]
    line, result = _headline(texts, limit=3, max_tokens=200)
    counts = {
        label: int(number)
        for number, label in re.findall(r"(\d+) (truncated|over budget|beyond the limit)", line)
    }
    assert counts.get("beyond the limit") == 1 and counts.get("over budget", 0) >= 1, line
    budget = result.budget
    assert budget.included + sum(counts.values()) + budget.duplicates_dropped == len(texts), line


# -- --json before or after the command ----------------------------------------------------------------


def test_json_works_before_and_after_the_command(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(isolated_env / "data")
    assert main(["--data-dir", data, "memory", "add", "note", "Deploys happen on Tuesdays"]) == 0
    capsys.readouterr()
    assert main(["--data-dir", data, "--json", "memory", "list"]) == 0  # the README's order
    before = json.loads(capsys.readouterr().out)
    assert main(["--data-dir", data, "memory", "list", "--json"]) == 0
    after = json.loads(capsys.readouterr().out)
    assert before == after and before[0]["title"] == "Deploys happen on Tuesdays"


def test_json_on_a_command_without_json_output_is_a_usage_error(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--data-dir", str(isolated_env / "data"), "--json", "mcp"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("simone: error: --json: 'simone mcp' prints no JSON — ") and err.count("\n") == 1


# -- did you mean ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["serch", "x"], "'search'"),
        (["memroy", "list"], "'memory'"),
        (["memory", "serch", "x"], "'search'"),
        (["mcp", "--role", "reseacher"], "'researcher'"),
    ],
)
def test_a_typo_gets_the_closest_choice(
    argv: list[str], suggestion: str, isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"did you mean {suggestion}?" in err and "invalid choice" in err and err.count("\n") == 1, err


def test_a_word_close_to_no_choice_gets_no_guess(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["xyzzy"]) == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'xyzzy'" in err and "did you mean" not in err


# -- memory search scores ----------------------------------------------------------------------------

NOTES = ("Deploys happen on Tuesdays", "Tuesday lunch is pizza", "Renew the deploy certificate")


def test_memory_search_shows_scores_relative_to_the_best_hit(
    isolated_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(isolated_env / "data")
    for title in NOTES:
        assert main(["--data-dir", data, "memory", "add", "note", title]) == 0
    capsys.readouterr()
    assert main(["--data-dir", data, "memory", "search", "deploy tuesdays", "--json"]) == 0
    raw = [hit["score"] for hit in json.loads(capsys.readouterr().out)]
    assert len(raw) == 3 and max(raw) < 1e-3  # FTS5's IDF floor: the raw values are ~1e-6
    assert main(["--data-dir", data, "memory", "search", "deploy tuesdays"]) == 0
    table = capsys.readouterr().out
    shown = re.findall(r"│ (\d\.\d\d)\s+│", table)
    assert shown == [f"{score / max(raw):.2f}" for score in raw] and shown[0] == "1.00", table
    assert "0.000" not in table and "relative to the best hit" in table


def test_the_memory_search_tool_text_shows_relative_scores(isolated_env: Path) -> None:
    context = TrustedContext(actor="alice")

    async def main() -> HitsResult:
        async with open_memory_store(Settings(data_dir=isolated_env / "data")) as store:
            for title in NOTES:
                await store.create(context, NoteCreate(title=title))
            hits = await store.search_records(context, SearchQuery(text="deploy tuesdays"))
        scored = [
            ScoredRecord(id=h.record.id, score=h.score, text=render(h.record), record=h.record) for h in hits
        ]
        return HitsResult(hits=scored)

    result = anyio.run(main)
    text = render_tool_result("search_notes", result)
    scores = re.findall(r" score=(\S+) ", text)
    assert scores[0] == "1.00" and all(float(s) > 0 for s in scores), text  # was score=0.00 for each
    assert (
        text.splitlines()[0] == "search_notes: 3 records (score: BM25 relative to the best hit, 1.00 = best)"
    )


# -- the lxml warning --------------------------------------------------------------------------------


def test_lxml_html_clean_is_a_direct_dependency_and_the_warning_is_explained() -> None:
    requires = [
        re.split(r"[<>=!~; \[]", r, maxsplit=1)[0].lower()
        for r in importlib.metadata.requires("simone") or []
    ]
    assert "lxml_html_clean" in requires or "lxml-html-clean" in requires
    importlib.import_module("lxml.html.clean")  # what trafilatura (through jusText) imports
    text = README.read_text(encoding="utf-8")
    assert "does not provide the extra 'html_clean'" in text and "23.3" in text


# -- the README ----------------------------------------------------------------------------------------


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)


def test_the_readme_stays_about_two_pages() -> None:
    size = len(README.read_bytes())
    assert size <= 12_600, f"README.md is {size} bytes; the house style says ~12 KB: move detail to docs/"


def test_the_readme_keeps_the_two_commands_and_the_system_packages_in_the_block() -> None:
    text = README.read_text(encoding="utf-8")
    blocks = _bash_blocks(text)
    assert (
        blocks[0].strip() == 'pip install . && simone ask "How are the rankings of several providers fused?"'
    )
    test_block = blocks[1]
    lines = [line for line in test_block.splitlines() if line.strip()]
    assert lines[-1] == "pip install -e '.[test]' && pytest"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert lines[-1] in ci.splitlines()  # the line CI runs, verbatim
    system = " ".join(lines[:-1])
    assert "apt-get update" in system and "postgresql" in system and "redis-server" in system
    assert re.search(r"\d+\s*[–-]\s*\d+ min", text), "say how long the suite takes"


def test_the_readme_layout_table_matches_the_code() -> None:
    text = README.read_text(encoding="utf-8")
    pattern = r"^\| (\d) \| `\w+/` → `simone\.\w+` \| (.*) \|$"
    rows = {match[1]: match[2] for match in re.finditer(pattern, text, flags=re.M)}
    assert set(rows) == {"1", "2", "3", "4"}
    assert hasattr(simone.runtime, "Router") and not hasattr(simone.workflows.retrieval, "Router")
    assert "router" in rows["1"].lower() and "router" not in rows["3"].lower()
    assert (ROOT / "providers" / "memory" / "postgres").is_dir() and (
        ROOT / "providers" / "memory" / "sqlite"
    ).is_dir()
    assert "PostgreSQL" in rows["2"] and "SQLite" in rows["2"]
