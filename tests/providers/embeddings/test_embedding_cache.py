"""The persistent embedding cache: (space, digest) keys, hits across collections and restarts."""

from __future__ import annotations

import logging
import os
import sqlite3
from pathlib import Path

import anyio
import numpy as np
import pytest
from simone.providers.embeddings import EmbeddingCache, OnnxMiniLMEmbedder, text_digest
from simone.providers.testing import HashEmbedder
from simone.runtime import (
    ConfigError,
    EmbeddingChain,
    EmbeddingSettings,
    ProviderUnavailable,
    Router,
    SearchMode,
    Settings,
    TrustedContext,
)


class Counting:
    """Wraps a HashEmbedder and remembers which texts it was asked for."""

    def __init__(self, embedder: HashEmbedder) -> None:
        self.embedder = embedder
        self.asked: list[list[str]] = []

    async def __call__(self, texts: list[str]) -> np.ndarray:
        self.asked.append(list(texts))
        return await self.embedder.embed(texts)


def test_hits_and_misses_across_collections_and_restarts(tmp_path: Path) -> None:
    embedder = HashEmbedder(16)
    space = embedder.space
    counting = Counting(embedder)
    collection_a = ["alpha text", "beta text", "gamma text"]
    collection_b = ["beta text", "delta text", "alpha text", "delta text"]

    async def go() -> None:
        async with EmbeddingCache.in_data_dir(tmp_path) as cache:
            first = await cache.embed(collection_a, space=space, embed=counting)
            assert (first.hits, first.misses) == (0, 3)
            np.testing.assert_allclose(first.vectors, embedder.vectors(collection_a))

            second = await cache.embed(collection_b, space=space, embed=counting)
            assert (second.hits, second.misses) == (2, 2)
            assert counting.asked[-1] == ["delta text"], "only the new text, once, is embedded"
            np.testing.assert_allclose(second.vectors, embedder.vectors(collection_b), atol=1e-7)
            assert await cache.count(space) == 4

        async with EmbeddingCache.in_data_dir(tmp_path) as reopened:
            again = await reopened.embed(collection_a + collection_b, space=space, embed=counting)
            assert (again.hits, again.misses) == (7, 0)
            np.testing.assert_allclose(
                again.vectors, embedder.vectors(collection_a + collection_b), atol=1e-7
            )

    anyio.run(go)
    assert len(counting.asked) == 2


def test_spaces_never_share_vectors(tmp_path: Path) -> None:
    small, other = HashEmbedder(16, model="a"), HashEmbedder(16, model="b")

    async def go() -> None:
        async with EmbeddingCache(tmp_path / "cache.sqlite3") as cache:
            await cache.embed(["same text"], space=small.space, embed=Counting(small))
            result = await cache.embed(["same text"], space=other.space, embed=Counting(other))
            assert (result.hits, result.misses) == (0, 1)
            np.testing.assert_allclose(result.vectors, other.vectors(["same text"]))
            raw = small.space.model_copy(update={"normalized": False})
            assert await cache.get_many(raw, [text_digest("same text")]) == {}
            assert await cache.drop_space(small.space) == 1
            assert await cache.count(small.space) == 0
            assert await cache.count() == 1

    anyio.run(go)


def test_caller_digests_are_used_as_keys(tmp_path: Path) -> None:
    embedder = HashEmbedder(8)

    async def go() -> None:
        async with EmbeddingCache(tmp_path / "c.sqlite3") as cache:
            await cache.embed(["text"], space=embedder.space, embed=Counting(embedder), digests=["d1"])
            found = await cache.get_many(embedder.space, ["d1", text_digest("text")])
            assert list(found) == ["d1"]
            with pytest.raises(ValueError, match="differ in length"):
                await cache.embed(["a", "b"], space=embedder.space, embed=Counting(embedder), digests=["x"])

    anyio.run(go)


def test_a_failed_embedding_stores_nothing(tmp_path: Path) -> None:
    embedder = HashEmbedder(8)
    embedder.error = ProviderUnavailable("server down")

    async def go() -> None:
        async with EmbeddingCache(tmp_path / "c.sqlite3") as cache:
            with pytest.raises(ProviderUnavailable):
                await cache.embed(["a"], space=embedder.space, embed=Counting(embedder))
            assert await cache.count() == 0

    anyio.run(go)


def test_a_row_of_the_wrong_size_is_a_miss_and_gets_replaced(tmp_path: Path) -> None:
    embedder = HashEmbedder(8)
    path = tmp_path / "c.sqlite3"

    async def fill() -> None:
        async with EmbeddingCache(path) as cache:
            await cache.embed(["a"], space=embedder.space, embed=Counting(embedder))

    anyio.run(fill)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE vectors SET vector = ?", (b"\x00" * 12,))

    async def reread() -> None:
        async with EmbeddingCache(path) as cache:
            result = await cache.embed(["a"], space=embedder.space, embed=Counting(embedder))
            assert (result.hits, result.misses) == (0, 1)
            again = await cache.embed(["a"], space=embedder.space, embed=Counting(embedder))
            assert again.hits == 1

    anyio.run(reread)


def test_put_refuses_bad_vectors(tmp_path: Path) -> None:
    space = HashEmbedder(4).space

    async def go() -> None:
        async with EmbeddingCache(tmp_path / "c.sqlite3") as cache:
            with pytest.raises(ValueError, match="expected 1 vectors"):
                await cache.put_many(space, ["d"], np.ones((1, 5), dtype=np.float32))
            with pytest.raises(ValueError, match="non-finite"):
                await cache.put_many(space, ["d"], np.full((1, 4), np.nan, dtype=np.float32))

    anyio.run(go)


