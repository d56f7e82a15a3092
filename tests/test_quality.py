"""The tree stays lint-clean, formatted and type-checked (mypy --strict), so CI catches drift."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; install the test extra: pip install -e '.[test]'")
    return found


def test_ruff_check() -> None:
    result = _run(_tool("ruff"), "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = _run(_tool("ruff"), "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_strict() -> None:
    assert (ROOT / ".typecheck" / "simone").resolve() == ROOT, (
        "the .typecheck/simone symlink must point at the repo"
    )
    env = {**os.environ, "MYPYPATH": str(ROOT / ".typecheck")}
    packages = [
        arg for name in ("runtime", "providers", "workflows", "agents") for arg in ("-p", f"simone.{name}")
    ]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", *packages],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
