"""The in-memory BM25 indexes of SQLite's search (:mod:`~simone.providers.memory.sqlite._cache`) on PostgreSQL.

The same per-scope postings and the same scoring (FTS5's ``bm25()`` operation by operation), kept fresh
the same way: every write bumps its scope's ``epoch`` and logs the record in ``record_changes`` in its own
transaction (triggers, schema v2), and a search reads the epochs, the collection statistics and, when an
epoch moved, the logged records, all in one ``REPEATABLE READ`` snapshot. So a write by any process or
host is seen by the next search, and only the records it changed are re-read. Writers hold memory's
advisory lock, so the log's ``seq`` grows in commit order and "newer than the last ``seq`` seen" is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from simone.providers.memory.sqlite import ScopeIndex, SearchCache, last_change, pruned_through

_MAX_EXTRA = 256
"""Rows patched into a scope's index (at least; or a tenth of it) before it is rebuilt instead (as SQLite)."""


def stats(db: Any) -> tuple[int, int]:
    """The collection's row count and token total (``memory_stats``: BM25's N and avgdl, as FTS5's)."""
    row = db.execute("SELECT n_rows, n_tokens FROM memory_stats").fetchone()
    return (int(row[0]), int(row[1])) if row is not None else (0, 0)


def prune_changes(db: Any, keep: int = 100_000) -> None:
    """Keep the last ``keep`` change-log entries (inside the caller's write transaction)."""
    bound = last_change(db) - keep
    if bound > pruned_through(db):
        db.execute("DELETE FROM record_changes WHERE seq <= ?", (bound,))
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('changes_pruned_through', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(bound),),
        )


def patch(index: ScopeIndex, db: Any, signature: str, epoch: int) -> None:
    """Re-read the records logged as changed in ``index``'s scope since it was built or last patched."""
    seq = last_change(db)
    changed = [
        int(row[0])
        for row in db.execute(
            "SELECT DISTINCT rid FROM record_changes WHERE n = ? AND seq > ? AND seq <= ?",
            (index.number, index.seq, seq),
        ).fetchall()
    ]
    rows = db.execute(
        "SELECT rowid, fts_title, fts_body FROM records WHERE rowid = ANY(CAST(? AS bigint[])) AND scope_sig = ?",
        (changed, signature),
    ).fetchall()
    index.apply(changed, rows, epoch, seq)


class PostgresSearchCache(SearchCache):
    """SQLite's :class:`SearchCache`, patching scopes with PostgreSQL's SQL (one thread at a time)."""

    def indexes(self, db: Any, visible: Sequence[tuple[int, str, int]]) -> list[ScopeIndex] | None:
        """The fresh indexes of the visible scopes ``(number, signature, epoch)``, or ``None`` for SQL.

        Must run inside the query's snapshot. A held scope whose epoch moved is patched here from the
        log; one changed too much (or whose log was pruned) is marked stale, so the shared logic drops it
        and answers by SQL until it settles, then rebuilds it (``ScopeIndex.build`` is portable SQL).
        """
        if self.max_postings > 0:
            floor: int | None = None
            for number, signature, epoch in visible:
                entry = self._entries.get(number)
                if entry is None or entry.epoch == epoch:
                    continue
                if floor is None:
                    floor = pruned_through(db)
                if entry.seq >= floor:
                    patch(entry, db, signature, epoch)
                    if len(entry.extra) <= max(_MAX_EXTRA, len(entry.rowids) // 10):
                        continue
                entry.epoch = entry.seq = -1  # stale: the shared logic drops it
        return super().indexes(db, visible)
