"""Every sub-folder ships: the package list in pyproject matches the tree, and the built wheel has it all."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import re
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("runtime", "providers", "workflows", "agents")


def _tree_packages() -> set[str]:
    found = set()
    for layer in LAYERS:
        for init in (ROOT / layer).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT).parts
            found.add(".".join(("simone", *rel)))
    return found


def test_package_list_matches_the_tree() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    tree = _tree_packages()
    assert tree - listed == set(), f"sub-packages missing from pyproject packages: {sorted(tree - listed)}"
    assert listed - tree == set(), f"pyproject lists packages that do not exist: {sorted(listed - tree)}"


def test_no_simone_folder_and_no_tests_init() -> None:
    assert not (ROOT / "simone").exists()
    assert not (ROOT / "tests" / "__init__.py").exists()


@pytest.mark.slow
def test_built_wheel_contains_every_module_and_data_file(tmp_path: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--skip-dependency-check",
            "--outdir",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("simone-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = []
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*"):
            if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            rel = path.relative_to(ROOT)
            if not (path.parent / "__init__.py").exists():
                continue
            target = "simone/" + rel.as_posix()
            if (
                path.suffix in {".py", ".typed", ".txt", ".json", ".md", ".onnx", ".toml"}
                and target not in names
            ):
                missing.append(target)
    assert not missing, f"files missing from the wheel: {missing}"


def _declared(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        name = re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0]
        names.add(_normalise(name))
    return names


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _imported_top_levels() -> dict[str, list[str]]:
    """Every top-level module the product code imports (absolute imports only), with where."""
    found: dict[str, list[str]] = {}
    for layer in LAYERS:
        for path in (ROOT / layer).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".", 1)[0]
                    found.setdefault(top, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_imported_package_is_declared() -> None:
    """A package the product imports must be a declared dependency (core or an extra), never a lucky
    transitive one: trafilatura's lxml.html.clean came from lxml's extra until lxml 6 dropped it, and a
    fresh venv's pip then installed neither."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    core = _declared(config["project"]["dependencies"])
    extras = _declared([r for reqs in config["project"]["optional-dependencies"].values() for r in reqs])
    distributions = importlib.metadata.packages_distributions()
    undeclared = {}
    for top, where in _imported_top_levels().items():
        if top in sys.stdlib_module_names or top in {"simone", "__future__"}:
            continue
        owners = {_normalise(d) for d in distributions.get(top, [])}
        assert owners, f"{top} is imported ({where[0]}) but no installed distribution provides it"
        if not owners & (core | extras):
            undeclared[top] = (sorted(owners), where[:3])
    assert not undeclared, f"imported but not declared in pyproject: {undeclared}"


def test_trafilatura_imports_with_declared_dependencies() -> None:
    """lxml.html.clean lives in lxml_html_clean since lxml 5.2; trafilatura imports it at import time."""
    importlib.import_module("lxml.html.clean")
    importlib.import_module("trafilatura")
