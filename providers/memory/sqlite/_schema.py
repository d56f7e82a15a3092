"""The SQLite schema of memory and its migrations.

The schema version lives in ``PRAGMA user_version``. :data:`MIGRATIONS` holds one function per version;
opening a database applies the missing ones in order, each inside the same ``BEGIN IMMEDIATE``
transaction, so two processes opening a fresh file at once migrate it exactly once. A database written by
a newer simone (a higher version) is refused rather than guessed at.
"""

from __future__ import annotations

from collections.abc import Callable

from simone.providers.memory._backend import Db, scalar
from simone.runtime import ConfigError

_SCOPE_COLUMNS = ", ".join(
    f"s_{key} TEXT" for key in ("actor", "conversation", "client", "project", "task", "thread")
)


def _v1(db: Db) -> None:
    """Records with their FTS5 index, session turns and summaries with theirs, scope numbers, meta."""
    statements = [
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID",
        "CREATE TABLE scopes (n INTEGER PRIMARY KEY, sig TEXT NOT NULL UNIQUE)",
        f"""CREATE TABLE records (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            kind TEXT NOT NULL,
            {_SCOPE_COLUMNS},
            scope_sig TEXT NOT NULL,
            status TEXT NOT NULL,
            valid_from_us INTEGER,
            valid_until_us INTEGER,
            created_us INTEGER NOT NULL,
            updated_us INTEGER NOT NULL,
            completed_us INTEGER,
            deleted_us INTEGER,
            revision INTEGER NOT NULL,
            tags TEXT NOT NULL,
            title TEXT NOT NULL,
            data TEXT NOT NULL,
            body TEXT NOT NULL,
            fts_title TEXT NOT NULL,
            fts_body TEXT NOT NULL
        )""",
        "CREATE INDEX records_scope ON records (scope_sig)",
        "CREATE INDEX records_updated ON records (updated_us DESC, id)",
        "CREATE INDEX records_deleted ON records (deleted_us) WHERE deleted_us IS NOT NULL",
        """CREATE VIRTUAL TABLE records_fts USING fts5(
            fts_title, fts_body, content='records', content_rowid='rowid', tokenize='ascii'
        )""",
        """CREATE TRIGGER records_ai AFTER INSERT ON records BEGIN
            INSERT INTO records_fts (rowid, fts_title, fts_body)
            VALUES (new.rowid, new.fts_title, new.fts_body);
        END""",
        """CREATE TRIGGER records_ad AFTER DELETE ON records BEGIN
            INSERT INTO records_fts (records_fts, rowid, fts_title, fts_body)
            VALUES ('delete', old.rowid, old.fts_title, old.fts_body);
        END""",
        """CREATE TRIGGER records_au AFTER UPDATE OF fts_title, fts_body ON records BEGIN
            INSERT INTO records_fts (records_fts, rowid, fts_title, fts_body)
            VALUES ('delete', old.rowid, old.fts_title, old.fts_body);
            INSERT INTO records_fts (rowid, fts_title, fts_body)
            VALUES (new.rowid, new.fts_title, new.fts_body);
        END""",
        f"""CREATE TABLE turns (
            rowid INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            {_SCOPE_COLUMNS},
            scope_sig TEXT NOT NULL,
            role TEXT NOT NULL,
            seq INTEGER NOT NULL,
            through_seq INTEGER,
            content TEXT NOT NULL,
            created_us INTEGER NOT NULL,
            fts_body TEXT NOT NULL,
            UNIQUE (scope_sig, role, seq)
        )""",
        """CREATE VIRTUAL TABLE turns_fts USING fts5(
            fts_body, content='turns', content_rowid='rowid', tokenize='ascii'
        )""",
        """CREATE TRIGGER turns_ai AFTER INSERT ON turns BEGIN
            INSERT INTO turns_fts (rowid, fts_body) VALUES (new.rowid, new.fts_body);
        END""",
        """CREATE TRIGGER turns_ad AFTER DELETE ON turns BEGIN
            INSERT INTO turns_fts (turns_fts, rowid, fts_body) VALUES ('delete', old.rowid, old.fts_body);
        END""",
        """CREATE TRIGGER turns_au AFTER UPDATE OF fts_body ON turns BEGIN
            INSERT INTO turns_fts (turns_fts, rowid, fts_body) VALUES ('delete', old.rowid, old.fts_body);
            INSERT INTO turns_fts (rowid, fts_body) VALUES (new.rowid, new.fts_body);
        END""",
    ]
    for statement in statements:
        db.execute(statement)


