"""The local cross-encoder: a graph the test builds, the bundled tokenizer, real onnxruntime."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest
from simone.providers.rerank import OnnxCrossEncoder, locate_model
from simone.providers.testing import StaticProvider, make_evidence, write_tiny_cross_encoder
from simone.runtime import (
    ProviderNotConfigured,
    ProviderUnavailable,
    RerankOptions,
    Router,
    Status,
    TrustedContext,
)

CTX = TrustedContext(actor="alice", token_budget=10_000)
BOOSTS = {"apple": 2.0, "pear": 1.0}
DOCS = ["nothing fruity here", "a pear", "an apple and a pear", "apple pie with apple"]


def scores(path: Path, query: str = "fruit", docs: list[str] = DOCS) -> list[float | None]:
    async def go() -> list[float | None]:
        async with OnnxCrossEncoder(path, batch_size=2) as encoder:
            return await encoder.rerank(query, docs)

    return anyio.run(go)


def test_it_scores_the_document_side_of_each_pair(tmp_path: Path) -> None:
    model = write_tiny_cross_encoder(tmp_path / "tiny", BOOSTS)
    assert scores(model) == [0.0, 1.0, 3.0, 4.0]
    # the query's own words carry type id 0 and count for nothing: the pair template is the tokenizer's
    assert scores(model, query="apple apple apple") == [0.0, 1.0, 3.0, 4.0]


def test_two_logit_heads_and_graphs_without_token_types_work(tmp_path: Path) -> None:
    assert scores(write_tiny_cross_encoder(tmp_path / "two", BOOSTS, two_logits=True)) == [0.0, 1.0, 3.0, 4.0]
    plain = write_tiny_cross_encoder(tmp_path / "plain", BOOSTS, token_types=False)
    assert scores(plain, query="apple") == [2.0, 3.0, 5.0, 6.0]  # the query counts too without type ids


def test_long_documents_are_truncated_and_batches_padded(tmp_path: Path) -> None:
    model = write_tiny_cross_encoder(tmp_path / "tiny", BOOSTS)

    async def go() -> list[float | None]:
        async with OnnxCrossEncoder(model, max_tokens=16, batch_size=3) as encoder:
            return await encoder.rerank("q", ["apple " * 500, "pear", "apple"])

    long, pear, apple = anyio.run(go)
    assert long == 2.0 * 12  # 16 tokens: [CLS] q [SEP] + 12 of the document + [SEP]
    assert (pear, apple) == (1.0, 2.0)


def test_a_hugging_face_cache_folder_is_found(tmp_path: Path) -> None:
    built = write_tiny_cross_encoder(tmp_path / "built", BOOSTS)
    cache = tmp_path / "hub" / "models--org--tiny-reranker"
    snapshot = cache / "snapshots" / "abc123"
    (snapshot / "onnx").mkdir(parents=True)
    shutil.copy(built / "model.onnx", snapshot / "onnx" / "model.onnx")
    shutil.copy(built / "tokenizer.json", snapshot / "tokenizer.json")
    (cache / "refs").mkdir()
    (cache / "refs" / "main").write_text("abc123\n")
    assert locate_model(cache) == (snapshot / "onnx" / "model.onnx", snapshot / "tokenizer.json")
    assert locate_model(snapshot / "onnx" / "model.onnx")[1] == snapshot / "tokenizer.json"
    assert scores(cache) == [0.0, 1.0, 3.0, 4.0]


def test_missing_files_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ProviderNotConfigured, match="does not exist"):
        locate_model(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ProviderNotConfigured, match="model.onnx"):
        locate_model(tmp_path / "empty")
    built = write_tiny_cross_encoder(tmp_path / "built", BOOSTS)
    (built / "tokenizer.json").unlink()
    with pytest.raises(ProviderNotConfigured, match="tokenizer.json"):
        locate_model(built)


def test_a_graph_that_is_not_a_cross_encoder_is_refused(tmp_path: Path) -> None:
    from simone.providers.embeddings.minilm import TOKENIZER_FILE, packaged_model_path

    folder = tmp_path / "embedder"
    folder.mkdir()
    shutil.copy(packaged_model_path(), folder / "model.onnx")
    shutil.copy(TOKENIZER_FILE, folder / "tokenizer.json")
    # the bundled embedder has the right inputs but returns hidden states, not one logit per pair
    from simone.runtime import InvalidResponse

    with pytest.raises((InvalidResponse, ProviderUnavailable)):
        scores(folder)


def test_through_the_router_the_local_model_reorders_the_fused_candidates(tmp_path: Path) -> None:
    model = write_tiny_cross_encoder(tmp_path / "tiny", BOOSTS)
    provider = StaticProvider("docs", make_evidence("docs", DOCS))

    async def go() -> tuple[list[str], Status, list[tuple[int, int]]]:
        async with OnnxCrossEncoder(model) as encoder:
            router = Router([provider], reranker=encoder, rerank=RerankOptions(candidates=4))
            result = await router.retrieve(router.request("fruit"), CTX)
        assert result.trace.rerank is not None
        moves = [(m.before, m.after) for m in result.trace.rerank.moves]
        return [e.content for e in result.evidence], result.status, moves

    order, status, moves = anyio.run(go)
    assert order == ["apple pie with apple", "an apple and a pear", "a pear", "nothing fruity here"]
    assert status is Status.COMPLETE and moves == [(4, 1), (3, 2), (2, 3), (1, 4)]
