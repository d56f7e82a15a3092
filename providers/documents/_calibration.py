"""Calibrate the relevance rule for meaning to any embedding space, from a collection's own chunks.

The rule (:class:`~simone.runtime.ranking.RelevanceRule`) tells a real match from the nearest
irrelevant chunk by how far the best candidate stands out. How far is "far" depends on the model:
all-MiniLM-L6-v2 spreads similarities over ``[0, 1]``, multilingual-e5 packs them into ``[0.7, 0.9]``, so
MiniLM's margin of 0.20 — or the default 0.10 — makes an e5 space answer nothing. The shipped values
cover the bundled models only (``CALIBRATED`` in ``runtime/ranking/_relevance.py``); any other space is
fitted here, from the collection itself:

* **on-topic questions**: the first sentence of sampled chunks (a pseudo-question whose own chunk is
  the answer), searched against the collection without the held-out topics. The own chunk is judged
  **without that sentence** (the rest of it embedded as a document and put among the candidates at its
  similarity): a real question does not copy its answer's words, and a sentence found verbatim in its
  chunk would stand out far more than any real question (on XQuAD-R with e5, the margin of such
  pseudo-questions had a median of 0.119 against 0.078 for the real questions; without the sentence,
  0.075);
* **absent topics**: the first sentences of *held-out topics* — a file drawn at random and the
  :data:`TOPIC_FILES` files nearest to it, left out of every search of the fit (about a quarter of the
  collection's files at most, up to :data:`MAX_ABSENT` questions) — topped up with
  :data:`OTHER_TOPICS` when the collection has too few files;
* each question runs through the collection's real vector search (the same candidates, ANN settings
  and cosine scores as a semantic leg), and every candidate setting is judged by the rule's own
  public :meth:`~simone.runtime.ranking.RelevanceRule.judge`, so the fit follows the rule's semantics;
* the choice is the one of ``CALIBRATED``, recall first: among the settings that still answer
  (keep the question's own chunk) at least :data:`RECALL_SHARE` of what the loosest setting answers,
  the one that leaves the most absent topics empty, then the one that answers most, then the narrowest
  band. Margin, floor and band are scanned one at a time from the loosest setting until a round
  changes nothing (:func:`fit_rule`).

The same pseudo-questions fit the semantic leg's **vote** (:func:`fit_vote`): the log-odds that the
leg's best candidate is the question's own chunk, from its margin (a logistic fit, drawn toward the
pooled default curve when the sample says little). A space simone ships a curve for (the bundled
models, fitted on real questions) keeps it; any other space is weighed in the fusion by its fitted
curve, so a model whose similarities sit on another scale than the bundled ones (multilingual-e5
packs them into a narrow band) is read on its own scale rather than taken for unsure
(:func:`vote_curve`). Pseudo-questions do not tell a weak model from a strong one: anything that
matches words answers them well (``docs/decisions.md``).

The result, :class:`SpaceCalibration`, is stored **with the space**: in the metadata of the table's
``vector`` column, beside the space record in the schema (``simone.calibration``), so it travels with the
collection (local folder or object store) and another space (another model, another prefix) never reads
it. Searches use it through :func:`relevance_rule`; explicit ``[index] relevance_margin`` /
``relevance_band`` settings still win.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
import re
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import numpy as np
import pyarrow as pa
from simone.providers.documents._store import Collection, sql_in
from simone.providers.documents._vote_shift import PseudoQuestion, lexical_probe
from simone.runtime import ConfigError, EmbeddingChain, IndexSettings, InvalidRequest, ProviderError
from simone.runtime.ranking import DEFAULT_SEMANTIC_VOTE, RelevanceRule, VoteCurve, rule_for, vote_for
from simone.runtime.text import Analyzer

CALIBRATION_KEY = b"simone.calibration"
"""The key of the fitted values in the ``vector`` column's metadata."""

CALIBRATION_FORMAT = 1
"""Version of the stored record (a record of another version is ignored, as if never fitted)."""

MAX_ON_TOPIC = 160
"""Pseudo-questions drawn from the searched chunks (at most :data:`PER_DOCUMENT` per file)."""

MAX_ABSENT = 100
"""Absent-topic questions drawn from the held-out files."""

