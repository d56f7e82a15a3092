"""The evidence critic: a deterministic, versioned confidence with its breakdown.

Six components, each in [0, 1]:

* **coverage** — share of the question's kept words (after the shared lexical analysis) that some
  evidence contains;
* **independence** — distinct sites with evidence ÷ the sources the depth asks for (capped at 1);
* **authority** — mean prior of the sites: institutional domains (.gov, .edu, .int, .mil, ac.xx)
  1.0, established references 0.85, other fetched pages 0.6, snippet-only 0.45;
* **freshness** — against the question's need (``recency_days``, or one year when the question says
  latest/current/today/this year…; no need → 1.0): dated within the need 1.0, within twice 0.5,
  older 0.1, undated 0.3;
* **corroboration** — share of the covered words found on at least two sites (one when the depth asks
  for a single source), halved for every contradiction (two sites giving different single figures in
  sentences about the same question words);
* **failures** — 1 − failed operations ÷ attempted operations (searches and fetches).

confidence = 0.30·coverage + 0.20·independence + 0.20·corroboration + 0.10·authority
+ 0.10·freshness + 0.10·failures, and 0 without evidence. Same input, same output: no clock inside
(``now`` is an argument), no randomness. Bump :data:`CRITIC_VERSION` when anything here changes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

from simone.providers.web import memo_analyzer
from simone.runtime.text import Analyzer
from simone.workflows.research._models import Confidence, CriticBreakdown

CRITIC_VERSION = "web-critic/1"
"""The version of these rules, reported with every confidence."""

WEIGHTS: dict[str, float] = {
    "coverage": 0.30,
    "independence": 0.20,
    "corroboration": 0.20,
    "authority": 0.10,
    "freshness": 0.10,
    "failures": 0.10,
}
"""How much each component counts; they add up to 1."""

RECENCY_WORDS = frozenset(
    {
        "latest",
        "current",
        "currently",
        "today",
        "now",
        "recent",
        "recently",
        "newest",
        "upcoming",
        "this year",
        "this week",
        "this month",
        "nowadays",
        "actual",
        "actuel",
        "aktuell",
        "actualmente",
        "atual",
        "ultimo",
        "último",
        "dernier",
        "neueste",
    }
)
"""Words that say a question needs recent sources (a year by default)."""

DEFAULT_RECENCY_DAYS = 365.0
"""The need assumed when a question asks for the latest or current state of things."""

INSTITUTIONAL_SUFFIXES = (".gov", ".edu", ".int", ".mil")
INSTITUTIONAL_PARTS = frozenset({"gov", "gouv", "gob", "govt", "ac", "edu", "europa"})
REFERENCE_SITES = frozenset(
    {
        "wikipedia.org",
        "britannica.com",
        "nature.com",
        "science.org",
        "who.int",
        "reuters.com",
        "apnews.com",
        "bbc.co.uk",
        "bbc.com",
        "nytimes.com",
        "theguardian.com",
        "wsj.com",
        "ft.com",
        "economist.com",
        "arxiv.org",
        "nih.gov",
        "acm.org",
        "ieee.org",
        "python.org",
        "mozilla.org",
        "w3.org",
        "ietf.org",
        "github.com",
        "stackoverflow.com",
    }
)
"""Established references (a registrable-domain suffix match); a modest, documented list."""

_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:[,\u202f ]\d{3})+|\d+)(?:\.(\d+))?(?![\w])")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+")


@dataclass(frozen=True, slots=True)
class SourceView:
    """What the critic needs to know about one source that contributed evidence."""

    site: str
    text: str
    fetched: bool
    published: str | None = None


def authority_of(site: str, fetched: bool) -> float:
    """The authority prior of a site (see the module docstring)."""
    host = site.lower().rstrip(".")
    if host.endswith(INSTITUTIONAL_SUFFIXES) or any(
        part in INSTITUTIONAL_PARTS for part in host.split(".")[-3:-1]
    ):
        return 1.0
    if any(host == ref or host.endswith("." + ref) for ref in REFERENCE_SITES):
        return 0.85
    return 0.6 if fetched else 0.45


def recency_need(question: str, explicit_days: float | None, now: float) -> float | None:
    """Days within which sources count as fresh for ``question`` (``None``: no particular need)."""
    if explicit_days is not None:
        return explicit_days
    text = " ".join(question.casefold().split())
    words = set(re.findall(r"\w+", text))
    if any((word in words) if " " not in word else (word in text) for word in RECENCY_WORDS):
        return DEFAULT_RECENCY_DAYS
    year = datetime.fromtimestamp(now, UTC).year
    if str(year) in words or str(year - 1) in words:
        return DEFAULT_RECENCY_DAYS
    return None


def parse_date(value: str | None) -> datetime | None:
    """A date from ``YYYY-MM-DD…``, ``YYYY-MM`` or ``YYYY`` at the start of ``value``."""
    if not value:
        return None
    match = re.match(r"\s*(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?", value)
    if not match:
        return None
    year, month, day = int(match.group(1)), int(match.group(2) or 1), int(match.group(3) or 1)
    try:
        return datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None


def _numbers(sentence: str) -> set[float]:
    out = set()
    for whole, fraction in _NUMBER.findall(sentence):
        digits = re.sub(r"[,\u202f ]", "", whole)
        try:
            out.add(float(f"{digits}.{fraction}" if fraction else digits))
        except ValueError:
            continue
    return out


def find_contradictions(
    words: Sequence[tuple[str, Sequence[str]]], sources: Sequence[SourceView], analyzer: Analyzer
) -> list[str]:
    """Figures two sites disagree on, in sentences that mention at least two question words.

    A site counts only when such sentences give it exactly one figure; two sites whose single figures
    differ by more than 1 % contradict each other. Sorted, so the output is deterministic.
    """
    if len(words) < 2:
        return []
    figures: dict[str, set[float]] = {}
    for source in sources:
        found: set[float] = set()
        for sentence in _SENTENCE.split(source.text):
            numbers = _numbers(sentence)
            if not numbers:
                continue
            terms = set(analyzer.terms(sentence))
            mentioned = sum(1 for _, word_terms in words if any(t in terms for t in word_terms))
            if mentioned >= 2:
                found |= numbers
        if len(found) == 1:
            figures.setdefault(source.site, set()).update(found)
    singles = {site: next(iter(values)) for site, values in figures.items() if len(values) == 1}
    sites = sorted(singles)
    out: list[str] = []
    for i, left in enumerate(sites):
        for right in sites[i + 1 :]:
            a, b = singles[left], singles[right]
            if abs(a - b) > 0.01 * max(abs(a), abs(b), 1e-9):
                out.append(f"{left} gives {a:g} where {right} gives {b:g}")
    return out


def critique(
    question: str,
    sources: Sequence[SourceView],
    *,
    min_sources: int,
    floor: float,
    attempted: int,
    failed: int,
    now: float,
    recency_days: float | None = None,
    analyzer: Analyzer | None = None,
) -> Confidence:
    """Judge the evidence ``sources`` give for ``question`` (see the module docstring).

    Args:
        question: the research question.
        sources: one view per source that contributed evidence (its evidence text, not the page).
        min_sources: the independent sites the depth asks for.
        floor: the configured confidence floor (``web.confidence_floor``).
        attempted: searches and fetches attempted.
        failed: how many of them failed.
        now: the current time (seconds), for freshness.
        recency_days: the question's explicit recency need.
        analyzer: the lexical analysis (the shared default when ``None``).
    """
    active = cast(Analyzer, memo_analyzer(analyzer))  # remembered analysis: same terms, less time
    words = active.word_terms(question)
    per_site = _site_terms(sources, active)
    distinct = len(per_site)
    cover = _coverage(words, per_site, need_sites=1 if min_sources <= 1 else 2)
    need = recency_need(question, recency_days, now)
    contradictions = find_contradictions(words, sources, active) if distinct > 1 else []
    components = {  # in the order of WEIGHTS, which is the order they are summed in
        "coverage": cover.share(any_evidence=bool(sources)),
        "independence": min(1.0, distinct / max(1, min_sources)) if sources else 0.0,
        "corroboration": cover.corroboration(len(contradictions)),
        "authority": _authority(sources),
        "freshness": _freshness(sources, need, now),
        "failures": _failure_score(attempted, failed),
    }
    value = _value(components) if sources else 0.0
    sufficient = value >= floor
    satisfied = (
        bool(sources) and not cover.missing and distinct >= min_sources and not contradictions and sufficient
    )
    breakdown = CriticBreakdown(
        **{name: round(score, 6) for name, score in components.items()},
        covered_terms=cover.covered,
        missing_terms=cover.missing,
        sites_per_term=cover.sites_per_term,
        distinct_sites=distinct,
        min_sources=min_sources,
        contradictions=contradictions,
        recency_days=need,
        weights=dict(WEIGHTS),
    )
    return Confidence(
        value=value,
        floor=floor,
        sufficient=sufficient,
        satisfied=satisfied,
        version=CRITIC_VERSION,
        breakdown=breakdown,
        explanation=_explain(value, floor, breakdown, bool(sources)),
    )


@dataclass(frozen=True, slots=True)
class _Coverage:
    """The question words some site's evidence contains, and on how many sites each is found."""

    covered: list[str]
    missing: list[str]
    supported: int
    """Covered words found on enough sites to count as corroborated."""
    sites_per_term: dict[str, int]

    def share(self, *, any_evidence: bool) -> float:
        """The coverage component: covered words ÷ question words."""
        total = len(self.covered) + len(self.missing)
        return len(self.covered) / total if total else (1.0 if any_evidence else 0.0)

    def corroboration(self, contradictions: int) -> float:
        """The corroboration component: supported ÷ covered words, halved per contradiction."""
        supported = self.supported / len(self.covered) if self.covered else 0.0
        return supported * (0.5**contradictions)


