from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st
from simone.runtime import InvalidRequest
from simone.runtime.text import (
    Analyzer,
    BM25Hit,
    BM25Index,
)

PLAIN = Analyzer(builtin_synonyms=False)


def reference_scores(
    docs: dict[str, tuple[str, str]], query: str, analyzer: Analyzer, k1: float = 1.2, b: float = 0.75
) -> dict[str, float]:
    """BM25 written out the slow, obvious way (title counted three times)."""
    counts = {
        doc_id: Counter(analyzer.terms(text) + analyzer.terms(title) * 3)
        for doc_id, (title, text) in docs.items()
    }
    n = len(counts)
    avgdl = sum(sum(c.values()) for c in counts.values()) / n
    scores: dict[str, float] = {}
    for doc_id, tf in counts.items():
        length = sum(tf.values())
        score = 0.0
        for term, repeats in Counter(analyzer.terms(query)).items():
            if term not in tf:
                continue
            df = sum(1 for c in counts.values() if term in c)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += repeats * idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * length / avgdl))
        if score > 0:
            scores[doc_id] = score
    return scores


def test_scores_match_the_formula() -> None:
    docs = {
        "a": ("Fusion", "Reciprocal rank fusion merges rankings from providers."),
        "b": ("", "Rank aggregation and fusion of many ranked lists, fusion again."),
        "c": ("Cats", "Cats sleep most of the day."),
    }
    index = BM25Index(PLAIN)
    for doc_id, (title, text) in docs.items():
        index.add(doc_id, text, title=title, locator=doc_id)
    expected = reference_scores(docs, "rank fusion", PLAIN)
    hits = index.search("rank fusion")
    assert {h.id: pytest.approx(h.score) for h in hits} == expected
    assert [h.id for h in hits] == sorted(expected, key=lambda d: -expected[d])
    assert "c" not in {h.id for h in hits}  # shares no term: not relevant


def test_title_counts_three_times() -> None:
    index = BM25Index(PLAIN)
    index.add("body", "renewal notes and other notes", locator="1")
    index.add("title", "notes and other notes", title="renewal", locator="2")
    assert [h.id for h in index.search("renewal")] == ["title", "body"]
    assert BM25Index(PLAIN, title_weight=1).title_weight == 1


def test_ties_break_by_locator_then_id() -> None:
    index = BM25Index(PLAIN)
    for doc_id, locator in (("x", "b.md#L1"), ("y", "a.md#L9"), ("z", "a.md#L9")):
        index.add(doc_id, "identical text about renewal", locator=locator)
    assert [h.id for h in index.search("renewal")] == ["y", "z", "x"]


def test_ties_at_the_limit_keep_the_order() -> None:
    index = BM25Index(PLAIN)
    for number in range(30):
        index.add(f"d{number:02}", "same words here", locator=f"{29 - number:02}")
    hits = index.search("words", limit=5)
    assert [h.locator for h in hits] == ["00", "01", "02", "03", "04"]


def test_locator_defaults_to_the_id() -> None:
    index = BM25Index(PLAIN)
    index.add("doc-1", "renewal")
    assert index.search("renewal")[0].locator == "doc-1"


def test_readd_replaces_and_remove_forgets() -> None:
    index = BM25Index(PLAIN)
    index.add("a", "passport renewal")
    index.add("b", "library hours")
    index.add("a", "museum tickets")
    assert len(index) == 2
    assert index.search("passport") == []
    assert [h.id for h in index.search("museum")] == ["a"]
    index.remove("a")
    index.remove("never-added")
    assert len(index) == 1 and "a" not in index and "b" in index
    assert index.search("museum") == []
    index.add("c", "museum again")  # reuses the freed slot
    assert [h.id for h in index.search("museum")] == ["c"]
    assert [h.id for h in index.search("library")] == ["b"]


