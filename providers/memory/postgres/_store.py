"""PostgreSQL implementation of the memory and session stores: memory shared by a team.

:class:`PostgresMemoryStore` is the one memory store (:class:`~simone.providers.memory._memory.MemoryStoreImpl`,
the same operations as :class:`~simone.providers.memory.SQLiteMemoryStore`) on the PostgreSQL backend: the
pool, transactions and errors (:mod:`~simone.providers.memory.postgres._backend`), the schema and its
versions (:mod:`~simone.providers.memory.postgres._schema`) and BM25 in SQL
(:mod:`~simone.providers.memory.postgres._search`). Every scope rule is the same SQL condition as in
SQLite (:func:`~simone.providers.memory._scope.scope_sql`).
"""

from __future__ import annotations

from typing import Any

from simone.providers.memory._clock import Clock, IdGenerator
from simone.providers.memory._memory import MemoryStoreImpl
from simone.providers.memory._terms import TermAnalyzer
from simone.providers.memory.postgres._backend import PostgresBackend
from simone.runtime import ConfigError, MemorySettings, Settings
from simone.runtime.text import Analyzer


class PostgresMemoryStore(MemoryStoreImpl):
    """Structured and session memory in a PostgreSQL database (``MemoryStore``, ``SessionStore``, ``VectorStore``).

    Construction is cheap and imports nothing; open it with ``async with PostgresMemoryStore(url) as
    store:``. Opening connects the pool, creates or migrates the schema, re-indexes if the analysis
    changed, and hard-deletes soft-deleted records past the retention period.

    Args:
        url: ``postgresql://user:password@host:port/database`` (libpq URL; its parameters apply).
        settings: memory limits (defaults: :class:`~simone.runtime.MemorySettings`).
        analyzer: the shared text analysis (default: ``simone.runtime.text.default_analyzer()``).
        clock: the time source. ids: the id generator.
        purge_on_open: hard-delete expired soft-deleted records when opening.
        analyzer_key: identifies the analyzer's configuration (see ``SQLiteMemoryStore``).
        pool_size: connections (and concurrent operations) per store.
        connect_timeout_s: how long opening waits for the server.
    """

    backend = "postgres"
    """The backend's name."""

    def __init__(
        self,
        url: str,
        *,
        settings: MemorySettings | None = None,
        analyzer: TermAnalyzer | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        purge_on_open: bool = True,
        analyzer_key: str = "",
        pool_size: int = 8,
        connect_timeout_s: float = 10.0,
    ) -> None:
        settings = settings or MemorySettings()
        self._postgres = PostgresBackend(
            url, settings, pool_size=pool_size, connect_timeout_s=connect_timeout_s
        )
        super().__init__(
            self._postgres,
            settings=settings,
            analyzer=analyzer,
            clock=clock,
            ids=ids,
            purge_on_open=purge_on_open,
            analyzer_key=analyzer_key,
        )

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> PostgresMemoryStore:
        """A store at ``settings.memory.url``."""
        url = settings.memory.url
        if not url:
            raise ConfigError("memory.url is not set; it names the PostgreSQL database of memory")
        if "analyzer" not in kwargs:
            kwargs["analyzer"] = Analyzer.from_settings(settings.lexical)
            kwargs.setdefault("analyzer_key", settings.lexical.model_dump_json())
        return cls(url, settings=settings.memory, **kwargs)

    @property
    def address(self) -> str:
        """The server and database, without the password."""
        return self._postgres.address

    @property
    def schema_version(self) -> int:
        """The schema version of the open database (0 before opening)."""
        return self._postgres.schema_version
