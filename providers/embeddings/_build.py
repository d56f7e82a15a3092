"""Build the embedding chain from the settings: cloud → bundled ONNX → local server."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
from simone.providers.embeddings._ollama import OllamaEmbedder
from simone.providers.embeddings._onnx import OnnxMiniLMEmbedder
from simone.providers.embeddings._openai import OPENAI_BASE_URL, OpenAIEmbedder
from simone.providers.embeddings._usem3 import MultilingualEmbedder
from simone.runtime import ConfigError, Embedder, EmbeddingChain, EmbeddingSettings


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
      ``onnx_variant`` ``auto`` (the default) it runs the gated int8 build, built once per user in the
      shared cache folder (``$SIMONE_MODELS_DIR``, else e.g. ``~/.cache/simone/models``) at the first
      start-up of any data directory, else the packaged graph;
    * ``ollama`` joins only when its base URL is set.

    ``settings.extra_spaces`` become the chain's ``extras`` (spaces collections carry beside the
    chain's own): ``multilingual`` is the offline Universal Sentence Encoder (a missing package does
    not fail here nor when the chain is entered, only when that space is embedded), ``ollama`` and
    ``openai`` that server's model, which must then be configured. A server named in
    ``extra_spaces`` leaves the *default* chain; an explicitly set ``chain`` must not list it.

    Nothing is opened here; enter the chain (``async with chain:``) to start the embedders.

    Args:
        settings: the ``[embeddings]`` section.
        client: an ``httpx.AsyncClient`` for the HTTP embedders (each opens its own otherwise).
        onnx_limiter: bounds concurrent ONNX runs (shared with other users of the model if given).
        data_dir: the data directory (``Settings.data_dir``); without it the packaged graph runs.

    Raises:
        ConfigError: a configured server's model has no known dimension and none is set; an extra
            space's server is not configured; a server is listed both in ``chain`` and in
            ``extra_spaces``.
    """
    if settings.onnx_variant == "quantized" and data_dir is None and "onnx" in settings.chain:
        raise ConfigError("onnx_variant 'quantized' needs a data directory to build and keep the int8 graph")
    chain_names, extra_names = _space_names(settings)
    embedders = _chain_embedders(
        settings, chain_names, client=client, onnx_limiter=onnx_limiter, data_dir=data_dir
    )
    return EmbeddingChain(
        embedders,
        extras=_extra_embedders(settings, extra_names, client),
        window=settings.health_window,
        min_samples=min(settings.health_min_samples, settings.health_window),
    )


def _space_names(settings: EmbeddingSettings) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The chain's embedder names and the extra spaces' names, deduplicated and checked for overlap."""
    extra_names = tuple(dict.fromkeys(settings.extra_spaces))
    chain_names = tuple(dict.fromkeys(settings.chain))
    if "chain" in settings.model_fields_set:
        both = [name for name in extra_names if name in chain_names]
        if both:
            keep = [name for name in chain_names if name not in both]
            raise ConfigError(
                f"[embeddings] lists {json.dumps(both)[1:-1]} both in chain and in extra_spaces, so its "
                "space would be both a collection's own space and an extra one; remove it from one of "
                f"them (e.g. chain = {json.dumps(keep)})"
            )
    else:
        # the default chain names every server; one the owner made an extra space leaves it
        chain_names = tuple(name for name in chain_names if name not in extra_names)
    return chain_names, extra_names


def _chain_embedders(
    settings: EmbeddingSettings,
    chain_names: tuple[str, ...],
    *,
    client: httpx.AsyncClient | None,
    onnx_limiter: anyio.CapacityLimiter | None,
    data_dir: str | Path | None,
) -> list[Embedder]:
    """The chain's own embedders, in order; a server that is not configured is left out."""
    embedders: list[Embedder] = []
    models_dir: Path | None = None
    if data_dir is not None and "onnx" in chain_names:
        # imported here: `python -m simone.providers.embeddings.quantize` must not find itself imported
        from simone.providers.embeddings.quantize import default_models_dir

        models_dir = default_models_dir()
    for name in chain_names:
        if name == "openai":
            if settings.openai_api_key is None and settings.openai_base_url is None:
                continue
            embedders.append(_openai(settings, client))
        elif name == "onnx":
            embedders.append(
                OnnxMiniLMEmbedder(
                    variant=settings.onnx_variant if data_dir is not None else "reference",
                    models_dir=models_dir,
                    intra_op_threads=settings.onnx_threads,
                    batch_size=settings.onnx_batch_size,
                    limiter=onnx_limiter,
                )
            )
        elif name == "ollama":
            if settings.ollama_base_url is None:
                continue
            embedders.append(_ollama(settings, settings.ollama_base_url, client))
    return embedders


def _extra_embedders(
    settings: EmbeddingSettings, extra_names: tuple[str, ...], client: httpx.AsyncClient | None
) -> list[Embedder]:
    """The embedders of the extra spaces, in order.

    Raises:
        ConfigError: an extra space's server is not configured.
    """
    extras: list[Embedder] = []
    for extra in extra_names:
        if extra == "multilingual":
            extras.append(MultilingualEmbedder(threads=settings.multilingual_threads))
        elif extra == "ollama":
            if settings.ollama_base_url is None:
                raise ConfigError(
                    "extra_spaces lists 'ollama' but no Ollama server is configured: set ollama_base_url "
                    "(SIMONE_EMBEDDINGS__OLLAMA_BASE_URL) and ollama_model in [embeddings], or remove "
                    "'ollama' from extra_spaces"
                )
            extras.append(_ollama(settings, settings.ollama_base_url, client))
        elif extra == "openai":
            if settings.openai_api_key is None and settings.openai_base_url is None:
                raise ConfigError(
                    "extra_spaces lists 'openai' but no OpenAI-compatible endpoint is configured: set "
                    "SIMONE_EMBEDDINGS__OPENAI_API_KEY or openai_base_url in [embeddings], or remove "
                    "'openai' from extra_spaces"
                )
            extras.append(_openai(settings, client))
    return extras


def _openai(settings: EmbeddingSettings, client: httpx.AsyncClient | None) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        settings.openai_model,
        base_url=settings.openai_base_url or OPENAI_BASE_URL,
        api_key=settings.openai_api_key,
        dimensions=settings.openai_dimensions,
        query_prefix=settings.openai_query_prefix,
        document_prefix=settings.openai_document_prefix,
        client=client,
        batch_size=settings.batch_size,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
        max_retry_wait_s=settings.max_retry_wait_s,
        concurrency=settings.server_concurrency,
    )


def _ollama(settings: EmbeddingSettings, base_url: str, client: httpx.AsyncClient | None) -> OllamaEmbedder:
    return OllamaEmbedder(
        settings.ollama_model,
        base_url=base_url,
        dimensions=settings.ollama_dimensions,
        query_prefix=settings.ollama_query_prefix,
        document_prefix=settings.ollama_document_prefix,
        client=client,
        batch_size=settings.batch_size,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
        max_retry_wait_s=settings.max_retry_wait_s,
    )