def test_scores_follow_changes_to_the_collection() -> None:
    docs = {f"d{i}": ("", f"renewal {'filler ' * i}") for i in range(5)}
    index = BM25Index(PLAIN)
    for doc_id, (title, text) in docs.items():
        index.add(doc_id, text, title=title)
    index.search("renewal")  # caches weights
    index.add("d9", "renewal renewal renewal")
    docs["d9"] = ("", "renewal renewal renewal")
    expected = reference_scores(docs, "renewal", PLAIN)
    assert {h.id: pytest.approx(h.score) for h in index.search("renewal")} == expected


def test_coverage_and_matched_words() -> None:
    index = BM25Index()
    index.add("full", "Os prazos de renovação da carteira de motorista")
    index.add("half", "A carteira de estudante")
    hits = {h.id: h for h in index.search("prazo para renovar a carteira")}
    assert hits["full"].matched_words == ("prazo", "renovar", "carteira")
    assert hits["full"].coverage == 1.0
    assert hits["half"].matched_words == ("carteira",)
    assert hits["half"].coverage == pytest.approx(1 / 3)
    assert isinstance(hits["full"], BM25Hit)


def test_synonyms_count_for_coverage() -> None:
    index = BM25Index()
    index.add("fee", "The fee is 20 EUR")
    hit = index.search("what does it cost?")[0]
    assert hit.matched_words == ("cost",)
    assert hit.coverage == 1.0


def test_coverage_of_a_query_with_more_than_64_words() -> None:
    words = [f"w{i:03}x" for i in range(100)]
    index = BM25Index(PLAIN)
    index.add("late", " ".join(words[70:80]))
    index.add("early", " ".join(words[:5]))
    index.add("later", " ".join(words[90:93]))  # same bits as "late" (only the overflow one)
    hits = {h.id: h for h in index.search(" ".join(words), limit=5)}
    assert hits["late"].matched_words == tuple(words[70:80])
    assert hits["later"].matched_words == tuple(words[90:93])
    assert hits["early"].matched_words == tuple(words[:5])
    assert hits["late"].coverage == pytest.approx(0.10)


def test_empty_index_empty_query_and_stop_words() -> None:
    index = BM25Index()
    assert index.search("anything") == []
    index.add("a", "The capital of France")
    assert index.search("") == []
    assert index.search("?!") == []
    assert index.search("the of") == []


def test_bad_arguments_are_invalid_requests() -> None:
    with pytest.raises(InvalidRequest):
        BM25Index(k1=-1)
    with pytest.raises(InvalidRequest):
        BM25Index(k1=float("nan"))
    with pytest.raises(InvalidRequest):
        BM25Index(b=1.5)
    with pytest.raises(InvalidRequest):
        BM25Index(title_weight=0)
    with pytest.raises(InvalidRequest, match="limit"):
        BM25Index().search("x", limit=0)


def test_default_analyzer_is_used() -> None:
    index = BM25Index()
    index.add("a", "Öffnungszeiten der Bibliothek")
    assert [h.id for h in index.search("opening hours")] == ["a"]


WORDS = st.sampled_from("renewal passport library hours price fusion rank cats sleep the of".split())
DOCS = st.dictionaries(
    st.text(alphabet="abcdef", min_size=1, max_size=4),
    st.tuples(st.lists(WORDS, max_size=4).map(" ".join), st.lists(WORDS, max_size=12).map(" ".join)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(DOCS, st.lists(WORDS, min_size=1, max_size=5).map(" ".join), st.integers(1, 15))
def test_property_matches_the_reference(docs: dict[str, tuple[str, str]], query: str, limit: int) -> None:
    index = BM25Index(PLAIN)
    for doc_id, (title, text) in docs.items():
        index.add(doc_id, text, title=title, locator=doc_id)
    hits = index.search(query, limit=limit)
    expected = reference_scores(docs, query, PLAIN)
    ranked = sorted(expected, key=lambda d: (-round(expected[d], 9), d))[:limit]
    assert len(hits) == min(limit, len(expected))
    assert all(h.score > 0 and 0 < h.coverage <= 1 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert [h.score for h in hits] == pytest.approx([expected[d] for d in ranked])
    query_terms = set(PLAIN.terms(query))
    for hit in hits:
        title, text = docs[hit.id]
        assert query_terms & set(PLAIN.terms(f"{title} {text}"))
