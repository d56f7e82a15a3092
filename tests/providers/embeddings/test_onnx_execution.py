"""Issue 19 (3): the bundled ONNX embedder runs on a GPU execution provider when onnxruntime offers one.

This machine has no GPU: the selection is checked on given provider lists, and the fallback for
real — a session asked for CUDA on a CPU-only onnxruntime runs on the CPU, in the same space, with the
same vectors, and ``simone doctor`` says where the model runs.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path

import anyio
import numpy as np
import onnxruntime
from rich.console import Console
from simone.agents.cli._doctor import gather, render
from simone.providers.embeddings import ONNX_SPACE, OnnxMiniLMEmbedder
from simone.providers.embeddings.minilm import CPU_PROVIDER, GPU_PROVIDERS, execution_providers
from simone.runtime import Settings

TEXTS = ["the notice period is one month", "Telomeres shorten with each cell division.", "ok"]


def test_the_first_gpu_provider_offered_comes_first_and_the_cpu_always_last() -> None:
    assert execution_providers([CPU_PROVIDER]) == [CPU_PROVIDER]
    assert execution_providers(["AzureExecutionProvider", CPU_PROVIDER]) == [CPU_PROVIDER]
    offered = ["TensorrtExecutionProvider", "ROCMExecutionProvider", "CUDAExecutionProvider", CPU_PROVIDER]
    assert execution_providers(offered) == ["CUDAExecutionProvider", CPU_PROVIDER]
    assert execution_providers(["CoreMLExecutionProvider", CPU_PROVIDER]) == [
        "CoreMLExecutionProvider",
        CPU_PROVIDER,
    ]
    here = onnxruntime.get_available_providers()
    chosen = execution_providers()
    assert chosen[-1] == CPU_PROVIDER
    assert chosen[:-1] == [name for name in GPU_PROVIDERS if name in here][:1]


def test_a_gpu_provider_that_does_not_load_falls_back_to_the_cpu_with_the_same_vectors() -> None:
    async def embed(embedder: OnnxMiniLMEmbedder) -> np.ndarray:
        async with embedder:
            return await embedder.embed(TEXTS)

    plain = OnnxMiniLMEmbedder(intra_op_threads=1)
    cpu_vectors = anyio.run(embed, plain)
    asked = OnnxMiniLMEmbedder(intra_op_threads=1, providers=["CUDAExecutionProvider", CPU_PROVIDER])
    with warnings.catch_warnings(record=True):  # onnxruntime warns that CUDA is not available here
        warnings.simplefilter("always")
        gpu_vectors = anyio.run(embed, asked)
    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        assert asked.execution_provider == "CUDAExecutionProvider"
        assert float(np.abs(gpu_vectors - cpu_vectors).max()) < 1e-2
    else:
        assert asked.execution_provider == CPU_PROVIDER
        assert "CUDAExecutionProvider was asked for but did not load" in (asked.execution_note or "")
        assert np.array_equal(gpu_vectors, cpu_vectors)
    assert asked.space == plain.space == ONNX_SPACE
    assert plain.execution_provider == execution_providers()[0]


def test_doctor_says_where_the_bundled_model_runs(tmp_path: Path) -> None:
    settings = Settings(data_dir=str(tmp_path / "data"), embeddings={"chain": ["onnx"], "cache": False})
    report = anyio.run(gather, settings)
    (onnx,) = [entry for entry in report["embedders"] if entry["space"] == ONNX_SPACE.key]
    assert onnx["ok"]
    gpu_here = any(name in onnxruntime.get_available_providers() for name in GPU_PROVIDERS)
    if gpu_here:
        assert "(GPU)" in onnx["execution"]
    else:
        assert onnx["execution"].startswith("CPU: onnxruntime offers no GPU execution provider")
        assert "simone[gpu]" in onnx["execution"]
    out = io.StringIO()
    render(report, Console(file=out, width=200, color_system=None))
    assert f"{ONNX_SPACE.key} runs on {onnx['execution']}" in out.getvalue()
