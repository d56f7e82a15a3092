"""The one vocabulary of :attr:`Evidence.metadata <simone.runtime.Evidence.metadata>` keys.

Every provider and workflow writes its evidence metadata with these keys, and every reader (the
router, agents, benchmarks, tests) reads them by the same names, so one idea has one key: how an item
was found is always :attr:`EvidenceKey.METHOD`, never ``search`` here and ``method`` there.
:class:`EvidenceKey` is a :class:`~enum.StrEnum`: a member *is* its string, so metadata stays plain
JSON and ``metadata["method"]`` and ``metadata[EvidenceKey.METHOD]`` read the same entry.
"""

from __future__ import annotations

from enum import StrEnum


class EvidenceKey(StrEnum):
    """A key of evidence metadata; the comment says which providers write it."""

    # -- how it was found (every provider) -------------------------------------------------------
    METHOD = "method"
    """``lexical``, ``semantic`` (or ``semantic:<provider>``) or ``hybrid``: the ranking an item came from."""
    LEG_RANKS = "leg_ranks"
    """Leg name → the item's 1-based rank in that leg (only the legs that found it)."""
    LEG_SCORES = "leg_scores"
    """Leg name → the leg's own score for the item (BM25, cosine similarity)."""
    SPACE = "space"
    """The embedding space key (``provider:model:dimension``) of a semantic leg that took part."""
    RELEVANCE = "relevance"
    """Why the item was judged relevant (kept_by, matched terms, similarity, margin)."""
    MATCHED_WORDS = "matched_words"
    COVERAGE = "coverage"

    # -- where it lives -------------------------------------------------------------------------
    PATH = "path"
    CHUNK_ID = "chunk_id"
    LINE_START = "line_start"
    LINE_END = "line_end"
    HEADING = "heading"
    KIND = "kind"
    LANGUAGE = "language"
    PROJECT = "project"

    # -- memory records and session turns ----------------------------------------------------------
    RECORD_ID = "record_id"
    STATUS = "status"
    TAGS = "tags"
    SCOPE = "scope"
    CREATED_AT = "created_at"
    UPDATED_AT = "updated_at"
    REVISION = "revision"
    ROLE = "role"
    SEQ = "seq"
    THROUGH_SEQ = "through_seq"
    AT = "at"

    # -- the web -------------------------------------------------------------------------------
    SITE = "site"
    SEARCH_BACKEND = "search_backend"
    SEARCH_RANK = "search_rank"
    CACHE = "cache"
    """The cache status of the text the item holds: the page's when it was fetched, else the search's."""
    FETCHED = "fetched"
    FETCH_STATUS = "fetch_status"
    FETCH_ERROR = "fetch_error"
    PUBLISHED = "published"
    RETRIEVED_AT = "retrieved_at"
    PASSAGES = "passages"
    CONTAINMENT = "containment"
    HIDDEN_REMOVED = "hidden_removed"
    INSTRUCTION_LIKE = "instruction_like"

    # -- packing ----------------------------------------------------------------------------------
    TRUNCATED = "truncated"
    TOKENS = "tokens"
    ORIGINAL_TOKENS = "original_tokens"
