"""simone.providers — evidence sources behind the Provider protocol, and the clients they talk to."""

from simone.providers._folder import FolderProvider as FolderProvider, Section as Section, Skipped as Skipped
from simone.providers.embeddings import (
    EmbeddingCache as EmbeddingCache,
    OllamaEmbedder as OllamaEmbedder,
    OnnxMiniLMEmbedder as OnnxMiniLMEmbedder,
    OpenAIEmbedder as OpenAIEmbedder,
    build_chain as build_chain,
)
from simone.providers.memory import (
    MEMORY_TOOLS as MEMORY_TOOLS,
    MemoryProvider as MemoryProvider,
    MemoryStore as MemoryStore,
    SessionMemoryProvider as SessionMemoryProvider,
    SessionStore as SessionStore,
    SQLiteMemoryStore as SQLiteMemoryStore,
)

__all__ = (
    "EmbeddingCache",
    "FolderProvider",
    "MEMORY_TOOLS",
    "MemoryProvider",
    "MemoryStore",
    "OllamaEmbedder",
    "OnnxMiniLMEmbedder",
    "OpenAIEmbedder",
    "SQLiteMemoryStore",
    "Section",
    "SessionMemoryProvider",
    "SessionStore",
    "Skipped",
    "build_chain",
)