def _site_terms(sources: Sequence[SourceView], analyzer: Analyzer) -> dict[str, set[str]]:
    """The analysed terms of the evidence, pooled per site (in the order the sites first appear)."""
    per_site: dict[str, set[str]] = {}
    for source in sources:
        per_site.setdefault(source.site, set()).update(analyzer.terms(source.text))
    return per_site


def _coverage(
    words: Sequence[tuple[str, Sequence[str]]], per_site: dict[str, set[str]], *, need_sites: int
) -> _Coverage:
    """Which question words are covered; a covered word is supported when ``need_sites`` sites have it."""
    covered: list[str] = []
    missing: list[str] = []
    supported = 0
    sites_per_term: dict[str, int] = {}
    for word, terms in words:
        if word in sites_per_term:
            continue
        sites_with = sum(1 for site_terms in per_site.values() if any(t in site_terms for t in terms))
        sites_per_term[word] = sites_with
        if sites_with:
            covered.append(word)
            if sites_with >= need_sites:
                supported += 1
        else:
            missing.append(word)
    return _Coverage(covered=covered, missing=missing, supported=supported, sites_per_term=sites_per_term)


def _authority(sources: Sequence[SourceView]) -> float:
    """The authority component: the mean prior of the sources' sites."""
    return sum(authority_of(s.site, s.fetched) for s in sources) / len(sources) if sources else 0.0


