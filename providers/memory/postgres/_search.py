"""BM25 search in PostgreSQL: the same in-memory postings as SQLite's, or SQL scoring like FTS5's ``bm25()``.

Searches are answered from per-scope in-memory postings (:mod:`~simone.providers.memory.postgres._cache`,
SQLite's design and scoring code), checked per query against the scope epochs in the query's snapshot,
so another process's writes are seen at once; the filters, the tie-break and the rows come from SQL in
that same snapshot. While a scope is changing a lot, or does not fit in ``memory.search_cache_postings``,
SQL answers it: rows found by ``tsv @@ tsquery`` over the scope-numbered tokens of the visible scopes,
each row's term frequencies taken from its ``tsvector`` (positions of weight A are title occurrences, D
body occurrences), weighted like SQLite's (title :data:`~simone.runtime.text.BM25_TITLE_WEIGHT`, body 1);
IDF and the length normalisation use the same formula and the same collection statistics as FTS5 (every
row of the table: ``memory_stats``), so the scores are SQLite's up to floating-point summation order.
Ties: newest update, then id.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from simone.providers.memory._core import DB
from simone.providers.memory._lookup import RecordLookup
from simone.providers.memory._models import SearchHit, SearchQuery
from simone.providers.memory._rows import SELECT_RECORD, SELECT_TURN, record_from_row
from simone.providers.memory._scope import visible_signatures
from simone.providers.memory._sessions import SessionMemory
from simone.providers.memory._terms import MAX_QUERY_TERMS, fts_token, scope_suffix
from simone.providers.memory.postgres._cache import stats
from simone.providers.memory.postgres._connection import PostgresCore
from simone.providers.memory.sqlite import ScopeIndex, SearchCacheInfo, score as memory_scores
from simone.runtime import TrustedContext
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


class PostgresSearch(PostgresCore, RecordLookup, SessionMemory):
    """BM25 search of records, turns and summaries in SQL."""

    async def search_records(self, context: TrustedContext, query: SearchQuery) -> list[SearchHit]:
        """BM25 over analysed title (x3) and body; only records sharing a term with the query."""
        self._check_limit(query.limit)
        return await self._run(self._search_sync, context, query)

    def _search_sync(self, context: TrustedContext, query: SearchQuery) -> list[SearchHit]:
        assert self._analyzer is not None
        db = self._read()
        terms = self._analyzer.terms(query.text)
        condition, params = self._search_filters(context, query)
        # One snapshot: the scope epochs, the patches of the in-memory index, the statistics and the rows.
        db.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        done = False
        try:
            visible = self._visible_scopes(db, context)
            lexemes = scoped_tokens(terms, [number for number, _, _ in visible])
            hits: list[SearchHit] = []
            if lexemes:
                found = self._search_memory(db, visible, terms, condition, params, query.limit)
                hits = (
                    found
                    if found is not None
                    else self._search_sql(db, lexemes, condition, params, query.limit)
                )
            db.execute("COMMIT")
            done = True
            return hits
        finally:
            if not done:
                try:
                    db.execute("ROLLBACK")
                except self._errors:
                    pass  # the connection is gone, and its transaction with it

    @staticmethod
    def _visible_scopes(db: DB, context: TrustedContext) -> list[tuple[int, str, int]]:
        """``(number, signature, epoch)`` of the scopes that exist and are visible to ``context``."""
        signatures = visible_signatures(context)
        marks = ", ".join("?" for _ in signatures)
        rows = db.execute(f"SELECT n, sig, epoch FROM scopes WHERE sig IN ({marks}) ORDER BY n", signatures)
        return [(int(n), str(sig), int(epoch)) for n, sig, epoch in rows.fetchall()]

    def _search_memory(
        self,
        db: DB,
        visible: list[tuple[int, str, int]],
        terms: list[str],
        condition: str,
        params: list[Any],
        limit: int,
    ) -> list[SearchHit] | None:
        """BM25 from the in-memory indexes, then the filters in SQL (``None``: SQL must answer).

        As SQLite's: the best ``window`` rows by score, with every row tied at the cut-off, go through
        the filters; if at least ``limit`` pass, no row outside (all strictly worse) can enter the result,
        so it is exact. Otherwise the window grows until it holds every matching row.
        """
        tokens = list(dict.fromkeys(fts_token(term) for term in terms))[:MAX_QUERY_TERMS]
        rows, total_tokens = stats(db)
        with self._cache_lock:  # the indexes are patched in place: one thread at a time
            indexes: list[ScopeIndex] | None = self._cache.indexes(db, visible)
            if indexes is None:
                return None
            rowids, scores = memory_scores(indexes, tokens, rows, total_tokens)
        if not len(rowids):
            return []
        window = max(4 * limit, 64)
        while True:
            if window >= len(rowids):
                chosen_rowids, chosen_scores, complete = rowids, scores, True
            else:
                threshold = np.partition(scores, len(scores) - window)[len(scores) - window]
                keep = scores >= threshold
                chosen_rowids, chosen_scores = rowids[keep], scores[keep]
                complete = len(chosen_rowids) == len(rowids)
            score_of = dict(zip(chosen_rowids.tolist(), chosen_scores.tolist(), strict=True))
            passed = db.execute(
                "SELECT r.rowid, r.updated_us, r.id FROM records r "
                f"WHERE r.rowid = ANY(CAST(? AS bigint[])) AND {condition}",
                (list(score_of), *params),
            ).fetchall()
            if complete or len(passed) >= limit:
                break
            window *= 8
        ranked = sorted(passed, key=lambda row: (-score_of[row[0]], -row[1], row[2]))
        top = [int(row[0]) for row in ranked[:limit]]
        if not top:
            return []
        fetched = db.execute(
            f"SELECT {SELECT_RECORD} FROM records r WHERE r.rowid = ANY(CAST(? AS bigint[]))", (top,)
        ).fetchall()
        by_rowid = {int(row["rowid"]): row for row in fetched}
        return [SearchHit(record=record_from_row(by_rowid[rowid]), score=score_of[rowid]) for rowid in top]

    def _search_sql(
        self, db: DB, lexemes: list[str], condition: str, params: list[Any], limit: int
    ) -> list[SearchHit]:
        """BM25 in SQL (:func:`bm25_sql`), the filters and the tie-break too."""
        stats_sql = (
            "SELECT n_rows::float8 AS n, CASE WHEN n_rows > 0 THEN n_tokens::float8 / n_rows "
            "ELSE 1.0 END AS avgdl FROM memory_stats"
        )
        ranked = bm25_sql("records", "r", condition, BM25_TITLE_WEIGHT, stats_sql)
        rows = db.execute(
            f"SELECT {SELECT_RECORD}, w.score FROM ({ranked}) w JOIN records r ON r.rowid = w.rowid "
            "ORDER BY w.score DESC, r.updated_us DESC, r.id LIMIT ?",
            (*params, tsquery(lexemes), lexemes, limit),
        ).fetchall()
        return [SearchHit(record=record_from_row(row), score=float(row["score"])) for row in rows]

    def search_cache_info(self) -> SearchCacheInfo:
        """What the in-memory search indexes hold and how often they answered (for tests and tuning)."""
        return self._cache.info()

    def _session_search(
        self, db: DB, terms: list[str], numbers: list[int], condition: str, params: list[Any], limit: int
    ) -> list[Any]:
        lexemes = scoped_tokens(terms, numbers)
        if not lexemes:
            return []
        stats = (
            "SELECT count(*)::float8 AS n, CASE WHEN count(*) > 0 THEN sum(doc_len)::float8 / count(*) "
            "ELSE 1.0 END AS avgdl FROM turns"
        )
        ranked = bm25_sql("turns", "t", condition, 1.0, stats)
        rows = db.execute(
            f"SELECT {SELECT_TURN}, -w.score AS rank FROM ({ranked}) w JOIN turns t ON t.rowid = w.rowid "
            "ORDER BY w.score DESC, t.created_us DESC, t.id LIMIT ?",
            (*params, tsquery(lexemes), lexemes, limit),
        ).fetchall()
        return list(rows)
