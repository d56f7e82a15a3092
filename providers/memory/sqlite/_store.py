"""SQLite implementation of the memory and session stores.

One connection per store, used by one worker thread at a time (an anyio ``CapacityLimiter`` of one),
WAL journal, ``synchronous=NORMAL`` (a committed transaction survives a killed process), and every
operation in its own ``BEGIN IMMEDIATE`` transaction with a busy timeout, so several processes can write
the same file without losing anything. Lexical search is FTS5 over the shared analysis's terms (see
:mod:`simone.providers.memory._terms`), ranked by ``bm25()`` with the title weighted 3, filtered by scope in
SQL, ties broken by the newest update, then the id. Searches are answered from per-scope in-memory
postings that reproduce ``bm25()`` bit for bit (:mod:`simone.providers.memory.sqlite._cache`; kept fresh
by a change log every writer fills), and by FTS5 itself while a scope is changing a lot or does not fit
(``memory.search_cache_postings``).

The SQLite pieces: :mod:`~simone.providers.memory.sqlite._connection` (open, close, transactions, error
translation), :mod:`~simone.providers.memory.sqlite._schema` (tables and migrations),
:mod:`~simone.providers.memory.sqlite._search` and :mod:`~simone.providers.memory.sqlite._sessions`
(FTS5 search), :mod:`~simone.providers.memory.sqlite._cache` (in-memory postings). The operations
themselves are backend-neutral (:mod:`simone.providers.memory._core`).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from simone.providers.memory._checklists import ChecklistItems
from simone.providers.memory._core import DB
from simone.providers.memory._editing import RecordEditing
from simone.providers.memory._retention import RecordRetention
from simone.providers.memory._transfer import MemoryTransfer
from simone.providers.memory._vectors import VectorMemory
from simone.providers.memory.sqlite._cache import prune_changes
from simone.providers.memory.sqlite._search import RecordSearch
from simone.providers.memory.sqlite._sessions import SQLiteSessionSearch
from simone.runtime import Settings
from simone.runtime.text import Analyzer


class SQLiteMemoryStore(
    RecordSearch,
    SQLiteSessionSearch,
    RecordEditing,
    ChecklistItems,
    RecordRetention,
    VectorMemory,
    MemoryTransfer,
):
    """Structured and session memory in one SQLite file; implements ``MemoryStore`` and ``SessionStore``.

    Construction is cheap; open it with ``async with SQLiteMemoryStore(path) as store:`` (or
    :meth:`open` / :meth:`close`). Opening creates or migrates the schema, re-indexes if the analysis
    changed, and hard-deletes soft-deleted records past the retention period.

    Args:
        path: the database file (created with its folder if missing).
        settings: memory limits (defaults: :class:`~simone.runtime.MemorySettings`).
        analyzer: the shared text analysis (default: ``simone.runtime.text.default_analyzer()``).
        clock: the time source (inject a :class:`ManualClock` for exact replays).
        ids: the id generator (inject :class:`SequentialIds` for exact replays).
        limiter: the thread limiter for blocking SQLite work (default: one thread per store).
        purge_on_open: hard-delete expired soft-deleted records when opening.
        analyzer_key: identifies the analyzer's configuration (synonyms, ignore words); together with
            a probe of its output it decides whether stored terms are stale and must be re-analysed.
    """

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> SQLiteMemoryStore:
        """A store at ``settings.memory.path`` or ``settings.data_dir / "memory.sqlite3"``."""
        path = settings.memory.path or settings.data_dir / "memory.sqlite3"
        if "analyzer" not in kwargs:
            kwargs["analyzer"] = Analyzer.from_settings(settings.lexical)
            kwargs.setdefault("analyzer_key", settings.lexical.model_dump_json())
        return cls(path, settings=settings.memory, **kwargs)

    @property
    def path(self) -> Path:
        """The database file."""
        return self._path

    _integrity_errors = (sqlite3.IntegrityError,)

    def _after_bulk_import(self, db: DB) -> None:
        db.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
        prune_changes(db)
