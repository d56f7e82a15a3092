"""The SQLite backend of memory: one file, WAL, FTS5 (the embedded default).

:class:`SQLiteMemoryStore` is memory's one store on this backend; the in-memory BM25 search indexes it
answers from (which score exactly like FTS5's ``bm25()``) are shared with the PostgreSQL backend
(``simone.providers.memory``'s ``SearchCacheInfo`` reports them).
"""

from simone.providers.memory.sqlite._schema import SCHEMA_VERSION as SCHEMA_VERSION
from simone.providers.memory.sqlite._store import SQLiteMemoryStore as SQLiteMemoryStore

__all__ = (
    "SCHEMA_VERSION",
    "SQLiteMemoryStore",
)
