"""The optional semantic leg of the memory provider: pinned space, lazy embedding, RRF, visible failure."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from simone.providers.memory import (
    ListQuery,
    MemoryProvider,
    NoteCreate,
    NoteUpdate,
    SQLiteMemoryStore,
    TodoCreate,
)
from simone.providers.testing import HashEmbedder
from simone.runtime import (
    EmbeddingChain,
    MemorySettings,
    ProviderUnavailable,
    RetrievalRequest,
    SearchMode,
    TrustedContext,
)

pytestmark = pytest.mark.anyio


async def test_hybrid_fuses_lexical_and_semantic(
    store: SQLiteMemoryStore, alice: TrustedContext, bob: TrustedContext
) -> None:
    embedder = HashEmbedder(128)
    chain = EmbeddingChain([embedder])
    garden = await store.create(alice, NoteCreate(title="Garden", body="water the roses every morning"))
    await store.create(alice, NoteCreate(title="Taxes", body="file the return before april"))
    await store.create(bob, NoteCreate(title="Bob's roses", body="water the roses every morning"))
    provider = MemoryProvider(store, chain=chain)

    response = await provider.retrieve(RetrievalRequest.create("roses morning"), alice)
    assert response.details["mode"] == "hybrid" and response.degraded == []
    assert response.details["embedded_now"] == 2, "alice's two records were embedded, not bob's"
    assert response.details["embedding_space"] == embedder.space.key
    first = response.evidence[0]
    assert first.metadata["record_id"] == garden.id and first.metadata["method"] == "hybrid"
    assert set(first.metadata["leg_ranks"]) == {"lexical", "semantic"}
    assert first.metadata["leg_scores"]["semantic"] > 0.25 and first.metadata["leg_scores"]["lexical"] > 0
    assert all("Bob" not in e.title for e in response.evidence)
    assert await store.vector_space() == embedder.space

    again = await provider.retrieve(RetrievalRequest.create("roses morning"), alice)
    assert again.details["embedded_now"] == 0, "vectors are kept"
    await store.update(alice, NoteUpdate(id=garden.id, body="prune the roses in winter"))
    changed = await provider.retrieve(
        RetrievalRequest.create("prune winter", mode=SearchMode.SEMANTIC), alice
    )
    assert changed.details["embedded_now"] == 1, "an edited record is embedded again"
    assert changed.evidence[0].metadata["record_id"] == garden.id
    assert changed.evidence[0].metadata["method"] == "semantic"


async def test_semantic_floor_means_not_everything(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    await store.create(alice, NoteCreate(title="Garden", body="water the roses"))
    provider = MemoryProvider(store, chain=EmbeddingChain([HashEmbedder(128)]))
    unrelated = await provider.retrieve(
        RetrievalRequest.create("quantum chromodynamics", mode=SearchMode.SEMANTIC), alice
    )
    assert unrelated.evidence == []


async def test_embedder_outage_degrades_to_lexical(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    embedder = HashEmbedder(64)
    chain = EmbeddingChain([embedder])
    todo = await store.create(alice, TodoCreate(title="Renew passport"))
    provider = MemoryProvider(store, chain=chain)
    await provider.retrieve(RetrievalRequest.create("passport"), alice)  # pins the space
    embedder.error = ProviderUnavailable("embedding server down", provider="hash")
    response = await provider.retrieve(RetrievalRequest.create("passport", mode=SearchMode.SEMANTIC), alice)
    assert [e.metadata["record_id"] for e in response.evidence] == [todo.id]
    assert response.evidence[0].metadata["method"] == "lexical"
    assert response.degraded and "semantic leg unavailable" in response.degraded[0]
    assert response.leg_failures[0].leg == "semantic" and response.leg_failures[0].kind == "unavailable"
    assert chain.health().fallbacks == 1


async def test_space_is_pinned_never_switched(
    make_any_store: Callable[..., Any], alice: TrustedContext
) -> None:
    async with make_any_store() as store:
        await store.create(alice, NoteCreate(title="Garden", body="water the roses"))
        first = HashEmbedder(64, model="first")
        await MemoryProvider(store, chain=EmbeddingChain([first])).retrieve(
            RetrievalRequest.create("roses"), alice
        )
        other = MemoryProvider(store, chain=EmbeddingChain([HashEmbedder(32, model="second")]))
        response = await other.retrieve(RetrievalRequest.create("roses"), alice)
        assert await store.vector_space() == first.space
        assert response.degraded and response.leg_failures[0].kind == "not_configured"
        assert response.evidence and response.evidence[0].metadata["method"] == "lexical"
        assert len(await store.list_records(alice, ListQuery())) == 1


async def test_embedding_budget_per_request(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    for index in range(7):
        await store.create(alice, NoteCreate(title=f"garden note {index}", body="roses"))
    provider = MemoryProvider(
        store, chain=EmbeddingChain([HashEmbedder(64)]), max_embeddings_per_query=3, embed_batch=2
    )
    first = await provider.retrieve(RetrievalRequest.create("roses"), alice)
    assert first.details["embedded_now"] == 3 and first.details["pending_embedding"] == 4
    assert len(first.evidence) == 7, "records waiting for a vector are still found lexically"
    await provider.retrieve(RetrievalRequest.create("roses"), alice)
    third = await provider.retrieve(RetrievalRequest.create("roses"), alice)
    assert third.details["embedded_now"] == 1 and "pending_embedding" not in third.details


async def test_from_settings(store: SQLiteMemoryStore, alice: TrustedContext) -> None:
    await store.create(alice, NoteCreate(title="Garden", body="water the roses"))
    settings = MemorySettings(semantic_min_similarity=0.99, max_embeddings_per_query=0)
    provider = MemoryProvider.from_settings(store, settings, chain=EmbeddingChain([HashEmbedder(64)]))
    response = await provider.retrieve(RetrievalRequest.create("roses", mode=SearchMode.SEMANTIC), alice)
    assert response.details["embedded_now"] == 0 and response.details["pending_embedding"] == 1
    assert response.evidence == [] and "waiting for embeddings" in response.degraded[0]


class _SlowDocuments(HashEmbedder):
    """Embeds documents slowly (a big backlog on a slow model); queries at once."""

    async def embed(self, texts, *, kind="document"):  # type: ignore[no-untyped-def]
        if kind == "document":
            import anyio

            await anyio.sleep(0.1)
        return await super().embed(texts, kind=kind)


async def test_a_large_backlog_never_turns_a_search_into_a_timeout(
    store: SQLiteMemoryStore, alice: TrustedContext
) -> None:
    import anyio

    for i in range(40):
        await store.create(alice, NoteCreate(title=f"Note {i}", body=f"roses and tulips, bed {i}"))
    provider = MemoryProvider(store, chain=EmbeddingChain([_SlowDocuments(64)]), embed_batch=2)
    # 20 batches of 0.1 s would take 2 s; the request has 1 s: the backlog stops at half of it
    with anyio.fail_after(1.0):
        response = await provider.retrieve(RetrievalRequest.create("roses tulips"), alice)
    assert response.evidence, "the search answered (lexically for the records not embedded yet)"
    assert 0 < response.details["embedded_now"] < 40
    assert response.details["pending_embedding"] == 40 - response.details["embedded_now"]
    # a later request with no deadline embeds the rest
    rest = await provider.retrieve(RetrievalRequest.create("roses tulips"), alice)
    assert rest.details["embedded_now"] == 40 - response.details["embedded_now"]
