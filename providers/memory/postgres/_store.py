"""PostgreSQL implementation of the memory and session stores: memory shared by a team.

The same operations as :class:`~simone.providers.memory.SQLiteMemoryStore` (the backend-neutral ones of
:mod:`simone.providers.memory._core`), on the PostgreSQL pieces: the pool and transactions
(:mod:`~simone.providers.memory.postgres._connection`), the schema and its versions
(:mod:`~simone.providers.memory.postgres._schema`) and BM25 in SQL
(:mod:`~simone.providers.memory.postgres._search`). Every scope rule is the same SQL condition as in
SQLite (:func:`~simone.providers.memory._scope.scope_sql`).
"""

from __future__ import annotations

from typing import Any

from simone.providers.memory._checklists import ChecklistItems
from simone.providers.memory._core import DB
from simone.providers.memory._editing import RecordEditing
from simone.providers.memory._models import MemoryExport
from simone.providers.memory._records import index_text
from simone.providers.memory._retention import RecordRetention
from simone.providers.memory._rows import RECORD_COLUMNS, record_values
from simone.providers.memory._scope import scope_signature
from simone.providers.memory._transfer import _OPTIMIZE_AFTER, MemoryTransfer
from simone.providers.memory._vectors import VectorMemory
from simone.providers.memory.postgres._search import PostgresSearch
from simone.runtime import ConfigError, Settings
from simone.runtime.text import Analyzer


class PostgresMemoryStore(
    PostgresSearch,
    RecordEditing,
    ChecklistItems,
    RecordRetention,
    VectorMemory,
    MemoryTransfer,
):
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

    def _import_rows(self, db: DB, document: MemoryExport, replace: bool) -> int:
        """Records in one ``COPY`` (the rows, terms and order of the one-by-one path), then the rest.

        A document naming one id twice keeps the one-by-one path (there the later copy replaces the
        earlier one, or the import is refused, exactly as on SQLite).
        """
        ids = [record.id for record in document.records]
        if len(ids) < 2 or len(set(ids)) != len(ids):
            return super()._import_rows(db, document, replace)
        if replace:
            db.execute("DELETE FROM records WHERE id = ANY(CAST(? AS text[]))", (ids,))
        numbers: dict[str, int] = {}
        rows = []
        for record in document.records:
            signature = scope_signature(record.scope)
            if signature not in numbers:
                numbers[signature] = self._scope_number(db, signature)
            title, body = index_text(record)
            number = numbers[signature]
            rows.append((*record_values(record), self._terms(title, number), self._terms(body, number)))
        db.copy_rows("records", (*RECORD_COLUMNS, "fts_title", "fts_body"), rows)
        rest = super()._import_rows(db, document.model_copy(update={"records": []}), replace)
        if len(document.records) >= _OPTIMIZE_AFTER:
            self._after_bulk_import(db)
        return len(document.records) + rest
