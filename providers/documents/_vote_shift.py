"""How much harder the calibration's pseudo-questions are than real questions, read off the lexical leg.

A space simone ships no vote curve for is weighed in hybrid fusion by a curve fitted on
pseudo-questions (:func:`~simone.providers.documents._calibration.fit_vote`: a chunk's first sentence,
its own chunk judged without it). The lexical leg's curve (:data:`~simone.runtime.ranking.LEXICAL_VOTE`)
was fitted on real questions. The two are not on one footing: pseudo-questions are harder than real
ones (the rest of a chunk does not answer its first sentence the way a passage answers a question
about it), so a strong model's fitted curve reads it as unsure next to the lexical leg. With
multilingual-e5-small on XQuAD-R Arabic the semantic leg weighed 0.035 of the lexical leg's median
weight, and hybrid (0.8578) fell below the semantic leg alone (0.8965).

This module puts them on one footing. The lexical leg answers **the same pseudo-questions**, against
the same chunks (held-out topics left out, the own chunk without the question's sentence), scored as
the leg scores them: BM25 over the analysed ``terms`` column (Lucene's idf, simone's k1 and b, which
LanceDB's full-text search uses too; the title's
terms are weighted in that column already). Its real-question curve read at each question's features
gives a log-odds; the **shift** is the one offset that makes those log-odds fit whether the own chunk
came first (a one-parameter logistic fit with a Gaussian prior around 0, :data:`SHIFT_PRIOR_SD`).
A negative shift says the pseudo-questions are that much harder than real questions. Taking them to be
as much harder for the semantic leg, the semantic leg's real-question curve is its fitted curve minus
the shift (:attr:`~simone.providers.documents._calibration.SpaceCalibration.vote`) — taken only when
that leg found the own chunk first at least as often as the lexical leg did
(:attr:`~simone.providers.documents._calibration.SpaceCalibration.shifted`): for a leg that did worse
on the same questions nothing says it gains as much on real ones (wordllama's static vectors on
SciFact, shifted regardless, fell from 0.7014 to 0.6461 hybrid nDCG@10).

The lexical corpus is every searched chunk when there are at most :data:`CORPUS_CHUNKS`; a larger
collection answers from the chunks of the files the pseudo-questions come from and further files, in
the sample's order, until that many (a smaller corpus is easier, so the shift leans toward the lexical
leg there: it never makes the semantic leg look surer than it measured).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio
import numpy as np
import numpy.typing as npt
from simone.providers.documents._store import Collection, sql_in
from simone.runtime.ranking import LEXICAL_VOTE, lexical_standout
from simone.runtime.text import BM25_K1, Analyzer, bm25_length_norm, lucene_idf

CORPUS_CHUNKS = 20_000
"""At most this many chunks are read for the lexical leg's answers to the pseudo-questions."""

SHIFT_PRIOR_SD = 2.0
"""Standard deviation (log-odds) of the shift's Gaussian prior around 0: 160 questions decide it."""


@dataclass(frozen=True, slots=True)
class PseudoQuestion:
    """A calibration question the lexical leg answers: its text and the chunk it comes from."""

    text: str
    answer: str


@dataclass(frozen=True, slots=True)
class LexicalProbe:
    """The lexical leg on the pseudo-questions.

    Attributes:
        shift: the log-odds offset of the pseudo-questions against the leg's real-question curve.
        top_share: share of the questions whose own chunk the leg ranked first.
        questions: how many it answered (a question whose own chunk was not read, or whose terms are
            all stop words, is left out).
    """

    shift: float
    top_share: float
    questions: int


@dataclass(frozen=True, slots=True)
class Chunk:
    """What BM25 needs of one chunk: its length in terms and the counts of the questions' terms."""

    length: int
    counts: Counter[str]


def asked_terms(questions: Sequence[PseudoQuestion], analyzer: Analyzer) -> list[tuple[Counter[str], str]]:
    """Each question's analysed terms (with repeats) and its own chunk; questions without terms dropped."""
    asked = [(Counter(analyzer.terms(question.text)), question.answer) for question in questions]
    return [(terms, answer) for terms, answer in asked if terms]


def counted(ids: Sequence[str], terms: Sequence[str | None], needed: set[str]) -> dict[str, Chunk]:
    """Chunks from their ``terms`` column: the length and the counts of the ``needed`` terms only."""
    out: dict[str, Chunk] = {}
    for chunk_id, text in zip(ids, terms, strict=True):
        words = str(text or "").split()
        out[str(chunk_id)] = Chunk(len(words), Counter(word for word in words if word in needed))
    return out


