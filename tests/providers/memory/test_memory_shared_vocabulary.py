"""Memory speaks runtime's BM25 and runtime's scope keys: one definition of each."""

from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from simone.providers.memory import scope_like
from simone.providers.memory.sqlite._cache import BM25_CALL
from simone.runtime import SCOPE_KEYS
from simone.runtime.text import (
    BM25_TITLE_WEIGHT,
    bm25_length_norm,
    fts5_idf,
    fts5_term_scores,
)

_ROWS = [
    ("lake depth", "the lake is deep and the lake is cold"),
    ("river", "a river runs into the lake"),
    ("mountain lake survey", "survey of depth"),
    ("forest", "pine forest on the shore of a deep lake lake lake"),
    ("notes", "nothing relevant here at all"),
]


def _fts5_scores(query: list[str]) -> dict[int, float]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(title, body)")
    db.executemany(
        "INSERT INTO t (rowid, title, body) VALUES (?, ?, ?)",
        [(rowid, t, b) for rowid, (t, b) in enumerate(_ROWS, 1)],
    )
    match = " OR ".join(f'"{term}"' for term in query)
    weight = float(BM25_TITLE_WEIGHT)
    rows = db.execute(f"SELECT rowid, bm25(t, {weight}, 1.0) FROM t WHERE t MATCH ?", (match,)).fetchall()
    return {int(rowid): -float(score) for rowid, score in rows}


def _runtime_scores(query: list[str]) -> dict[int, float]:
    lengths = np.array([len(t.split()) + len(b.split()) for t, b in _ROWS], dtype=np.float64)
    norm = bm25_length_norm(lengths, float(lengths.sum()) / len(_ROWS))
    totals = np.zeros(len(_ROWS))
    for term in query:
        tf = np.array(
            [BM25_TITLE_WEIGHT * t.split().count(term) + b.split().count(term) for t, b in _ROWS],
            dtype=np.float64,
        )
        held = tf > 0
        if held.any():
            idf = fts5_idf(len(_ROWS), int(held.sum()))
            totals[held] += fts5_term_scores(idf, tf[held], norm[held])
    return {row + 1: float(totals[row]) for row in np.flatnonzero(totals > 0)}


@pytest.mark.parametrize("query", [["lake"], ["lake", "depth"], ["survey", "deep", "river"], ["pine"]])
def test_runtime_fts5_flavour_scores_bit_for_bit_like_sqlite(query: list[str]) -> None:
    # FTS5 fixes k1 = 1.2 and b = 0.75: runtime's defaults must be those, and its arithmetic FTS5's
    assert _runtime_scores(query) == _fts5_scores(query)


def test_the_sql_path_weighs_the_title_with_runtime_s_constant() -> None:
    assert BM25_CALL == f"bm25(records_fts, {float(BM25_TITLE_WEIGHT)}, 1.0)" == "bm25(records_fts, 3.0, 1.0)"


@pytest.mark.parametrize("key", SCOPE_KEYS)
def test_every_runtime_scope_key_is_refused_in_memory_arguments(key: str) -> None:
    assert scope_like(key) and scope_like(key.upper()) and scope_like(f"{key}_id")
