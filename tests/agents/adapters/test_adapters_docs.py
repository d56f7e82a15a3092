"""The scripts of docs/adapters.md run as written, over the indexed handbook, and print what the page shows."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "adapters.md"
FRAMEWORKS = ("langchain_core", "llama_index.core", "haystack", "pydantic_ai")

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_haystack_telemetry")]


def _examples() -> list[tuple[str, str]]:
    """Each python block with the text block that follows it (its documented output)."""
    text = DOC.read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```.*?```text\n(.*?)```", text, flags=re.DOTALL)


def test_the_page_has_a_script_for_each_framework() -> None:
    scripts = "\n".join(code for code, _ in _examples())
    for module in ("langchain", "llamaindex", "haystack", "pydantic_ai"):
        assert f"simone.agents.adapters.{module} import" in scripts


@pytest.mark.parametrize("index", range(len(_examples())))
def test_each_script_runs_and_prints_what_the_page_shows(
    index: int, settings: object, capsys: pytest.CaptureFixture[str]
) -> None:
    for framework in FRAMEWORKS:
        pytest.importorskip(framework)
    code, documented = _examples()[index]
    exec(compile(code, f"{DOC}:example{index + 1}", "exec"), {"__name__": "__main__"})
    printed = capsys.readouterr().out
    assert printed.strip(), "the script printed nothing"
    for line in documented.strip().splitlines():
        # each documented line's first field (a file and line range, a status line) is in what ran
        assert line.split()[0] in printed, f"{line!r} not in:\n{printed}"
    assert "retrieval.md#L" in printed or "documents" in printed
