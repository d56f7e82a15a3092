"""The README's memory example works exactly as written: the note and the question run as the same actor."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from simone.agents.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[list[str]]:
    """The README's ``simone memory add …`` and ``simone ask "When do deploys happen?"…`` lines, as argv."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    lines = [
        line
        for block in re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL)
        for line in block.splitlines()
    ]
    chosen = [
        line
        for line in lines
        if line.startswith("simone memory add note")
        or line.startswith('simone ask "When do deploys happen?"')
    ]
    assert len(chosen) == 2, chosen
    return [shlex.split(line, comments=True)[1:] for line in chosen]


def test_the_readme_memory_example_answers_from_the_note(
    isolated_env: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SIMONE_DATA_DIR", str(isolated_env / "data"))  # a fresh data dir
    add, ask = _readme_commands()
    assert main(add) == 0
    assert "added note" in capsys.readouterr().out
    assert main(ask) == 0
    out = capsys.readouterr().out
    answer = out.split("Sources")[0]
    assert "Tuesdays" in answer  # the answer itself holds the note's fact
    assert "tags" not in answer  # ... and not the note's tag line, which labels it
    assert re.search(r"\[1\] Deploys happen on Tuesdays — memory · memory:note/note-", out), out
