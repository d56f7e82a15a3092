"""Every sub-folder ships: the package list in pyproject matches the tree, and the built wheel has it all."""

from __future__ import annotations

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
