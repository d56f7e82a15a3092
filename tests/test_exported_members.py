"""Every face says exactly what it exports (in the manner of anyio's ``test_all_attributes``).

A *face* is a public ``simone.*`` module (no ``_``-prefixed part in its dotted name) with an ``__all__``;
the walk finds them all with :func:`pkgutil.walk_packages`, so a new sub-package is checked without being
listed here. For each face:

* ``__all__`` has no duplicates and is sorted (plain code-point order, ``sorted()``), so a diff of a face
  shows what was added or removed and nothing else;
* every name in ``__all__`` exists on the face and none is private;
* every public name the face binds (defines, assigns or imports at its top level, read from its source)
  is in ``__all__``; the two exceptions, each with its reason, are in :func:`_unlisted_reason`;
* no public name on the face, listed or not, is a private module object (a face never hands out
  ``simone.x._y``; it names the things inside it).

A package that binds anything must have an ``__all__``; data-only packages (an empty or docstring-only
``__init__.py``, such as the lexicon) have nothing to export.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path
from types import ModuleType

import pytest

LAYERS = ("simone.runtime", "simone.providers", "simone.workflows", "simone.agents")


def _is_private(dotted: str) -> bool:
    return any(part.startswith("_") for part in dotted.split("."))


def _public_modules() -> list[str]:
    names: list[str] = []
    for layer in LAYERS:
        package = importlib.import_module(layer)
        names.append(layer)
        names.extend(
            name
            for _, name, _ in pkgutil.walk_packages(package.__path__, f"{layer}.")
            if not _is_private(name)
        )
    return sorted(names)


PUBLIC_MODULES = _public_modules()
FACES = [name for name in PUBLIC_MODULES if hasattr(importlib.import_module(name), "__all__")]


def _bound_at_top_level(module: ModuleType) -> dict[str, str]:
    """Each name the module's own source binds at its top level, with how (``def``, ``=``, ``import``)."""
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    bound: dict[str, str] = {}

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound[node.name] = "def"
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, ast.Name):
                            bound[leaf.id] = "="
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    bound[alias.asname or alias.name.split(".", 1)[0]] = "import"
            elif isinstance(node, ast.ImportFrom):
                how = "__future__" if node.module == "__future__" else "import"
                for alias in node.names:
                    bound[alias.asname or alias.name] = how
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return bound


def _unlisted_reason(module: ModuleType, name: str, how: str) -> str | None:
    """Why a public name bound at the face may stay out of ``__all__``; None when it may not."""
    if how == "__future__":
        return "a compiler directive (`from __future__ import annotations`), not a value"
    if how == "import" and not hasattr(module, "__path__"):
        return "a plain module's imports are what it uses; only a package's face re-exports"
    return None


@pytest.mark.parametrize("name", FACES)
def test_all_is_sorted_unique_and_resolves(name: str) -> None:
    module = importlib.import_module(name)
    exported = list(module.__all__)
    assert len(set(exported)) == len(exported), f"duplicates in {name}.__all__"
    assert exported == sorted(exported), f"{name}.__all__ is not sorted; expected {sorted(exported)}"
    missing = [attr for attr in exported if not hasattr(module, attr)]
    assert not missing, f"{name}.__all__ names what the face lacks: {missing}"
    private = [attr for attr in exported if attr.startswith("_")]
    assert not private, f"{name}.__all__ exports private names: {private}"


@pytest.mark.parametrize("name", FACES)
def test_every_public_name_bound_at_the_face_is_listed(name: str) -> None:
    module = importlib.import_module(name)
    exported = set(module.__all__)
    unlisted = sorted(
        attr
        for attr, how in _bound_at_top_level(module).items()
        if not attr.startswith("_") and attr not in exported and _unlisted_reason(module, attr, how) is None
    )
    assert not unlisted, f"{name} binds public names that are not in __all__: {unlisted}"
    # What the source does not show (a name set through globals(), a loop, a star import) shows up here.
    defined_here = sorted(
        attr
        for attr, value in vars(module).items()
        if not attr.startswith("_")
        and not isinstance(value, ModuleType)
        and getattr(value, "__module__", None) == name
        and attr not in exported
    )
    assert not defined_here, f"{name} defines public names that are not in __all__: {defined_here}"


@pytest.mark.parametrize("name", FACES)
def test_no_face_hands_out_a_private_module(name: str) -> None:
    module = importlib.import_module(name)
    leaks = sorted(
        f"{attr} = {value.__name__}"
        for attr, value in vars(module).items()
        if not attr.startswith("_") and isinstance(value, ModuleType) and _is_private(value.__name__)
    )
    assert not leaks, f"{name} exposes private modules under public names: {leaks}"


# A plain public module (a tool run with -m) need not declare __all__: only packages are faces.
PACKAGES_WITHOUT_FACE = [
    n for n in PUBLIC_MODULES if n not in FACES and hasattr(importlib.import_module(n), "__path__")
]


@pytest.mark.parametrize("name", PACKAGES_WITHOUT_FACE)
def test_a_package_that_binds_names_has_a_face(name: str) -> None:
    module = importlib.import_module(name)
    bound = {attr for attr, how in _bound_at_top_level(module).items() if how != "__future__"}
    assert not bound, f"{name} binds {sorted(bound)} but declares no __all__"


def test_runtime_sub_faces_are_the_one_home_of_their_names() -> None:
    """Tuning constants and mechanism live on ``simone.runtime.text`` / ``.ranking``, never also on top."""
    runtime = importlib.import_module("simone.runtime")
    for sub in ("text", "ranking"):
        face = importlib.import_module(f"simone.runtime.{sub}")
        assert getattr(runtime, sub) is face
        both = sorted(set(runtime.__all__) & set(face.__all__))
        assert not both, f"exported by simone.runtime and simone.runtime.{sub}: {both}"
    for tuning in ("LEXICAL_PIN", "VOTE_SHARPNESS", "RRF_K", "BM25_TITLE_WEIGHT"):
        assert not hasattr(runtime, tuning), f"simone.runtime.{tuning} should live on a sub-face"


def test_the_walk_sees_every_layer_and_the_sub_faces() -> None:
    assert {"simone.runtime.text", "simone.runtime.ranking", *LAYERS} <= set(FACES)
