"""Dependencies point down: runtime ← providers ← workflows ← agents. Parse every module and check.

Three rules, all read from the source (AST), for every product module:

* **floors**: a module imports only its own layer or the layers below it, and never a bare folder name;
* **private modules stay home**: a private module (or a private name) ``P._x`` is part of package ``P``'s
  implementation, so only modules inside ``P``'s subtree (``P`` itself and its sub-packages) may import it.
  Every other module goes through a face. So ``simone.runtime.ranking._legs`` may use
  ``simone.runtime._contracts`` (it is inside ``simone.runtime``), but ``simone.runtime._router`` must take
  ``simone.runtime.ranking``'s face, and no provider may import ``simone.runtime._chain``;
* **no import circles**: the graph of top-level imports between product modules is acyclic.
"""

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


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(("simone", *parts))


def _package_of(path: Path) -> str:
    """The package a module belongs to: its folder (for ``__init__.py``, the package itself)."""
    return ".".join(("simone", *path.parent.relative_to(ROOT).parts))


def _private_owner(dotted: str) -> str | None:
    """The package whose private ``dotted`` is (``simone.a.b`` for ``simone.a.b._x.y``); None if public."""
    parts = dotted.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_"):
            return ".".join(parts[:i])
    return None


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_private_modules_are_imported_only_inside_their_package(path: Path) -> None:
    home = _package_of(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    problems = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            targets = [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            owner = _private_owner(target)
            if owner is None or not owner.startswith("simone."):
                continue
            if home != owner and not home.startswith(owner + "."):
                problems.append(
                    f"line {node.lineno}: {home} imports {target}, private to {owner}; use {owner}'s face"
                )
    assert not problems, "\n".join(problems)


def _top_level_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: the module body, inside if/try, not under
    ``if TYPE_CHECKING:`` and not inside functions (those run later, once every module is loaded)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            test = node.test
            if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
            ):
                continue
            found += _top_level_imports(node.body) + _top_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            found += _top_level_imports(node.body) + _top_level_imports(node.orelse)
            found += _top_level_imports(node.finalbody)
            for handler in node.handlers:
                found += _top_level_imports(handler.body)
    return found


def _import_graph() -> dict[str, set[str]]:
    """Module → the product modules its top-level imports execute.

    ``import a.b`` and ``from a import b`` (b a module) point at ``a.b``; ``from a import name`` points at
    ``a`` (its ``__init__`` must have bound ``name``). The implicit import of a parent package is left out:
    Python binds a half-initialised parent, so a child importing beside its parent is not a circle.
    """
    paths = {_module_name(path): path for path in _modules()}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges: set[str] = set()
        for node in _top_level_imports(tree.body):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in paths)
                continue
            if node.level or not node.module:
                continue
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & paths.keys()
            edges |= submodules
            if node.module in paths and len(submodules) < len(node.names):
                edges.add(node.module)
        edges.discard(name)
        graph[name] = edges
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_import_circles_among_product_modules() -> None:
    graph = _import_graph()
    assert len(graph) == len(_modules())
    assert not _circles(graph), f"import circles: {_circles(graph)}"


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []


def test_the_checker_sees_every_layer() -> None:
    seen = {p.relative_to(ROOT).parts[0] for p in _modules()}
    assert seen == set(FLOORS)
