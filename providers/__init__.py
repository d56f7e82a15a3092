"""simone.providers — evidence sources behind the Provider protocol, and the clients they talk to."""

from simone.providers._folder import FolderProvider as FolderProvider, Section as Section, Skipped as Skipped
from simone.providers.embeddings import (
    EmbeddingCache as EmbeddingCache,
    OllamaEmbedder as OllamaEmbedder,
    OnnxMiniLMEmbedder as OnnxMiniLMEmbedder,
    OpenAIEmbedder as OpenAIEmbedder,
    build_chain as build_chain,
)

__all__ = (
    "EmbeddingCache",
    "FolderProvider",
    "OllamaEmbedder",
    "OnnxMiniLMEmbedder",
    "OpenAIEmbedder",
    "Section",
    "Skipped",
    "build_chain",
)
