"""simone.runtime.text — how text becomes terms: the analyzer (lexicon, stemming, synonyms), BM25, scripts.

The constants here (``BM25_K1``, ``BM25_B``, ``BM25_TITLE_WEIGHT``) are tuning, not contract: callers that score text import them
from this face, never from :mod:`simone.runtime`.
"""

from simone.runtime.text._analysis import (
    Analyzer as Analyzer,
    Explanation as Explanation,
    SynonymUse as SynonymUse,
    default_analyzer as default_analyzer,
)
from simone.runtime.text._bm25 import (
    K1 as BM25_K1,
    TITLE_WEIGHT as BM25_TITLE_WEIGHT,
    B as BM25_B,
    BM25Hit as BM25Hit,
    BM25Index as BM25Index,
    bm25_length_norm as bm25_length_norm,
    fts5_idf as fts5_idf,
    fts5_term_scores as fts5_term_scores,
    lucene_idf as lucene_idf,
)
from simone.runtime.text._scripts import (
    main_script as main_script,
    uncovered_language as uncovered_language,
    uncovered_script as uncovered_script,
)

__all__ = (
    "Analyzer",
    "BM25Hit",
    "BM25Index",
    "BM25_B",
    "BM25_K1",
    "BM25_TITLE_WEIGHT",
    "Explanation",
    "SynonymUse",
    "bm25_length_norm",
    "default_analyzer",
    "fts5_idf",
    "fts5_term_scores",
    "lucene_idf",
    "main_script",
    "uncovered_language",
    "uncovered_script",
)
