"""The embedding chain: spaces are pinned, fallback stays inside a space, the health window's math."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar

import anyio
import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings, strategies as st
from simone.runtime import (
    ChainHealth,
    EmbeddingChain,
    EmbeddingChainExhausted,
    EmbeddingKind,
    EmbeddingSpace,
    InvalidResponse,
    ProviderError,
    ProviderNotConfigured,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)
from simone.runtime._chain import is_degraded
from simone.runtime.testing import HashEmbedder

T = TypeVar("T")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


class ReturnsGarbage:
    """An embedder of a given space whose answers are broken in a chosen way."""

    def __init__(self, space: EmbeddingSpace, what: str) -> None:
        self._space = space
        self.what = what
        self.calls = 0

    @property
    def space(self) -> EmbeddingSpace:
        return self._space

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        self.calls += 1
        good = np.ones((len(texts), self._space.dimension), dtype=np.float32)
        if self.what == "nan":
            good[0, 0] = np.nan
        elif self.what == "zero":
            good[0] = 0.0
        elif self.what == "shape":
            good = good[:, :-1]
        elif self.what == "count":
            good = good[:-1]
        elif self.what == "list":
            return good.tolist()  # type: ignore[return-value]
        elif self.what == "crash":
            raise RuntimeError("boom")
        return good


def test_select_space_takes_the_first_embedder_once_it_answers() -> None:
    cloud = HashEmbedder(16, provider="openai", model="cloud")
    local = HashEmbedder(8, provider="onnx", model="local")
    chain = EmbeddingChain([cloud, local])

    assert run(chain.select_space) == cloud.space
    assert cloud.calls == 1 and local.calls == 0


def test_a_failing_first_embedder_is_never_replaced_by_a_fallback_space_silently() -> None:
    """A new collection used to be pinned to the next embedder's space, with nothing in the report."""
    cloud = HashEmbedder(16, provider="openai", model="cloud")
    cloud.error = ProviderUnavailable("cloud down")
    local = HashEmbedder(8, provider="onnx", model="local")
    other = HashEmbedder(4, provider="ollama", model="other")
    chain = EmbeddingChain([cloud, local, other])

    with pytest.raises(EmbeddingChainExhausted) as caught:
        run(chain.select_space)

    error = caught.value
    assert "the configured embedder openai:cloud:16 failed (unavailable: cloud down)" in error.message
    assert "not created in onnx:local:8" in error.message, "names the space a fallback would have pinned"
    assert [type(c) for c in error.causes] == [ProviderUnavailable] and error.retryable
    assert local.calls == 0 and other.calls == 0, "no other space is even probed"
    last_error = chain.health().last_error
    assert last_error is not None and "cloud down" in last_error

    cloud.error = None
    assert run(chain.select_space) == cloud.space


def test_select_space_carries_the_first_embedders_retry_hint() -> None:
    first = HashEmbedder(16, model="a")
    first.error = RateLimited("a said 429", retry_after_s=3.0)
    second = HashEmbedder(8, model="b")
    chain = EmbeddingChain([first, second])

    with pytest.raises(EmbeddingChainExhausted) as caught:
        run(chain.select_space)

    error = caught.value
    assert isinstance(error, ProviderUnavailable)
    assert "a said 429" in error.message
    assert [type(c) for c in error.causes] == [RateLimited]
    assert error.retryable and error.retry_after_s == 3.0


def test_select_space_with_a_single_failing_embedder_says_to_try_again() -> None:
    only = HashEmbedder(16, model="a")
    only.error = ProviderTimeout("a timed out")
    with pytest.raises(EmbeddingChainExhausted, match="a timed out.*try again when it answers"):
        run(EmbeddingChain([only]).select_space)


def test_an_empty_chain_is_not_configured() -> None:
    chain = EmbeddingChain([])
    with pytest.raises(ProviderNotConfigured):
        run(chain.select_space)
    with pytest.raises(ProviderNotConfigured):
        run(lambda: chain.embed(["x"], space=HashEmbedder(4).space))


def test_a_pinned_space_never_falls_back_to_another_space() -> None:
    pinned = HashEmbedder(16, provider="openai", model="cloud")
    other = HashEmbedder(16, provider="onnx", model="local")  # same dimension, other model
    chain = EmbeddingChain([pinned, other])
    space = run(chain.select_space)
    assert space == pinned.space

    pinned.error = ProviderUnavailable("cloud down")
    with pytest.raises(ProviderUnavailable, match="cloud down"):
        run(lambda: chain.embed(["a query"], space=space, kind="query"))

    assert other.calls == 0, "another space's embedder must never be used"
    last_error = chain.health().last_error
    assert last_error is not None and "cloud down" in last_error

    pinned.error = None
    vectors = run(lambda: chain.embed(["a query"], space=space))
    assert vectors.shape == (1, 16)
    np.testing.assert_allclose(vectors, pinned.vectors(["a query"]))


