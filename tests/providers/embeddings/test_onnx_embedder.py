"""The bundled all-MiniLM-L6-v2 on onnxruntime: real model, real tokenizer."""

from __future__ import annotations

from pathlib import Path

import anyio
import numpy as np
import pytest
from simone.providers.embeddings import ONNX_SPACE, OnnxMiniLMEmbedder, load_tokenizer
from simone.runtime import Embedder, ProviderNotConfigured, ProviderUnavailable
from tokenizers import Tokenizer

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome.",
    "The new movie is so great.",
    "A cheetah is running behind its prey.",
    "The cat sits outside in the sun.",
]


async def _embed(texts: list[str], **kwargs: object) -> np.ndarray:
    async with OnnxMiniLMEmbedder(**kwargs) as embedder:  # type: ignore[arg-type]
        return await embedder.embed(texts)


def test_vectors_are_unit_float32_of_dimension_384() -> None:
    vectors = anyio.run(_embed, SENTENCES)
    assert vectors.shape == (len(SENTENCES), 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.isfinite(vectors).all()


def test_similar_sentences_are_closer_than_unrelated_ones() -> None:
    vectors = anyio.run(_embed, SENTENCES)
    similarity = vectors @ vectors.T
    for first, second in [(0, 1), (2, 3)]:
        related = similarity[first, second]
        unrelated = [similarity[first, k] for k in range(len(SENTENCES)) if k not in (first, second)]
        assert related > max(unrelated) + 0.2, (first, second, related, unrelated)
    # the published all-MiniLM-L6-v2 similarity of the two "movie" sentences is about 0.89
    assert similarity[2, 3] > 0.8


def test_a_batch_of_mixed_lengths_equals_one_by_one() -> None:
    texts = [
        "short",
        "A medium length sentence about the weather in Lisbon today.",
        " ".join(["A much longer text that keeps going about embeddings and padding."] * 12),
        "",
        "Ünïcödé and 中文 and emoji 🙂 mixed in",
        "short",
    ]

    async def go() -> tuple[np.ndarray, np.ndarray]:
        async with OnnxMiniLMEmbedder(batch_size=4) as embedder:
            together = await embedder.embed(texts)
            alone = np.stack([(await embedder.embed([text]))[0] for text in texts])
        return together, alone

    together, alone = anyio.run(go)
    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(together[0], together[5], atol=1e-6)
    assert np.linalg.norm(together[3]) == pytest.approx(1.0, abs=1e-5), "an empty text still gets a vector"


def test_text_past_the_window_is_truncated_at_256_tokens() -> None:
    long = " ".join(f"word{i}" for i in range(400))

    async def go() -> tuple[np.ndarray, int]:
        async with OnnxMiniLMEmbedder() as embedder:
            vectors = await embedder.embed([long, long + " and a tail that lies past the window"])
            return vectors, embedder.count_tokens(long)

    vectors, tokens = anyio.run(go)
    assert tokens > 256
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-6)


def test_token_counting_uses_the_real_tokenizer() -> None:
    embedder = OnnxMiniLMEmbedder()
    assert embedder.count_tokens("hello world") == 4  # [CLS] hello world [SEP]
    assert embedder.count_tokens("") == 2
    assert embedder.max_tokens == 256
    assert isinstance(embedder.tokenizer, Tokenizer)
    assert embedder.tokenizer.encode("embeddings").tokens == [
        "[CLS]",
        "em",
        "##bed",
        "##ding",
        "##s",
        "[SEP]",
    ]
    long = "token " * 600
    assert embedder.count_tokens(long) == 602, "counting does not truncate"
    assert embedder.count_tokens_batch(["hello world", "", long]) == [4, 2, 602]
    assert not embedder.started, "counting tokens does not open the ONNX session"


def test_load_tokenizer_pads_to_the_longest_and_truncates() -> None:
    tokenizer = load_tokenizer(max_tokens=256, pad=True)
    encodings = tokenizer.encode_batch(["a b c", "a", "word " * 300])
    assert [len(e.ids) for e in encodings] == [256, 256, 256]
    short = tokenizer.encode_batch(["a b c", "a"])
    assert [len(e.ids) for e in short] == [5, 5]
    assert short[1].attention_mask == [1, 1, 1, 0, 0]


