"""SQLite implementation of the memory and session stores (the embedded default).

:class:`SQLiteMemoryStore` is the one memory store (:class:`~simone.providers.memory._memory.MemoryStoreImpl`)
on the SQLite backend (:mod:`~simone.providers.memory.sqlite._backend`: one file, WAL, one connection per
store, ``BEGIN IMMEDIATE`` writes, several processes can write the same file). Lexical search is FTS5 over
the shared analysis's terms (see :mod:`simone.providers.memory._terms`), ranked by ``bm25()`` with the title
weighted 3, filtered by scope in SQL, ties broken by the newest update, then the id. Searches are answered
from per-scope in-memory postings that reproduce ``bm25()`` bit for bit (:mod:`simone.providers.memory._cache`;
kept fresh by a change log every writer fills), and by FTS5 itself (:mod:`~simone.providers.memory.sqlite._search`)
while a scope is changing a lot or does not fit (``memory.search_cache_postings``). The schema and its
migrations: :mod:`~simone.providers.memory.sqlite._schema`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from simone.providers.memory._backend import Db
from simone.providers.memory._clock import Clock, IdGenerator
from simone.providers.memory._memory import MemoryStoreImpl
from simone.providers.memory._terms import TermAnalyzer
from simone.providers.memory.sqlite._backend import SQLiteBackend
from simone.runtime import MemorySettings, Settings
from simone.runtime.text import Analyzer


class SQLiteMemoryStore(MemoryStoreImpl):
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

    backend = "sqlite"
    """The backend's name."""

    def __init__(
        self,
        path: str | Path,
        *,
        settings: MemorySettings | None = None,
        analyzer: TermAnalyzer | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        limiter: anyio.CapacityLimiter | None = None,
        purge_on_open: bool = True,
        analyzer_key: str = "",
    ) -> None:
        settings = settings or MemorySettings()
        self._sqlite = SQLiteBackend(path, settings, limiter)
        super().__init__(
            self._sqlite,
            settings=settings,
            analyzer=analyzer,
            clock=clock,
            ids=ids,
            purge_on_open=purge_on_open,
            analyzer_key=analyzer_key,
        )

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
        return self._sqlite.path

    async def optimize(self) -> None:
        """Merge the full-text indexes into one segment each (faster searches after many writes)."""

        def transaction(db: Db) -> None:
            db.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
            db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')")

        await self._sqlite.run(lambda db: db.write(transaction))
