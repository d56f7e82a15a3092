"""The MiniLM helpers live in one module that the embedder and the int8 build both import: no circle."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3] / "providers" / "embeddings"


def _imports(path: Path) -> set[str]:
    """Every ``simone.providers.embeddings.*`` module the file imports, at the top or inside a function."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("simone.providers.embeddings")}


def test_minilm_imports_neither_the_embedder_nor_the_build() -> None:
    for path in (ROOT / "minilm").glob("*.py"):
        outside = {
            name for name in _imports(path) if not name.startswith("simone.providers.embeddings.minilm")
        }
        assert outside == set(), path.name


def test_the_build_does_not_import_the_embedder() -> None:
    assert "simone.providers.embeddings._onnx" not in _imports(ROOT / "quantize.py")


def test_both_take_the_shared_helpers_from_minilm() -> None:
    from simone.providers.embeddings import _onnx, minilm, quantize

    assert quantize.load_tokenizer is minilm.load_tokenizer is _onnx.load_tokenizer
    assert quantize.mean_pool is minilm.mean_pool is _onnx.mean_pool
    assert quantize.open_session is minilm.open_session is _onnx.open_session
    assert quantize.sha256_file is minilm.sha256_file is _onnx.sha256_file
