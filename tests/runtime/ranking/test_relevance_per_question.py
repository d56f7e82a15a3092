"""The relevance rule decides per question: does anything stand out? Then the leg's ranking counts.

Unit and property tests of :class:`~simone.runtime.ranking.RelevanceRule`, and the rule through the
document-index provider on a real LanceDB index with the bundled ONNX model.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from hypothesis import given, strategies as st
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, DocumentStore
from simone.providers.embeddings import OnnxMiniLMEmbedder
from simone.runtime import (
    ConfigError,
    EmbeddingChain,
    IndexSettings,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
)
from simone.runtime.ranking import RelevanceRule, rule_for
from simone.runtime.ranking._relevance import CALIBRATED, MIN_CANDIDATES

CONTEXT = TrustedContext(actor="tester")

similarities = st.lists(st.floats(min_value=-1.0, max_value=1.0, allow_nan=False), min_size=1, max_size=60)
thresholds = st.floats(min_value=0.0, max_value=0.6)
floors = st.floats(min_value=-1.0, max_value=1.0)


def test_a_question_whose_best_reaches_the_floor_stands_out_among_alike_candidates() -> None:
    # a large collection on the question's topic: the candidates are all close (no margin), but the
    # best is close to the question in itself, so the whole ranking counts down to the floor
    values = [0.66, 0.64, 0.63, 0.61, 0.60, 0.58, 0.41, 0.39]
    rule = RelevanceRule(margin=0.20, band=0.05, floor=0.40)
    assert values[0] - statistics.median(values) < rule.margin
    verdicts = rule.judge(values)
    assert [v.relevant for v in verdicts] == [value >= rule.floor for value in values]
    assert {v.rule for v in verdicts} == {"floor"}
    assert rule.stands_out(values)


def test_a_question_below_the_floor_without_a_margin_gets_nothing() -> None:
    values = [0.36, 0.35, 0.35, 0.34, 0.33, 0.33]
    rule = RelevanceRule(margin=0.20, band=0.10, floor=0.40)
    assert not rule.stands_out(values)
    assert not any(v.relevant for v in rule.judge(values))


def test_a_margin_keeps_the_neighbours_of_the_best_even_below_the_floor() -> None:
    values = [0.38, 0.33, 0.20, 0.12, 0.10, 0.09, 0.08]
    rule = RelevanceRule(margin=0.20, band=0.06, floor=0.40)
    assert [v.relevant for v in rule.judge(values)] == [True, True, False, False, False, False, False]


@given(similarities, thresholds, thresholds, floors)
def test_the_question_stands_out_exactly_when_anything_counts(
    values: list[float], margin: float, band: float, floor: float
) -> None:
    rule = RelevanceRule(margin=margin, band=band, floor=floor)
    assert rule.stands_out(values) == any(v.relevant for v in rule.judge(values))


@given(similarities, thresholds, thresholds, floors)
def test_a_question_that_stands_out_keeps_every_candidate_above_the_floor_and_near_the_best(
    values: list[float], margin: float, band: float, floor: float
) -> None:
    rule = RelevanceRule(margin=margin, band=band, floor=floor)
    verdicts = rule.judge(values)
    if len(values) < MIN_CANDIDATES or not rule.stands_out(values):
        return
    best = max(values)
    for value, verdict in zip(values, verdicts, strict=True):
        assert verdict.relevant == (value >= floor or value >= best - band)


@given(similarities, thresholds, thresholds, floors, st.floats(min_value=0.0, max_value=0.3))
def test_looser_settings_never_keep_fewer(
    values: list[float], margin: float, band: float, floor: float, step: float
) -> None:
    def kept(rule: RelevanceRule) -> int:
        return sum(v.relevant for v in rule.judge(values))

    base = kept(RelevanceRule(margin=margin, band=band, floor=floor))
    assert kept(RelevanceRule(margin=max(0.0, margin - step), band=band, floor=floor)) >= base
    assert kept(RelevanceRule(margin=margin, band=band + step, floor=floor)) >= base
    assert kept(RelevanceRule(margin=margin, band=band, floor=max(-1.0, floor - step))) >= base


@given(similarities, st.randoms(use_true_random=False))
def test_the_verdicts_follow_the_candidates_not_their_order(values: list[float], rng: object) -> None:
    rule = RelevanceRule(margin=0.1, band=0.05, floor=0.3)
    shuffled = list(enumerate(values))
    rng.shuffle(shuffled)  # type: ignore[attr-defined]
    verdicts = rule.judge([value for _, value in shuffled])
    again = rule.judge(values)
    assert all(verdicts[i].relevant == again[j].relevant for i, (j, _) in enumerate(shuffled))


# --- through the provider: real LanceDB, the bundled model ------------------------------------------

BREAD = {
    f"bread{i}.md": f"# Bread, part {i}\n\n{text}\n"
    for i, text in enumerate(
        [
            "Knead the dough for ten minutes until it is smooth and springs back when pressed.",
            "Let the kneaded dough rise in a warm place for about an hour, until it doubles.",
            "Bake the loaf in a hot oven until the crust is golden and the bottom sounds hollow.",
            "Sourdough bread uses a starter of wild yeast instead of dried yeast from a packet.",
            "Whole wheat flour makes a denser bread; add a little more water to the dough.",
            "Shape the risen dough into a loaf, then let it rest before it goes into the oven.",
        ]
    )
}
OTHERS = {
    "volcanoes.md": "# Volcanoes\n\nA volcano erupts when magma rises through the crust.\n",
    "tennis.md": "# Tennis\n\nA set is won by the first player to take six games with a lead of two.\n",
    "taxes.md": "# Income tax\n\nEmployees file an income tax return every spring.\n",
    "whales.md": "# Whales\n\nBlue whales are the largest animals ever known; they feed on krill.\n",
    "trains.md": "# Railways\n\nHigh-speed trains run on dedicated tracks at more than 300 km/h.\n",
    "chess.md": "# Chess\n\nIn chess, castling moves the king two squares towards a rook.\n",
}


@pytest.fixture(scope="module")
def onnx() -> Iterator[OnnxMiniLMEmbedder]:
    embedder = OnnxMiniLMEmbedder(intra_op_threads=2)
    anyio.run(embedder.open)
    yield embedder
    anyio.run(embedder.close)


def _write(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_semantic_mode_keeps_the_legs_ranking_for_a_question_that_stands_out(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    docs = _write(tmp_path / "docs", {**BREAD, **OTHERS})

    async def go() -> None:
        index = DocumentIndex(
            DocumentStore(tmp_path / "index"), EmbeddingChain([onnx]), settings=IndexSettings()
        )
        async with index:
            await index.index_paths([docs])
            provider = DocumentIndexProvider(index)

            async def ask(text: str, min_similarity: float | None = None) -> list[tuple[str, float]]:
                request = RetrievalRequest.create(
                    text, limit=20, mode=SearchMode.SEMANTIC, min_similarity=min_similarity
                )
                response = await provider.retrieve(request, CONTEXT)
                return [
                    (Path(e.locator.split("#")[0]).name, e.metadata["relevance"]["similarity"]["semantic"])
                    for e in response.evidence
                ]

            question = "How do I make bread dough at home?"
            leg = await ask(question, min_similarity=-1.0)  # the leg without the rule
            ruled = await ask(question)
            rule = rule_for(index.space.key if index.space is not None else "")
            sims = [similarity for _, similarity in leg]
            assert rule.stands_out(sims)
            cut = min(max(sims) - rule.band, rule.floor)
            # the rule keeps the leg's own ranking, down to the floor or the band, whichever is lower
            assert ruled == [(name, similarity) for name, similarity in leg if similarity >= cut]
            assert sum(name.startswith("bread") for name, _ in ruled) > 1
            absent = await ask("Which vaccine protects against measles?")
            assert absent == []

    anyio.run(go)


def test_hybrid_keeps_every_candidate_of_a_question_its_legs_found_and_none_of_an_absent_one(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    docs = _write(tmp_path / "docs", {**BREAD, **OTHERS})

    async def go() -> None:
        index = DocumentIndex(
            DocumentStore(tmp_path / "index"), EmbeddingChain([onnx]), settings=IndexSettings()
        )
        async with index:
            await index.index_paths([docs])
            provider = DocumentIndexProvider(index)
            request = RetrievalRequest.create("bread dough", limit=50, mode=SearchMode.HYBRID)
            response = await provider.retrieve(request, CONTEXT)
            kept_by = {
                Path(e.locator.split("#")[0]).name: e.metadata["relevance"]["kept_by"]
                for e in response.evidence
            }
            # every candidate of either leg counts: the collection's every chunk, here
            assert len(kept_by) == response.details["legs"]["semantic"] == len(BREAD) + len(OTHERS)
            assert kept_by["chess.md"] == ["topic"]  # no shared word, not near by meaning
            assert "lexical" in kept_by["bread0.md"]
            assert response.excluded == []
            absent = await provider.retrieve(
                RetrievalRequest.create("Which vaccine protects against measles?", mode=SearchMode.HYBRID),
                CONTEXT,
            )
            assert absent.evidence == [] and absent.details["legs"].get("lexical", 0) == 0
            assert absent.excluded  # the nearest chunks, reported as not relevant

    anyio.run(go)


def test_a_stricter_alone_similarity_keeps_a_close_but_crowded_best_from_standing_out() -> None:
    values = [0.33, 0.31, 0.30, 0.29, 0.28, 0.27]
    loose = RelevanceRule(margin=0.10, band=0.15, floor=0.20)
    strict = RelevanceRule(margin=0.10, band=0.15, floor=0.20, alone=0.35)
    assert loose.standalone == loose.floor and strict.standalone == 0.35
    assert loose.stands_out(values) and any(v.relevant for v in loose.judge(values))
    assert not strict.stands_out(values) and not any(v.relevant for v in strict.judge(values))
    # a margin still makes it stand out, and then the floor (not ``alone``) cuts the candidates
    outlier = [0.33, 0.12, 0.11, 0.10, 0.09, 0.08]
    assert [v.relevant for v in strict.judge(outlier)] == [True, False, False, False, False, False]


def test_alone_out_of_range_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        RelevanceRule(alone=1.5)


def test_the_shipped_rules_keep_their_alone_similarity() -> None:
    for model, rule in CALIBRATED.items():
        assert rule_for(f"{model}:512") == rule
