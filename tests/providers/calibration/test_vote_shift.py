"""The lexical leg on the calibration's pseudo-questions: how much harder they are than real questions.

Pure functions over a small corpus of analysed terms (as the ``terms`` column holds them); the
end-to-end fit against a real LanceDB collection and embedding server is in ``test_calibration.py``.
"""

from __future__ import annotations

import math

from simone.providers.documents._vote_shift import (
    LexicalProbe,
    PseudoQuestion,
    asked_terms,
    counted,
    fit_shift,
    score,
)
from simone.runtime.ranking import LEXICAL_VOTE
from simone.runtime.text import Analyzer

ANALYZER = Analyzer()

TEXTS = {
    "heap": "A binary heap keeps the smallest item first. Pushing and popping an item costs logarithmic "
    "time in the heap's size, and the heap invariant holds after each push.",
    "json": "JSON encodes Python objects as text. Dictionaries become objects, lists become arrays, and "
    "the decoder turns the text back into Python objects.",
    "csv": "The csv module reads and writes comma separated values. A reader yields rows; a writer "
    "quotes fields that hold the delimiter.",
    "zlib": "Compression with the deflate algorithm. The compressor shrinks bytes and the decompressor "
    "restores them.",
}


def corpus() -> dict[str, str]:
    """Each chunk's ``terms`` column, as the index writes it (analysed terms joined by spaces)."""
    return {chunk_id: " ".join(ANALYZER.terms(text)) for chunk_id, text in TEXTS.items()}


def probe(
    questions: list[PseudoQuestion], terms: dict[str, str], analyzer: Analyzer, limit: int
) -> LexicalProbe | None:
    """What ``lexical_probe`` computes once it has read the chunks' ``terms``."""
    asked = asked_terms(questions, analyzer)
    needed = set().union(*(t for t, _ in asked))
    return score(asked, counted(list(terms), list(terms.values()), needed), limit) if asked else None


def test_the_shift_is_the_offset_that_fits_the_outcomes() -> None:
    # the curve says even odds; the own chunk came first four times in five: the shift is about
    # logit(0.8) = 1.39, drawn a little toward 0 by its prior
    shift = fit_shift([0.0] * 100, [i % 5 != 0 for i in range(100)])
    assert 1.2 < shift < math.log(4)
    # questions harder than the curve says give a negative shift
    assert fit_shift([2.0] * 100, [i % 2 == 0 for i in range(100)]) < -1.5
    assert fit_shift([], []) == 0.0
    # outcomes that all agree stay finite (the prior)
    assert 0 < fit_shift([0.0] * 30, [True] * 30) < 10


def test_the_own_chunk_is_judged_without_the_question_sentence() -> None:
    # the first sentences as questions: the rest of the heap and JSON chunks repeats their words (heap,
    # item; python, object, text); the rest of the csv chunk says "reader"/"writer", not "read"/"write",
    # and the rest of the zlib chunk says "compressor", not "compression"
    questions = [
        PseudoQuestion("A binary heap keeps the smallest item first.", "heap"),
        PseudoQuestion("JSON encodes Python objects as text.", "json"),
        PseudoQuestion("The csv module reads and writes comma separated values.", "csv"),
        PseudoQuestion("Compression with the deflate algorithm.", "zlib"),
    ]
    found = probe(questions, corpus(), ANALYZER, limit=10)
    assert found is not None and found.questions == 4
    assert found.top_share == 0.5
    for question, first in zip(questions, (True, True, False, False), strict=True):
        one = probe([question], corpus(), ANALYZER, limit=10)
        assert one is not None and (one.top_share == 1.0) is first, question.answer


def test_questions_without_their_chunk_or_terms_are_left_out() -> None:
    assert probe([PseudoQuestion("binary heap", "missing")], corpus(), ANALYZER, limit=10) is None
    assert probe([PseudoQuestion("the of and", "heap")], corpus(), ANALYZER, limit=10) is None
    mixed = probe(
        [PseudoQuestion("A binary heap keeps the smallest item first.", "heap"), PseudoQuestion("x", "gone")],
        corpus(),
        ANALYZER,
        limit=10,
    )
    assert mixed is not None and mixed.questions == 1


def test_a_question_answered_first_with_a_clear_standout_reads_as_the_curve_says() -> None:
    # one question whose rest holds its words and no other chunk does: first, and the shift follows
    # the direction of the outcome from the curve's prediction
    question = PseudoQuestion("A binary heap keeps the smallest item first.", "heap")
    found = probe([question], corpus(), ANALYZER, limit=10)
    assert found is not None and found.top_share == 1.0
    assert found.shift > 0, "first, as the curve's odds say at most: the shift cannot be negative"
    assert LEXICAL_VOTE.log_odds(0.0, 0.0) < 0
