"""The SQLite backend of memory: one file, WAL, FTS5 (the embedded default).

Its in-memory BM25 search cache (:class:`SearchCache`, :class:`ScopeIndex`, :func:`score`), which scores
exactly like FTS5's ``bm25()``, is also what the PostgreSQL backend answers searches from.
"""

from simone.providers.memory.sqlite._cache import (
    ScopeIndex as ScopeIndex,
    SearchCache as SearchCache,
    SearchCacheInfo as SearchCacheInfo,
    last_change as last_change,
    pruned_through as pruned_through,
    score as score,
)
from simone.providers.memory.sqlite._schema import SCHEMA_VERSION as SCHEMA_VERSION
from simone.providers.memory.sqlite._store import SQLiteMemoryStore as SQLiteMemoryStore

__all__ = (
    "SCHEMA_VERSION",
    "SQLiteMemoryStore",
    "ScopeIndex",
    "SearchCache",
    "SearchCacheInfo",
    "last_change",
    "pruned_through",
    "score",
)
