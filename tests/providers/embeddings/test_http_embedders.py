"""OpenAI-compatible and Ollama embedders against a real loopback HTTP server started by the tests."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anyio
import httpx
import numpy as np
import pytest
from simone.providers.embeddings import OllamaEmbedder, OpenAIEmbedder
from simone.providers.embeddings._http import parse_retry_after
from simone.providers.testing import LoopbackEmbeddingServer
from simone.runtime import (
    AccessDenied,
    ConfigError,
    EmbeddingSpaceMismatch,
    InvalidResponse,
    ProviderNotConfigured,
    ProviderTimeout,
    ProviderUnavailable,
    RateLimited,
)

DIM = 24


@pytest.fixture
def server() -> Any:
    with LoopbackEmbeddingServer(dimension=DIM) as running:
        yield running


def _openai(server: LoopbackEmbeddingServer, **kwargs: Any) -> OpenAIEmbedder:
    options: dict[str, Any] = {"base_url": server.base_url, "dimensions": DIM, "retry_backoff_s": 0.01}
    options.update(kwargs)
    return OpenAIEmbedder("hash-model", **options)


def _run(embedder: OpenAIEmbedder | OllamaEmbedder, texts: list[str]) -> np.ndarray:
    async def go() -> np.ndarray:
        async with embedder:
            return await embedder.embed(texts)

    return anyio.run(go)


def test_batches_are_sent_in_order_and_joined(server: LoopbackEmbeddingServer) -> None:
    texts = [f"text number {i}" for i in range(10)]
    vectors = _run(_openai(server, batch_size=4), texts)

    assert [len(r["input"]) for r in server.requests] == [4, 4, 2]
    assert all(r["model"] == "hash-model" and r["encoding_format"] == "float" for r in server.requests)
    assert "dimensions" not in server.requests[0], "only text-embedding-3 models take 'dimensions'"
    np.testing.assert_allclose(vectors, server.embedder.vectors(texts), atol=1e-6)
    assert vectors.dtype == np.float32


def test_answers_out_of_order_are_put_back_by_index(server: LoopbackEmbeddingServer) -> None:
    server.mode = "shuffled"
    texts = ["alpha", "beta", "gamma"]
    np.testing.assert_allclose(_run(_openai(server), texts), server.embedder.vectors(texts), atol=1e-6)


def test_the_api_key_is_sent_as_a_bearer_token(server: LoopbackEmbeddingServer) -> None:
    _run(_openai(server, api_key="sk-test"), ["x"])
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    _run(_openai(server), ["x"])
    assert "authorization" not in server.headers[1]


def test_429_with_retry_after_then_success(server: LoopbackEmbeddingServer) -> None:
    server.retry_after = "0.3"
    server.script.extend(["rate_limit", "ok"])
    started = time.monotonic()
    vectors = _run(_openai(server), ["hello"])
    assert time.monotonic() - started >= 0.3, "waited as the server asked"
    assert len(server.requests) == 2
    assert vectors.shape == (1, DIM)


def test_429_that_persists_is_rate_limited_with_the_hint(server: LoopbackEmbeddingServer) -> None:
    server.retry_after = "0"
    server.mode = "rate_limit"
    with pytest.raises(RateLimited) as caught:
        _run(_openai(server, max_retries=2), ["hello"])
    assert len(server.requests) == 3
    assert caught.value.retry_after_s == 0.0 and caught.value.retryable


def test_429_asking_too_long_a_wait_is_not_slept_through(server: LoopbackEmbeddingServer) -> None:
    server.retry_after = "120"
    server.mode = "rate_limit"
    with pytest.raises(RateLimited, match="wait 120.0 s") as caught:
        _run(_openai(server, max_retry_wait_s=5), ["hello"])
    assert len(server.requests) == 1  # no retry: the 120 s were not slept
    assert caught.value.retry_after_s == 120.0


def test_500_is_retried_then_unavailable(server: LoopbackEmbeddingServer) -> None:
    server.mode = "error500"
    with pytest.raises(ProviderUnavailable, match="HTTP 500 after 3 attempt") as caught:
        _run(_openai(server, max_retries=2), ["x"])
    assert caught.value.retryable
    assert len(server.requests) == 3


def test_a_passing_500_is_absorbed(server: LoopbackEmbeddingServer) -> None:
    server.script.append("error500")
    assert _run(_openai(server), ["x"]).shape == (1, DIM)
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("mode", "error", "words"),
    [
        ("wrong_count", InvalidResponse, "embeddings for"),
        ("nan", InvalidResponse, "NaN"),
        ("wrong_dimension", EmbeddingSpaceMismatch, f"{DIM + 1}-dimensional"),
        ("html", InvalidResponse, "HTML instead of JSON"),
        ("malformed_json", InvalidResponse, "malformed JSON"),
        ("drop", ProviderUnavailable, "unreachable"),
    ],
)
def test_bad_answers_are_typed_errors(
    server: LoopbackEmbeddingServer, mode: str, error: type[Exception], words: str
) -> None:
    server.mode = mode  # type: ignore[assignment]
    with pytest.raises(error, match=words):
        _run(_openai(server, max_retries=0), ["one", "two", "three"])


def test_a_hanging_server_times_out(server: LoopbackEmbeddingServer) -> None:
    server.mode = "slow"
    server.delay_s = 10
    with pytest.raises(ProviderTimeout, match="within 0.3 s") as caught:  # not the answer after 10 s
        _run(_openai(server, timeout_s=0.3, max_retries=0), ["x"])
    assert caught.value.retryable


def test_a_stopped_server_is_unavailable() -> None:
    with LoopbackEmbeddingServer(dimension=DIM) as stopped:
        base_url = stopped.base_url
    with pytest.raises(ProviderUnavailable, match="unreachable"):
        _run(OpenAIEmbedder("hash-model", base_url=base_url, dimensions=DIM), ["x"])


def test_a_wrong_base_url_is_not_configured(server: LoopbackEmbeddingServer) -> None:
    with pytest.raises(ProviderNotConfigured, match="404"):
        _run(_openai(server, base_url=server.root + "/wrong"), ["x"])


def test_401_is_access_denied() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": {"message": "Incorrect API key provided"}})

    async def go() -> None:
        async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client:
            embedder = OpenAIEmbedder("text-embedding-3-small", api_key="bad", client=client)
            await embedder.embed(["x"])

    with pytest.raises(AccessDenied, match="Incorrect API key"):
        anyio.run(go)


def test_known_models_need_no_dimension_and_shortening_is_requested() -> None:
    assert OpenAIEmbedder("text-embedding-3-small").space.key == "openai:text-embedding-3-small:1536"
    seen: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        import json

        body = json.loads(request.content)
        seen.append(body)
        data = [{"index": i, "embedding": [0.5] * 256} for i in range(len(body["input"]))]
        return httpx.Response(200, json={"data": data})

    async def go() -> np.ndarray:
        async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
            embedder = OpenAIEmbedder("text-embedding-3-large", dimensions=256, client=client)
            assert embedder.space.key == "openai:text-embedding-3-large:256"
            return await embedder.embed(["x", ""])

    vectors = anyio.run(go)
    assert seen[0]["dimensions"] == 256
    assert seen[0]["input"] == ["x", " "], "empty strings are sent as a space"
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_an_unknown_model_needs_its_dimension() -> None:
    with pytest.raises(ConfigError, match="OPENAI_DIMENSIONS"):
        OpenAIEmbedder("my-model", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match="OLLAMA_DIMENSIONS"):
        OllamaEmbedder("my-model")


def test_a_given_client_is_not_closed(server: LoopbackEmbeddingServer) -> None:
    async def go() -> bool:
        async with httpx.AsyncClient() as client:
            async with _openai(server, client=client) as embedder:
                await embedder.embed(["x"])
            return client.is_closed

    assert anyio.run(go) is False


def test_ollama_embeds_with_the_task_prefixes(server: LoopbackEmbeddingServer) -> None:
    embedder = OllamaEmbedder("nomic-embed-text:latest", base_url=server.root, dimensions=DIM, batch_size=2)
    assert embedder.space.key == f"ollama:nomic-embed-text:{DIM}"

    async def go() -> tuple[np.ndarray, np.ndarray]:
        async with embedder:
            return await embedder.embed(["a", "b", "c"]), await embedder.embed(["q"], kind="query")

    documents, query = anyio.run(go)
    assert [r["input"] for r in server.requests] == [
        ["search_document: a", "search_document: b"],
        ["search_document: c"],
        ["search_query: q"],
    ]
    assert server.requests[0]["truncate"] is True
    np.testing.assert_allclose(
        documents, server.embedder.vectors(["search_document: " + t for t in "abc"]), atol=1e-6
    )
    assert query.shape == (1, DIM)


def test_ollama_failures_are_typed(server: LoopbackEmbeddingServer) -> None:
    embedder = OllamaEmbedder("all-minilm", base_url=server.root, dimensions=DIM, max_retries=0)
    server.mode = "wrong_dimension"
    with pytest.raises(EmbeddingSpaceMismatch):
        _run(embedder, ["x"])
    server.mode = "error500"
    with pytest.raises(ProviderUnavailable):
        _run(OllamaEmbedder("all-minilm", base_url=server.root, dimensions=DIM, max_retries=0), ["x"])


def test_parse_retry_after() -> None:
    assert parse_retry_after(httpx.Headers({"retry-after": "7"})) == 7.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "7"})) == 0.25
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    # one reading for chat, embeddings and search: a negative delta means "now" (the backoff still applies)
    assert parse_retry_after(httpx.Headers({"retry-after": "-3"})) == 0.0
    assert parse_retry_after(httpx.Headers({})) is None
    now = datetime(2026, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(httpx.Headers({"retry-after": later}), now=now.timestamp()) == pytest.approx(90)
    earlier = format_datetime(now - timedelta(seconds=90), usegmt=True)
    assert parse_retry_after(httpx.Headers({"retry-after": earlier}), now=now.timestamp()) == 0.0
