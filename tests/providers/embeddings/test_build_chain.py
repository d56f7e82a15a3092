"""build_chain from settings, and a real chain (loopback cloud server + bundled ONNX) keeping its space."""

from __future__ import annotations

from typing import Any

import anyio
import numpy as np
import pytest
from pydantic import SecretStr
from simone.providers.embeddings import (
    ONNX_SPACE,
    OllamaEmbedder,
    OnnxMiniLMEmbedder,
    OpenAIEmbedder,
    build_chain,
)
from simone.providers.testing import LoopbackEmbeddingServer
from simone.runtime import (
    ConfigError,
    EmbeddingChainExhausted,
    EmbeddingSettings,
    ProviderUnavailable,
    load_settings,
)


def test_only_the_bundled_model_when_nothing_is_configured() -> None:
    chain = build_chain(EmbeddingSettings())
    assert [type(e) for e in chain.embedders] == [OnnxMiniLMEmbedder]
    assert chain.spaces == (ONNX_SPACE,)


def test_configured_servers_join_in_chain_order() -> None:
    settings = EmbeddingSettings(
        openai_api_key=SecretStr("sk-x"),
        ollama_base_url="http://127.0.0.1:11434",
        onnx_threads=1,
    )
    chain = build_chain(settings)
    assert [type(e) for e in chain.embedders] == [OpenAIEmbedder, OnnxMiniLMEmbedder, OllamaEmbedder]
    openai = chain.embedders[0]
    assert isinstance(openai, OpenAIEmbedder) and openai.url == "https://api.openai.com/v1/embeddings"
    assert [s.key for s in chain.spaces] == [
        "openai:text-embedding-3-small:1536",
        "onnx:all-MiniLM-L6-v2:384",
        "ollama:nomic-embed-text:768",
    ]

    reordered = build_chain(settings.model_copy(update={"chain": ["ollama", "onnx"]}))
    assert [type(e) for e in reordered.embedders] == [OllamaEmbedder, OnnxMiniLMEmbedder]


def test_a_base_url_alone_configures_a_compatible_server() -> None:
    settings = EmbeddingSettings(
        openai_base_url="http://127.0.0.1:8000/v1", openai_model="bge-small", openai_dimensions=384
    )
    first = build_chain(settings).embedders[0]
    assert isinstance(first, OpenAIEmbedder)
    assert first.space.key == "openai:bge-small:384"


def test_an_unknown_model_without_dimension_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="OPENAI_DIMENSIONS"):
        build_chain(EmbeddingSettings(openai_base_url="http://127.0.0.1:8000/v1", openai_model="bge-small"))


def test_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SIMONE_CONFIG", raising=False)
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("SIMONE_EMBEDDINGS__HEALTH_WINDOW", "40")
    settings = load_settings(data_dir=tmp_path)
    assert settings.embeddings.openai_api_key is not None
    assert settings.embeddings.openai_api_key.get_secret_value() == "sk-env"
    chain = build_chain(settings.embeddings)
    assert chain.health().window == 40
    assert isinstance(chain.embedders[0], OpenAIEmbedder)


def test_a_cloud_space_stays_pinned_when_the_cloud_fails() -> None:
    """The whole mechanism with real parts: a loopback server first, the real ONNX model second."""

    async def go(server: LoopbackEmbeddingServer) -> None:
        settings = EmbeddingSettings(
            openai_base_url=server.base_url,
            openai_model="hash-model",
            openai_dimensions=server.dimension,
            max_retries=0,
            timeout_s=5,
        )
        async with build_chain(settings) as chain:
            cloud, onnx = chain.embedders
            assert isinstance(onnx, OnnxMiniLMEmbedder)
            space = await chain.select_space()
            assert space == cloud.space

            server.mode = "error500"
            for _ in range(3):
                with pytest.raises(ProviderUnavailable, match="HTTP 500"):
                    await chain.embed(["query"], space=space, kind="query")
                chain.record_search(fell_back=True)
            last_error = chain.health().last_error
            assert last_error is not None and "HTTP 500" in last_error

            # the ONNX model works (it is another space, so the chain raised instead of using it)
            assert (await onnx.embed(["check"])).shape == (1, 384)

            server.mode = "ok"
            vectors = await chain.embed(["query"], space=space, kind="query")
            np.testing.assert_allclose(vectors, server.embedder.vectors(["query"]), atol=1e-6)

            # with the cloud gone, a new table is not created in the ONNX space (that would pin it
            # to another model for good): the error names both
            server.mode = "drop"
            with pytest.raises(EmbeddingChainExhausted) as caught:
                await chain.select_space()
            assert cloud.space.key in caught.value.message and ONNX_SPACE.key in caught.value.message

    with LoopbackEmbeddingServer(dimension=16) as server:
        anyio.run(go, server)
        inputs = [r["input"] for r in server.requests]
    assert ["query"] in inputs and ["check"] not in inputs
