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
from itertools import chain, repeat
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
        self._weights: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}
        self._norm_cache: npt.NDArray[np.float64] | None = None
        self._tiebreak_cache: npt.NDArray[np.int64] | None = None

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
        self._norm_cache = None
        self._tiebreak_cache = None

    def _tiebreak(self) -> npt.NDArray[np.int64]:
        """Each slot's rank in (locator, id) order, cached until the index changes."""
        if self._tiebreak_cache is None:
            ranks = np.zeros(len(self._ids), dtype=np.int64)
            order = sorted(range(len(self._ids)), key=lambda slot: (self._locators[slot], self._ids[slot]))
            ranks[order] = np.arange(len(order))
            self._tiebreak_cache = ranks
        return self._tiebreak_cache

    def _term_weights(
        self, term: str, n: int, norm: npt.NDArray[np.float64]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        """The slots holding ``term`` and its BM25 contribution in each, cached until the index changes."""
        cached = self._weights.get(term)
        if cached is not None:
            return cached
        bucket = self._postings.get(term)
        if not bucket:
            return None
        pairs = np.array(bucket, dtype=np.int64)
        slots = np.ascontiguousarray(pairs[:, 0])
        tf = pairs[:, 1].astype(np.float64)
        df = len(bucket)
        idf = lucene_idf(n, df)
        weights = (idf * (self.k1 + 1.0)) * tf / (tf + norm[slots])
        self._weights[term] = (slots, weights)
        return slots, weights

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
        query_counts = Counter(chain.from_iterable(map(_SECOND, words)))
        if not query_counts:
            return []
        # Coverage: a query word is in an item when any of its terms is. Each distinct kept word gets
        # a bit; each item collects the bits of the terms it holds (words past 63 share the last bit
        # and are checked one by one).
        kept = list(dict.fromkeys(map(_FIRST, words)))
        bit_of = {word: 1 << min(column, _BITS - 1) for column, word in enumerate(kept)}
        term_bits: dict[str, int] = {}
        for word, terms in words:
            for term in terms:
                term_bits[term] = term_bits.get(term, 0) | bit_of[word]
        n = len(self._items)
        norm = self._norm()
        size = len(self._ids)
        slot_parts: list[npt.NDArray[np.int64]] = []
        weight_parts: list[npt.NDArray[np.float64]] = []
        bits: list[int] = []
        for term, repeats in query_counts.items():
            arrays = self._term_weights(term, n, norm)
            if arrays is None:
                continue
            slots, weights = arrays
            slot_parts.append(slots)
            weight_parts.append(weights if repeats == 1 else repeats * weights)
            bits.append(term_bits[term])
        if not slot_parts:
            return []
        # One C pass sums every posting of every query term into its item's score.
        postings = np.concatenate(slot_parts)
        scores = np.bincount(postings, weights=np.concatenate(weight_parts), minlength=size)
        # Every weight is > 0, so a score > 0 means a shared term; ties at the cut-off all stay in.
        if size > limit:
            kth = float(np.partition(scores, size - limit)[size - limit])
            candidates = (scores >= kth).nonzero()[0] if kth > 0 else (scores > 0).nonzero()[0]
        else:
            candidates = (scores > 0).nonzero()[0]
        # Best score first, then locator, then id: one numpy sort on (tie-break rank, -score).
        order = np.lexsort((self._tiebreak()[candidates], -scores[candidates]))[:limit]
        top = candidates[order]
        top_slots = top.tolist()
        top_scores = scores[top].tolist()
        row_of = np.full(size, -1, dtype=np.int64)
        row_of[top] = np.arange(len(top_slots))
        rows = row_of[postings]
        held = rows >= 0
        posting_bits = np.repeat(np.array(bits, dtype=np.uint64), [len(part) for part in slot_parts])
        masks = np.zeros(len(top_slots), dtype=np.uint64)
        np.bitwise_or.at(masks, rows[held], posting_bits[held])
        mask_of = masks.tolist()
        ids = self._ids
        locators = self._locators
        # Hits share masks: decode each once. Words past the 63rd are looked up in the item itself,
        # so then a mask alone does not say the words.
        keys: list[object] = (
            list(mask_of) if len(kept) < _BITS else list(zip(mask_of, top_slots, strict=True))
        )
        coverage: dict[object, tuple[tuple[str, ...], float]] = {}
        for slot, mask, key in zip(top_slots, mask_of, keys, strict=True):
            if key not in coverage:
                matched = self._decode(mask, kept, words, ids[slot])
                coverage[key] = (matched, len(matched) / len(kept))
        return [
            _new_hit(BM25Hit, (ids[slot], score, locators[slot], *coverage[key]))
            for slot, score, key in zip(top_slots, top_scores, keys, strict=True)
        ]

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
