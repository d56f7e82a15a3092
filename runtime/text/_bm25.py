"""An in-memory BM25 index over analysed terms, with per-word coverage for explanations.

score(d, q) = Σ_t idf(t) · tf(t, d)·(k1 + 1) / (tf(t, d) + k1·(1 − b + b·|d|/avgdl)), summed over the
query's terms with their repeats; idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5)) (Lucene's, never negative).
A title counts ``title_weight`` times. An item that shares no term with the query is not a hit. Ties
break by locator, then id.

This module is simone's one definition of BM25: the constants (:data:`K1`, :data:`B`,
:data:`TITLE_WEIGHT`), the length normalisation and two idf flavours. :class:`BM25Index` uses Lucene's
idf; :func:`fts5_idf` and :func:`fts5_term_scores` are SQLite FTS5's ``bm25()`` operation by operation
(classic idf, floored at 1e-6; FTS5 fixes k1 = 1.2 and b = 0.75, the same as :data:`K1` and :data:`B`),
for an index that must score bit for bit like an FTS5 table it stands in for (structured memory).
"""

from __future__ import annotations

import math
import operator
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import compress, repeat
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from simone.runtime._errors import InvalidRequest
from simone.runtime.text._analysis import Analyzer, default_analyzer

K1 = 1.2
"""Term-frequency saturation: the 2nd occurrence of a term adds less than the 1st."""
B = 0.75
"""Length normalisation: a long item's term counts are discounted towards the average length."""
TITLE_WEIGHT = 3
"""A title's terms count this many times: a title says what the item is about."""
_BITS = 64
_consume: Callable[[Iterable[object]], None] = deque[object](maxlen=0).extend  # runs an iterator out, in C
_FIRST = operator.itemgetter(0)
_SECOND = operator.itemgetter(1)
_FEW_POSTINGS = 4096
"""Up to this many postings per query, coverage bits are gathered for every item, not only the hits."""
_ABSENT_TERMS = 65_536
"""Query terms the index lacks that it remembers as such (until it changes): bounded memory."""
_Weights = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]
_new_hit = tuple.__new__  # NamedTuple's own __new__ is a Python lambda; hits are many


def bm25_length_norm(
    lengths: npt.NDArray[np.float64], avgdl: float, *, k1: float = K1, b: float = B
) -> npt.NDArray[np.float64]:
    """k1·(1 − b + b·|d|/avgdl) per item (``avgdl`` > 0): how far an item's length discounts its counts.

    Evaluated as FTS5 evaluates it, ``k1 * ((1 - b) + (b * |d|) / avgdl)``, so scores built on it can
    match SQLite's bit for bit.
    """
    result: npt.NDArray[np.float64] = k1 * (1.0 - b + b * lengths / avgdl)
    return result


def lucene_idf(n: int, df: int) -> float:
    """Lucene's idf, ln(1 + (N − df + 0.5)/(df + 0.5)): never negative (:class:`BM25Index`)."""
    return math.log1p((n - df + 0.5) / (df + 0.5))


def fts5_idf(n: int, df: int) -> float:
    """SQLite FTS5's idf, ln((N − df + 0.5)/(df + 0.5)), floored at 1e-6 as ``bm25()`` floors it."""
    idf = math.log((n - df + 0.5) / (df + 0.5))
    return idf if idf > 0.0 else 1e-6


def fts5_term_scores(
    idf: float, tf: npt.NDArray[np.float64], norm: npt.NDArray[np.float64], *, k1: float = K1
) -> npt.NDArray[np.float64]:
    """One term's contribution to each item, as FTS5's ``bm25()`` computes it: idf·(tf·(k1+1)/(tf+norm)).

    Args:
        idf: the term's idf (:func:`fts5_idf`).
        tf: the term's (weighted) frequency in each item.
        norm: each item's :func:`bm25_length_norm`.
        k1: term-frequency saturation.
    """
    result: npt.NDArray[np.float64] = idf * ((tf * (k1 + 1.0)) / (tf + norm))
    return result


