"""In-memory BM25 over the stored full-text tokens of each scope: the same scores as SQLite's ``bm25()``.

A claim-sized query (about 20 terms) matches a large share of its scope, and FTS5's ``bm25()`` costs a
few microseconds per matching row. This module keeps, per scope, the tokens the FTS5 index holds (the
``fts_title`` / ``fts_body`` columns) as numpy postings, and scores a query with one ``bincount`` —
with runtime's BM25 in its FTS5 flavour (:func:`~simone.runtime.text.fts5_idf`,
:func:`~simone.runtime.text.fts5_term_scores`, :func:`~simone.runtime.text.bm25_length_norm`: FTS5's formula
operation by operation), so scores are bit-identical and the ranking and its ties (newest update, then id)
are exactly those of the SQL path:

* N and the average row length are the backend's collection statistics (FTS5's own averages record on
  SQLite, ``memory_stats`` on PostgreSQL: every scope, deleted records included), read in the query's
  snapshot;
* the document frequency of a token is its number of rows in the scope (tokens carry their scope);
* the frequency of a token in a row is :data:`~simone.runtime.text.BM25_TITLE_WEIGHT` (3) × its title
  occurrences + its body occurrences (the column weights of SQLite's
  :data:`~simone.providers.memory.sqlite._cache.BM25_CALL`), the row length is its token count over both
  columns;
* a row's score sums its tokens' contributions in query order, from 0.0, as FTS5 does.

Freshness: every write that adds, removes or re-analyses a record bumps its scope's ``epoch`` and logs the
record in ``record_changes`` (triggers: SQLite's schema v3, PostgreSQL's v2), so a write by any connection,
process or host is seen by the next query: a scope whose epoch moved re-reads the logged records and patches its index (removed rows are
masked, new versions kept beside the built postings). A scope patched with more than a tenth of its rows
(at least 256), or whose log was pruned, is dropped and answered by SQL until it has stopped changing for
one query; then it is rebuilt. The cache
holds at most ``max_postings`` postings (least recently used scopes are evicted); a scope larger than that
is always answered by SQL.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from simone.providers.memory._backend import Db, Row, SqlValue
from simone.providers.memory._terms import scope_suffix
from simone.runtime.text import (
    BM25_TITLE_WEIGHT,
    bm25_length_norm,
    fts5_idf,
    fts5_term_scores,
)

_MAX_EXTRA = 256
"""Rows patched into a scope's index (at least; or a tenth of it) before it is rebuilt instead."""

RowidsIn = Callable[[str, Sequence[int]], tuple[str, SqlValue]]
"""The backend's SQL for "``column`` is one of these row ids" and its one parameter
(:meth:`~simone.providers.memory._backend.Backend.rowids_in`)."""


class SearchCacheInfo(NamedTuple):
    """What the in-memory search cache holds and how often it answered.

    Attributes:
        scopes: scopes held.
        postings: postings held, in all (the bound is ``memory.search_cache_postings``).
        hits: searches answered from memory.
        misses: searches answered by SQL (cache off, a scope changing, or too large).
        builds: scopes built (or rebuilt after a change).
    """

    scopes: int
    postings: int
    hits: int
    misses: int
    builds: int


