"""What every memory backend shares: its state, the checks, and the hooks a backend fills in.

The operations (:mod:`~simone.providers.memory._editing`, :mod:`~simone.providers.memory._checklists`,
:mod:`~simone.providers.memory._retention`, :mod:`~simone.providers.memory._sessions`,
:mod:`~simone.providers.memory._transfer`, :mod:`~simone.providers.memory._vectors`) are written once,
as transaction functions that receive their connection explicitly (``db``: a DB-API connection taking
``?`` parameters, whose rows index by position and by column name) and speak the SQL both backends
understand. A backend (``memory/sqlite``, ``memory/postgres``) supplies the connection, the transactions,
the schema, the error translation and full-text search.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeAlias, TypeVar

from simone.providers.memory._clock import Clock, IdGenerator, random_ids, system_clock
from simone.providers.memory._models import MemoryRecord
from simone.providers.memory._records import index_text
from simone.providers.memory._rows import SELECT_RECORD, record_from_row, to_us
from simone.providers.memory._scope import scope_signature, visible_signatures
from simone.providers.memory._terms import TermAnalyzer, fts_document
from simone.runtime import ConfigError, InvalidRequest, MemorySettings, TrustedContext

T = TypeVar("T")

DB: TypeAlias = Any
"""A connection inside a backend's transaction: ``execute(sql, params)`` with ``?`` marks, returning a
cursor with ``fetchone`` / ``fetchall`` / ``rowcount`` whose rows index by position and by name
(``sqlite3.Connection``, or the PostgreSQL adapter in :mod:`simone.providers.memory.postgres`)."""


class StoreCore:
    """State and checks shared by every backend; the backend overrides the hooks that raise."""

    backend = "abstract"
    """The backend's name (``sqlite``, ``postgres``)."""

    def __init__(
        self,
        *,
        settings: MemorySettings | None = None,
        analyzer: TermAnalyzer | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        purge_on_open: bool = True,
        analyzer_key: str = "",
    ) -> None:
        self._settings = settings or MemorySettings()
        self._analyzer = analyzer
        self._clock: Clock = clock or system_clock
        self._ids: IdGenerator = ids or random_ids
        self._purge_on_open = purge_on_open
        self._analyzer_key = analyzer_key

    # -- hooks of a backend ----------------------------------------------------------------------------

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` (blocking database work) with a connection current."""
        raise NotImplementedError

    def _write(self, function: Callable[[DB], T]) -> T:
        """Run ``function(db)`` in one write transaction (all or nothing)."""
        raise NotImplementedError

    def _read(self) -> DB:
        """The current connection, for reads outside a write transaction."""
        raise NotImplementedError

    def _tag_condition(self, alias: str) -> str:
        """SQL: the JSON array ``{alias}.tags`` holds the tag given as the one parameter."""
        raise NotImplementedError

    def _after_purge(self, db: DB) -> None:
        """Backend upkeep after records were hard-deleted (nothing by default)."""

    def _after_bulk_import(self, db: DB) -> None:
        """Backend upkeep after a large import, inside its transaction (nothing by default)."""

    _integrity_errors: tuple[type[Exception], ...] = ()
    """The backend's constraint-violation errors (an import that breaks a unique key is refused)."""

    def _session_search(
        self, db: DB, terms: list[str], numbers: list[int], condition: str, params: list[Any], limit: int
    ) -> list[Any]:
        """Turn rows matching any of ``terms`` in the scopes ``numbers`` and ``condition``, by BM25.

        Rows carry the :data:`~._rows.SELECT_TURN` columns and ``rank`` (lower is better), best first,
        ties by newest then id.
        """
        raise NotImplementedError

    # -- shared steps ----------------------------------------------------------------------------------

    def _reindex(self, db: DB) -> None:
        """Re-analyse every record and turn (the analysis changed since they were written)."""
        for row in db.execute(f"SELECT {SELECT_RECORD} FROM records r").fetchall():
            title, body = self._fts(db, record_from_row(row))
            db.execute(
                "UPDATE records SET fts_title = ?, fts_body = ? WHERE rowid = ?", (title, body, row["rowid"])
            )
        for rowid, content, signature in db.execute("SELECT rowid, content, scope_sig FROM turns").fetchall():
            terms = self._terms(content, self._scope_number(db, signature))
            db.execute("UPDATE turns SET fts_body = ? WHERE rowid = ?", (terms, rowid))

    def _now(self) -> datetime:
        now = self._clock()
        if now.tzinfo is None:
            raise ConfigError("the memory clock must return timezone-aware datetimes")
        return now.astimezone(UTC)

    def _terms(self, text: str, scope_number: int) -> str:
        assert self._analyzer is not None
        return fts_document(self._analyzer.terms(text), scope_number)

    def _fts(self, db: DB, record: MemoryRecord) -> tuple[str, str]:
        title, body = index_text(record)
        number = self._scope_number(db, scope_signature(record.scope))
        return self._terms(title, number), self._terms(body, number)

    @staticmethod
    def _scope_number(db: DB, signature: str) -> int:
        """The number of a scope signature (created inside the caller's write transaction)."""
        row = db.execute("SELECT n FROM scopes WHERE sig = ?", (signature,)).fetchone()
        if row is not None:
            return int(row[0])
        db.execute("INSERT INTO scopes (sig) VALUES (?) ON CONFLICT (sig) DO NOTHING", (signature,))
        row = db.execute("SELECT n FROM scopes WHERE sig = ?", (signature,)).fetchone()
        return int(row[0])

    @staticmethod
    def _visible_numbers(db: DB, context: TrustedContext) -> list[int]:
        """The numbers of the scopes that exist and are visible to ``context``."""
        signatures = visible_signatures(context)
        marks = ", ".join("?" for _ in signatures)
        rows = db.execute(f"SELECT n FROM scopes WHERE sig IN ({marks}) ORDER BY n", signatures)
        return [int(row[0]) for row in rows.fetchall()]

    def _check_body(self, text: str, what: str) -> None:
        limit = self._settings.max_body_chars
        if len(text) > limit:
            raise InvalidRequest(
                f"the {what} has {len(text):,} characters; memory keeps at most {limit:,} "
                "(memory.max_body_chars). Store a summary and keep the full text in a document instead."
            )

    def _check_limit(self, limit: int) -> None:
        if limit > self._settings.max_query_limit:
            raise InvalidRequest(
                f"limit {limit} is above memory.max_query_limit ({self._settings.max_query_limit}); "
                "ask for fewer records or page with offset"
            )

    def _purge_sync(self) -> int:
        """Hard-delete records soft-deleted before the retention period (on open, and on demand)."""
        cutoff = self._now() - timedelta(days=self._settings.soft_delete_retention_days)

        def transaction(db: DB) -> int:
            cursor = db.execute(
                "DELETE FROM records WHERE deleted_us IS NOT NULL AND deleted_us <= ?", (to_us(cutoff),)
            )
            count = int(cursor.rowcount)
            self._after_purge(db)
            return count

        return self._write(transaction)

    @property
    def settings(self) -> MemorySettings:
        """The limits this store enforces."""
        return self._settings
