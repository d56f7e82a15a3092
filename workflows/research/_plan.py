"""Query planning: the first queries from the question, later ones from what is still missing.

Deterministic (no model): the first iteration asks the question as written, then its key words (the
shared analysis drops stop words), then narrower halves of them. Every later iteration looks at the
critic's breakdown and asks for what is missing, in this order: question words no evidence covers
(anchored by the covered words most sites mention — the topic — ties going to the later word in the
question, so the query keeps its subject), figures two sites
disagree on, and more independent sites (``-site:`` excludes the sites already used). A query already
asked is never asked again; when nothing is left to ask the loop stops (``no_new_queries``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from simone.runtime.text import Analyzer
from simone.workflows.research._models import CriticBreakdown

MISSING_WORDS_PER_QUERY = 3
"""Uncovered words asked together; more makes a query that matches nothing."""


@dataclass(frozen=True, slots=True)
class PlannedQuery:
    """A query and why it is asked."""

    query: str
    purpose: str


def _key(query: str) -> str:
    return " ".join(query.casefold().split())


def key_words(question: str, analyzer: Analyzer) -> list[str]:
    """The question's words the analysis keeps, in order, each once, as written in the question."""
    kept = [word for word, _ in analyzer.word_terms(question)]
    surface = re.findall(r"[\w'’-]+", question)
    by_fold: dict[str, str] = {}
    for token in surface:
        for word, _ in analyzer.word_terms(token):
            by_fold.setdefault(word, token)
    out: list[str] = []
    for word in kept:
        written = by_fold.get(word, word)
        if written not in out:
            out.append(written)
    return out


def initial_queries(question: str, analyzer: Analyzer, count: int) -> list[PlannedQuery]:
    """The first ``count`` queries for ``question``."""
    words = key_words(question, analyzer)
    candidates = [PlannedQuery(" ".join(question.split()), "the question as asked")]
    if words:
        candidates.append(PlannedQuery(" ".join(words), "the question's key words"))
    if len(words) >= 4:
        half = len(words) // 2
        candidates.append(PlannedQuery(" ".join(words[: half + 1]), "the first key words"))
        candidates.append(PlannedQuery(" ".join(words[half - 1 :]), "the last key words"))
    if len(words) >= 2:
        candidates.append(
            PlannedQuery(f'"{words[0]} {words[1]}" ' + " ".join(words[2:]), "the leading phrase")
        )
    return _unique(candidates, (), count)


def follow_up_queries(
    question: str,
    analyzer: Analyzer,
    breakdown: CriticBreakdown,
    sites: Sequence[str],
    asked: Sequence[str],
    count: int,
) -> list[PlannedQuery]:
    """Up to ``count`` new queries aimed at what the critic found missing."""
    words = key_words(question, analyzer)
    folded = {w: _fold(w, analyzer) for w in words}
    missing_set = set(breakdown.missing_terms)
    missing = [w for w in words if folded[w] in missing_set]
    covered = [w for w in words if folded[w] not in missing_set]
    # Anchors keep the topic: the covered words most sites mention, then the later in the question.
    anchors = sorted(covered, key=lambda w: (-breakdown.sites_per_term.get(folded[w], 0), -words.index(w)))
    candidates: list[PlannedQuery] = []
    for start in range(0, len(missing), MISSING_WORDS_PER_QUERY):
        chunk = missing[start : start + MISSING_WORDS_PER_QUERY]
        for anchor in anchors[:2] or [""]:
            query = " ".join(([anchor] if anchor else []) + chunk)
            candidates.append(PlannedQuery(query, "question words not covered yet: " + ", ".join(chunk)))
    if len(missing) > 1:
        for word in missing:
            query = " ".join(anchors[:1] + [word])
            candidates.append(PlannedQuery(query, f"the uncovered word {word!r} alone"))
    for contradiction in breakdown.contradictions:
        figures = re.findall(r"gives (\S+)", contradiction)
        candidates.append(PlannedQuery(" ".join(words + figures), f"to settle: {contradiction}"))
    if breakdown.distinct_sites < breakdown.min_sources and words:
        excluded = " ".join(f"-site:{site}" for site in sorted(sites)[:4])
        candidates.append(
            PlannedQuery(
                (" ".join(words) + " " + excluded).strip(),
                f"more independent sources ({breakdown.distinct_sites} of {breakdown.min_sources})",
            )
        )
        candidates.append(
            PlannedQuery(" ".join(words[::-1]), "more independent sources (reordered key words)")
        )
    return _unique(candidates, asked, count)


def _fold(word: str, analyzer: Analyzer) -> str:
    analysed = analyzer.word_terms(word)
    return analysed[0][0] if analysed else word.casefold()


def _unique(candidates: Sequence[PlannedQuery], asked: Sequence[str], count: int) -> list[PlannedQuery]:
    seen = {_key(q) for q in asked}
    out: list[PlannedQuery] = []
    for candidate in candidates:
        key = _key(candidate.query)
        if not key or key in seen:
            continue
        seen.add(key)
        out.append(candidate)
        if len(out) >= count:
            break
    return out
