"""BM25 search of records (``search_records``), one function for both backends.

A search reads one snapshot: the visible scopes and their epochs, the in-memory indexes
(:mod:`simone.providers.memory._cache`, patched from the change log when a scope moved), BM25's collection
statistics and the rows. It is answered from the in-memory postings, which score exactly like SQLite's
FTS5 ``bm25()``, or — while a scope is changing a lot, or does not fit in ``memory.search_cache_postings``
— by the backend's full-text search in SQL (:meth:`~simone.providers.memory._backend.Backend.rank_records`:
FTS5 on SQLite, ``tsvector`` on PostgreSQL). Only records sharing a term with the query are found; ties are
broken by the newest update, then the id.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from simone.providers.memory._access import search_filters
from simone.providers.memory._backend import Db, SqlValue
from simone.providers.memory._cache import score
from simone.providers.memory._core import Core, visible_scopes
from simone.providers.memory._models import RecordHit, SearchQuery
from simone.providers.memory._rows import SELECT_RECORD, record_from_row
from simone.providers.memory._terms import MAX_QUERY_TERMS, fts_token
from simone.runtime import TrustedContext


def search_records(core: Core, db: Db, context: TrustedContext, query: SearchQuery) -> list[RecordHit]:
    """BM25 over analysed title (x3) and body; only records sharing a term with the query."""
    terms = core.analysis.terms(query.text)
    condition, params = search_filters(core, context, query)

    def snapshot(tx: Db) -> list[RecordHit]:
        visible = visible_scopes(tx, context)
        tokens = list(dict.fromkeys(fts_token(term) for term in terms))[:MAX_QUERY_TERMS]
        if not tokens or not visible:
            return []
        found = _from_memory(core, tx, visible, tokens, condition, params, query.limit)
        if found is not None:
            return found
        numbers = [number for number, _, _ in visible]
        ranked = core.backend.rank_records(tx, terms, numbers, condition, params, query.limit)
        return [RecordHit(record=record_from_row(row), score=value) for row, value in ranked]

    return db.snapshot(snapshot)


def _from_memory(
    core: Core,
    db: Db,
    visible: list[tuple[int, str, int]],
    tokens: list[str],
    condition: str,
    params: list[SqlValue],
    limit: int,
) -> list[RecordHit] | None:
    """BM25 from the in-memory indexes, then the filters in SQL (``None``: the indexes cannot answer).

    The best ``window`` rows by score, with every row tied at the cut-off, go through the filters; if at
    least ``limit`` pass, no row outside (all strictly worse) can enter the result, so it is exact.
    Otherwise the window grows until it holds every matching row.
    """
    backend = core.backend
    rows, total_tokens = backend.collection_stats(db)
    with backend.cache_lock:  # the indexes are patched in place: one thread at a time
        indexes = core.cache.indexes(db, visible, backend.rowids_in)
        if indexes is None:
            return None
        rowids, scores = score(indexes, tokens, rows, total_tokens)
    if not len(rowids):
        return []
    passed = _passing(core, db, rowids, scores, condition, params, limit)
    ranked = sorted(passed, key=lambda row: (-row[1], -row[2], row[3]))[:limit]  # ties: newest, then id
    if not ranked:
        return []
    among, value = backend.rowids_in("r.rowid", [rowid for rowid, _, _, _ in ranked])
    fetched = db.execute(f"SELECT {SELECT_RECORD} FROM records r WHERE {among}", (value,)).fetchall()
    by_rowid = {int(row["rowid"]): row for row in fetched}
    return [
        RecordHit(record=record_from_row(by_rowid[rowid]), score=points) for rowid, points, _, _ in ranked
    ]


def _passing(
    core: Core,
    db: Db,
    rowids: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    condition: str,
    params: list[SqlValue],
    limit: int,
) -> list[tuple[int, float, int, str]]:
    """``(rowid, score, updated_us, id)`` of the best-scoring rows that meet ``condition``."""
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
        among, value = core.backend.rowids_in("r.rowid", list(score_of))
        passed = db.execute(
            f"SELECT r.rowid, r.updated_us, r.id FROM records r WHERE {among} AND {condition}",
            (value, *params),
        ).fetchall()
        if complete or len(passed) >= limit:
            return [(int(row[0]), score_of[int(row[0])], int(row[1]), str(row[2])) for row in passed]
        window *= 8