class BM25Hit(NamedTuple):
    """One ranked item.

    Attributes:
        id: the item's id as added.
        score: its BM25 score (> 0).
        locator: where it lives, as added (ties break on it, then on the id).
        matched_words: the query's distinct kept words that the item contains (any of the word's terms).
        coverage: ``len(matched_words)`` / number of distinct kept query words, in (0, 1].
    """

    id: str
    score: float
    locator: str
    matched_words: tuple[str, ...]
    coverage: float


@dataclass(slots=True)
class _Item:
    slot: int
    locator: str
    counts: Counter[str]


class BM25Index:
    """BM25 over items added one by one, in memory (the folder provider, passage selection, tests).

    Term weights are computed on the first search after a change and kept until the next change, so
    a build-then-search workload pays for them once. Not safe for concurrent use from several threads
    (guard it, or give each thread its own index).

    Args:
        analyzer: the text analysis (the default analyzer if omitted). Items go through its
            :meth:`~simone.runtime.text.Analyzer.terms`; queries through its
            :meth:`~simone.runtime.text.Analyzer.word_terms`, which holds exactly the same terms, grouped by
            the word they come from (for coverage).
        k1: term-frequency saturation (≥ 0).
        b: length normalisation, in [0, 1].
        title_weight: how many times a title's terms count (≥ 1).
    """

    def __init__(
        self,
        analyzer: Analyzer | None = None,
        *,
        k1: float = K1,
        b: float = B,
        title_weight: int = TITLE_WEIGHT,
    ) -> None:
        if not (math.isfinite(k1) and k1 >= 0) or not 0 <= b <= 1 or title_weight < 1:
            raise InvalidRequest(
                f"BM25 needs k1 >= 0, 0 <= b <= 1, title_weight >= 1 (got {k1}, {b}, {title_weight})"
            )
        self.analyzer = analyzer if analyzer is not None else default_analyzer()
        self.k1 = float(k1)
        self.b = float(b)
        self.title_weight = int(title_weight)
        self._items: dict[str, _Item] = {}
        self._ids: list[str] = []  # by slot; "" for a free slot (it has no postings)
        self._locators: list[str] = []
        self._free: list[int] = []
        self._lengths = np.zeros(0, dtype=np.float64)
        self._total_length = 0.0
        self._postings: defaultdict[str, list[tuple[int, int]]] = defaultdict(list)
        self._weights: dict[str, _Weights | tuple[()]] = {}  # () for a term the index lacks
        self._absent = 0  # how many of those
        self._norm_cache: npt.NDArray[np.float64] | None = None
        self._tiebreak_cache: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]] | None = None

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self._items

    def add(self, doc_id: str, text: str, *, title: str = "", locator: str = "") -> None:
        """Index an item; adding an id again replaces the earlier item."""
        if doc_id in self._items:
            self.remove(doc_id)
        counts = Counter(self.analyzer.terms(text))
        if title:
            for term, count in Counter(self.analyzer.terms(title)).items():
                counts[term] += count * self.title_weight
        if self._free:
            slot = self._free.pop()
            self._ids[slot] = doc_id
            self._locators[slot] = locator or doc_id
        else:
            slot = len(self._ids)
            self._ids.append(doc_id)
            self._locators.append(locator or doc_id)
            if slot >= len(self._lengths):
                grown = np.zeros(max(16, 2 * len(self._lengths)), dtype=np.float64)
                grown[: len(self._lengths)] = self._lengths
                self._lengths = grown
        length = float(sum(counts.values()))
        self._lengths[slot] = length
        self._total_length += length
        self._items[doc_id] = _Item(slot, locator or doc_id, counts)
        # (slot, count) appended to each term's posting list, all in C: no Python frame per term.
        _consume(
            map(list.append, map(self._postings.__getitem__, counts), zip(repeat(slot), counts.values()))
        )
        self._changed()

    def remove(self, doc_id: str) -> None:
        """Forget an item; an unknown id is ignored."""
        item = self._items.pop(doc_id, None)
        if item is None:
            return
        for term, count in item.counts.items():
            bucket = self._postings[term]
            bucket.remove((item.slot, count))
            if not bucket:
                del self._postings[term]
        self._total_length -= self._lengths[item.slot]
        self._lengths[item.slot] = 0.0
        self._ids[item.slot] = ""
        self._free.append(item.slot)
        self._changed()

    def _changed(self) -> None:
        # Every weight depends on N and the average length, so any change invalidates them all.
        if self._weights:
            self._weights = {}
            self._absent = 0
        self._norm_cache = None
        self._tiebreak_cache = None

    def _tiebreak(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Each slot's rank in (locator, id) order, and the slot at each rank; cached until the index changes."""
        if self._tiebreak_cache is None:
            order = np.array(
                sorted(range(len(self._ids)), key=lambda slot: (self._locators[slot], self._ids[slot])),
                dtype=np.int64,
            )
            ranks = np.zeros(len(order), dtype=np.int64)
            ranks[order] = np.arange(len(order))
            self._tiebreak_cache = (ranks, order)
        return self._tiebreak_cache

    def _term_weights(self, term: str, n: int, norm: npt.NDArray[np.float64]) -> _Weights | tuple[()]:
        """The ranks (see :meth:`_tiebreak`) of the items holding ``term`` and its BM25 contribution in each.

        ``()`` when no item holds it. Cached until the index changes (absent terms up to
        :data:`_ABSENT_TERMS`). Postings are kept by tie-break rank rather than by slot, so that scores
        come out indexed by rank and one sort on (score, rank) orders hits by score, then locator, then id.
        """
        cached = self._weights.get(term)
        if cached is not None:
            return cached
        bucket = self._postings.get(term)
        if not bucket:
            if self._absent < _ABSENT_TERMS:
                self._weights[term] = ()
                self._absent += 1
            return ()
        pairs = np.array(bucket, dtype=np.int64)
        slots = pairs[:, 0]
        tf = pairs[:, 1].astype(np.float64)
        df = len(bucket)
        idf = lucene_idf(n, df)
        weights = (idf * (self.k1 + 1.0)) * tf / (tf + norm[slots])
        ranks = np.ascontiguousarray(self._tiebreak()[0][slots])
        self._weights[term] = (ranks, weights)
        return ranks, weights

    def _norm(self) -> npt.NDArray[np.float64]:
        """Per-slot length normalisation k1·(1 − b + b·|d|/avgdl), cached until the index changes."""
        if self._norm_cache is None:
            size = len(self._ids)
            avgdl = self._total_length / len(self._items) if self._items else 0.0
            if avgdl > 0:
                self._norm_cache = bm25_length_norm(self._lengths[:size], avgdl, k1=self.k1, b=self.b)
            else:
                self._norm_cache = np.full(size, self.k1 * (1.0 - self.b), dtype=np.float64)
        return self._norm_cache

    def search(self, query: str, limit: int = 10) -> list[BM25Hit]:
        """The best ``limit`` items for ``query``, best first; items sharing no term with it are left out."""
        if limit < 1:
            raise InvalidRequest(f"limit must be at least 1 (got {limit})")
        if not self._items:
            return []
        # word_terms holds exactly the terms of analyzer.terms(query) -- the analysis documents went
        # through -- grouped by the query word they come from (for coverage).
        words = self.analyzer.word_terms(query)
        # Coverage: a query word is in an item when any of its terms is. Each distinct kept word gets
        # a bit; each item collects the bits of the terms it holds (words past 63 share the last bit
        # and are checked one by one).
        kept = list(dict.fromkeys(map(_FIRST, words)))
        bit_of = {word: 1 << min(column, _BITS - 1) for column, word in enumerate(kept)}
        query_counts: dict[str, int] = {}  # each term with its repeats, in the query's order
        term_bits: dict[str, int] = {}
        for word, terms in words:
            bit = bit_of[word]
            for term in terms:
                query_counts[term] = query_counts.get(term, 0) + 1
                term_bits[term] = term_bits.get(term, 0) | bit
        if not query_counts:
            return []
        # Each query term's cached (ranks, weights), () for a term the index lacks; None for a term
        # not looked up since the last change (looked up now).
        found = list(map(self._weights.get, query_counts))
        if None in found:
            n = len(self._items)
            norm = self._norm()
            found = [
                arrays if arrays is not None else self._term_weights(term, n, norm)
                for term, arrays in zip(query_counts, found, strict=True)
            ]
        held_terms = list(compress(query_counts, found))
        if not held_terms:
            return []
        arrays = list(filter(None, found))
        rank_parts = list(map(_FIRST, arrays))
        # One C pass sums every posting of every query term into its item's score, indexed by the
        # item's tie-break rank. Every weight is > 0, so a score > 0 means a shared term.
        postings = np.concatenate(rank_parts)
        weights = np.concatenate(list(map(_SECOND, arrays)))
        lengths = list(map(len, rank_parts))
        repeats = list(map(query_counts.__getitem__, held_terms))
        if max(repeats) > 1:  # a term the query holds twice counts twice
            weights = weights * np.repeat(np.array(repeats, dtype=np.float64), lengths)
        size = len(self._ids)
        scores = np.bincount(postings, weights=weights, minlength=size)
        top = scores.nonzero()[0]  # ascending rank: (locator, id) order
        if len(top) > 2 * limit:  # keep the scores at or above the limit-th best (ties all stay in)
            cut = len(top) - limit
            top_scores = scores[top]
            top = top[top_scores >= np.partition(top_scores, cut)[cut]]
        # Best score first, then rank: equal scores keep (locator, id) order.
        top = top[np.lexsort((top, -scores[top]))[:limit]]
        count = len(top)
        hit_scores = scores[top].tolist()
        hit_slots = self._tiebreak()[1][top].tolist()
        # Coverage: OR the bits of every posting into its item (of only those that land on a hit
        # when there are many postings).
        posting_bits = np.repeat(
            np.array(list(map(term_bits.__getitem__, held_terms)), dtype=np.uint64), lengths
        )
        if len(postings) <= _FEW_POSTINGS:
            masks = np.zeros(size, dtype=np.uint64)
            np.bitwise_or.at(masks, postings, posting_bits)
            masks = masks[top]
        else:
            row_of = np.full(size, -1, dtype=np.int64)
            row_of[top] = np.arange(count)
            rows = row_of[postings]
            held = rows >= 0
            masks = np.zeros(count, dtype=np.uint64)
            np.bitwise_or.at(masks, rows[held], posting_bits[held])
        mask_of = masks.tolist()
        hit_ids = list(map(self._ids.__getitem__, hit_slots))
        hit_locators = list(map(self._locators.__getitem__, hit_slots))
        total = len(kept)
        if total < _BITS:
            # Hits share masks: decode each distinct one once.
            words_of: dict[int, tuple[str, ...]] = {}
            share_of: dict[int, float] = {}
            for mask in dict.fromkeys(mask_of):
                matched = []
                rest = mask
                while rest:  # one step per matched word, lowest bit first (the query's word order)
                    low = rest & -rest
                    matched.append(kept[low.bit_length() - 1])
                    rest ^= low
                words_of[mask] = tuple(matched)
                share_of[mask] = len(matched) / total
            hit_words = list(map(words_of.__getitem__, mask_of))
            shares = list(map(share_of.__getitem__, mask_of))
        else:  # words past the 63rd share a bit: they are looked up in the item itself
            hit_words = [
                self._decode(mask, kept, words, doc_id) for mask, doc_id in zip(mask_of, hit_ids, strict=True)
            ]
            shares = [len(matched) / total for matched in hit_words]
        return list(
            map(
                _new_hit,
                repeat(BM25Hit),
                zip(hit_ids, hit_scores, hit_locators, hit_words, shares, strict=True),
            )
        )

    def _decode(
        self, mask: int, kept: list[str], words: list[tuple[str, list[str]]], doc_id: str
    ) -> tuple[str, ...]:
        """The kept words whose bits are in ``mask``; words past the 63rd are checked in the item."""
        matched = []
        overflow = mask >> (_BITS - 1) & 1 and len(kept) >= _BITS
        rest = mask & ((1 << (_BITS - 1)) - 1)
        while rest:  # one step per matched word, lowest bit first (the query's word order)
            low = rest & -rest
            matched.append(kept[low.bit_length() - 1])
            rest ^= low
        if overflow:
            counts = self._items[doc_id].counts
            terms_of: dict[str, set[str]] = {}
            for word, terms in words:
                terms_of.setdefault(word, set()).update(terms)
            matched.extend(word for word in kept[_BITS - 1 :] if not terms_of[word].isdisjoint(counts))
        return tuple(matched)
