"""The runtime's memory provider searches by meaning too, with the document index's embedding chain."""

from __future__ import annotations

from pathlib import Path

import pytest
from simone.agents import Runtime
from simone.providers.documents import DOCUMENT_INDEX
from simone.providers.memory import MEMORY_STORE, NoteCreate
from simone.runtime import EMBEDDING_CHAIN, EmbeddingSettings, Settings, TrustedContext

pytestmark = pytest.mark.anyio


async def test_memory_is_hybrid_on_the_documents_chain(isolated_env: Path) -> None:
    settings = Settings(data_dir=isolated_env / "data", embeddings=EmbeddingSettings(chain=["onnx"]))
    async with Runtime(settings, web=False) as runtime:
        store = runtime.published.require(MEMORY_STORE)
        assert runtime.published.get(DOCUMENT_INDEX) is not None
        # memory's semantic leg embeds with the chain the documents factory published
        assert runtime.published.get(EMBEDDING_CHAIN) is runtime.published.require(DOCUMENT_INDEX).chain
        me = TrustedContext(actor="me")
        garden = await store.create(me, NoteCreate(title="Garden", body="water the roses daily"))
        result = await runtime.retrieve(me, "when do I water the flowers", providers=["memory"])
        assert result.status == "complete" and result.evidence
        top = result.evidence[0]
        assert top.metadata["record_id"] == garden.id and top.metadata["method"] == "hybrid"
        assert str(top.metadata["space"]).startswith("onnx:all-MiniLM-L6-v2")


async def test_memory_without_documents_stays_lexical(isolated_env: Path) -> None:
    async with Runtime(Settings(data_dir=isolated_env / "data"), documents=False, web=False) as runtime:
        store = runtime.published.require(MEMORY_STORE)
        assert runtime.published.get(EMBEDDING_CHAIN) is None
        me = TrustedContext(actor="me")
        await store.create(me, NoteCreate(title="Garden", body="water the roses daily"))
        result = await runtime.retrieve(me, "water roses", providers=["memory"])
        assert result.evidence and result.evidence[0].metadata["method"] == "lexical"