@dataclass(slots=True)
class ScopeIndex:
    """The FTS5 tokens of one scope's records as CSR postings (built once, read-only afterwards)."""

    number: int
    epoch: int
    seq: int
    rowids: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.float64]
    spans: dict[str, tuple[int, int]]
    slots: npt.NDArray[np.int64]
    freqs: npt.NDArray[np.float64]
    norm_for: float = float("nan")
    norm: npt.NDArray[np.float64] | None = None
    dead: npt.NDArray[np.bool_] | None = None
    """Built rows removed or changed since the build (their postings are skipped)."""
    extra: dict[int, tuple[dict[str, float], float]] = field(default_factory=dict)
    """Rows added or changed since the build: rowid -> (token frequencies, length)."""
    slot_of: dict[int, int] | None = None

    @property
    def postings(self) -> int:
        """How many (token, row) pairs it holds."""
        return len(self.slots)

    @classmethod
    def build(cls, db: Db, number: int, signature: str, epoch: int) -> ScopeIndex:
        """Read the scope's records' tokens (in the caller's read transaction) and index them."""
        seq = last_change(db)
        rows = db.execute(
            "SELECT rowid, fts_title, fts_body FROM records WHERE scope_sig = ? ORDER BY rowid", (signature,)
        ).fetchall()
        tokens: list[str] = []
        counts: list[int] = []  # per row: title tokens, body tokens
        rowids: list[int] = []
        for rowid, title, body in rows:
            title_tokens = title.split()
            body_tokens = body.split()
            tokens += title_tokens
            tokens += body_tokens
            counts.append(len(title_tokens))
            counts.append(len(body_tokens))
            rowids.append(int(rowid))
        pair_counts = np.array(counts, dtype=np.int64).reshape(-1, 2)
        lengths = pair_counts.sum(axis=1).astype(np.float64)
        # token ids in C: distinct tokens in first-seen order, then one dict lookup per token
        vocabulary = {token: index for index, token in enumerate(dict.fromkeys(tokens))}
        token_ids = np.fromiter(map(vocabulary.__getitem__, tokens), dtype=np.int64, count=len(tokens))
        size = len(rowids)
        row_of = np.repeat(np.arange(size, dtype=np.int64), pair_counts.sum(axis=1))
        weight = np.repeat(np.tile(np.array([float(BM25_TITLE_WEIGHT), 1.0]), size), pair_counts.ravel())
        keys = token_ids * max(size, 1) + row_of
        unique, inverse = np.unique(keys, return_inverse=True)
        freqs = np.bincount(inverse, weights=weight, minlength=len(unique)).astype(np.float64, copy=False)
        token_of = unique // max(size, 1)
        slots = unique - token_of * max(size, 1)
        starts = np.searchsorted(token_of, np.arange(len(vocabulary) + 1, dtype=np.int64))
        spans = {token: (int(starts[index]), int(starts[index + 1])) for token, index in vocabulary.items()}
        return cls(
            number=number,
            epoch=epoch,
            seq=seq,
            rowids=np.array(rowids, dtype=np.int64),
            lengths=lengths,
            spans=spans,
            slots=slots,
            freqs=freqs,
        )

    def normalisation(self, avgdl: float) -> npt.NDArray[np.float64]:
        """k1·(1 − b + b·|d|/avgdl) per row, exactly as FTS5 evaluates it (cached per avgdl)."""
        if self.norm is None or self.norm_for != avgdl:
            self.norm = bm25_length_norm(self.lengths, avgdl)
            self.norm_for = avgdl
        return self.norm

    def patch(self, db: Db, signature: str, epoch: int, rowids_in: RowidsIn) -> None:
        """Re-read the records logged as changed in this scope since the build (or the last patch)."""
        seq = last_change(db)
        changed = [
            int(row[0])
            for row in db.execute(
                "SELECT DISTINCT rid FROM record_changes WHERE n = ? AND seq > ? AND seq <= ?",
                (self.number, self.seq, seq),
            ).fetchall()
        ]
        among, rowids = rowids_in("rowid", changed)
        rows = db.execute(
            f"SELECT rowid, fts_title, fts_body FROM records WHERE {among} AND scope_sig = ?",
            (rowids, signature),
        ).fetchall()
        self.apply(changed, rows, epoch, seq)

    def apply(self, changed: Sequence[int], rows: Sequence[Row], epoch: int, seq: int) -> None:
        """Retire the ``changed`` rows and index ``rows`` (rowid, analysed title, analysed body) anew.

        ``rows`` come from the change log read up to its entry ``seq``.
        """
        if self.slot_of is None:
            self.slot_of = {rowid: slot for slot, rowid in enumerate(self.rowids.tolist())}
        if self.dead is None:
            self.dead = np.zeros(len(self.rowids), dtype=np.bool_)
        for rowid in changed:
            slot = self.slot_of.get(rowid)
            if slot is not None:
                self.dead[slot] = True
            self.extra.pop(rowid, None)
        for rowid, title, body in rows:
            counts: dict[str, float] = {}
            title_tokens = title.split()
            body_tokens = body.split()
            for token in title_tokens:
                counts[token] = counts.get(token, 0.0) + float(BM25_TITLE_WEIGHT)
            for token in body_tokens:
                counts[token] = counts.get(token, 0.0) + 1.0
            self.extra[int(rowid)] = (counts, float(len(title_tokens) + len(body_tokens)))
        self.epoch = epoch
        self.seq = seq


