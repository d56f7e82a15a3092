"""The int8 build of the bundled model: reproducible, gated, cached in the data dir, with a fallback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import anyio
import numpy as np
import pytest
from simone.providers.embeddings import ONNX_SPACE, OnnxMiniLMEmbedder, build_chain, quantize
from simone.providers.embeddings.minilm import packaged_model_path
from simone.runtime import ConfigError, EmbeddingSettings, ProviderUnavailable

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "The new movie is so great.",
    "Antibiotic resistance spreads through horizontal gene transfer between bacteria.",
    " ".join(["A long passage about retrieval, ranking and embeddings in many words."] * 20),
]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("models")
    choice = quantize.prepare(packaged_model_path(), directory)
    assert choice.variant == "quantized", choice.reason
    return directory


def _embed(embedder: OnnxMiniLMEmbedder, texts: list[str]) -> np.ndarray:
    async def go() -> np.ndarray:
        async with embedder:
            return await embedder.embed(texts)

    return anyio.run(go)


@pytest.mark.slow
def test_the_build_passes_its_gate_and_is_reused(models_dir: Path) -> None:
    (report_path,) = models_dir.glob("*.json")
    report = json.loads(report_path.read_text())
    assert report["passed"] is True
    assert report["mean_cosine"] >= quantize.GATE_MIN_COSINE
    assert report["sentences"] >= 50
    graph = report_path.with_suffix(".onnx")
    assert quantize.sha256_file(graph) == report["model_sha256"]
    assert graph.name == quantize.build_name(report["source_sha256"])

    stamp = graph.stat().st_mtime_ns
    again = quantize.prepare(packaged_model_path(), models_dir)
    assert again.variant == "quantized" and again.path == graph
    assert graph.stat().st_mtime_ns == stamp, "a valid build is not rebuilt"
    assert "gate passed" in again.reason


@pytest.mark.slow
def test_the_build_computes_in_int8_without_nan_guards(models_dir: Path) -> None:
    import onnx

    (graph,) = models_dir.glob("*.onnx")
    ops = Counter(node.op_type for node in onnx.load(str(graph)).graph.node)
    assert ops["MatMulInteger"] == 30, "the weight matmuls (Q, K, V, O, up, down) of layers 2-6 are int8"
    assert ops["IsNaN"] == 0 and ops["Where"] == 1, "only the attention-mask Where is left"
    packaged = Counter(node.op_type for node in onnx.load(str(packaged_model_path())).graph.node)
    assert packaged["IsNaN"] == 6 and packaged["MatMulInteger"] == 0


@pytest.mark.slow
def test_the_quantised_embedder_agrees_with_the_reference(models_dir: Path) -> None:
    fast = OnnxMiniLMEmbedder(variant="auto", models_dir=models_dir)
    slow = OnnxMiniLMEmbedder(variant="reference")
    quick, exact = _embed(fast, SENTENCES), _embed(slow, SENTENCES)

    cosines = np.sum(quick * exact, axis=1)
    assert cosines.mean() >= 0.99 and cosines.min() >= 0.97
    np.testing.assert_allclose(np.linalg.norm(quick, axis=1), 1.0, atol=1e-5)
    similarity = quick @ quick.T
    assert similarity[0, 1] > similarity[0, 2] + 0.2 and similarity[2, 3] > similarity[2, 4] + 0.2
    assert fast.space == slow.space == ONNX_SPACE


@pytest.mark.slow
def test_the_variant_in_use_is_reported(models_dir: Path) -> None:
    async def go() -> list[tuple[str | None, str | None]]:
        seen = []
        for variant in ("auto", "quantized", "reference"):
            async with OnnxMiniLMEmbedder(variant=variant, models_dir=models_dir) as embedder:
                seen.append((embedder.variant, embedder.variant_reason))
                assert embedder.model_path.is_file()
        return seen

    (auto, forced, reference) = anyio.run(go)
    assert auto[0] == forced[0] == "quantized" and "gate passed" in (auto[1] or "")
    assert reference[0] == "reference"


def test_a_failed_gate_falls_back_and_is_remembered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def poor_build(source: Path, target: Path) -> None:
        target.write_bytes(source.read_bytes())  # a real graph; the gate below scores it too low

    monkeypatch.setattr(quantize, "build_quantized", poor_build)
    monkeypatch.setattr(quantize, "gate", lambda reference, candidate, threads=2: (0.95, 0.80))
    choice = quantize.prepare(packaged_model_path(), tmp_path)
    assert choice.variant == "reference" and choice.path == packaged_model_path()
    assert "0.9500 < 0.99" in choice.reason
    assert not list(tmp_path.glob("*.onnx")), "a graph that failed its gate is deleted"

    def must_not_build(source: Path, target: Path) -> None:
        raise AssertionError("a failed gate is remembered, not rebuilt")

    monkeypatch.setattr(quantize, "build_quantized", must_not_build)
    assert quantize.prepare(packaged_model_path(), tmp_path).variant == "reference"

    auto = OnnxMiniLMEmbedder(variant="auto", models_dir=tmp_path)
    assert _embed(auto, ["still works"]).shape == (1, 384)
    with pytest.raises(ProviderUnavailable, match="failed its gate"):
        _embed(OnnxMiniLMEmbedder(variant="quantized", models_dir=tmp_path), ["x"])


def test_a_build_error_or_missing_onnx_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_onnx(source: Path, target: Path) -> None:
        raise ImportError("No module named 'onnx'")

    monkeypatch.setattr(quantize, "build_quantized", no_onnx)
    choice = quantize.prepare(packaged_model_path(), tmp_path / "a")
    assert choice.variant == "reference" and "needs the 'onnx' package" in choice.reason

    def broken(source: Path, target: Path) -> None:
        raise RuntimeError("unsupported operator")

    monkeypatch.setattr(quantize, "build_quantized", broken)
    choice = quantize.prepare(packaged_model_path(), tmp_path / "b")
    assert choice.variant == "reference" and "unsupported operator" in choice.reason
    assert choice.report is not None and not choice.report.passed


def test_variant_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs models_dir"):
        OnnxMiniLMEmbedder(variant="quantized")
    with pytest.raises(ConfigError, match="unknown ONNX variant"):
        OnnxMiniLMEmbedder(variant="fast")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="needs a data directory"):
        build_chain(EmbeddingSettings(onnx_variant="quantized"))

    auto_without_dir = OnnxMiniLMEmbedder(variant="auto")
    _embed(auto_without_dir, ["x"])  # falls back to the packaged graph

    chain = build_chain(EmbeddingSettings(), data_dir=tmp_path)
    (onnx,) = chain.embedders
    assert isinstance(onnx, OnnxMiniLMEmbedder)
    assert onnx.variant is None, "nothing is built or opened before start-up"
    assert not (tmp_path / "models").exists()


def test_the_build_prints_nothing_and_writes_nothing_outside_its_folder(tmp_path: Path) -> None:
    """The quantiser's "consider pre-processing" warning used to reach stderr at the first start-up."""
    temp, models = tmp_path / "tmp", tmp_path / "models"
    temp.mkdir()
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from simone.providers.embeddings import quantize\n"
        "from simone.providers.embeddings.minilm import packaged_model_path\n"
        "quantize.build_quantized(packaged_model_path(), Path(sys.argv[1]) / 'int8.onnx')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(models)],
        env={**os.environ, "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == "", "the build printed something"
    assert sorted(p.name for p in models.iterdir()) == ["int8.onnx"], "no scratch folder is left"
    assert not [p for p in temp.iterdir() if p.name.startswith(("ort.quant.", "pre.quant."))]


def test_an_interrupted_build_keeps_its_temporary_files_in_its_folder_and_removes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupted first-run build used to leave onnxruntime's ort.quant.* folders in TMPDIR."""
    import tempfile

    from onnxruntime import quantization
    from onnxruntime.quantization import quant_utils

    temp, models = tmp_path / "tmp", tmp_path / "models"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    made: list[Path] = []

    def interrupted(model_input: Path, model_output: Path, **options: object) -> None:
        # onnxruntime makes a folder for a shape-inferred copy; Ctrl-C comes before its own clean-up
        made.append(Path(quant_utils.tempfile.mkdtemp(prefix="ort.quant.")))
        (made[0] / "model.onnx").write_bytes(b"x" * 1024)
        raise KeyboardInterrupt

    monkeypatch.setattr(quantization, "quantize_dynamic", interrupted)
    with pytest.raises(KeyboardInterrupt):
        quantize.build_quantized(packaged_model_path(), models / "int8.onnx")

    assert made and made[0].parent.parent == models, "the quantiser's temporary folder was in the build's"
    assert list(models.iterdir()) == [], "the interrupted build left nothing behind"
    assert list(temp.iterdir()) == []
    assert quant_utils.tempfile is tempfile, "the quantiser's tempfile is put back"


def test_a_scratch_folder_left_by_a_killed_build_is_removed_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stale = tmp_path / ".build-killed"
    stale.mkdir()
    (stale / "folded.onnx").write_bytes(b"x")
    old = time.time() - 2 * quantize.STALE_SCRATCH_S
    os.utime(stale, (old, old))
    running = tmp_path / ".build-another-process"
    running.mkdir()

    from onnxruntime import quantization

    def fails(*args: object, **kwargs: object) -> None:
        raise RuntimeError("stop here")

    monkeypatch.setattr(quantization, "quantize_dynamic", fails)
    with pytest.raises(RuntimeError, match="stop here"):
        quantize.build_quantized(packaged_model_path(), tmp_path / "int8.onnx")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".build-another-process"]


def test_a_models_folder_that_cannot_be_written_falls_back_without_failing(tmp_path: Path) -> None:
    """A read-only data dir used to make the bundled embedder's start-up raise (the report's write)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    choice = quantize.prepare(packaged_model_path(), blocker / "models")
    assert choice.variant == "reference" and choice.path == packaged_model_path()
    assert "build failed" in choice.reason and "not remembered" in choice.reason

    embedder = OnnxMiniLMEmbedder(variant="auto", models_dir=blocker / "models")
    assert _embed(embedder, ["still works"]).shape == (1, 384)
