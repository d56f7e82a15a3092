"""Dependencies point down: runtime ← providers ← workflows ← agents. Parse every module and check."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FLOORS = {"runtime": 1, "providers": 2, "workflows": 3, "agents": 4}
BARE = set(FLOORS)


def _modules() -> list[Path]:
    return sorted(p for layer in FLOORS for p in (ROOT / layer).rglob("*.py"))


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_upward_or_bare_imports(path: Path) -> None:
    layer = path.relative_to(ROOT).parts[0]
    floor = FLOORS[layer]
    problems = []
    for line, module in _imports(path):
        parts = module.split(".")
        if parts[0] in BARE:
            problems.append(f"line {line}: bare import {module!r}; use simone.{module}")
        if parts[0] == "simone" and len(parts) > 1 and parts[1] in FLOORS and FLOORS[parts[1]] > floor:
            problems.append(
                f"line {line}: {layer} (floor {floor}) imports {module} (floor {FLOORS[parts[1]]})"
            )
    assert not problems, "\n".join(problems)


def test_the_checker_sees_every_layer() -> None:
    seen = {p.relative_to(ROOT).parts[0] for p in _modules()}
    assert seen == set(FLOORS)
