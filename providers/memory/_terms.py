"""Analysed terms as SQLite FTS5 tokens.

The shared analysis (:class:`simone.runtime.Analyzer`) turns text into terms in any language — words,
prefixes, CJK bigrams. FTS5's own tokenizers would split those terms again, so each term is mapped to a
short ASCII token (base32 of a 64-bit BLAKE2b digest: collisions are negligible at memory's scale) and the
``ascii`` tokenizer indexes the tokens as they are. The same mapping serves documents and queries, so
BM25 inside SQLite ranks exactly the shared analysis's terms.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable
from typing import Protocol, runtime_checkable

MAX_QUERY_TERMS = 64
"""Distinct query terms kept (first occurrences): bounds the cost of one FTS5 query."""

_PROBE = (
    "Opening hours & prices — Öffnungszeiten und Preise; horaires d'ouverture; 営業時間と料金; 营业时间和价格; "
    "เวลาเปิดทำการ; часы работы и цены; The QUICK brown foxes jumped, running 3 times."
)
"""A multilingual probe: if an analyzer turns it into other terms, the stored terms are stale."""


@runtime_checkable
class TermAnalyzer(Protocol):
    """The one function of the shared analysis memory needs (``simone.runtime.Analyzer`` has it)."""

    def terms(self, text: str) -> list[str]:
        """The analysed terms of ``text`` (no whitespace inside a term), for documents and queries."""
        ...


def fts_token(term: str) -> str:
    """The FTS5-safe token of one analysed term."""
    digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return "t" + base64.b32encode(digest).decode("ascii").rstrip("=").lower()


def fts_document(terms: Iterable[str]) -> str:
    """The indexed text of a field: its terms as tokens, in order, repetitions kept (they are tf)."""
    return " ".join(fts_token(term) for term in terms)


def fts_query(terms: Iterable[str]) -> str | None:
    """An FTS5 query matching any of the terms (``None`` when there is none: nothing is relevant)."""
    tokens = list(dict.fromkeys(fts_token(term) for term in terms))[:MAX_QUERY_TERMS]
    if not tokens:
        return None
    return " OR ".join(f'"{token}"' for token in tokens)


def analyzer_fingerprint(analyzer: TermAnalyzer, key: str = "") -> str:
    """A digest of the analyzer's configuration ``key`` and of what it makes of a fixed probe.

    A different fingerprint means the stored terms are stale and must be re-analysed.
    """
    terms = analyzer.terms(_PROBE)
    raw = "\x1e".join([key, *terms])
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def default_term_analyzer() -> TermAnalyzer:
    """The shared default analyzer of :mod:`simone.runtime`."""
    from simone.runtime import default_analyzer

    analyzer: TermAnalyzer = default_analyzer()
    return analyzer