def last_change(db: Db) -> int:
    """The newest entry of the change log (0 when empty)."""
    row = db.execute("SELECT MAX(seq) FROM record_changes").fetchone()
    return int(row[0]) if row is not None and row[0] is not None else 0


def pruned_through(db: Db) -> int:
    """Change-log entries up to this one may be gone (an index built before must be rebuilt)."""
    row = db.execute("SELECT value FROM meta WHERE key = 'changes_pruned_through'").fetchone()
    return int(row[0]) if row is not None else 0


def prune_changes(db: Db, keep: int = 100_000) -> None:
    """Keep the last ``keep`` change-log entries (inside the caller's write transaction)."""
    bound = last_change(db) - keep
    if bound > pruned_through(db):
        db.execute("DELETE FROM record_changes WHERE seq <= ?", (bound,))
        db.execute(
            "INSERT INTO meta (key, value) VALUES ('changes_pruned_through', ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (str(bound),),
        )


def score(
    indexes: Sequence[ScopeIndex], tokens: Sequence[str], rows: int, total_tokens: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]:
    """The rowids matching any of ``tokens`` in the scopes, and their BM25 scores (as ``-bm25()``).

    Args:
        indexes: the visible scopes.
        tokens: the query's distinct FTS5 tokens without their scope suffix, in query order.
        rows: FTS5's row count.
        total_tokens: FTS5's token total over both columns.
    """
    if rows <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    avgdl = float(total_tokens) / float(rows)
    positions: list[npt.NDArray[np.int64]] = []
    parts: list[npt.NDArray[np.float64]] = []
    rowid_parts: list[npt.NDArray[np.int64]] = []
    offset = 0
    for index in indexes:
        suffix = scope_suffix(index.number)
        norm: npt.NDArray[np.float64] | None = None
        size = len(index.rowids)
        extra_rowids = list(index.extra)
        extra_rows = [index.extra[rowid] for rowid in extra_rowids]
        extra_norm = (
            bm25_length_norm(np.array([length for _, length in extra_rows], dtype=np.float64), avgdl)
            if extra_rows
            else None
        )
        for token in tokens:
            key = token + suffix
            start, end = index.spans.get(key, (0, 0))
            slots = index.slots[start:end]
            freq = index.freqs[start:end]
            if index.dead is not None and len(slots):
                live = ~index.dead[slots]
                slots, freq = slots[live], freq[live]
            added = [(row, counts[key]) for row, (counts, _) in enumerate(extra_rows) if key in counts]
            hits = len(slots) + len(added)
            if not hits:
                continue
            idf = fts5_idf(rows, hits)
            if len(slots):
                if norm is None:
                    norm = index.normalisation(avgdl)
                parts.append(fts5_term_scores(idf, freq, norm[slots]))
                positions.append(slots + offset)
            if added:
                assert extra_norm is not None
                at = np.array([row for row, _ in added], dtype=np.int64)
                extra_freq = np.array([count for _, count in added], dtype=np.float64)
                parts.append(fts5_term_scores(idf, extra_freq, extra_norm[at]))
                positions.append(at + (offset + size))
        rowid_parts.append(index.rowids)
        rowid_parts.append(np.array(extra_rowids, dtype=np.int64))
        offset += size + len(extra_rowids)
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    # bincount adds in input order: each row sums its tokens' contributions in query order, from 0.0
    totals = np.bincount(np.concatenate(positions), weights=np.concatenate(parts), minlength=offset).astype(
        np.float64, copy=False
    )
    matched = np.flatnonzero(totals > 0)
    return np.concatenate(rowid_parts)[matched], totals[matched]


