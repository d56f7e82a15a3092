"""simone.providers — evidence sources behind the Provider protocol, and the clients they talk to.

Importing the package is cheap: each name is imported from its module the first time it is used
(PEP 562), so ``simone search`` does not import the memory stores and ``simone memory`` not the
document index.
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING, Any as _Any

if _TYPE_CHECKING:
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
}
"""Where each exported name lives (imported on first use by :func:`__getattr__`)."""


def __getattr__(name: str) -> _Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