def _v2(db: Db) -> None:
    """Vectors of records for the optional semantic leg, one per record and embedding space."""
    db.execute(
        """CREATE TABLE record_vectors (
            space TEXT NOT NULL,
            record_rowid INTEGER NOT NULL,
            vector BLOB NOT NULL,
            PRIMARY KEY (space, record_rowid)
        ) WITHOUT ROWID"""
    )
    db.execute("CREATE INDEX record_vectors_record ON record_vectors (record_rowid)")
    db.execute(
        """CREATE TRIGGER records_vectors_ad AFTER DELETE ON records BEGIN
            DELETE FROM record_vectors WHERE record_rowid = old.rowid;
        END"""
    )


def _v3(db: Db) -> None:
    """A change counter per scope and a log of changed records, for in-memory search indexes.

    Every write that changes what full-text search indexes bumps the counter and logs the record. In-memory search indexes (:mod:`simone.providers.memory._cache`) compare the counter with the epoch
    they were built at, so a write by any connection or process is seen by the next query, and re-read
    only the logged records. The log is pruned to its last entries (``meta.changes_pruned_through``).
    """
    db.execute("ALTER TABLE scopes ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0")
    statements = [
        # which record changed in which scope, so an index can patch itself instead of rebuilding
        """CREATE TABLE record_changes (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            n INTEGER NOT NULL,
            rid INTEGER NOT NULL
        )""",
        "CREATE INDEX record_changes_scope ON record_changes (n, seq)",
        """CREATE TRIGGER records_epoch_ai AFTER INSERT ON records BEGIN
            UPDATE scopes SET epoch = epoch + 1 WHERE sig = new.scope_sig;
            INSERT INTO record_changes (n, rid) SELECT n, new.rowid FROM scopes WHERE sig = new.scope_sig;
        END""",
        """CREATE TRIGGER records_epoch_ad AFTER DELETE ON records BEGIN
            UPDATE scopes SET epoch = epoch + 1 WHERE sig = old.scope_sig;
            INSERT INTO record_changes (n, rid) SELECT n, old.rowid FROM scopes WHERE sig = old.scope_sig;
        END""",
        """CREATE TRIGGER records_epoch_au AFTER UPDATE OF fts_title, fts_body, scope_sig ON records BEGIN
            UPDATE scopes SET epoch = epoch + 1 WHERE sig IN (old.scope_sig, new.scope_sig);
            INSERT INTO record_changes (n, rid)
            SELECT n, new.rowid FROM scopes WHERE sig IN (old.scope_sig, new.scope_sig);
        END""",
    ]
    for statement in statements:
        db.execute(statement)


MIGRATIONS: tuple[Callable[[Db], None], ...] = (_v1, _v2, _v3)
"""Migration ``i`` takes the schema from version ``i`` to ``i + 1``."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this code writes."""


def migrate(db: Db, path: str) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION` inside the caller's write transaction.

    Returns:
        The version found before migrating.

    Raises:
        ConfigError: the database was written by a newer simone.
    """
    found = int(scalar(db.execute("PRAGMA user_version")))
    if found > SCHEMA_VERSION:
        raise ConfigError(
            f"the memory database {path} has schema version {found}, newer than this simone understands "
            f"({SCHEMA_VERSION}); upgrade simone or point memory.path at another file"
        )
    for version in range(found, SCHEMA_VERSION):
        MIGRATIONS[version](db)
    if found != SCHEMA_VERSION:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    return found
