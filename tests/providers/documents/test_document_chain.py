"""The chain whose first embedder is a loopback OpenAI-compatible server, then the bundled ONNX model.

The collection is created in the server's space; when the server fails, queries go lexical-only with
a recorded failure and are never embedded by the ONNX model (another space); new rows wait as
pending and are embedded when the server returns. Misbehaving servers (HTML, NaN, wrong count or
dimension) become visible failures, never crashes or bad vectors.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from simone.providers.documents import DocumentIndex, DocumentIndexProvider, DocumentStore
from simone.providers.embeddings import OnnxMiniLMEmbedder, OpenAIEmbedder
from simone.runtime import EmbeddingChain, IndexSettings, Router, SearchMode, Status, TrustedContext

if TYPE_CHECKING:
    EmbeddingServer = Any

CONTEXT = TrustedContext(actor="tester")


class Watched:
    """The ONNX embedder, counting every call (it must never be called for the server's space)."""

    def __init__(self, inner: OnnxMiniLMEmbedder) -> None:
        self.inner = inner
        self.calls = 0

    @property
    def space(self) -> Any:
        return self.inner.space

    @property
    def tokenizer(self) -> Any:
        return self.inner.tokenizer

    async def embed(self, texts: Any, *, kind: Any = "document") -> Any:
        self.calls += 1
        return await self.inner.embed(texts, kind=kind)


def _server_embedder(server: EmbeddingServer) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        "hash-embed", base_url=server.base_url, dimensions=server.dimension, max_retries=0, timeout_s=5.0
    )


async def _hybrid(index: DocumentIndex, query: str) -> Any:
    router = Router([DocumentIndexProvider(index)])
    return await router.retrieve(router.request(query, mode=SearchMode.HYBRID), CONTEXT)


def test_server_outage_goes_lexical_never_onnx_and_pending_rows_fill_on_return(
    tmp_path: Path, tree: Path, embedding_server: EmbeddingServer, onnx: OnnxMiniLMEmbedder
) -> None:
    watched = Watched(onnx)

    async def go() -> None:
        async with _server_embedder(embedding_server) as remote:
            chain = EmbeddingChain([remote, watched], window=20, min_samples=3)
            index = DocumentIndex(DocumentStore(tmp_path / "index"), chain, settings=IndexSettings())
            async with index:
                first = await index.index_paths([tree])
                assert first.space == "openai:hash-embed:32"
                assert first.pending == 0 and first.embedded == first.chunks
                healthy = await _hybrid(index, "installation requirements")
                assert healthy.status is Status.COMPLETE
                assert healthy.evidence[0].metadata["method"] == "hybrid"

                embedding_server.mode = "down"
                for _ in range(3):
                    result = await _hybrid(index, "installation requirements")
                    assert result.status is Status.PARTIAL
                    assert result.evidence, "lexical carries on"
                    assert {e.metadata["method"] for e in result.evidence} == {"lexical"}
                    (failure,) = result.failures
                    assert failure.leg == "semantic" and failure.kind == "unavailable"
                    assert "503" in failure.message or "unavailable" in failure.message.lower()
                    assert any("semantic leg unavailable" in note for note in result.limitations)
                assert chain.health().degraded
                assert watched.calls == 0, "a fallback must never switch to the ONNX space"

                (tree / "new.md").write_text("# Release notes\n\nVersion two adds a zeppelin mode.\n")
                during = await index.index_paths([tree])
                assert during.files_indexed == 1 and during.pending == during.chunks >= 1
                assert during.failures and "openai:hash-embed:32" in during.failures[0]
                found = await _hybrid(index, "zeppelin mode")
                assert Path(found.evidence[0].metadata["path"]).name == "new.md"
                assert watched.calls == 0

                embedding_server.mode = "ok"
                before = embedding_server.texts
                filled = await index.embed_pending()
                assert filled.pending_filled == during.pending and filled.pending_left == 0
                assert embedding_server.texts - before == during.pending
                after = await _hybrid(index, "zeppelin mode")
                assert after.status is Status.COMPLETE
                assert after.evidence[0].metadata["method"] == "hybrid"
                assert watched.calls == 0

    anyio.run(go)


@pytest.mark.parametrize("mode", ["html", "nan", "count", "dimension"])
def test_a_misbehaving_server_is_a_visible_failure(
    tmp_path: Path, tree: Path, embedding_server: EmbeddingServer, mode: str
) -> None:
    async def go() -> None:
        async with _server_embedder(embedding_server) as remote:
            index = DocumentIndex(DocumentStore(tmp_path / "index"), EmbeddingChain([remote]))
            async with index:
                await index.index_paths([tree / "faq.md"])
                embedding_server.mode = mode
                report = await index.index_paths([tree])
                assert report.pending == report.chunks > 0
                assert report.failures and "invalid_response" in report.failures[0]
                rows = await index.collection.rows("vector IS NOT NULL", ["path"])  # type: ignore[union-attr]
                assert {Path(p).name for p in rows["path"].to_pylist()} == {"faq.md"}
                router = Router([DocumentIndexProvider(index)])
                result = await router.retrieve(router.request("quarterly report"), CONTEXT)
                assert result.status is Status.PARTIAL
                assert [f.kind for f in result.failures] == ["invalid_response"]
                assert Path(result.evidence[0].metadata["path"]).name == "notes.txt"

    anyio.run(go)
