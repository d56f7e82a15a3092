"""BM25 search of records in SQLite (``search_records``).

Searches are answered from per-scope in-memory postings that reproduce FTS5's ``bm25()`` bit for bit
(:mod:`simone.providers.memory._cache`), or by FTS5 itself while a scope is changing a lot or does not
fit; ties are broken by the newest update, then the id.
``optimize`` merges the full-text indexes into one segment each after many writes.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import numpy as np
from simone.providers.memory._lookup import RecordLookup
from simone.providers.memory._models import SearchHit, SearchQuery
from simone.providers.memory._rows import SELECT_RECORD, record_from_row
from simone.providers.memory._terms import MAX_QUERY_TERMS, fts_query, fts_token
from simone.providers.memory.sqlite._cache import (
    BM25_CALL,
    ScopeIndex,
    SearchCacheInfo,
    fts_totals,
    score as memory_scores,
)
from simone.providers.memory.sqlite._connection import SQLiteCore
from simone.runtime import TrustedContext

_MAX_WINDOW = 4096
"""The largest candidate window of the fast search path before the full query takes over."""


class RecordSearch(SQLiteCore, RecordLookup):
    """BM25 search of records with FTS5 and the in-memory postings."""

    async def search_records(self, context: TrustedContext, query: SearchQuery) -> list[SearchHit]:
        """BM25 over analysed title (x3) and body; only records sharing a term with the query."""
        self._check_limit(query.limit)
        return await self._run(self._search_sync, context, query)

    def _search_sync(self, context: TrustedContext, query: SearchQuery) -> list[SearchHit]:
        assert self._analyzer is not None
        db = self._read()
        terms = self._analyzer.terms(query.text)
        condition, params = self._search_filters(context, query)
        # One read transaction: the scope epochs, the in-memory index and the rows are one snapshot.
        db.execute("BEGIN")
        try:
            visible = self._visible_scopes(db, context)
            match = fts_query(terms, [number for number, _, _ in visible])
            if match is None:
                hits: list[SearchHit] = []
            else:
                indexes = self._cache.indexes(db, visible)
                if indexes is not None:
                    hits = self._search_memory(db, indexes, terms, condition, params, query.limit)
                else:
                    hits = self._search_sql(db, match, condition, params, query.limit)
            db.execute("COMMIT")
            return hits
        finally:
            if db.in_transaction:
                db.execute("ROLLBACK")

    def _search_memory(
        self,
        db: sqlite3.Connection,
        indexes: list[ScopeIndex],
        terms: list[str],
        condition: str,
        params: list[Any],
        limit: int,
    ) -> list[SearchHit]:
        """BM25 from the in-memory indexes (the scores of ``bm25()``), then the filters in SQL.

        The best ``window`` rows by score, with every row tied at the cut-off, go through the filters; if
        at least ``limit`` pass, no row outside (all strictly worse) can enter the result, so it is exact.
        Otherwise the window grows until it holds every matching row.
        """
        tokens = list(dict.fromkeys(fts_token(term) for term in terms))[:MAX_QUERY_TERMS]
        rows, total_tokens = fts_totals(db)
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
                f"WHERE r.rowid IN (SELECT value FROM json_each(?)) AND {condition}",
                (json.dumps(list(score_of)), *params),
            ).fetchall()
            if complete or len(passed) >= limit:
                break
            window *= 8
        passed.sort(key=lambda row: (-score_of[row[0]], -row[1], row[2]))
        top = [int(row[0]) for row in passed[:limit]]
        if not top:
            return []
        fetched = db.execute(
            f"SELECT {SELECT_RECORD} FROM records r WHERE r.rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(top),),
        ).fetchall()
        by_rowid = {int(row["rowid"]): row for row in fetched}
        return [SearchHit(record=record_from_row(by_rowid[rowid]), score=score_of[rowid]) for rowid in top]

    def _search_sql(
        self, db: sqlite3.Connection, match: str, condition: str, params: list[Any], limit: int
    ) -> list[SearchHit]:
        """BM25 by FTS5's ``bm25()`` (:data:`BM25_CALL`), the filters and the tie-break in SQL."""
        # Fast path: the best ``window`` rows by BM25 from the index alone, then the filters and the
        # tie-break on those few rows. It is exact when the index had fewer matches than the window, or
        # when the last hit kept ranks strictly better than the worst candidate (so no row outside the
        # window can tie with or beat it); otherwise the window grows, and at last the full query runs.
        window = max(4 * limit, 64)
        while window <= _MAX_WINDOW:
            candidates = db.execute(
                f"SELECT rowid, {BM25_CALL} AS score FROM records_fts "
                "WHERE records_fts MATCH ? ORDER BY score LIMIT ?",
                (match, window),
            ).fetchall()
            ranks = {int(rowid): float(score) for rowid, score in candidates}
            if not ranks:
                return []
            marks = ", ".join("?" for _ in ranks)
            rows = db.execute(
                f"SELECT {SELECT_RECORD} FROM records r WHERE r.rowid IN ({marks}) AND {condition}",
                (*ranks, *params),
            ).fetchall()
            rows.sort(key=lambda row: (ranks[row["rowid"]], -row["updated_us"], row["id"]))
            rows = rows[:limit]
            worst = float(candidates[-1][1])
            if len(candidates) < window or (len(rows) == limit and ranks[rows[-1]["rowid"]] < worst):
                return [SearchHit(record=record_from_row(row), score=-ranks[row["rowid"]]) for row in rows]
            window *= 8
        full = db.execute(
            f"SELECT {SELECT_RECORD}, w.score FROM ("
            f"SELECT r.rowid AS rid, {BM25_CALL} AS score, r.updated_us AS u, r.id AS i "
            "FROM records_fts JOIN records r ON r.rowid = records_fts.rowid "
            f"WHERE records_fts MATCH ? AND {condition} ORDER BY score, u DESC, i LIMIT ?"
            ") w JOIN records r ON r.rowid = w.rid ORDER BY w.score, w.u DESC, w.i",
            (match, *params, limit),
        )
        return [SearchHit(record=record_from_row(row), score=-float(row["score"])) for row in full.fetchall()]

    def search_cache_info(self) -> SearchCacheInfo:
        """What the in-memory search indexes hold and how often they answered (for tests and tuning)."""
        return self._cache.info()

    async def optimize(self) -> None:
        """Merge the full-text indexes into one segment each (faster searches after many writes)."""
        await self._run(self._optimize_sync)

    def _optimize_sync(self) -> None:
        def transaction(db: sqlite3.Connection) -> None:
            db.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")
            db.execute("INSERT INTO turns_fts (turns_fts) VALUES ('optimize')")

        self._write(transaction)