def test_fallback_within_the_same_space() -> None:
    primary = HashEmbedder(8, provider="openai", model="m")
    replica = HashEmbedder(8, provider="openai", model="m")
    stranger = HashEmbedder(8, provider="onnx", model="m")
    chain = EmbeddingChain([primary, stranger, replica])
    assert chain.embedders_for(primary.space) == [primary, replica]

    primary.error = ProviderTimeout("primary slow")
    vectors = run(lambda: chain.embed(["a", "b"], space=primary.space))

    assert vectors.shape == (2, 8)
    assert replica.texts_embedded == 2 and stranger.calls == 0


def test_every_embedder_of_the_space_failing_raises_with_all_causes() -> None:
    primary = HashEmbedder(8, model="m")
    replica = HashEmbedder(8, model="m")
    primary.error = ProviderTimeout("primary slow")
    replica.error = InvalidResponse("replica sent HTML")
    chain = EmbeddingChain([primary, replica])

    with pytest.raises(EmbeddingChainExhausted) as caught:
        run(lambda: chain.embed(["a"], space=primary.space))

    assert "primary slow" in caught.value.message and "replica sent HTML" in caught.value.message
    assert caught.value.retryable  # the timeout is worth retrying
    assert caught.value.provider == primary.space.key


def test_a_space_without_embedder_is_not_configured() -> None:
    chain = EmbeddingChain([HashEmbedder(8)])
    gone = EmbeddingSpace(provider="openai", model="retired", dimension=8)
    with pytest.raises(ProviderNotConfigured, match="openai:retired:8"):
        run(lambda: chain.embed(["a"], space=gone))


def test_normalisation_is_part_of_the_space() -> None:
    embedder = HashEmbedder(8)
    raw = embedder.space.model_copy(update={"normalized": False})
    assert EmbeddingChain([embedder]).embedders_for(raw) == []


@pytest.mark.parametrize("what", ["nan", "zero", "shape", "count", "list", "crash"])
def test_a_broken_answer_is_refused_and_the_next_same_space_embedder_used(what: str) -> None:
    good = HashEmbedder(8, model="m")
    broken = ReturnsGarbage(good.space, what)
    chain = EmbeddingChain([broken, good])

    vectors = run(lambda: chain.embed(["a", "b"], space=good.space))

    assert broken.calls == 1
    np.testing.assert_allclose(vectors, good.vectors(["a", "b"]))
    assert chain.health().last_error is not None


@pytest.mark.parametrize("what", ["nan", "zero", "shape"])
def test_a_broken_answer_alone_is_an_invalid_response_never_a_vector(what: str) -> None:
    broken = ReturnsGarbage(HashEmbedder(8).space, what)
    chain = EmbeddingChain([broken])
    with pytest.raises(InvalidResponse):
        run(lambda: chain.embed(["a", "b"], space=broken.space))


def test_an_unexpected_exception_becomes_a_provider_error() -> None:
    broken = ReturnsGarbage(HashEmbedder(8).space, "crash")
    chain = EmbeddingChain([broken])
    with pytest.raises(ProviderError, match="RuntimeError: boom") as caught:
        run(lambda: chain.embed(["a"], space=broken.space))
    assert caught.value.kind == "error"


def test_empty_input_embeds_nothing() -> None:
    embedder = HashEmbedder(8)
    chain = EmbeddingChain([embedder])
    vectors = run(lambda: chain.embed([], space=embedder.space))
    assert vectors.shape == (0, 8) and vectors.dtype == np.float32
    assert embedder.calls == 0


def test_a_rate_limited_embedder_rests_until_its_retry_after() -> None:
    now = [100.0]
    embedder = HashEmbedder(8)
    embedder.error = RateLimited("slow down", retry_after_s=30.0)
    chain = EmbeddingChain([embedder], clock=lambda: now[0])
    with pytest.raises(RateLimited):
        run(lambda: chain.embed(["a"], space=embedder.space))
    assert embedder.calls == 1

    embedder.error = None
    now[0] += 10
    with pytest.raises(RateLimited, match="still waiting 20.0 s") as caught:
        run(lambda: chain.embed(["a"], space=embedder.space))
    assert embedder.calls == 1, "not called while resting"
    assert caught.value.retry_after_s == pytest.approx(20.0)

    now[0] += 21
    assert run(lambda: chain.embed(["a"], space=embedder.space)).shape == (1, 8)
    assert embedder.calls == 2


def test_cancellation_is_not_swallowed() -> None:
    class Hangs(HashEmbedder):
        async def embed(
            self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
        ) -> npt.NDArray[np.float32]:
            await anyio.sleep(10)
            raise AssertionError("unreachable")

    hangs = Hangs(8)
    chain = EmbeddingChain([hangs, HashEmbedder(8)])

    async def go() -> bool:
        with anyio.move_on_after(0.05) as scope:
            await chain.embed(["a"], space=hangs.space)
        return scope.cancelled_caught

    assert run(go) is True
    assert chain.health().last_error is None