MIN_ON_TOPIC = 20
"""Below this many pseudo-questions the collection is too small to fit anything."""

MIN_ABSENT = 20
"""Below this many held-out questions :data:`OTHER_TOPICS` are added."""

PER_DOCUMENT = 3
"""Pseudo-questions per file, so a few long files do not make the whole sample."""

HELD_OUT_SHARE = 0.25
"""At most this share of the files is held out as absent topics."""

TOPIC_FILES = 5
"""A held-out topic is a file and this many of its nearest files (by its first chunk): neighbours on
the same subject would otherwise answer the "absent" question."""

RECALL_SHARE = 0.90
"""The fitted setting answers at least this share of what the loosest setting answers."""

VOTE_PRIOR_SD = (1.0, 8.0)
"""Standard deviations of the Gaussian prior of the vote fit (intercept, slope) around
:data:`~simone.runtime.ranking.DEFAULT_SEMANTIC_VOTE`: with 160 pseudo-questions the data decide;
with a few dozen that all agree, the curve stays finite."""

MARGINS = tuple(round(0.005 * i, 4) for i in range(61))
"""The grid of margins (0 to 0.30)."""

BANDS = (0.0, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.10, 0.12, 0.15, 0.20, 0.30)
"""The coarse grid of bands."""

FLOORS = tuple(round(0.02 * i, 4) for i in range(-10, 51))
"""The grid of floors (-0.20 to 1.0; 1.0: out of reach of any question but a duplicate)."""

OTHER_TOPICS = (
    "How long should sourdough bread rise before baking?",
    "Which football club has won the most Champions League titles?",
    "What is the best time of year to plant tulip bulbs?",
    "How many moons does Jupiter have?",
    "What causes the northern lights?",
    "How do I remove red wine stains from a carpet?",
    "Who painted the ceiling of the Sistine Chapel?",
    "What is a good stretching routine after running?",
    "How do you tune a guitar by ear?",
    "Which wine goes well with grilled salmon?",
    "Wie lange muss man Eier für ein wachsweiches Frühstücksei kochen?",
    "¿Cuál es la mejor época para visitar la Patagonia?",
    "Quelle est la recette traditionnelle de la ratatouille ?",
    "Quanto tempo leva para um cacto florescer?",
    "Как ухаживать за орхидеей зимой?",
    "金魚の水槽の水はどのくらいの頻度で替えるべきですか？",
    "如何在家里种植薄荷？",
    "겨울철 고양이 털 관리는 어떻게 하나요?",
    "What is the rule for castling in chess?",
    "How high is the tallest waterfall in the world?",
)
"""Everyday questions in several languages, added as absent topics when the collection has too few
files to hold some out (a collection about one of these topics loses a little absent-topic signal, not
the fit)."""