class SearchCache:
    """The per-scope in-memory indexes of one store (one thread at a time: the backend's ``cache_lock``).

    Args:
        max_postings: the most postings held over all scopes (0 turns the cache off).
    """

    def __init__(self, max_postings: int) -> None:
        self.max_postings = max_postings
        self._entries: OrderedDict[int, ScopeIndex] = OrderedDict()
        self._seen: dict[int, int] = {}
        self._too_large: dict[int, int] = {}
        self._held = 0
        self._hits = 0
        self._misses = 0
        self._builds = 0

    def info(self) -> SearchCacheInfo:
        """What the cache holds and how often it answered."""
        return SearchCacheInfo(len(self._entries), self._held, self._hits, self._misses, self._builds)

    def clear(self) -> None:
        """Forget every scope (the store closed)."""
        self._entries.clear()
        self._seen.clear()
        self._too_large.clear()
        self._held = 0

    def _drop(self, number: int) -> None:
        entry = self._entries.pop(number, None)
        if entry is not None:
            self._held -= entry.postings

    def indexes(
        self, db: Db, visible: Sequence[tuple[int, str, int]], rowids_in: RowidsIn
    ) -> list[ScopeIndex] | None:
        """The fresh indexes of the visible scopes ``(number, signature, epoch)``, or ``None`` for SQL.

        Must run inside the query's snapshot (so what it builds is what the query reads), under the
        backend's ``cache_lock``. A held scope whose epoch moved is patched from the change log; one
        changed too much (or whose log was pruned) is dropped and answered by SQL until it settles, then
        rebuilt.
        """
        if self.max_postings <= 0:
            self._misses += 1
            return None
        ready = True
        wanted: list[tuple[int, str, int]] = []
        floor: int | None = None
        for number, signature, epoch in visible:
            entry = self._entries.get(number)
            if entry is not None and entry.epoch == epoch:
                continue
            if entry is not None and floor is None:
                floor = pruned_through(db)
            if entry is not None and floor is not None and entry.seq >= floor:
                entry.patch(db, signature, epoch, rowids_in)  # the logged changes, re-read
                if len(entry.extra) <= max(_MAX_EXTRA, len(entry.rowids) // 10):
                    continue
            if entry is not None:  # changed a lot since it was built: answer by SQL until it settles
                self._drop(number)
                self._seen[number] = epoch
                ready = False
            elif self._seen.get(number, epoch) != epoch or self._too_large.get(number) == epoch:
                self._seen[number] = epoch  # still changing, or known not to fit
                ready = False
            else:
                self._seen[number] = epoch
                wanted.append((number, signature, epoch))
        if not ready:
            self._misses += 1
            return None
        for number, signature, epoch in wanted:
            built = ScopeIndex.build(db, number, signature, epoch)
            self._builds += 1
            self._entries[number] = built
            self._held += built.postings
        numbers = {number for number, _, _ in visible}
        for number in numbers:
            self._entries.move_to_end(number)
        while self._held > self.max_postings and next(iter(self._entries)) not in numbers:
            self._drop(next(iter(self._entries)))
        if self._held > self.max_postings:  # the visible scopes alone do not fit: SQL answers them
            for number, _, epoch in wanted:
                self._drop(number)
                self._too_large[number] = epoch
            self._misses += 1
            return None
        self._hits += 1
        return [self._entries[number] for number, _, _ in visible]
