"""BM25Index.search against BM25 written out plainly, hit for hit: ids, scores bit for bit, locators,
matched words and coverage, in the same order (ties by locator, then id).

The index scores in rank space with numpy and two coverage paths (few or many postings); the
reference loops over dictionaries in the query's term order, so both add the same floats in the
same order. The texts mix Chinese, Thai and Latin words so that queries repeat terms (a two-character
Chinese word is also its own bigram) and documents tie. Coverage rests on ``word_terms`` giving each
term to the right word, which the last test checks for the bigrams that join words.
"""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import given, settings, strategies as st
from simone.runtime.text import Analyzer, BM25Hit, BM25Index

ANALYZER = Analyzer()
K1, B, TITLE = 1.2, 0.75, 3


def reference(
    docs: dict[str, tuple[str, str, str]], query: str, limit: int, analyzer: Analyzer = ANALYZER
) -> list[tuple[str, float, str, tuple[str, ...], float]]:
    """``docs``: id → (title, text, locator). The hits as (id, score, locator, matched words, coverage)."""
    counts: dict[str, Counter[str]] = {}
    for doc_id, (title, text, _locator) in docs.items():
        tf = Counter(analyzer.terms(text))
        for term, count in Counter(analyzer.terms(title)).items():
            tf[term] += count * TITLE
        counts[doc_id] = tf
    n = len(counts)
    lengths = {doc_id: float(sum(tf.values())) for doc_id, tf in counts.items()}
    avgdl = sum(lengths.values()) / n
    words = analyzer.word_terms(query)
    query_counts = Counter(term for _word, terms in words for term in terms)
    scores: dict[str, float] = {}
    for term, repeats in query_counts.items():
        df = sum(1 for tf in counts.values() if term in tf)
        if not df:
            continue
        idf = math.log1p((n - df + 0.5) / (df + 0.5))
        for doc_id, tf in counts.items():
            if term in tf:
                norm = K1 * (1.0 - B + B * lengths[doc_id] / avgdl) if avgdl > 0 else K1 * (1.0 - B)
                weight = (idf * (K1 + 1.0)) * tf[term] / (tf[term] + norm)
                scores[doc_id] = scores.get(doc_id, 0.0) + repeats * weight
    kept = list(dict.fromkeys(word for word, _terms in words))
    terms_of: dict[str, set[str]] = {}
    for word, terms in words:
        terms_of.setdefault(word, set()).update(terms)
    ranked = sorted(scores, key=lambda doc_id: (-scores[doc_id], docs[doc_id][2] or doc_id, doc_id))
    hits = []
    for doc_id in ranked[:limit]:
        matched = tuple(word for word in kept if not terms_of[word].isdisjoint(counts[doc_id]))
        hits.append((doc_id, scores[doc_id], docs[doc_id][2] or doc_id, matched, len(matched) / len(kept)))
    return hits


def indexed(docs: dict[str, tuple[str, str, str]]) -> BM25Index:
    index = BM25Index(ANALYZER)
    for doc_id, (title, text, locator) in docs.items():
        index.add(doc_id, text, title=title, locator=locator)
    return index


# Words that collide across documents: Han words of one to three characters (their bigrams overlap),
# Thai words, Latin words, numbers and a stop word or two.
PIECES = st.sampled_from(
    [
        "欧洲",
        "黑死病",
        "死亡",
        "人",
        "造成",
        "了",
        "多少",
        "欧洲人",
        "年",
        "กาฬโรค",
        "ยุโรป",
        "ผู้",
        "เสียชีวิต",
        "ใน",
        "คน",
        "plague",
        "europe",
        "deaths",
        "the",
        "1347",
        " ",
        "，",
    ]
)
TEXT = st.lists(PIECES, max_size=14).map("".join)
DOCS = st.dictionaries(
    st.text(alphabet="abc", min_size=1, max_size=3),
    st.tuples(TEXT, TEXT, st.sampled_from(["", "x", "y"])),
    min_size=1,
    max_size=14,
)


@settings(max_examples=200, deadline=None)
@given(DOCS, st.lists(PIECES, min_size=1, max_size=8).map("".join), st.integers(1, 12))
def test_hits_equal_the_reference(docs: dict[str, tuple[str, str, str]], query: str, limit: int) -> None:
    index = indexed(docs)
    hits = index.search(query, limit=limit)
    assert [tuple(hit) for hit in hits] == reference(docs, query, limit)
    assert all(type(hit) is BM25Hit for hit in hits)
    assert index.search(query, limit=limit) == hits  # the cached weights give the same hits


@settings(max_examples=60, deadline=None)
@given(DOCS, st.lists(st.tuples(st.booleans(), st.sampled_from("abc"), TEXT), max_size=4), TEXT)
def test_hits_follow_changes(
    docs: dict[str, tuple[str, str, str]], changes: list[tuple[bool, str, str]], query: str
) -> None:
    index = indexed(docs)
    index.search(query, limit=5)  # weights cached, then invalidated by each change
    for add, doc_id, text in changes:
        if add:
            docs[doc_id] = ("", text, "")
            index.add(doc_id, text)
        else:
            docs.pop(doc_id, None)
            index.remove(doc_id)
        expected = reference(docs, query, 5) if docs else []
        assert [tuple(hit) for hit in index.search(query, limit=5)] == expected


def test_many_postings_take_the_other_coverage_path() -> None:
    # Over 4096 postings for one query: coverage is gathered for the hits only.
    docs = {
        f"d{number:04}": ("", f"欧洲 {'黑死病' if number % 3 else 'plague'} {'死亡' * (number % 5)}", "")
        for number in range(2500)
    }
    index = indexed(docs)
    for query, limit in (("欧洲黑死病死亡 plague", 40), ("欧洲", 7), ("plague deaths 欧洲人", 300)):
        assert [tuple(hit) for hit in index.search(query, limit=limit)] == reference(docs, query, limit)


RUN_PIECES = st.sampled_from(
    ["梅雨", "が", "ない", "北海道", "日本", "で", "국무", "장관", "을", " ", "。", "1924", "년"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(RUN_PIECES, min_size=1, max_size=12).map("".join))
def test_word_terms_give_a_joining_bigram_to_the_word_before_it(text: str) -> None:
    # Coverage counts a word as present when any of its terms is: the bigram that joins two words of
    # a run belongs to the first one (梅雨が: 雨が is 梅雨's), the rest of the terms to their own word.
    pairs = ANALYZER.word_terms(text)
    assert Counter(term for _word, terms in pairs for term in terms) == Counter(ANALYZER.terms(text))
    for word, terms in pairs:
        for term in terms:
            assert term in word or term[0] == word[-1], (text, word, term)
