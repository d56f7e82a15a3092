"""What SQLite's FTS5 adds to the in-memory search indexes (:mod:`simone.providers.memory._cache`).

:data:`BM25_CALL` is the ``bm25()`` the SQL path ranks with (the in-memory scores equal it bit for bit);
:func:`fts_totals` reads BM25's collection statistics from FTS5's own averages record, as ``bm25()`` does.
"""

from __future__ import annotations

from simone.providers.memory._backend import Db
from simone.runtime.text import BM25_TITLE_WEIGHT

BM25_CALL = f"bm25(records_fts, {float(BM25_TITLE_WEIGHT)}, 1.0)"
"""FTS5's ``bm25()`` over the records with runtime's title weight (title, body): the SQL path's scores."""
_AVERAGES_ROWID = 1
"""The id of FTS5's averages record (row count, then the token total of each column)."""


def _varints(block: bytes) -> list[int]:
    """SQLite-style varints (big-endian 7-bit groups, a 9th byte of 8 bits), as FTS5 writes them."""
    values: list[int] = []
    pos = 0
    while pos < len(block):
        value = 0
        for _ in range(8):
            byte = block[pos]
            pos += 1
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        else:
            value = (value << 8) | block[pos]
            pos += 1
        values.append(value)
    return values


def fts_totals(db: Db) -> tuple[int, int]:
    """FTS5's row count and token total (all columns) of ``records_fts``, as ``bm25()`` reads them."""
    row = db.execute("SELECT block FROM records_fts_data WHERE id = ?", (_AVERAGES_ROWID,)).fetchone()
    values = _varints(bytes(row[0])) if row is not None and row[0] else []
    if not values:
        return 0, 0
    return values[0], sum(values[1:])
