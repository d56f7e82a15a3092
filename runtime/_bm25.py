"""An in-memory BM25 index over analysed terms, with per-word coverage for explanations.

score(d, q) = Σ_t idf(t) · tf(t, d)·(k1 + 1) / (tf(t, d) + k1·(1 − b + b·|d|/avgdl)), summed over the
query's terms with their repeats; idf(t) = ln(1 + (N − df + 0.5)/(df + 0.5)) (Lucene's, never negative).
A title counts ``title_weight`` times. An item that shares no term with the query is not a hit. Ties
break by locator, then id.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from simone.runtime._analysis import Analyzer, default_analyzer
from simone.runtime._errors import InvalidRequest

K1 = 1.2
"""Term-frequency saturation: the 2nd occurrence of a term adds less than the 1st."""
B = 0.75
"""Length normalisation: a long item's term counts are discounted towards the average length."""
TITLE_WEIGHT = 3
"""A title's terms count this many times: a title says what the item is about."""


@dataclass(frozen=True, slots=True)
class BM25Hit:
    """One ranked item.

    Attributes:
        id: the item's id as added.
        score: its BM25 score (> 0).
        locator: where it lives, as added (ties break on it).
        matched_words: the query's kept words that the item contains (any of the word's terms).
        coverage: ``len(matched_words)`` / number of kept query words, in [0, 1].
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
    """BM25 over items added one by one, in memory (the folder provider; tests; small corpora).

    Args:
        analyzer: the text analysis (the default analyzer if omitted); documents and queries both go
            through its :meth:`~simone.runtime.Analyzer.terms`.
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
        if k1 < 0 or not 0 <= b <= 1 or title_weight < 1:
            raise InvalidRequest(
                f"BM25 needs k1 >= 0, 0 <= b <= 1, title_weight >= 1 (got {k1}, {b}, {title_weight})"
            )
        self.analyzer = analyzer if analyzer is not None else default_analyzer()
        self.k1 = float(k1)
        self.b = float(b)
        self.title_weight = int(title_weight)
        self._items: dict[str, _Item] = {}
        self._ids: list[str | None] = []
        self._free: list[int] = []
        self._lengths = np.zeros(0, dtype=np.float64)
        self._total_length = 0.0
        self._postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}

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
        else:
            slot = len(self._ids)
            self._ids.append(doc_id)
            if slot >= len(self._lengths):
                grown = np.zeros(max(16, 2 * len(self._lengths)), dtype=np.float64)
                grown[: len(self._lengths)] = self._lengths
                self._lengths = grown
        length = float(sum(counts.values()))
        self._lengths[slot] = length
        self._total_length += length
        self._items[doc_id] = _Item(slot, locator or doc_id, counts)
        postings = self._postings
        arrays = self._arrays
        for term, count in counts.items():
            bucket = postings.get(term)
            if bucket is None:
                postings[term] = {slot: count}
            else:
                bucket[slot] = count
                arrays.pop(term, None)

    def remove(self, doc_id: str) -> None:
        """Forget an item; an unknown id is ignored."""
        item = self._items.pop(doc_id, None)
        if item is None:
            return
        for term in item.counts:
            bucket = self._postings.get(term)
            if bucket is None:
                continue
            bucket.pop(item.slot, None)
            if not bucket:
                del self._postings[term]
            self._arrays.pop(term, None)
        self._total_length -= self._lengths[item.slot]
        self._lengths[item.slot] = 0.0
        self._ids[item.slot] = None
        self._free.append(item.slot)

    def _posting_arrays(self, term: str) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]] | None:
        cached = self._arrays.get(term)
        if cached is not None:
            return cached
        bucket = self._postings.get(term)
        if not bucket:
            return None
        slots = np.fromiter(bucket.keys(), dtype=np.int64, count=len(bucket))
        counts = np.fromiter(bucket.values(), dtype=np.float64, count=len(bucket))
        self._arrays[term] = (slots, counts)
        return slots, counts

    def search(self, query: str, limit: int = 10) -> list[BM25Hit]:
        """The best ``limit`` items for ``query``, best first; items sharing no term with it are left out."""
        if limit < 1:
            raise InvalidRequest(f"limit must be at least 1 (got {limit})")
        if not self._items:
            return []
        query_counts = Counter(self.analyzer.terms(query))
        if not query_counts:
            return []
        n = len(self._items)
        avgdl = self._total_length / n if n else 0.0
        size = len(self._ids)
        scores = np.zeros(size, dtype=np.float64)
        if avgdl > 0:
            norm = self.k1 * (1.0 - self.b + self.b * self._lengths[:size] / avgdl)
        else:
            norm = np.full(size, self.k1 * (1.0 - self.b), dtype=np.float64)
        for term, repeats in query_counts.items():
            arrays = self._posting_arrays(term)
            if arrays is None:
                continue
            slots, tf = arrays
            df = len(slots)
            idf = np.log1p((n - df + 0.5) / (df + 0.5))
            scores[slots] += (repeats * idf * (self.k1 + 1.0)) * tf / (tf + norm[slots])
        candidates = np.flatnonzero(scores > 0)
        if len(candidates) > limit:
            kth = np.partition(scores[candidates], len(candidates) - limit)[len(candidates) - limit]
            candidates = candidates[scores[candidates] >= kth]
        ranked: list[tuple[float, str, str]] = []
        for slot in candidates.tolist():
            doc_id = self._ids[slot]
            if doc_id is None:
                continue
            ranked.append((-float(scores[slot]), self._items[doc_id].locator, doc_id))
        ranked.sort()
        words = self.analyzer.word_terms(query)
        hits: list[BM25Hit] = []
        for negative, locator, doc_id in ranked[:limit]:
            counts = self._items[doc_id].counts
            matched = tuple(word for word, terms in words if any(t in counts for t in terms))
            coverage = len(matched) / len(words) if words else 0.0
            hits.append(BM25Hit(doc_id, -negative, locator, matched, coverage))
        return hits
