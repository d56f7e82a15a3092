"""Build the embedding chain from the settings: cloud → bundled ONNX → local server."""

from __future__ import annotations

from pathlib import Path

import anyio
import httpx
from simone.providers.embeddings._ollama import OllamaEmbedder
from simone.providers.embeddings._onnx import OnnxMiniLMEmbedder
from simone.providers.embeddings._openai import OPENAI_BASE_URL, OpenAIEmbedder
from simone.runtime import ConfigError, Embedder, EmbeddingChain, EmbeddingSettings

#: Where the int8 build of the bundled model is kept, inside the data directory.
MODELS_DIR = "models"


def build_chain(
    settings: EmbeddingSettings,
    *,
    client: httpx.AsyncClient | None = None,
    onnx_limiter: anyio.CapacityLimiter | None = None,
    data_dir: str | Path | None = None,
) -> EmbeddingChain:
    """The chain the settings describe, in the order of ``settings.chain``.

    * ``openai`` joins only when configured: a key (then the public API unless a base URL is set) or
      a base URL (a compatible server that may need no key);
    * ``onnx`` (the bundled all-MiniLM-L6-v2) always joins when listed; with a ``data_dir`` and
      ``onnx_variant`` ``auto`` (the default) it runs the gated int8 build kept in
      ``<data_dir>/models`` (built at its first start-up), else the packaged graph;
    * ``ollama`` joins only when its base URL is set.

    Nothing is opened here; enter the chain (``async with chain:``) to start the embedders.

    Args:
        settings: the ``[embeddings]`` section.
        client: an ``httpx.AsyncClient`` for the HTTP embedders (each opens its own otherwise).
        onnx_limiter: bounds concurrent ONNX runs (shared with other users of the model if given).
        data_dir: the data directory (``Settings.data_dir``); without it the packaged graph runs.

    Raises:
        ConfigError: a configured server's model has no known dimension and none is set.
    """
    if settings.onnx_variant == "quantized" and data_dir is None and "onnx" in settings.chain:
        raise ConfigError("onnx_variant 'quantized' needs a data directory to build and keep the int8 graph")
    embedders: list[Embedder] = []
    for name in dict.fromkeys(settings.chain):
        if name == "openai":
            if settings.openai_api_key is None and settings.openai_base_url is None:
                continue
            embedders.append(
                OpenAIEmbedder(
                    settings.openai_model,
                    base_url=settings.openai_base_url or OPENAI_BASE_URL,
                    api_key=settings.openai_api_key,
                    dimensions=settings.openai_dimensions,
                    client=client,
                    batch_size=settings.batch_size,
                    timeout_s=settings.timeout_s,
                    max_retries=settings.max_retries,
                    max_retry_wait_s=settings.max_retry_wait_s,
                )
            )
        elif name == "onnx":
            embedders.append(
                OnnxMiniLMEmbedder(
                    variant=settings.onnx_variant if data_dir is not None else "reference",
                    models_dir=Path(data_dir) / MODELS_DIR if data_dir is not None else None,
                    intra_op_threads=settings.onnx_threads,
                    batch_size=settings.onnx_batch_size,
                    limiter=onnx_limiter,
                )
            )
        elif name == "ollama":
            if settings.ollama_base_url is None:
                continue
            embedders.append(
                OllamaEmbedder(
                    settings.ollama_model,
                    base_url=settings.ollama_base_url,
                    dimensions=settings.ollama_dimensions,
                    client=client,
                    batch_size=settings.batch_size,
                    timeout_s=settings.timeout_s,
                    max_retries=settings.max_retries,
                    max_retry_wait_s=settings.max_retry_wait_s,
                )
            )
    return EmbeddingChain(
        embedders,
        window=settings.health_window,
        min_samples=min(settings.health_min_samples, settings.health_window),
    )
