"""A provider is one settings model + one factory: register it and the Runtime opens it, no wiring edits."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from pydantic import BaseModel, ConfigDict
from simone.agents import Runtime
from simone.providers import builtin_factories, discover_provider_packages
from simone.runtime import (
    PROVIDER_FACTORIES,
    ConfigError,
    Evidence,
    OpenedProviders,
    ProviderFactory,
    ProviderKind,
    ProviderRegistry,
    ProviderResponse,
    ProviderSetup,
    RetrievalRequest,
    Shared,
    Status,
    TrustedContext,
    load_settings,
    register_provider,
)


class GlossarySettings(BaseModel):
    """The tiny provider's own settings section: ``[providers.glossary]`` / ``SIMONE_PROVIDERS__GLOSSARY__*``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    terms: dict[str, str] = {}
    max_hits: int = 5


class GlossaryProvider:
    """Evidence from a glossary: an entry is found when the query names its term."""

    def __init__(self, section: GlossarySettings) -> None:
        self._section = section

    @property
    def name(self) -> str:
        return "glossary"

    @property
    def kind(self) -> ProviderKind:
        return ProviderKind.CUSTOM

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        words = set(request.query.casefold().split())
        evidence = [
            Evidence.create(
                provider=ProviderKind.CUSTOM,
                provider_name=self.name,
                locator=f"glossary:{term}",
                title=term,
                content=meaning,
            )
            for term, meaning in sorted(self._section.terms.items())
            if term.casefold() in words
        ]
        return ProviderResponse(evidence=evidence[: self._section.max_hits])


GLOSSARY_SECTION: Shared[GlossarySettings] = Shared("glossary", GlossarySettings)


async def _open_glossary(setup: ProviderSetup[GlossarySettings]) -> OpenedProviders:
    return OpenedProviders(
        providers=[GlossaryProvider(setup.section)], published={GLOSSARY_SECTION: setup.section}
    )


GLOSSARY = ProviderFactory(
    section="glossary",
    settings=GlossarySettings,
    open=_open_glossary,
    enabled=lambda settings, section: bool(section.terms),
    publishes=(GLOSSARY_SECTION,),
    rules=(
        {
            "name": "glossary-terms",
            "select": ["glossary"],
            "when_any_term": ["rrf", "bm25"],
            "reason": "the glossary defines the project's terms",
        },
    ),
)


@pytest.fixture
def glossary() -> object:
    register_provider(GLOSSARY)
    try:
        yield GLOSSARY
    finally:
        PROVIDER_FACTORIES.unregister("glossary")


def test_a_registered_provider_answers_through_the_runtime(
    glossary: object, isolated_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIMONE_PROVIDERS__GLOSSARY__TERMS", '{"RRF": "reciprocal rank fusion"}')
    monkeypatch.setenv("SIMONE_PROVIDERS__GLOSSARY__MAX_HITS", "3")
    settings = load_settings()
    assert GLOSSARY.section_of(settings) == GlossarySettings(
        terms={"RRF": "reciprocal rank fusion"}, max_hits=3
    )

    async def main() -> None:
        # memory stays open next to it: the factory's own rule selects the glossary, the defaults memory
        async with Runtime.open(settings, documents=False, web=False) as runtime:
            assert runtime.router is not None and list(runtime.router.providers) == [
                "memory",
                "session-memory",
                "glossary",
            ]
            context = runtime.admit({"actor": "alice"})
            result = await runtime.retrieve(context, "what is rrf")
            assert result.status is Status.COMPLETE
            assert [e.locator for e in result.evidence] == ["glossary:RRF"]
            reasons = {s.provider: s.reason for s in result.request.selected}
            assert reasons["glossary"].startswith("rule glossary-terms: the glossary defines")
            assert "memory" in reasons

    anyio.run(main)


def test_a_disabled_or_unregistered_provider_is_not_opened(glossary: object, isolated_env: Path) -> None:
    async def main() -> None:
        # no terms configured: the factory's ``enabled`` says no
        async with Runtime.open(load_settings(), documents=False, memory=False, web=False) as runtime:
            assert runtime.router is not None and list(runtime.router.providers) == []
        only_builtins = ProviderRegistry(builtin_factories())
        settings = load_settings(providers={"glossary": {"terms": {"rrf": "fusion"}}})
        async with Runtime.open(settings, memory=False, documents=False, factories=only_builtins) as runtime:
            assert runtime.router is not None and "glossary" not in runtime.router.providers

    anyio.run(main)


def test_an_invalid_section_names_its_key(glossary: object, isolated_env: Path) -> None:
    settings = load_settings(providers={"glossary": {"terms": {"rrf": "fusion"}, "max_hitz": 2}})

    async def main() -> None:
        async with Runtime.open(settings, documents=False, memory=False, web=False):
            pass

    with pytest.raises(ConfigError, match=r"providers\.glossary\.max_hitz: Extra inputs") as caught:
        anyio.run(main)
    assert "SIMONE_PROVIDERS__GLOSSARY__" in str(caught.value)


def test_the_registry_keys_factories_by_section() -> None:
    assert PROVIDER_FACTORIES.sections()[:4] == ["index", "memory", "rerank", "web"]
    registry = ProviderRegistry(builtin_factories())
    with pytest.raises(ConfigError, match="already registered"):
        registry.register(builtin_factories()[1])
    registry.register(GLOSSARY)
    assert registry.get("glossary") is GLOSSARY and len(registry) == 5
    registry.unregister("glossary")
    assert registry.sections() == ["index", "memory", "rerank", "web"]
    # a factory may not claim a built-in section with another model
    clash = ProviderFactory(section="memory", settings=GlossarySettings, open=_open_glossary)
    with pytest.raises(ConfigError, match="built-in section"):
        clash.section_of(load_settings())


def test_the_builtin_packages_are_discovered_and_registered_like_any_other() -> None:
    assert discover_provider_packages() == [
        "simone.providers.documents._factory",
        "simone.providers.memory._factory",
        "simone.providers.rerank._factory",
        "simone.providers.web._factory",
    ]
    sections = [factory.section for factory in builtin_factories()]
    assert sections == ["index", "memory", "rerank", "web"]
    # registered in the default registry through register_provider, the same way as anyone's factory
    assert [PROVIDER_FACTORIES.get(section) for section in sections] == list(builtin_factories())
    # packages without a _factory module (embeddings, testing) are not imported as providers
    assert not any("embeddings" in name or "testing" in name for name in discover_provider_packages())
