"""Embedders (OpenAI-compatible, bundled ONNX, Ollama, multilingual USE), the embedding cache, the chain builder."""

from simone.providers.embeddings._build import build_chain as build_chain
from simone.providers.embeddings._cache import (
    CachedEmbedding as CachedEmbedding,
    EmbeddingCache as EmbeddingCache,
    text_digest as text_digest,
)
from simone.providers.embeddings._ollama import OllamaEmbedder as OllamaEmbedder
from simone.providers.embeddings._onnx import OnnxMiniLMEmbedder as OnnxMiniLMEmbedder
from simone.providers.embeddings._openai import OpenAIEmbedder as OpenAIEmbedder
from simone.providers.embeddings._usem3 import (
    USEM3_SPACE as USEM3_SPACE,
    MultilingualEmbedder as MultilingualEmbedder,
)
from simone.providers.embeddings.minilm import (
    ONNX_SPACE as ONNX_SPACE,
    load_tokenizer as load_tokenizer,
)

__all__ = (
    "CachedEmbedding",
    "EmbeddingCache",
    "MultilingualEmbedder",
    "ONNX_SPACE",
    "OllamaEmbedder",
    "OnnxMiniLMEmbedder",
    "OpenAIEmbedder",
    "USEM3_SPACE",
    "build_chain",
    "load_tokenizer",
    "text_digest",
)
