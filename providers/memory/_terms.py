"""Analysed terms as SQLite FTS5 tokens.

The shared analysis (:class:`simone.runtime.Analyzer`) turns text into terms in any language — words,
prefixes, CJK bigrams. FTS5's own tokenizers could split those terms again, so each term is mapped to a
token the ``ascii`` tokenizer keeps whole (the term itself when that is safe, else a marked 64-bit digest:
collisions are negligible at memory's scale). The same mapping serves documents and queries, so BM25
inside SQLite ranks exactly the shared analysis's terms.

Each row also carries one *scope token* (a digest of its scope signature) in a third column that BM25
weighs 0. A query ANDs its terms with the tokens of every scope the trusted context may see (at most
2^6), so FTS5 scores only rows in scope instead of every row that shares a term — the difference between
milliseconds and a linear scan of the whole table at 100k records.
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


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_HASHED = "\u02b0"
"""Marks a hashed term token (non-ASCII, so the ``ascii`` tokenizer keeps it inside the token)."""
_SCOPE = "\u02e2"
"""Marks a scope token."""


def _digest(text: str) -> str:
    raw = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return base64.b32encode(raw).decode("ascii").rstrip("=").lower()


def fts_token(term: str) -> str:
    """The FTS5-safe token of one analysed term.

    A term whose ASCII characters are all lower-case letters and digits is its own token (the ``ascii``
    tokenizer keeps every non-ASCII character inside a token); any other term becomes a marked 64-bit
    digest, so no term is ever split or merged by FTS5.
    """
    if (
        term
        and not term.startswith((_HASHED, _SCOPE))
        and all(ch in _PLAIN or not ch.isascii() for ch in term)
    ):
        return term
    return _HASHED + _digest(term)


def scope_token(signature: str) -> str:
    """The token of a scope signature (its own FTS5 column, weight 0 in BM25)."""
    return _SCOPE + _digest(signature)


def fts_document(terms: Iterable[str]) -> str:
    """The indexed text of a field: its terms as tokens, in order, repetitions kept (they are tf)."""
    return " ".join(fts_token(term) for term in terms)


def fts_query(
    terms: Iterable[str], text_columns: str, scope_column: str, scopes: Iterable[str]
) -> str | None:
    """An FTS5 query: any of the terms in ``text_columns``, and one of the scope tokens in ``scope_column``.

    Returns ``None`` when there is no term: nothing is relevant to such a query.
    """
    tokens = list(dict.fromkeys(fts_token(term) for term in terms))[:MAX_QUERY_TERMS]
    if not tokens:
        return None
    words = " OR ".join(f'"{token}"' for token in tokens)
    allowed = " OR ".join(f'"{token}"' for token in scopes)
    return f"{text_columns} : ({words}) AND {scope_column} : ({allowed})"


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