# Sentences end at a stop and a space (or a CJK stop), paragraphs at a blank line; a single line break
# is only a wrapped line (Markdown, docstrings), unless the line is a heading or a list item. The stops
# of other scripts count too: the danda of Devanagari and Bengali (।, ॥), the Arabic question mark and
# the Urdu full stop (؟, ۔), the Armenian, Ethiopic and Myanmar full stops (։, ።, ။) — without them a
# Hindi paragraph is one sentence and its space cannot be calibrated.
_SENTENCE_END = re.compile(
    r"(?<=[.!?。！？।॥؟۔։።။])\s+|(?<=[。！？])|\n\s*\n|\n(?=\s*(?:[#>*+-]|\d+[.)])\s)|(?<=\n)(?=\s*#)"
)
_SPACE = re.compile(r"\s+")
_HEADING_LINE = re.compile(r"^(\s*#{1,6}\s[^\n]*)\n", re.MULTILINE)
# Scripts written without spaces between words: a sentence there is counted in characters.
_UNSPACED = re.compile(r"[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_MIN_WORDS = 4
_MIN_CHARS = 12
_MAX_CHARS = 300


@dataclass(frozen=True, slots=True)
class SpaceCalibration:
    """The relevance rule fitted for one embedding space, with how it was measured.

    Attributes:
        space: the space key (``provider:model:dimension``) the values belong to.
        margin: the fitted margin of the rule.
        band: the fitted band.
        floor: the fitted floor (used when a leg has too few candidates for a median).
        questions: pseudo-questions the fit used (on-topic).
        absent: absent-topic questions the fit used.
        answered: share of the pseudo-questions whose own chunk the fitted rule keeps.
        absent_empty: share of the absent topics the fitted rule leaves empty.
        default_answered: ``answered`` under the rule the space had before (shipped or default values).
        default_absent_empty: ``absent_empty`` under that rule.
        chunks: rows with a vector in the table when it was fitted.
        fitted_at: when (seconds since the epoch).
        vote_intercept: the fitted vote curve's intercept (``None``: fitted before votes were).
        vote_slope: its slope on the leg's margin.
        top_share: share of the pseudo-questions whose own chunk was the leg's best candidate.
        vote_shift: how much harder the pseudo-questions were than real questions, in log-odds, read
            off the lexical leg answering them (:mod:`~simone.providers.documents._vote_shift`;
            ``None``: not measured); taken off the vote only when :attr:`shifted`.
        lexical_top_share: share of the pseudo-questions whose own chunk the lexical leg ranked first.
    """

    space: str
    margin: float
    band: float
    floor: float
    questions: int
    absent: int
    answered: float
    absent_empty: float
    default_answered: float
    default_absent_empty: float
    chunks: int
    fitted_at: float
    vote_intercept: float | None = None
    vote_slope: float | None = None
    top_share: float | None = None
    vote_shift: float | None = None
    lexical_top_share: float | None = None

    @property
    def shifted(self) -> bool:
        """Whether the vote is read on the lexical leg's footing (:attr:`vote`).

        Only a leg that answered the pseudo-questions at least as often as the lexical leg did (its
        own chunk first) takes the shift: the shift measures the questions on the lexical leg, and a
        leg that did worse on the same questions is not known to gain as much on real ones (on SciFact a
        static word-vector model, own chunk first for 21 % against the lexical leg's 25 %, read as
        surer than the lexical leg once shifted, and hybrid fell from 0.7014 to 0.6461).
        """
        return (
            self.vote_shift is not None
            and self.top_share is not None
            and self.lexical_top_share is not None
            and self.top_share >= self.lexical_top_share
        )

    @property
    def vote(self) -> VoteCurve | None:
        """The vote curve: the fitted one, minus :attr:`vote_shift` when :attr:`shifted`.

        ``None`` for a record stored before votes were fitted.
        """
        if self.vote_intercept is None or self.vote_slope is None:
            return None
        shift = self.vote_shift if self.shifted and self.vote_shift is not None else 0.0
        return VoteCurve(round(self.vote_intercept - shift, 4), (self.vote_slope,))

    def to_json(self) -> str:
        """The stored record (with :data:`CALIBRATION_FORMAT`)."""
        return json.dumps({"format": CALIBRATION_FORMAT, **dataclasses.asdict(self)}, sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | bytes) -> SpaceCalibration | None:
        """The record, or ``None`` when it is unreadable or of another format."""
        try:
            data = json.loads(raw)
            if not isinstance(data, dict) or data.pop("format", None) != CALIBRATION_FORMAT:
                return None
            calibration = cls(**data)
            if calibration.vote is not None and not all(
                math.isfinite(v) for v in (calibration.vote.intercept, *calibration.vote.slopes)
            ):
                return None
            RelevanceRule(margin=calibration.margin, band=calibration.band, floor=calibration.floor)
        except (ValueError, TypeError, ConfigError):
            return None
        return calibration

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields (for reports), with :attr:`shifted`."""
        return dataclasses.asdict(self) | {"shifted": self.shifted}


def calibration_of_schema(schema: pa.Schema, space_key: str) -> SpaceCalibration | None:
    """The calibration a table's schema records for ``space_key`` (``None``: not calibrated)."""
    try:
        field = schema.field("vector")
    except KeyError:
        return None
    raw = (field.metadata or {}).get(CALIBRATION_KEY)
    if raw is None:
        return None
    calibration = SpaceCalibration.from_json(raw)
    return calibration if calibration is not None and calibration.space == space_key else None


async def read_calibration(collection: Collection) -> SpaceCalibration | None:
    """The calibration stored with the collection's space, read afresh from the table."""
    await collection.table.checkout_latest()
    return calibration_of_schema(await collection.table.schema(), collection.space.key)


async def store_calibration(collection: Collection, calibration: SpaceCalibration) -> None:
    """Store ``calibration`` with the table's space (and use it for this collection from now on)."""
    if calibration.space != collection.space.key:
        raise InvalidRequest(
            f"a calibration of {calibration.space} cannot be stored with collection {collection.name!r} "
            f"of space {collection.space.key}"
        )
    await collection.table.update_field_metadata(
        {"path": "vector", "metadata": {CALIBRATION_KEY.decode(): calibration.to_json()}}
    )
    collection.calibration = calibration


def has_shipped_calibration(space_key: str) -> bool:
    """Whether simone ships calibrated values for the space's model (the bundled models)."""
    # rule_for falls back to the default rule for a model it has no values for; an empty key names none.
    return rule_for(space_key) != rule_for("")


def relevance_rule(
    space_key: str,
    calibration: SpaceCalibration | None,
    *,
    margin: float | None = None,
    band: float | None = None,
) -> RelevanceRule:
    """The rule a semantic leg of ``space_key`` judges with.

    Explicit ``margin``/``band`` (the ``[index]`` settings) win; then the values fitted for the space;
    then the shipped values for the model (or the rule's defaults).
    """
    base = rule_for(space_key, margin=margin, band=band)
    if calibration is None or calibration.space != space_key:
        return base
    return dataclasses.replace(
        base,
        margin=calibration.margin if margin is None else margin,
        band=calibration.band if band is None else band,
        floor=calibration.floor,
    )


def has_shipped_vote(space_key: str) -> bool:
    """Whether simone ships a vote curve for the space's model (fitted on real questions)."""
    return vote_for(space_key) != DEFAULT_SEMANTIC_VOTE


def vote_curve(space_key: str, calibration: SpaceCalibration | None) -> tuple[VoteCurve, str]:
    """The curve that weighs a semantic leg of ``space_key`` in the fusion, and where it comes from.

    ``shipped`` (the bundled models: curves fitted on real questions win over 160 pseudo-questions),
    then the curve stored with the space by :func:`calibrate` — ``shifted`` onto the lexical leg's
    footing (:attr:`SpaceCalibration.shifted`) or ``fitted`` (as fitted) — then ``default`` (both
    shipped models' questions pooled). Beside a ``shifted`` leg the lexical pin yields to a surer
    semantic leg (``DocumentIndexProvider``); beside the others it does not.
    """
    if has_shipped_vote(space_key):
        return vote_for(space_key), "shipped"
    if (
        calibration is not None
        and calibration.space == space_key
        and (fitted := calibration.vote) is not None
    ):
        return fitted, "shifted" if calibration.shifted else "fitted"
    return DEFAULT_SEMANTIC_VOTE, "default"


# -- the sample -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Question:
    text: str
    answer: str | None  # the chunk id that answers it; None for an absent topic
    rest: str = ""  # the answer as embedded, without the question's sentence


@dataclass(slots=True)
class _Sample:
    on_topic: list[_Question]
    absent: list[_Question]
    held_out: list[str]  # paths excluded from every search
    chunks: int
    searched: list[str]  # the other paths, in the order the on-topic questions were drawn from


def first_sentence(text: str, skip: Sequence[str] = ()) -> str | None:
    """A chunk's first sentence fit to be a question: enough words, not the whole chunk.

    Lines equal to one of ``skip`` (the chunk's title and heading, repeated in its text) are passed
    over. ``None`` when no sentence of at least a few words (or characters, in scripts written without
    spaces) comes before more of the chunk.
    """
    body = _SPACE.sub(" ", text).strip()
    text = _HEADING_LINE.sub("\\1\n\n", text)  # a heading ends where its line ends
    ignored = {_SPACE.sub(" ", s).strip(" #*>-|").casefold() for s in skip if s}
    for raw in _SENTENCE_END.split(text):
        sentence = _SPACE.sub(" ", raw).strip(" #*>-|")
        if not sentence or sentence.casefold() in ignored:
            continue
        if len(sentence) > _MAX_CHARS:
            sentence = sentence[:_MAX_CHARS].rsplit(" ", 1)[0]
        unspaced = len(_UNSPACED.findall(sentence)) * 2 >= len(sentence)
        if len(sentence.split()) >= _MIN_WORDS or (unspaced and len(sentence) >= _MIN_CHARS):
            # the chunk must hold more than the question: otherwise it is its own duplicate
            return sentence if len(sentence) * 2 <= len(body) else None
    return None


async def _sample(collection: Collection, *, seed: int) -> _Sample:
    """Hold out topics (a file and its nearest files) as absent; draw pseudo-questions from the rest."""
    paths_table = await collection.rows(where="vector IS NOT NULL", columns=["path"])
    chunks = paths_table.num_rows
    paths = sorted(set(paths_table.column("path").to_pylist()))
    rng = random.Random(seed)
    rng.shuffle(paths)
    budget = int(len(paths) * HELD_OUT_SHARE)
    held: set[str] = set()
    absent: list[_Question] = []
    for path in paths:
        if len(absent) >= MAX_ABSENT or len(held) >= budget:
            break
        if path in held:
            continue
        rows = await _rows_of(collection, [path], vectors=True)
        if not rows:
            continue
        # The topic: this file and the files nearest to its first chunk (their chunks would answer it).
        hits = await collection.search_vector(
            np.asarray(rows[0]["vector"], dtype=np.float32), "", TOPIC_FILES * PER_DOCUMENT * 2, exact=True
        )
        near = await _paths_of(collection, [hit.id for hit in hits])
        held.update(list(dict.fromkeys([path, *near]))[: min(TOPIC_FILES + 1, budget - len(held))])
        drawn = [q for row in rows if (q := _question(row, answer=False)) is not None]
        absent.extend(drawn[: min(PER_DOCUMENT, MAX_ABSENT - len(absent))])
    on_topic: list[_Question] = []
    searched = [p for p in paths if p not in held]
    for group in _groups(searched, 64):
        if len(on_topic) >= MAX_ON_TOPIC:
            break
        per_path: dict[str, list[_Question]] = {}
        for row in await _rows_of(collection, group):
            if (question := _question(row, answer=True)) is not None:
                per_path.setdefault(row["path"], []).append(question)
        for path in group:
            drawn = per_path.get(path, [])
            rng.shuffle(drawn)
            on_topic.extend(drawn[: max(0, min(PER_DOCUMENT, MAX_ON_TOPIC - len(on_topic)))])
    if len(absent) < MIN_ABSENT:
        absent.extend(_Question(text, None) for text in OTHER_TOPICS)
    return _Sample(on_topic, absent, sorted(held), chunks, searched)


def _question(row: Mapping[str, Any], *, answer: bool) -> _Question | None:
    sentence = first_sentence(row["text"], (row.get("title") or "", row.get("heading") or ""))
    if sentence is None:
        return None
    if not answer:
        return _Question(sentence, None)
    # The answer is judged without the sentence: a real question's words are not copied from its answer.
    body = _SPACE.sub(" ", row["text"]).strip()
    if sentence not in body:
        return None
    rest = body.replace(sentence, " ", 1).strip()
    context = row.get("context") or ""
    return _Question(sentence, row["id"], f"{context}\n{rest}" if context else rest)


def _groups(items: Sequence[str], size: int) -> list[list[str]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


async def _rows_of(
    collection: Collection, paths: Sequence[str], *, vectors: bool = False
) -> list[dict[str, Any]]:
    columns = ["id", "path", "title", "heading", "context", "text", *(["vector"] if vectors else [])]
    table = await collection.rows(where=f"vector IS NOT NULL AND {sql_in('path', paths)}", columns=columns)
    rows: list[dict[str, Any]] = table.to_pylist()
    rows.sort(key=lambda row: (row["path"], row["id"]))
    return rows


async def _paths_of(collection: Collection, ids: Sequence[str]) -> list[str]:
    """The paths of chunks ``ids``, in that order."""
    if not ids:
        return []
    table = await collection.rows(where=sql_in("id", ids), columns=["id", "path"])
    path_of = dict(zip(table.column("id").to_pylist(), table.column("path").to_pylist(), strict=True))
    return [path_of[i] for i in ids if i in path_of]


# -- the fit ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Scored:
    """One question's candidates (similarities, best first) and where its answer stands among them."""

    similarities: tuple[float, ...]
    answer: int | None  # index of the own chunk among the candidates; None: absent or not retrieved


@dataclass(frozen=True, slots=True)
class _Outcome:
    answered: float
    absent_empty: float


def _outcome(rule: RelevanceRule, on_topic: Sequence[_Scored], absent: Sequence[_Scored]) -> _Outcome:
    """Judge every question with ``rule``: own chunks kept, absent topics left empty."""
    answered = 0
    for scored in on_topic:
        if scored.answer is not None and scored.similarities:
            if rule.judge(scored.similarities)[scored.answer].relevant:
                answered += 1
    empty = 0
    for scored in absent:
        if not any(j.relevant for j in rule.judge(scored.similarities)):
            empty += 1
    return _Outcome(answered / max(1, len(on_topic)), empty / max(1, len(absent)))


def _rank(rule: RelevanceRule, outcome: _Outcome) -> tuple[float, float, float, float]:
    """Most absent topics empty, then most answered, then the narrowest band, then the lowest margin."""
    return (outcome.absent_empty, outcome.answered, -rule.band, -rule.margin)


def _scan(
    rules: Sequence[RelevanceRule],
    on_topic: Sequence[_Scored],
    absent: Sequence[_Scored],
    need: float,
    current: tuple[RelevanceRule, _Outcome],
) -> tuple[RelevanceRule, _Outcome]:
    """The best of ``rules`` answering at least ``need``, or ``current`` when none beats it."""
    chosen = current
    for rule in rules:
        outcome = _outcome(rule, on_topic, absent)
        if outcome.answered + 1e-12 >= need and _rank(rule, outcome) > _rank(*chosen):
            chosen = (rule, outcome)
    return chosen


def fit_rule(
    base: RelevanceRule, on_topic: Sequence[_Scored], absent: Sequence[_Scored], *, rounds: int = 4
) -> tuple[RelevanceRule, _Outcome]:
    """Fit margin, band and floor together (see the module docstring).

    Starts from the loosest setting (no margin, the widest band, the floor out of reach), then scans
    one threshold at a time over its grid, the others held, until a round changes nothing; each scan
    judges every question with the rule's own :meth:`~simone.runtime.ranking.RelevanceRule.judge`.
    """
    loosest = dataclasses.replace(base, margin=0.0, band=max(BANDS), floor=max(FLOORS))
    start = _outcome(loosest, on_topic, absent)
    need = RECALL_SHARE * start.answered
    chosen = (loosest, start)
    for _ in range(rounds):
        before = chosen[0]
        for name, grid in (("margin", MARGINS), ("floor", FLOORS), ("band", BANDS)):
            rules = [dataclasses.replace(chosen[0], **{name: value}) for value in grid]
            chosen = _scan(rules, on_topic, absent, need, chosen)
        if chosen[0] == before:
            break
    # A finer step around the chosen margin and floor.
    rule = chosen[0]
    for name, value, step in (("margin", rule.margin, 0.0025), ("floor", rule.floor, 0.005)):
        rules = [
            dataclasses.replace(chosen[0], **{name: round(value + step * i, 4)})
            for i in range(-4, 5)
            if (value + step * i >= 0.0 or name == "floor") and value + step * i <= 1.0
        ]
        chosen = _scan(rules, on_topic, absent, need, chosen)
    return chosen


def fit_vote(
    on_topic: Sequence[_Scored], prior: VoteCurve = DEFAULT_SEMANTIC_VOTE
) -> tuple[VoteCurve, float]:
    """The semantic leg's vote curve from the pseudo-questions, and the share answered first.

    A logistic fit of "the own chunk is the leg's best candidate" on the leg's margin (best
    similarity − the candidates' median, as :meth:`~simone.runtime.ranking.RelevanceRule.judge`
    measures it at search time), by damped Newton steps on the posterior with a Gaussian prior around
    ``prior`` (:data:`VOTE_PRIOR_SD`). A question whose own chunk was not among the candidates counts
    as a miss.
    """
    rows = [
        (scored.similarities[0] - statistics.median(scored.similarities), scored.answer == 0)
        for scored in on_topic
        if scored.similarities
    ]
    if not rows:
        return prior, 0.0
    x = np.array([[1.0, margin] for margin, _ in rows])
    y = np.array([1.0 if first else 0.0 for _, first in rows])
    mean = np.array([prior.intercept, prior.slopes[0]])
    precision = np.diag([1.0 / sd**2 for sd in VOTE_PRIOR_SD])

    def log_posterior(w: np.ndarray) -> float:
        z = x @ w
        return float(np.sum(y * z - np.logaddexp(0.0, z)) - 0.5 * (w - mean) @ precision @ (w - mean))

    w = mean.copy()
    current = log_posterior(w)
    for _ in range(100):
        p = 0.5 * (1.0 + np.tanh(0.5 * (x @ w)))
        gradient = x.T @ (y - p) - precision @ (w - mean)
        hessian = x.T @ (x * (p * (1.0 - p))[:, None]) + precision
        step = np.linalg.solve(hessian, gradient)
        # Newton's step, halved until the posterior rises (a full step overshoots from a prior
        # far from the data, where every p is near 0 or 1)
        scale = 1.0
        while scale > 1e-6 and (candidate := log_posterior(w + scale * step)) < current:
            scale /= 2
        if scale <= 1e-6:
            break
        w, current = w + scale * step, candidate
        if float(np.max(np.abs(scale * step))) < 1e-9:
            break
    return VoteCurve(round(float(w[0]), 4), (round(float(w[1]), 4),)), float(np.mean(y))


# -- the whole run ----------------------------------------------------------------------------------


async def _score(
    collection: Collection,
    chain: EmbeddingChain,
    settings: IndexSettings,
    questions: Sequence[_Question],
    where: str,
) -> list[_Scored]:
    if not questions:
        return []
    space = collection.space
    vectors = await chain.embed([q.text for q in questions], space=space, kind="query")
    answers = [q for q in questions if q.answer is not None and q.rest]
    rests = await chain.embed([q.rest for q in answers], space=space, kind="document") if answers else None
    rest_of = {id(q): rests[i] for i, q in enumerate(answers)} if rests is not None else {}
    limit = settings.leg_candidates
    scored: list[_Scored] = []
    for question, vector in zip(questions, vectors, strict=True):
        hits = await collection.search_vector(
            vector,
            where,
            limit,
            nprobes=settings.ann_nprobes,
            refine_factor=settings.ann_refine_factor or None,
            probe_share=settings.ann_probe_share,
        )
        if id(question) not in rest_of:
            pairs = [(hit.score, hit.id == question.answer) for hit in hits]
        else:
            rest = rest_of[id(question)]
            pairs = [(hit.score, False) for hit in hits if hit.id != question.answer]
            own = float(
                np.dot(vector, rest) / max(1e-12, float(np.linalg.norm(vector) * np.linalg.norm(rest)))
            )
            pairs.append((own, True))
        pairs = sorted(pairs, key=lambda pair: -pair[0])[:limit]
        answer = next((i for i, (_, own_chunk) in enumerate(pairs) if own_chunk), None)
        scored.append(_Scored(tuple(score for score, _ in pairs), answer))
    return scored


async def calibrate(
    collection: Collection,
    chain: EmbeddingChain,
    settings: IndexSettings | None = None,
    *,
    seed: int = 0,
    store: bool = True,
    analyzer: Analyzer | None = None,
) -> SpaceCalibration:
    """Fit the relevance rule for the collection's space and (by default) store it with the space.

    Args:
        collection: a table of the document index (a collection or one of its extra-space tables).
        chain: the embedding chain (it must embed the table's space).
        settings: the ``[index]`` section (candidates per leg and ANN settings, as searches use them).
        seed: the sample's seed (the same collection and seed draw the same questions).
        store: write the result into the table (``False``: only return it).
        analyzer: the collection's lexical analysis (``DocumentIndex.analyzer``; default: the default
            analysis), for the lexical leg's answers to the pseudo-questions (the vote's shift).

    Raises:
        InvalidRequest: the table holds too few chunks with a vector to fit anything.
        ProviderError: embedding the questions failed (the table is left as it was).
    """
    settings = settings or IndexSettings()
    sample = await _sample(collection, seed=seed)
    if len(sample.on_topic) < MIN_ON_TOPIC:
        raise InvalidRequest(
            f"collection {collection.name!r} ({collection.space.key}) has too few chunks with a vector "
            f"and a full first sentence to calibrate the relevance rule: {len(sample.on_topic)} "
            f"question(s), at least {MIN_ON_TOPIC} needed. Index more documents, then run "
            "'simone index --calibrate'"
        )
    where = f"NOT ({sql_in('path', sample.held_out)})" if sample.held_out else ""
    on_topic = await _score(collection, chain, settings, sample.on_topic, where)
    absent = await _score(collection, chain, settings, sample.absent, where)
    base = rule_for(collection.space.key)
    rule, outcome = await anyio.to_thread.run_sync(fit_rule, base, on_topic, absent)
    before = _outcome(base, on_topic, absent)
    vote, top_share = fit_vote(on_topic)
    lexical = await lexical_probe(
        collection,
        [PseudoQuestion(q.text, q.answer) for q in sample.on_topic if q.answer is not None],
        analyzer or Analyzer(),
        sample.searched,
        settings.leg_candidates,
    )
    calibration = SpaceCalibration(
        space=collection.space.key,
        margin=rule.margin,
        band=rule.band,
        floor=rule.floor,
        questions=len(on_topic),
        absent=len(absent),
        answered=round(outcome.answered, 4),
        absent_empty=round(outcome.absent_empty, 4),
        default_answered=round(before.answered, 4),
        default_absent_empty=round(before.absent_empty, 4),
        chunks=sample.chunks,
        fitted_at=round(time.time(), 3),
        vote_intercept=vote.intercept,
        vote_slope=vote.slopes[0],
        top_share=round(top_share, 4),
        vote_shift=lexical.shift if lexical is not None else None,
        lexical_top_share=round(lexical.top_share, 4) if lexical is not None else None,
    )
    if store:
        await store_calibration(collection, calibration)
    return calibration


async def calibrate_missing(
    tables: Sequence[tuple[str, Collection]],
    chain: EmbeddingChain,
    settings: IndexSettings | None = None,
    *,
    analyzer: Analyzer | None = None,
) -> Mapping[str, SpaceCalibration | str]:
    """Calibrate each table whose space has neither shipped nor stored values (after a first index).

    Returns, per table name, the new calibration or why it was not fitted (too few chunks, embedder
    down); tables already calibrated are left out. Never raises for one table's failure.
    """
    done: dict[str, SpaceCalibration | str] = {}
    for _, table in tables:
        if has_shipped_calibration(table.space.key) or table.calibration is not None:
            continue
        try:
            done[table.name] = await calibrate(table, chain, settings, analyzer=analyzer)
        except InvalidRequest as exc:
            done[table.name] = str(exc)
        except ProviderError as exc:
            done[table.name] = f"{exc.kind}: {exc.message}"
    return done


def relevance_report(table: Collection, settings: IndexSettings | None = None) -> dict[str, Any]:
    """Which relevance rule a table's semantic leg judges with, and where its values come from.

    ``source`` is ``settings`` (``[index] relevance_margin``/``relevance_band`` set), ``fitted`` (stored
    with the space), ``shipped`` (the bundled models' values) or ``default`` (a space nobody
    calibrated: the rule's generic values, with ``advice`` to run ``simone index --calibrate``).
    ``vote`` is the curve that weighs the leg in hybrid fusion (``source``: ``shipped``, ``fitted`` or
    ``default``; see :func:`vote_curve`).
    """
    settings = settings or IndexSettings()
    key = table.space.key
    rule = relevance_rule(
        key, table.calibration, margin=settings.relevance_margin, band=settings.relevance_band
    )
    curve, curve_source = vote_curve(key, table.calibration)
    report: dict[str, Any] = {
        "margin": rule.margin,
        "band": rule.band,
        "floor": rule.floor,
        "vote": {"source": curve_source, "intercept": curve.intercept, "slope": curve.slopes[0]},
    }
    if table.calibration is not None:
        report["fitted"] = table.calibration.to_dict()
    if settings.relevance_margin is not None or settings.relevance_band is not None:
        report["source"] = "settings"
    elif table.calibration is not None:
        report["source"] = "fitted"
    elif has_shipped_calibration(key):
        report["source"] = "shipped"
    else:
        report["source"] = "default"
        report["advice"] = (
            f"the relevance rule is not calibrated for {key}: its generic values may drop every on-topic "
            "result of this model (or keep absent topics). Run 'simone index --calibrate'"
        )
    return report
