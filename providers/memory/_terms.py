"""Analysed terms as SQLite FTS5 tokens, partitioned by scope.

The shared analysis (:class:`simone.runtime.text.Analyzer`) turns text into terms in any language — words,
prefixes, CJK bigrams. FTS5's own tokenizers could split those terms again, so each term is mapped to a
token the ``ascii`` tokenizer keeps whole (the term itself when that is safe, else a marked 64-bit digest:
collisions are negligible at memory's scale). The same mapping serves documents and queries, so BM25
inside SQLite ranks exactly the shared analysis's terms.

Every token also carries the number of the scope its record was written under (``term`` + ``ˡ`` +
base-36 number; the numbers live in the ``scopes`` table). Posting lists are therefore per scope: a query
asks for its terms in each scope the trusted context may see, so FTS5 merges and scores only rows in
scope — at 100k records in 10 scopes it touches a tenth of the index instead of all of it — and term
statistics (document frequency) are per scope, so one scope's records never shift another's ranking.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
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
    """The one function of the shared analysis memory needs (``simone.runtime.text.Analyzer`` has it)."""

    def terms(self, text: str) -> list[str]:
        """The analysed terms of ``text`` (no whitespace inside a term), for documents and queries."""
        ...


_SAFE = re.compile("[a-z0-9\u0080-\u02e0\u02e2-\U0010ffff]+")
"""Terms the ``ascii`` tokenizer keeps whole: ASCII lower-case letters and digits, any non-ASCII
character except the scope separator."""
_HASHED = "\u02b0"
"""Marks a hashed term token (non-ASCII, so the ``ascii`` tokenizer keeps it inside the token)."""
_SCOPED = "\u02e1"
"""Separates a term token from its scope number (never part of a term token)."""
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def _digest(text: str) -> str:
    raw = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return base64.b32encode(raw).decode("ascii").rstrip("=").lower()


@functools.lru_cache(maxsize=1 << 17)
def fts_token(term: str) -> str:
    """The FTS5-safe token of one analysed term (without its scope).

    A term whose ASCII characters are all lower-case letters and digits is its own token (the ``ascii``
    tokenizer keeps every non-ASCII character inside a token); any other term becomes a marked 64-bit
    digest, so no term is ever split or merged by FTS5.
    """
    if _SAFE.fullmatch(term) and not term.startswith(_HASHED):
        return term
    return _HASHED + _digest(term)


def scope_suffix(number: int) -> str:
    """The suffix that puts a token in scope ``number``."""
    digits = ""
    while True:
        number, rest = divmod(number, 36)
        digits = _DIGITS[rest] + digits
        if not number:
            return _SCOPED + digits


def fts_document(terms: Iterable[str], scope_number: int) -> str:
    """The indexed text of a field: its terms as scoped tokens, in order, repetitions kept (they are tf)."""
    suffix = scope_suffix(scope_number)
    return " ".join(fts_token(term) + suffix for term in terms)


def fts_query(terms: Iterable[str], scope_numbers: Iterable[int]) -> str | None:
    """An FTS5 query matching any of the terms in any of the scopes.

    Returns ``None`` when there is no term or no scope: nothing is relevant to such a query.
    """
    tokens = list(dict.fromkeys(fts_token(term) for term in terms))[:MAX_QUERY_TERMS]
    suffixes = [scope_suffix(number) for number in scope_numbers]
    if not tokens or not suffixes:
        return None
    return " OR ".join(f'"{token}{suffix}"' for suffix in suffixes for token in tokens)


def analyzer_fingerprint(analyzer: TermAnalyzer, key: str = "") -> str:
    """A digest of the analyzer's configuration, its signature and what it makes of a fixed probe.

    ``key`` is the configuration; the ``signature``, when the analyzer has one, carries the analysis
    version, so a change the probe does not show (Korean, Vietnamese) still counts. A different fingerprint means the stored terms are stale and must be re-analysed.
    """
    terms = analyzer.terms(_PROBE)
    raw = "\x1e".join([key, str(getattr(analyzer, "signature", "")), *terms])
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def default_term_analyzer() -> TermAnalyzer:
    """The shared default analyzer of :mod:`simone.runtime`."""
    from simone.runtime.text import default_analyzer

    analyzer: TermAnalyzer = default_analyzer()
    return analyzer
