"""Full-text search in SQL on SQLite: FTS5's ``bm25()`` over records and over turns.

The one ``search_records`` (:mod:`simone.providers.memory._search`) asks here only while the in-memory
indexes cannot answer. Records: the title weighted 3 (:data:`~.sqlite._cache.BM25_CALL`), the filters and
the tie-break (newest update, then id) in SQL, through a candidate window that grows until it is exact.
``optimize`` (the store's) merges the full-text indexes into one segment each after many writes.
"""

from __future__ import annotations

from simone.providers.memory._backend import Db, Params, Row
from simone.providers.memory._rows import SELECT_RECORD, SELECT_TURN
from simone.providers.memory._terms import fts_query
from simone.providers.memory.sqlite._cache import BM25_CALL

_MAX_WINDOW = 4096
"""The largest candidate window of the fast path before the full query takes over."""


def rank_records(
    db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
) -> list[tuple[Row, float]]:
    """Records matching any of ``terms`` in the scopes ``numbers`` and ``condition``, by ``-bm25()``."""
    match = fts_query(terms, numbers)
    if match is None:
        return []
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
        rows = sorted(rows, key=lambda row: (ranks[row["rowid"]], -row["updated_us"], row["id"]))[:limit]
        worst = float(candidates[-1][1])
        if len(candidates) < window or (len(rows) == limit and ranks[rows[-1]["rowid"]] < worst):
            return [(row, -ranks[row["rowid"]]) for row in rows]
        window *= 8
    full = db.execute(
        f"SELECT {SELECT_RECORD}, w.score FROM ("
        f"SELECT r.rowid AS rid, {BM25_CALL} AS score, r.updated_us AS u, r.id AS i "
        "FROM records_fts JOIN records r ON r.rowid = records_fts.rowid "
        f"WHERE records_fts MATCH ? AND {condition} ORDER BY score, u DESC, i LIMIT ?"
        ") w JOIN records r ON r.rowid = w.rid ORDER BY w.score, w.u DESC, w.i",
        (match, *params, limit),
    )
    return [(row, -float(row["score"])) for row in full.fetchall()]


def rank_turns(
    db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
) -> list[tuple[Row, float]]:
    """Turns and summaries matching any of ``terms`` in the scopes ``numbers`` and ``condition``, by ``-bm25()``."""
    match = fts_query(terms, numbers)
    if match is None:
        return []
    rows = db.execute(
        f"SELECT {SELECT_TURN}, bm25(turns_fts) AS rank FROM turns_fts "
        "JOIN turns t ON t.rowid = turns_fts.rowid "
        f"WHERE turns_fts MATCH ? AND {condition} ORDER BY rank, t.created_us DESC, t.id LIMIT ?",
        (match, *params, limit),
    )
    return [(row, -float(row["rank"])) for row in rows.fetchall()]
