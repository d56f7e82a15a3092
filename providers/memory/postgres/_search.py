"""Full-text search in SQL on PostgreSQL: BM25 scored like FTS5's ``bm25()``, over records and turns.

The one ``search_records`` (:mod:`simone.providers.memory._search`) asks here only while the in-memory
indexes cannot answer. Rows are found by ``tsv @@ tsquery`` over the scope-numbered tokens of the visible
scopes, each row's term frequencies taken from its ``tsvector`` (positions of weight A are title
occurrences, D body occurrences), weighted like SQLite's (title
:data:`~simone.runtime.text.BM25_TITLE_WEIGHT`, body 1); IDF and the length normalisation use the same
formula and the same collection statistics as FTS5 (every row of the table: ``memory_stats``), so the
scores are SQLite's up to floating-point summation order. Ties: newest update, then id.
"""

from __future__ import annotations

from simone.providers.memory._backend import Db, Params, Row
from simone.providers.memory._rows import SELECT_RECORD, SELECT_TURN
from simone.providers.memory._terms import MAX_QUERY_TERMS, fts_token, scope_suffix
from simone.runtime.text import BM25_TITLE_WEIGHT

_K1 = 1.2
_B = 0.75


def scoped_tokens(terms: list[str], numbers: list[int]) -> list[str]:
    """The lexemes of ``terms`` in each scope of ``numbers`` (as :func:`~._terms.fts_query` asks them)."""
    tokens = list(dict.fromkeys(fts_token(term) for term in terms))[:MAX_QUERY_TERMS]
    return [token + scope_suffix(number) for number in numbers for token in tokens]


def tsquery(lexemes: list[str]) -> str:
    """A ``tsquery`` matching any of ``lexemes`` (quoted: taken as they are, not parsed)."""
    return " | ".join(f"'{lexeme}'" for lexeme in lexemes)


def bm25_sql(table: str, alias: str, condition: str, title_weight: float, stats: str) -> str:
    """Rows of ``table`` (``rowid``, ``score``) matching the tsquery (first parameter) and ``condition``.

    Parameters, in order: ``condition``'s, the tsquery, the lexemes (``text[]``).
    """
    return f"""
        WITH m AS (
            SELECT {alias}.rowid, {alias}.doc_len, u.lexeme,
                   {float(title_weight)} * coalesce(cardinality(array_positions(u.weights, 'A')), 0)
                   + coalesce(cardinality(array_positions(u.weights, 'D')), 0) AS f,
                   ({condition}) AS ok
            FROM {table} {alias} CROSS JOIN LATERAL unnest({alias}.tsv) AS u
            WHERE {alias}.tsv @@ CAST(? AS tsquery) AND u.lexeme = ANY(CAST(? AS text[]))
        ),
        d AS (SELECT lexeme, count(*)::float8 AS hits FROM m GROUP BY lexeme),
        s AS ({stats})
        SELECT m.rowid,
               sum(greatest(ln((s.n - d.hits + 0.5) / (d.hits + 0.5)), 1e-6)
                   * (m.f * {_K1 + 1.0}) / (m.f + {_K1} * (1.0 - {_B} + {_B} * m.doc_len / s.avgdl))) AS score
        FROM m JOIN d ON d.lexeme = m.lexeme CROSS JOIN s
        WHERE m.ok
        GROUP BY m.rowid
    """


def collection_stats(db: Db) -> tuple[int, int]:
    """The records' row count and token total (``memory_stats``: BM25's N and avgdl, as FTS5's)."""
    row = db.execute("SELECT n_rows, n_tokens FROM memory_stats").fetchone()
    return (int(row[0]), int(row[1])) if row is not None else (0, 0)


def rank_records(
    db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
) -> list[tuple[Row, float]]:
    """Records matching any of ``terms`` in the scopes ``numbers`` and ``condition``, by BM25 in SQL."""
    lexemes = scoped_tokens(terms, numbers)
    if not lexemes:
        return []
    stats = (
        "SELECT n_rows::float8 AS n, CASE WHEN n_rows > 0 THEN n_tokens::float8 / n_rows "
        "ELSE 1.0 END AS avgdl FROM memory_stats"
    )
    ranked = bm25_sql("records", "r", condition, BM25_TITLE_WEIGHT, stats)
    rows = db.execute(
        f"SELECT {SELECT_RECORD}, w.score FROM ({ranked}) w JOIN records r ON r.rowid = w.rowid "
        "ORDER BY w.score DESC, r.updated_us DESC, r.id LIMIT ?",
        (*params, tsquery(lexemes), lexemes, limit),
    ).fetchall()
    return [(row, float(row["score"])) for row in rows]


def rank_turns(
    db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
) -> list[tuple[Row, float]]:
    """Turns and summaries matching any of ``terms`` in the scopes ``numbers`` and ``condition``."""
    lexemes = scoped_tokens(terms, numbers)
    if not lexemes:
        return []
    stats = (
        "SELECT count(*)::float8 AS n, CASE WHEN count(*) > 0 THEN sum(doc_len)::float8 / count(*) "
        "ELSE 1.0 END AS avgdl FROM turns"
    )
    ranked = bm25_sql("turns", "t", condition, 1.0, stats)
    rows = db.execute(
        f"SELECT {SELECT_TURN}, w.score FROM ({ranked}) w JOIN turns t ON t.rowid = w.rowid "
        "ORDER BY w.score DESC, t.created_us DESC, t.id LIMIT ?",
        (*params, tsquery(lexemes), lexemes, limit),
    ).fetchall()
    return [(row, float(row["score"])) for row in rows]
