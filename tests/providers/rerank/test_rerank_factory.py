"""``[rerank]``: the settings, the factory discovery registers, and what it publishes."""

from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from simone.providers import discover_provider_packages
from simone.providers.rerank import HttpReranker, OnnxCrossEncoder, build_reranker, open_reranker
from simone.providers.testing import LoopbackRerankServer, write_tiny_cross_encoder
from simone.runtime import (
    PROVIDER_FACTORIES,
    RERANKER,
    ConfigError,
    ProviderSetup,
    RerankOptions,
    RerankSettings,
    Router,
    Settings,
    TrustedContext,
    load_settings,
)
from simone.runtime.testing import StaticProvider, make_evidence


def test_discovery_registers_the_rerank_section_and_it_is_off_by_default() -> None:
    discover_provider_packages()
    factory = PROVIDER_FACTORIES.get("rerank")
    assert factory is not None and RERANKER in factory.publishes
    assert not factory.wanted(Settings())
    assert factory.wanted(Settings(rerank=RerankSettings(backend="http", url="http://127.0.0.1:1/v1/rerank")))


def test_the_settings_build_each_backend(tmp_path: Path) -> None:
    assert build_reranker(RerankSettings()) is None
    http = build_reranker(RerankSettings(backend="http", url="http://127.0.0.1:9/rerank", api="tei"))
    assert isinstance(http, HttpReranker) and http.api == "tei"
    local = build_reranker(RerankSettings(backend="onnx", model_path=tmp_path))
    assert isinstance(local, OnnxCrossEncoder)
    with pytest.raises(ConfigError, match="url"):
        build_reranker(RerankSettings(backend="http"))
    with pytest.raises(ConfigError, match="model_path"):
        build_reranker(RerankSettings(backend="onnx"))
    with pytest.raises(ConfigError, match="http"):
        build_reranker(RerankSettings(backend="http", url="localhost:8080/rerank"))


def test_the_key_comes_from_the_environment_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMONE_RERANK__API_KEY", "sk-env")
    monkeypatch.setenv("SIMONE_RERANK__BACKEND", "http")
    settings = load_settings(None, data_dir=tmp_path)
    assert settings.rerank.api_key is not None and settings.rerank.api_key.get_secret_value() == "sk-env"
    config = tmp_path / "simone.toml"
    config.write_text('[rerank]\nbackend = "http"\napi_key = "sk-file"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="SIMONE_RERANK__API_KEY"):
        load_settings(config)


def test_the_factory_opens_and_publishes_a_reranker_the_router_uses(tmp_path: Path) -> None:
    model = write_tiny_cross_encoder(tmp_path / "tiny", {"apple": 1.0})
    section = RerankSettings(backend="onnx", model_path=model, candidates=3)

    async def go() -> list[str]:
        async with AsyncExitStack() as stack:
            opened = await open_reranker(ProviderSetup(settings=Settings(), section=section, stack=stack))
            reranker = opened.published[RERANKER]
            assert not opened.providers
            provider = StaticProvider("docs", make_evidence("docs", ["pear", "plum", "apple"]))
            router = Router([provider], reranker=reranker, rerank=RerankOptions.from_settings(section))  # type: ignore[arg-type]
            result = await router.retrieve(router.request("fruit"), TrustedContext(actor="a"))
            return [e.content for e in result.evidence]

    assert anyio.run(go)[0] == "apple"


def test_a_model_that_is_not_there_stops_the_runtime_with_a_config_error(tmp_path: Path) -> None:
    section = RerankSettings(backend="onnx", model_path=tmp_path / "missing")

    async def go() -> None:
        async with AsyncExitStack() as stack:
            await open_reranker(ProviderSetup(settings=Settings(), section=section, stack=stack))

    with pytest.raises(ConfigError, match="does not exist"):
        anyio.run(go)


def test_the_http_reranker_opens_its_client_with_the_runtime() -> None:
    with LoopbackRerankServer() as server:
        section = RerankSettings(backend="http", url=server.url)

        async def go() -> list[float | None]:
            async with AsyncExitStack() as stack:
                opened = await open_reranker(ProviderSetup(settings=Settings(), section=section, stack=stack))
                return list(await opened.published[RERANKER].rerank("a b", ["a", "a b"]))  # type: ignore[attr-defined]

        assert anyio.run(go) == [0.5, 1.0]