def test_it_is_an_embedder_of_the_onnx_space() -> None:
    embedder = OnnxMiniLMEmbedder()
    assert isinstance(embedder, Embedder)
    assert embedder.space == ONNX_SPACE
    assert embedder.space.key == "onnx:all-MiniLM-L6-v2:384"
    assert not embedder.started


def test_concurrent_calls_agree_with_sequential_ones() -> None:
    async def go() -> tuple[list[np.ndarray], list[np.ndarray]]:
        async with OnnxMiniLMEmbedder() as embedder:
            sequential = [await embedder.embed([s]) for s in SENTENCES]
            concurrent: list[np.ndarray] = [np.empty(0)] * len(SENTENCES)

            async def one(index: int) -> None:
                concurrent[index] = await embedder.embed([SENTENCES[index]])

            async with anyio.create_task_group() as group:
                for index in range(len(SENTENCES)):
                    group.start_soon(one, index)
        return sequential, concurrent

    sequential, concurrent = anyio.run(go)
    for a, b in zip(sequential, concurrent, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_short_calls_run_on_the_one_thread_session_and_agree_with_batches() -> None:
    from simone.providers.embeddings._onnx import SHORT_CALL_TEXTS

    async def go() -> tuple[np.ndarray, np.ndarray, bool, bool]:
        async with (
            OnnxMiniLMEmbedder(intra_op_threads=2) as two,
            OnnxMiniLMEmbedder(intra_op_threads=1) as one,
        ):
            assert SHORT_CALL_TEXTS < len(SENTENCES)
            short = np.vstack([await two.embed([s], kind="query") for s in SENTENCES])
            # queries alone never open the two-thread session (a search process does not pay for it)
            assert two.started and two._session is None
            batch = await two.embed(SENTENCES)  # more than SHORT_CALL_TEXTS: the two-thread session
            assert two._session is not None
            return short, batch, two._short is not None, one._short is None

    short, batch, has_short, single_has_none = anyio.run(go)
    assert has_short and single_has_none
    np.testing.assert_allclose(short, batch, atol=1e-5)


def test_the_first_embed_starts_the_session_lazily() -> None:
    async def go() -> bool:
        embedder = OnnxMiniLMEmbedder()
        assert not embedder.started
        await embedder.embed(["hello"])
        started = embedder.started
        await embedder.close()
        return started and not embedder.started

    assert anyio.run(go)


def test_empty_input_needs_no_session() -> None:
    async def go() -> tuple[tuple[int, ...], bool]:
        embedder = OnnxMiniLMEmbedder()
        vectors = await embedder.embed([])
        return vectors.shape, embedder.started

    assert anyio.run(go) == ((0, 384), False)


def test_embed_sync_before_start_is_a_typed_error() -> None:
    with pytest.raises(ProviderUnavailable, match="not started"):
        OnnxMiniLMEmbedder().embed_sync(["x"])


def test_a_missing_model_file_is_not_configured(tmp_path: Path) -> None:
    with pytest.raises(ProviderNotConfigured, match="does not exist"):
        anyio.run(lambda: _embed(["x"], model_path=tmp_path / "nope.onnx"))


def test_a_corrupt_model_file_is_unavailable(tmp_path: Path) -> None:
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"this is not a protobuf" * 100)
    with pytest.raises(ProviderUnavailable, match="cannot load") as caught:
        anyio.run(lambda: _embed(["x"], model_path=bad))
    assert caught.value.retryable is False


@pytest.mark.parametrize(
    "kwargs", [{"intra_op_threads": 0}, {"batch_size": 0}, {"max_tokens": 4}, {"max_tokens": 1024}]
)
def test_bad_arguments_are_refused(kwargs: dict[str, int]) -> None:
    from simone.runtime import ConfigError

    with pytest.raises(ConfigError):
        OnnxMiniLMEmbedder(**kwargs)  # type: ignore[arg-type]