async def lexical_probe(
    collection: Collection,
    questions: Sequence[PseudoQuestion],
    analyzer: Analyzer,
    paths: Sequence[str],
    limit: int,
    cap: int = CORPUS_CHUNKS,
) -> LexicalProbe | None:
    """The lexical leg on ``questions`` over the chunks of ``paths`` (in that order, up to ``cap``).

    Each chunk is held as its length and the counts of the questions' terms, never its whole text: a
    calibration of a large collection reads 20,000 chunks and keeps a few counts of each.
    """
    asked = asked_terms(questions, analyzer)
    if not asked:
        return None
    needed = set().union(*(terms for terms, _ in asked))
    chunks: dict[str, Chunk] = {}
    for start in range(0, len(paths), 64):
        if len(chunks) >= cap:
            break
        table = await collection.rows(
            where=sql_in("path", paths[start : start + 64]), columns=["id", "terms"]
        )
        chunks.update(
            await anyio.to_thread.run_sync(
                counted, table.column("id").to_pylist(), table.column("terms").to_pylist(), needed
            )
        )
    return await anyio.to_thread.run_sync(score, asked, chunks, limit)


def score(
    asked: Sequence[tuple[Counter[str], str]], chunks: Mapping[str, Chunk], limit: int
) -> LexicalProbe | None:
    """Answer the questions from ``chunks`` as the lexical leg would and fit the shift.

    ``None`` when no question's own chunk is among ``chunks``.
    """
    asked = [(terms, answer) for terms, answer in asked if answer in chunks]
    if not asked:
        return None
    ids = list(chunks)
    slot_of = {chunk_id: slot for slot, chunk_id in enumerate(ids)}
    lengths = np.array([chunks[chunk_id].length for chunk_id in ids], dtype=np.float64)
    avgdl = max(1.0, float(lengths.mean()))
    norm = bm25_length_norm(lengths, avgdl)
    postings: dict[str, tuple[list[int], list[int]]] = {}
    for slot, chunk_id in enumerate(ids):
        for term, count in chunks[chunk_id].counts.items():
            slots, counts = postings.setdefault(term, ([], []))
            slots.append(slot)
            counts.append(count)
    arrays = {
        term: (np.array(slots, dtype=np.int64), np.array(counts, dtype=np.float64))
        for term, (slots, counts) in postings.items()
    }
    idf = {term: lucene_idf(len(ids), len(where)) for term, (where, _) in arrays.items()}
    logits: list[float] = []
    firsts: list[bool] = []
    for terms, answer in asked:
        own = slot_of[answer]
        scores = np.zeros(len(ids), dtype=np.float64)
        for term, repeats in terms.items():
            if term in arrays:
                held, tf = arrays[term]
                np.add.at(scores, held, repeats * idf[term] * tf * (BM25_K1 + 1) / (tf + norm[held]))
        # the own chunk without the question's sentence (as the semantic leg judges it): the question
        # is that sentence, so its terms come off the chunk's (as many as the chunk holds)
        own_counts = chunks[answer].counts
        rest = Counter({t: own_counts[t] - terms[t] for t in own_counts if own_counts[t] > terms[t]})
        removed = sum(min(own_counts[t], terms[t]) for t in terms)
        rest_norm = float(
            bm25_length_norm(np.array([chunks[answer].length - removed], dtype=np.float64), avgdl)[0]
        )
        scores[own] = math.fsum(
            repeats * idf[term] * rest[term] * (BM25_K1 + 1) / (rest[term] + rest_norm)
            for term, repeats in terms.items()
            if term in idf and rest[term] > 0
        )
        logit, first = _judged(scores, own, terms, chunks, ids, rest, limit)
        logits.append(logit)
        firsts.append(first)
    return LexicalProbe(fit_shift(logits, firsts), float(np.mean(firsts)), len(asked))


def _judged(
    scores: npt.NDArray[np.float64],
    own: int,
    terms: Counter[str],
    chunks: Mapping[str, Chunk],
    ids: Sequence[str],
    rest: Counter[str],
    limit: int,
) -> tuple[float, bool]:
    """The lexical curve's log-odds for one question's candidates, and whether its own chunk came first."""
    hits = np.flatnonzero(scores > 0)
    if not len(hits):
        return LEXICAL_VOTE.log_odds(0.0, 0.0), False
    ranked = hits[np.argsort(-scores[hits], kind="stable")][:limit]
    best = int(ranked[0])
    others = scores[ranked[ranked != own]]
    first = best == own and not (len(others) and others[0] >= scores[own])
    held = rest if best == own else chunks[ids[best]].counts
    coverage = sum(1 for term in terms if held[term] > 0) / len(terms)
    return LEXICAL_VOTE.log_odds(*lexical_standout(scores[ranked].tolist(), coverage)), first


def fit_shift(logits: Sequence[float], firsts: Sequence[bool], *, sd: float = SHIFT_PRIOR_SD) -> float:
    """The offset ``s`` maximising Σ log P(first | logit + s) − s²/(2 sd²) (Newton's method; concave)."""
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(firsts, dtype=np.float64)
    shift = 0.0
    for _ in range(100):
        p = 0.5 * (1.0 + np.tanh(0.5 * (z + shift)))
        gradient = float(np.sum(y - p)) - shift / sd**2
        curvature = float(np.sum(p * (1.0 - p))) + 1.0 / sd**2
        step = max(-2.0, min(2.0, gradient / curvature))
        shift += step
        if abs(step) < 1e-9:
            break
    return round(shift, 4)
