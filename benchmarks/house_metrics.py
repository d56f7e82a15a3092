"""The house's shape, measured from the source: what an engineer picking the project up pays per change.

    python benchmarks/house_metrics.py            # this working tree
    python benchmarks/house_metrics.py --rev REV  # a commit (checked out into a temporary folder)

Prints, for the product folders (runtime, providers, workflows, agents):

* the largest functions (lines, from the AST);
* per package, the number of ``Any`` names and of ``getattr`` calls;
* the class bases of the memory stores (the MRO length of every class named ``*MemoryStore``);
* the files directly in ``agents/`` and its sub-packages;
* how many pairs ``duplicates`` (the tool library's command) reports in the product folders, when it is
  on the PATH.

It reads the source as text and imports nothing of simone's, so two revisions can be compared side by
side: run it twice and diff the tables.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

FLOORS = ("runtime", "providers", "workflows", "agents")


def _package(root: Path, path: Path) -> str:
    parts = path.relative_to(root).parent.parts
    return ".".join(parts[:2]) if parts and parts[0] != "agents" else ".".join(parts[:2]) or "agents"


def measure(root: Path, *, top: int = 10) -> dict[str, object]:
    """The figures for the tree at ``root``."""
    functions: list[tuple[int, str]] = []
    any_names: Counter[str] = Counter()
    getattrs: Counter[str] = Counter()
    classes: dict[str, tuple[str, list[str]]] = {}
    for floor in FLOORS:
        for path in sorted((root / floor).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            package = _package(root, path)
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    functions.append((length, f"{path.relative_to(root)}::{node.name}"))
                elif isinstance(node, ast.Name) and node.id == "Any":
                    any_names[package] += 1
                elif isinstance(node, ast.Attribute) and node.attr == "Any":
                    any_names[package] += 1
                elif (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "getattr"
                ):
                    getattrs[package] += 1
                if isinstance(node, ast.ClassDef):
                    bases = [ast.unparse(base) for base in node.bases]
                    classes[node.name] = (str(path.relative_to(root)), bases)
    functions.sort(reverse=True)

    def mro(name: str, seen: frozenset[str] = frozenset()) -> list[str]:
        if name not in classes or name in seen:
            return [name]
        out = [name]
        for base in classes[name][1]:
            for item in mro(base.split("[")[0].split(".")[-1], seen | {name}):
                if item not in out:
                    out.append(item)
        return out

    stores = {
        name: {"file": file, "bases": bases, "ancestors": len(mro(name)) - 1}
        for name, (file, bases) in classes.items()
        if name.endswith("MemoryStore") and "memory" in file
    }
    agents = sorted(
        str(p.relative_to(root / "agents"))
        for p in (root / "agents").rglob("*.py")
        if "handbook" not in p.parts
    )
    return {
        "functions": functions[:top],
        "any": dict(sorted(any_names.items())),
        "getattr": dict(sorted(getattrs.items())),
        "stores": stores,
        "agents": agents,
        "duplicates": _duplicates(root),
    }


def _duplicates(root: Path) -> str:
    tool = shutil.which("duplicates")
    if tool is None:
        return "duplicates: not on the PATH"
    lines = []
    for floor in FLOORS:
        out = subprocess.run(
            [tool, "--repo", str(root / floor), "--most", "1", "--seconds", "60"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        lines.append(f"{floor}: {out.splitlines()[0] if out else '?'}")
    return "\n".join(lines)


def show(figures: dict[str, object]) -> None:
    """Print the figures as plain tables."""
    print("## largest functions (lines)")
    for length, where in figures["functions"]:  # type: ignore[attr-defined]
        print(f"{length:5d}  {where}")
    print("\n## Any names / getattr calls per package")
    packages = sorted(set(figures["any"]) | set(figures["getattr"]))  # type: ignore[call-overload]
    print(f"{'package':32s} {'Any':>5s} {'getattr':>8s}")
    for package in packages:
        print(
            f"{package:32s} {figures['any'].get(package, 0):5d} {figures['getattr'].get(package, 0):8d}"  # type: ignore[attr-defined]
        )
    print(
        f"{'total':32s} {sum(figures['any'].values()):5d} {sum(figures['getattr'].values()):8d}"  # type: ignore[attr-defined]
    )
    print("\n## memory store classes (direct bases; ancestors within the tree, transitively)")
    for name, info in figures["stores"].items():  # type: ignore[attr-defined]
        print(
            f"{name} ({info['file']}): {len(info['bases'])} bases, {info['ancestors']} ancestors: {info['bases']}"
        )
    agents = figures["agents"]
    print(f"\n## agents/ files ({len(agents)})")  # type: ignore[arg-type]
    top = [a for a in agents if "/" not in a]  # type: ignore[union-attr]
    print(f"top level ({len(top)}): {' '.join(top)}")
    for sub in sorted({a.split("/")[0] for a in agents if "/" in a}):  # type: ignore[union-attr]
        files = [a.split("/", 1)[1] for a in agents if a.startswith(sub + "/")]  # type: ignore[union-attr]
        print(f"{sub}/ ({len(files)}): {' '.join(files)}")
    print("\n## duplicates pairs (product folders)")
    print(figures["duplicates"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", help="a git revision to measure instead of the working tree")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    root = Path(__file__).resolve().parents[1]
    if args.rev is None:
        show(measure(root, top=args.top))
        return
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            ["git", "-C", str(root), "worktree", "add", "--detach", tmp, args.rev],
            check=True,
            capture_output=True,
        )
        try:
            show(measure(Path(tmp), top=args.top))
        finally:
            subprocess.run(
                ["git", "-C", str(root), "worktree", "remove", "--force", tmp],
                check=False,
                capture_output=True,
            )


if __name__ == "__main__":
    sys.exit(main())
