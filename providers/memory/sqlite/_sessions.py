"""Session search in SQLite: FTS5's ``bm25()`` over the turns' scoped tokens."""

from __future__ import annotations

from typing import Any

from simone.providers.memory._core import DB
from simone.providers.memory._rows import SELECT_TURN
from simone.providers.memory._sessions import SessionMemory
from simone.providers.memory._terms import fts_query
from simone.providers.memory.sqlite._connection import SQLiteCore


class SQLiteSessionSearch(SQLiteCore, SessionMemory):
    """BM25 search of turns and summaries with FTS5."""

    def _session_search(
        self, db: DB, terms: list[str], numbers: list[int], condition: str, params: list[Any], limit: int
    ) -> list[Any]:
        match = fts_query(terms, numbers)
        rows = db.execute(
            f"SELECT {SELECT_TURN}, bm25(turns_fts) AS rank FROM turns_fts "
            "JOIN turns t ON t.rowid = turns_fts.rowid "
            f"WHERE turns_fts MATCH ? AND {condition} ORDER BY rank, t.created_us DESC, t.id LIMIT ?",
            (match, *params, limit),
        )
        return list(rows.fetchall())
