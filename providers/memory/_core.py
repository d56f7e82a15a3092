"""What every memory operation reads — :class:`Core` — and the steps they share.

An operation is a plain function of a :class:`Core` and the :class:`~simone.providers.memory._backend.Db`
of the operation (see :mod:`simone.providers.memory._backend`); the store
(:class:`~simone.providers.memory._memory.MemoryStoreImpl`) runs it through its backend. Here: the
current time, the analysed full-text terms of a record or a turn, scope numbers, the limits, and the steps
of opening (migrate, re-index when the analysis changed) and of purging expired deletions.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from simone.providers.memory._backend import Backend, Db
from simone.providers.memory._cache import SearchCache, prune_changes
from simone.providers.memory._clock import Clock, IdGenerator, random_ids, system_clock
from simone.providers.memory._models import MemoryRecord
from simone.providers.memory._records import index_text
from simone.providers.memory._rows import SELECT_RECORD, record_from_row, to_us
from simone.providers.memory._scope import scope_signature, visible_signatures
from simone.providers.memory._terms import TermAnalyzer, fts_document
from simone.runtime import ConfigError, InvalidRequest, MemorySettings, TrustedContext


class Core:
    """The state of one store: its backend, limits, analysis, clock, ids and in-memory search indexes.

    Args:
        backend: the database (SQLite or PostgreSQL).
        settings: memory limits (defaults: :class:`~simone.runtime.MemorySettings`).
        analyzer: the shared text analysis (``None``: the runtime's default, chosen on open).
        clock: the time source. ids: the id generator.
        analyzer_key: identifies the analyzer's configuration (see ``SQLiteMemoryStore``).
    """

    def __init__(
        self,
        backend: Backend,
        *,
        settings: MemorySettings | None = None,
        analyzer: TermAnalyzer | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        analyzer_key: str = "",
    ) -> None:
        self.backend = backend
        self.settings = settings or MemorySettings()
        self.analyzer = analyzer
        self.clock: Clock = clock or system_clock
        self.ids: IdGenerator = ids or random_ids
        self.analyzer_key = analyzer_key
        self.cache = SearchCache(self.settings.search_cache_postings)

    @property
    def analysis(self) -> TermAnalyzer:
        """The analyzer (set by the time the store is open)."""
        if self.analyzer is None:
            raise ConfigError("the memory store is not open; use `async with store:` or await store.open()")
        return self.analyzer

    def now(self) -> datetime:
        """The clock's reading, in UTC."""
        now = self.clock()
        if now.tzinfo is None:
            raise ConfigError("the memory clock must return timezone-aware datetimes")
        return now.astimezone(UTC)

    def terms(self, text: str, scope_number: int) -> str:
        """The indexed text of ``text`` in scope ``scope_number`` (its analysed, scoped tokens)."""
        return fts_document(self.analysis.terms(text), scope_number)

    def fts(self, db: Db, record: MemoryRecord) -> tuple[str, str]:
        """The indexed title and body of ``record`` (its scope numbered inside the caller's transaction)."""
        title, body = index_text(record)
        number = scope_number(db, scope_signature(record.scope))
        return self.terms(title, number), self.terms(body, number)

    def check_body(self, text: str, what: str) -> None:
        """Refuse a text over ``memory.max_body_chars``."""
        limit = self.settings.max_body_chars
        if len(text) > limit:
            raise InvalidRequest(
                f"the {what} has {len(text):,} characters; memory keeps at most {limit:,} "
                "(memory.max_body_chars). Store a summary and keep the full text in a document instead."
            )

    def check_limit(self, limit: int) -> None:
        """Refuse a result limit over ``memory.max_query_limit``."""
        if limit > self.settings.max_query_limit:
            raise InvalidRequest(
                f"limit {limit} is above memory.max_query_limit ({self.settings.max_query_limit}); "
                "ask for fewer records or page with offset"
            )


def scope_number(db: Db, signature: str) -> int:
    """The number of a scope signature (created inside the caller's write transaction)."""
    row = db.execute("SELECT n FROM scopes WHERE sig = ?", (signature,)).fetchone()
    if row is not None:
        return int(row[0])
    db.execute("INSERT INTO scopes (sig) VALUES (?) ON CONFLICT (sig) DO NOTHING", (signature,))
    row = db.execute("SELECT n FROM scopes WHERE sig = ?", (signature,)).fetchone()
    assert row is not None
    return int(row[0])


def visible_scopes(db: Db, context: TrustedContext) -> list[tuple[int, str, int]]:
    """``(number, signature, epoch)`` of the scopes that exist and are visible to ``context``."""
    signatures = visible_signatures(context)
    marks = ", ".join("?" for _ in signatures)
    rows = db.execute(f"SELECT n, sig, epoch FROM scopes WHERE sig IN ({marks}) ORDER BY n", signatures)
    return [(int(n), str(sig), int(epoch)) for n, sig, epoch in rows.fetchall()]


def visible_numbers(db: Db, context: TrustedContext) -> list[int]:
    """The numbers of the scopes that exist and are visible to ``context``."""
    signatures = visible_signatures(context)
    marks = ", ".join("?" for _ in signatures)
    rows = db.execute(f"SELECT n FROM scopes WHERE sig IN ({marks}) ORDER BY n", signatures)
    return [int(row[0]) for row in rows.fetchall()]


def prepare(core: Core, db: Db, fingerprint: str) -> None:
    """On open, in one write transaction: migrate the schema, re-index if the analysis changed."""
    core.backend.migrate(db)
    row = db.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()
    if row is None or row[0] != fingerprint:
        if row is not None:
            reindex(core, db)
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('analyzer', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (fingerprint,),
        )


def reindex(core: Core, db: Db) -> None:
    """Re-analyse every record and turn (the analysis changed since they were written)."""
    for row in db.execute(f"SELECT {SELECT_RECORD} FROM records r").fetchall():
        title, body = core.fts(db, record_from_row(row))
        db.execute(
            "UPDATE records SET fts_title = ?, fts_body = ? WHERE rowid = ?", (title, body, row["rowid"])
        )
    for rowid, content, signature in db.execute("SELECT rowid, content, scope_sig FROM turns").fetchall():
        terms = core.terms(content, scope_number(db, signature))
        db.execute("UPDATE turns SET fts_body = ? WHERE rowid = ?", (terms, rowid))


def purge(core: Core, db: Db) -> int:
    """Hard-delete records soft-deleted before the retention period (on open, and on demand)."""
    cutoff = core.now() - timedelta(days=core.settings.soft_delete_retention_days)

    def transaction(tx: Db) -> int:
        cursor = tx.execute(
            "DELETE FROM records WHERE deleted_us IS NOT NULL AND deleted_us <= ?", (to_us(cutoff),)
        )
        count = int(cursor.rowcount)
        prune_changes(tx)
        return count

    return db.write(transaction)