def test_using_a_closed_cache_is_a_typed_error(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite3")
    with pytest.raises(ProviderUnavailable, match="not open"):
        anyio.run(cache.count)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"definitely not sqlite" * 200)
    with pytest.raises(ConfigError, match="delete it"):
        anyio.run(EmbeddingCache(path).open)


def test_with_the_real_onnx_model_through_the_chain(tmp_path: Path) -> None:
    texts = ["The mitochondria is the powerhouse of the cell.", "Vaccines train the immune system."]

    async def go() -> None:
        onnx = OnnxMiniLMEmbedder()
        async with EmbeddingChain([onnx]) as chain, EmbeddingCache.in_data_dir(tmp_path) as cache:
            space = await chain.select_space()
            counting: list[int] = []

            async def embed(batch: list[str]) -> np.ndarray:
                counting.append(len(batch))
                return await chain.embed(batch, space=space)

            first = await cache.embed(texts, space=space, embed=embed)
            second = await cache.embed(texts[::-1], space=space, embed=embed)
            assert counting == [2]
            assert (second.hits, second.misses) == (2, 0)
            np.testing.assert_array_equal(second.vectors, first.vectors[::-1])

    anyio.run(go)


# -- a cache that cannot be written turns itself off; it never breaks a search ------------------------


def _unwritable_cache_path(tmp_path: Path, how: str) -> Path:
    """A cache path that cannot be written, made in a way that binds as root too (unless ``chmod``)."""
    if how == "under-a-file":
        blocker = tmp_path / "data"
        blocker.write_text("a file where the data directory should be")
        return blocker / "embedding-cache.sqlite3"
    if how == "directory-in-the-way":
        path = tmp_path / "embedding-cache.sqlite3"
        path.mkdir()
        return path
    data = tmp_path / "read-only"
    data.mkdir()
    data.chmod(0o555)
    probe = data / "probe"
    try:
        probe.touch()
    except OSError:
        return data / "embedding-cache.sqlite3"
    probe.unlink()
    data.chmod(0o755)
    pytest.skip(f"chmod 0o555 does not bind for uid {os.getuid()} (root); the other variants cover it")


@pytest.mark.parametrize("how", ["under-a-file", "directory-in-the-way", "chmod"])
def test_a_cache_that_cannot_be_written_turns_itself_off(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A read-only data dir used to raise ConfigError at start-up, taking lexical search down with it."""
    path = _unwritable_cache_path(tmp_path, how)
    embedder = HashEmbedder(16)
    counting = Counting(embedder)

    async def go() -> None:
        async with EmbeddingCache(path) as cache:
            assert cache.disabled is not None and str(path) in cache.disabled
            result = await cache.embed(["alpha", "beta"], space=embedder.space, embed=counting)
            assert (result.hits, result.misses) == (0, 2)
            np.testing.assert_allclose(result.vectors, embedder.vectors(["alpha", "beta"]))
            assert await cache.count() == 0 and await cache.drop_space(embedder.space) == 0

    with caplog.at_level(logging.WARNING):
        anyio.run(go)
    assert counting.asked == [["alpha", "beta"]]
    warnings = [r for r in caplog.records if "embedding cache is off" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING


def test_a_cache_that_stops_being_writable_keeps_the_vectors_and_turns_off(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = HashEmbedder(16)

    async def go() -> None:
        async with EmbeddingCache.in_data_dir(tmp_path) as cache:
            await cache.embed(["alpha"], space=embedder.space, embed=embedder.embed)
            assert cache._db is not None
            cache._db.execute("PRAGMA query_only = ON")  # every write now fails, as on a read-only disk
            result = await cache.embed(["alpha", "gamma"], space=embedder.space, embed=embedder.embed)
            assert (result.hits, result.misses) == (1, 1)
            np.testing.assert_allclose(result.vectors, embedder.vectors(["alpha", "gamma"]), atol=1e-7)
            assert cache.disabled is not None and "cannot write" in cache.disabled
            again = await cache.embed(["alpha"], space=embedder.space, embed=embedder.embed)
            assert again.misses == 1, "off for the rest of the run"

    with caplog.at_level(logging.WARNING):
        anyio.run(go)
    assert any("embedding cache is off" in r.getMessage() for r in caplog.records)


def test_lexical_search_and_doctor_work_when_the_cache_cannot_be_written(tmp_path: Path) -> None:
    from simone.agents.cli._doctor import gather
    from simone.providers.documents import DocumentIndex, DocumentIndexProvider

    data = tmp_path / "data"
    data.mkdir()
    (data / "embedding-cache.sqlite3").mkdir()  # the cache file cannot be created (binds as root too)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "standup.md").write_text("# Standup\n\nThe standup is at 9:15 every day in room Kepler.\n")
    settings = Settings(data_dir=data, embeddings=EmbeddingSettings(onnx_variant="reference"))

    async def go() -> None:
        chain = EmbeddingChain([HashEmbedder(32)])
        async with DocumentIndex.open(settings, chain=chain) as index:
            report = await index.index_paths([docs])
            assert report.chunks == 1 and report.failures == []
            request = Router([]).request("Kepler standup", mode=SearchMode.LEXICAL)
            response = await DocumentIndexProvider(index).retrieve(request, TrustedContext(actor="tester"))
            assert response.evidence and "Kepler" in response.evidence[0].content
        doctor = await gather(settings)
        assert doctor["embedding_cache"]["vectors"] == 0

    anyio.run(go)
