"""The PostgreSQL schema of memory and its migrations.

The version lives in the ``schema_version`` table (one row). :data:`MIGRATIONS` holds the SQL of each
version; opening applies the missing ones in order inside one transaction that holds memory's advisory
lock, so processes opening a fresh database at once migrate it exactly once. A database written by a
newer simone is refused. Tables mirror the SQLite ones (same columns, ``rowid`` an identity column), so
the backend-neutral operations run on both; full-text search adds a ``tsv`` column (the analysed,
scope-numbered tokens as a ``tsvector``: title weight A, body weight D, positions kept for term
frequencies), a GIN index on it, the token count ``doc_len`` and a one-row ``memory_stats`` kept by
triggers (row count and token total: BM25's collection statistics). Version 2 adds what the in-memory
search indexes need to stay exact across processes (as SQLite's schema v3): a per-scope ``epoch`` and the
``record_changes`` log, kept by statement-level triggers in the writing transaction.
"""

from __future__ import annotations

from simone.providers.memory._backend import Db, scalar
from simone.runtime import ConfigError

_SCOPE_COLUMNS = ", ".join(
    f"s_{key} TEXT" for key in ("actor", "conversation", "client", "project", "task", "thread")
)

_V1 = [
    # the tokens of a field are space-separated (see simone.providers.memory._terms.fts_document); they
    # contain no quote, backslash or space, so each is a valid quoted tsvector lexeme as it is
    """CREATE FUNCTION memory_tsv(title TEXT, body TEXT) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT coalesce((
            SELECT string_agg('''' || t.tok || ''':' || least(t.pos, 16383) || t.w, ' ')
            FROM (
                SELECT a.tok, a.ord AS pos, 'A' AS w
                FROM unnest(string_to_array(nullif(title, ''), ' ')) WITH ORDINALITY AS a(tok, ord)
                UNION ALL
                SELECT b.tok, b.ord + coalesce(cardinality(string_to_array(nullif(title, ''), ' ')), 0),
                       'D'
                FROM unnest(string_to_array(nullif(body, ''), ' ')) WITH ORDINALITY AS b(tok, ord)
            ) t
        )::tsvector, ''::tsvector)
    $$""",
    """CREATE FUNCTION memory_len(title TEXT, body TEXT) RETURNS INTEGER
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT coalesce(cardinality(string_to_array(nullif(title, ''), ' ')), 0)
             + coalesce(cardinality(string_to_array(nullif(body, ''), ' ')), 0)
    $$""",
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE scopes (n BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, sig TEXT NOT NULL UNIQUE)",
    f"""CREATE TABLE records (
        rowid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL,
        {_SCOPE_COLUMNS},
        scope_sig TEXT NOT NULL,
        status TEXT NOT NULL,
        valid_from_us BIGINT,
        valid_until_us BIGINT,
        created_us BIGINT NOT NULL,
        updated_us BIGINT NOT NULL,
        completed_us BIGINT,
        deleted_us BIGINT,
        revision BIGINT NOT NULL,
        tags TEXT NOT NULL,
        title TEXT NOT NULL,
        data TEXT NOT NULL,
        body TEXT NOT NULL,
        fts_title TEXT NOT NULL,
        fts_body TEXT NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (memory_tsv(fts_title, fts_body)) STORED,
        doc_len INTEGER GENERATED ALWAYS AS (memory_len(fts_title, fts_body)) STORED
    )""",
    "CREATE INDEX records_scope ON records (scope_sig)",
    "CREATE INDEX records_updated ON records (updated_us DESC, id)",
    "CREATE INDEX records_deleted ON records (deleted_us) WHERE deleted_us IS NOT NULL",
    "CREATE INDEX records_tsv ON records USING gin (tsv)",
    "CREATE TABLE memory_stats (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), n_rows BIGINT NOT NULL, "
    "n_tokens BIGINT NOT NULL)",
    "INSERT INTO memory_stats (n_rows, n_tokens) VALUES (0, 0)",
    """CREATE FUNCTION memory_stats_keep() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'INSERT' THEN
            UPDATE memory_stats SET n_rows = n_rows + 1, n_tokens = n_tokens + NEW.doc_len;
        ELSIF TG_OP = 'DELETE' THEN
            UPDATE memory_stats SET n_rows = n_rows - 1, n_tokens = n_tokens - OLD.doc_len;
        ELSIF NEW.doc_len IS DISTINCT FROM OLD.doc_len THEN
            UPDATE memory_stats SET n_tokens = n_tokens - OLD.doc_len + NEW.doc_len;
        END IF;
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER records_stats AFTER INSERT OR DELETE OR UPDATE ON records
    FOR EACH ROW EXECUTE FUNCTION memory_stats_keep()""",
    f"""CREATE TABLE turns (
        rowid BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        {_SCOPE_COLUMNS},
        scope_sig TEXT NOT NULL,
        role TEXT NOT NULL,
        seq BIGINT NOT NULL,
        through_seq BIGINT,
        content TEXT NOT NULL,
        created_us BIGINT NOT NULL,
        fts_body TEXT NOT NULL,
        tsv tsvector GENERATED ALWAYS AS (memory_tsv('', fts_body)) STORED,
        doc_len INTEGER GENERATED ALWAYS AS (memory_len('', fts_body)) STORED,
        UNIQUE (scope_sig, role, seq)
    )""",
    "CREATE INDEX turns_tsv ON turns USING gin (tsv)",
    """CREATE TABLE record_vectors (
        space TEXT NOT NULL,
        record_rowid BIGINT NOT NULL REFERENCES records (rowid) ON DELETE CASCADE,
        vector BYTEA NOT NULL,
        PRIMARY KEY (space, record_rowid)
    )""",
    "CREATE INDEX record_vectors_record ON record_vectors (record_rowid)",
]

