"""simone.providers — evidence sources behind the Provider protocol, and the clients they talk to.

Importing the package is cheap: each name is imported from its module the first time it is used
(PEP 562), so ``simone search`` does not import the memory stores and ``simone memory`` not the
document index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING as _TYPE_CHECKING

from simone.runtime import lazy_face as _lazy_face

if _TYPE_CHECKING:
    from simone.providers._discovery import (
        builtin_factories as builtin_factories,
        discover_provider_packages as discover_provider_packages,
    )
    from simone.providers._folder import (
        FolderProvider as FolderProvider,
        Section as Section,
        Skipped as Skipped,
    )
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
    "builtin_factories",
    "discover_provider_packages",
)


_HOMES: dict[str, str] = {
    "EmbeddingCache": "simone.providers.embeddings",
    "FolderProvider": "simone.providers._folder",
    "MEMORY_TOOLS": "simone.providers.memory",
    "MemoryProvider": "simone.providers.memory",
    "MemoryStore": "simone.providers.memory",
    "OllamaEmbedder": "simone.providers.embeddings",
    "OnnxMiniLMEmbedder": "simone.providers.embeddings",
    "OpenAIEmbedder": "simone.providers.embeddings",
    "SQLiteMemoryStore": "simone.providers.memory",
    "Section": "simone.providers._folder",
    "SessionMemoryProvider": "simone.providers.memory",
    "SessionStore": "simone.providers.memory",
    "Skipped": "simone.providers._folder",
    "build_chain": "simone.providers.embeddings",
    "builtin_factories": "simone.providers._discovery",
    "discover_provider_packages": "simone.providers._discovery",
}
"""Where each exported name lives (imported on first use by :func:`__getattr__`)."""


__getattr__, __dir__ = _lazy_face(__name__, _HOMES, __all__, globals())