def _freshness(sources: Sequence[SourceView], need: float | None, now: float) -> float:
    """The freshness component: the sources' mean age score against the recency ``need``."""
    if need is None or not sources:
        return 1.0 if sources else 0.0
    scores = [_age_score(source.published, need, now) for source in sources]
    return sum(scores) / len(scores)


def _age_score(published: str | None, need: float, now: float) -> float:
    """1.0 dated within ``need`` days, 0.5 within twice that, 0.1 older, 0.3 undated."""
    date = parse_date(published)
    if date is None:
        return 0.3
    age_days = (now - date.timestamp()) / 86400.0
    return 1.0 if age_days <= need else 0.5 if age_days <= 2 * need else 0.1


def _failure_score(attempted: int, failed: int) -> float:
    """The failures component: 1 − failed ÷ attempted operations, within [0, 1]."""
    failures = 1.0 - (failed / attempted) if attempted else 1.0
    return min(1.0, max(0.0, failures))


def _value(components: dict[str, float]) -> float:
    """The weighted sum of the components, within [0, 1], rounded to 6 places."""
    value = sum(WEIGHTS[name] * score for name, score in components.items())
    return round(min(1.0, max(0.0, value)), 6)


def _explain(value: float, floor: float, b: CriticBreakdown, any_evidence: bool) -> str:
    if not any_evidence:
        return "No evidence was found, so there is nothing to be confident about."
    parts = [f"confidence {value:.2f} (floor {floor:.2f})"]
    parts.append(
        f"{len(b.covered_terms)}/{len(b.covered_terms) + len(b.missing_terms)} question words covered"
    )
    parts.append(f"{b.distinct_sites} independent site(s) of {b.min_sources} wanted")
    if b.missing_terms:
        parts.append("not covered: " + ", ".join(b.missing_terms[:8]))
    if b.contradictions:
        parts.append("contradictions: " + "; ".join(b.contradictions[:3]))
    verdict = "" if value >= floor else " — the evidence is insufficient"
    return "; ".join(parts) + verdict + "."