def test_the_chain_starts_and_closes_embedders_that_are_context_managers() -> None:
    class Managed(HashEmbedder):
        def __init__(self) -> None:
            super().__init__(8)
            self.events: list[str] = []

        async def __aenter__(self) -> Self:
            self.events.append("start")
            return self

        async def __aexit__(
            self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
        ) -> None:
            self.events.append("close")

    managed = Managed()
    plain = HashEmbedder(4)

    async def go() -> None:
        async with EmbeddingChain([managed, plain]) as chain:
            assert managed.events == ["start"]
            await chain.embed(["x"], space=managed.space)
        assert managed.events == ["start", "close"]

    run(go)


def test_an_embedder_that_cannot_start_does_not_stop_the_others() -> None:
    class WontStart(HashEmbedder):
        async def __aenter__(self) -> Self:
            raise ProviderUnavailable("model file damaged")

        async def __aexit__(self, *exc_info: object) -> None:
            raise AssertionError("never entered, never exited")

    broken, working = WontStart(8, model="broken"), HashEmbedder(8, model="working")
    broken.error = ProviderUnavailable("model file damaged")  # its calls fail too, like a real one

    async def go() -> None:
        async with EmbeddingChain([broken, working]) as chain:
            last_error = chain.health().last_error
            assert last_error is not None and "model file damaged" in last_error
            assert (await chain.embed(["x"], space=working.space)).shape == (1, 8)
            # but a new collection is not silently given the working embedder's space
            with pytest.raises(EmbeddingChainExhausted, match="hash:broken:8 failed"):
                await chain.select_space()

    run(go)


def test_health_starts_clean() -> None:
    health = EmbeddingChain([HashEmbedder(8)]).health()
    assert health == ChainHealth(degraded=False, samples=0, fallbacks=0, window=100, min_samples=20)
    assert health.fallback_ratio == 0.0


def test_degraded_needs_min_samples_and_more_than_half() -> None:
    chain = EmbeddingChain([HashEmbedder(8)])
    for _ in range(19):
        chain.record_search(fell_back=True)
    assert not chain.health().degraded, "19 samples are too few"
    chain.record_search(fell_back=True)
    assert chain.health().degraded

    half = EmbeddingChain([HashEmbedder(8)])
    for index in range(20):
        half.record_search(fell_back=index % 2 == 0)
    health = half.health()
    assert (health.samples, health.fallbacks, health.degraded) == (20, 10, False), "exactly half is not more"
    half.record_search(fell_back=True)
    assert half.health().degraded  # 11 of 21


def test_the_window_rolls() -> None:
    chain = EmbeddingChain([HashEmbedder(8)], window=30, min_samples=20)
    for _ in range(30):
        chain.record_search(fell_back=True)
    assert chain.health().degraded
    for _ in range(15):
        chain.record_search(fell_back=False)
    health = chain.health()
    assert (health.samples, health.fallbacks) == (30, 15)
    assert not health.degraded
    assert health.fallback_ratio == 0.5


def test_bad_window_arguments_are_refused() -> None:
    with pytest.raises(ValueError):
        EmbeddingChain([], window=0)
    with pytest.raises(ValueError):
        EmbeddingChain([], window=10, min_samples=11)


@settings(max_examples=200, deadline=None)
@given(
    outcomes=st.lists(st.booleans(), max_size=250),
    window=st.integers(min_value=1, max_value=120),
    min_samples=st.integers(min_value=1, max_value=120),
)
def test_health_matches_a_plain_recount(outcomes: list[bool], window: int, min_samples: int) -> None:
    min_samples = min(min_samples, window)
    chain = EmbeddingChain([HashEmbedder(4)], window=window, min_samples=min_samples)
    for fell_back in outcomes:
        chain.record_search(fell_back=fell_back)
    recent = outcomes[-window:] if outcomes else []
    health = chain.health()
    assert health.samples == len(recent)
    assert health.fallbacks == sum(recent)
    assert health.degraded == (len(recent) >= min_samples and 2 * sum(recent) > len(recent))
    assert health.degraded == is_degraded(len(recent), sum(recent), min_samples)


def test_the_first_index_fails_instead_of_pinning_the_collection_to_the_fallback_space(
    tmp_path: Path,
) -> None:
    """The document index used to create the collection in the next space, with ``failures: []``."""
    from simone.providers.documents import DocumentIndex, DocumentStore

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Standup\n\nThe standup is at 9:15 every day.\n")
    cloud = HashEmbedder(16, provider="openai", model="cloud")
    cloud.error = ProviderUnavailable("cloud down")
    local = HashEmbedder(8, provider="onnx", model="local")

    async def go() -> None:
        chain = EmbeddingChain([cloud, local])
        async with DocumentIndex(DocumentStore(tmp_path / "index"), chain) as index:
            with pytest.raises(EmbeddingChainExhausted, match=r"openai:cloud:16 failed.*onnx:local:8"):
                await index.index_paths([docs])
            assert index.space is None and await index.store.collection_names() == []
            assert local.calls == 0

            cloud.error = None
            report = await index.index_paths([docs])
            assert report.space == cloud.space.key and report.failures == []

    run(go)