_V2 = [
    # In-memory search indexes (memory/_cache.py) stay exact across processes: every write that adds,
    # removes or re-analyses a record bumps its scope's epoch and logs the record in record_changes, in
    # the writer's transaction. Writers hold memory's advisory lock, so ``seq`` grows in commit order.
    # Statement-level triggers with transition tables: a bulk import pays once per statement, not per
    # row (the per-row memory_stats trigger of v1 is replaced the same way).
    "ALTER TABLE scopes ADD COLUMN epoch BIGINT NOT NULL DEFAULT 0",
    """CREATE TABLE record_changes (
        seq BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        n BIGINT NOT NULL,
        rid BIGINT NOT NULL
    )""",
    "CREATE INDEX record_changes_scope ON record_changes (n, seq)",
    "DROP TRIGGER records_stats ON records",
    "DROP FUNCTION memory_stats_keep()",
    """CREATE FUNCTION memory_records_added() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE memory_stats SET n_rows = n_rows + c.k, n_tokens = n_tokens + c.t
        FROM (SELECT count(*) AS k, coalesce(sum(doc_len), 0) AS t FROM added_rows) c WHERE c.k > 0;
        INSERT INTO record_changes (n, rid)
        SELECT s.n, a.rowid FROM added_rows a JOIN scopes s ON s.sig = a.scope_sig ORDER BY a.rowid;
        UPDATE scopes SET epoch = epoch + 1 WHERE sig IN (SELECT scope_sig FROM added_rows);
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION memory_records_removed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE memory_stats SET n_rows = n_rows - c.k, n_tokens = n_tokens - c.t
        FROM (SELECT count(*) AS k, coalesce(sum(doc_len), 0) AS t FROM removed_rows) c WHERE c.k > 0;
        INSERT INTO record_changes (n, rid)
        SELECT s.n, r.rowid FROM removed_rows r JOIN scopes s ON s.sig = r.scope_sig ORDER BY r.rowid;
        UPDATE scopes SET epoch = epoch + 1 WHERE sig IN (SELECT scope_sig FROM removed_rows);
        RETURN NULL;
    END $$""",
    """CREATE FUNCTION memory_records_changed() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        UPDATE memory_stats SET n_tokens = n_tokens + c.t
        FROM (SELECT coalesce(sum(n.doc_len - o.doc_len), 0) AS t
              FROM new_rows n JOIN old_rows o ON o.rowid = n.rowid) c WHERE c.t <> 0;
        WITH moved AS (
            SELECT n.rowid AS rid, unnest(ARRAY[o.scope_sig, n.scope_sig]) AS sig
            FROM new_rows n JOIN old_rows o ON o.rowid = n.rowid
            WHERE n.fts_title IS DISTINCT FROM o.fts_title OR n.fts_body IS DISTINCT FROM o.fts_body
               OR n.scope_sig IS DISTINCT FROM o.scope_sig
        ), logged AS (
            INSERT INTO record_changes (n, rid)
            SELECT DISTINCT s.n, m.rid FROM moved m JOIN scopes s ON s.sig = m.sig
            RETURNING n
        )
        UPDATE scopes SET epoch = epoch + 1 WHERE n IN (SELECT n FROM logged);
        RETURN NULL;
    END $$""",
    """CREATE TRIGGER records_added AFTER INSERT ON records REFERENCING NEW TABLE AS added_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_records_added()""",
    """CREATE TRIGGER records_removed AFTER DELETE ON records REFERENCING OLD TABLE AS removed_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_records_removed()""",
    """CREATE TRIGGER records_changed AFTER UPDATE ON records
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION memory_records_changed()""",
]

MIGRATIONS: tuple[tuple[str, ...], ...] = (tuple(_V1), tuple(_V2))
"""Migration ``i`` takes the schema from version ``i`` to ``i + 1`` (its statements, in order)."""

SCHEMA_VERSION = len(MIGRATIONS)
"""The version this code writes."""


def migrate(db: Db, address: str) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION` inside the caller's write transaction.

    Returns:
        The version found before migrating.

    Raises:
        ConfigError: the database was written by a newer simone.
    """
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    found = int(scalar(db.execute("SELECT max(version) FROM schema_version")) or 0)
    if found > SCHEMA_VERSION:
        raise ConfigError(
            f"the memory database {address} has schema version {found}, newer than this simone "
            f"understands ({SCHEMA_VERSION}); upgrade simone or point memory.url at another database"
        )
    for version in range(found, SCHEMA_VERSION):
        for statement in MIGRATIONS[version]:
            db.execute(statement)
    if found != SCHEMA_VERSION:
        db.execute("DELETE FROM schema_version")
        db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
    return found
