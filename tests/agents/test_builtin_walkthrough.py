"""Adding a built-in provider: its package (``__init__.py`` and ``_factory.py``), one pyproject line, its tests.

The package below is written into a temporary folder that joins ``simone.providers.__path__`` — exactly
what a new folder ``providers/tinyecho/`` is once it is listed in pyproject's ``packages``. Nothing else
changes: the runtime discovers its ``_factory.py``, registers ``FACTORY`` through ``register_provider``
(the seam outside packages use), opens it in its loop, routes to its provider, registers its tool (with
its caller restriction, as data), and hands what it publishes to the factories after it, typed.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
import simone.providers
from simone.agents import AgentProfile, Runtime
from simone.providers import discover_provider_packages
from simone.runtime import PROVIDER_FACTORIES, AccessDenied, Caller, Status, load_settings

PACKAGE = {
    "__init__.py": '''
        """tinyecho: evidence that repeats the configured words a query names."""
    ''',
    "_factory.py": '''
        """The tinyecho factory: a provider, a tool and a published value — all as data."""

        from __future__ import annotations

        from pydantic import BaseModel, ConfigDict

        from simone.runtime import (
            Caller,
            Evidence,
            OpenedProviders,
            ProviderFactory,
            ProviderKind,
            ProviderResponse,
            ProviderSetup,
            ProviderTool,
            RetrievalRequest,
            Shared,
            TrustedContext,
        )


        class EchoSettings(BaseModel):
            """[providers.tinyecho]"""

            model_config = ConfigDict(frozen=True, extra="forbid")

            words: list[str] = []


        class EchoProvider:
            """Evidence for every configured word the query names."""

            name = "tinyecho"
            kind = ProviderKind.CUSTOM

            def __init__(self, words: list[str]) -> None:
                self.words = words

            async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
                asked = set(request.query.casefold().split())
                return ProviderResponse(
                    evidence=[
                        Evidence.create(
                            provider=ProviderKind.CUSTOM,
                            provider_name=self.name,
                            locator=f"echo:{word}",
                            title=word,
                            content=f"{word} was configured",
                        )
                        for word in self.words
                        if word.casefold() in asked
                    ]
                )


        class EchoArgs(BaseModel):
            model_config = ConfigDict(frozen=True, extra="forbid")

            word: str


        class EchoResult(BaseModel):
            known: bool


        ECHO_WORDS: Shared[EchoSettings] = Shared("tinyecho_words", EchoSettings)


        async def open_echo(setup: ProviderSetup[EchoSettings]) -> OpenedProviders:
            words = list(setup.section.words)

            async def known(context: TrustedContext, args: EchoArgs) -> EchoResult:
                return EchoResult(known=args.word in words)

            tool = ProviderTool(
                name="echo_known",
                description="Whether a word is configured.",
                args=EchoArgs,
                result=EchoResult,
                run=known,
                callers=frozenset({Caller.RESEARCHER}),
            )
            return OpenedProviders(
                providers=[EchoProvider(words)], published={ECHO_WORDS: setup.section}, tools=[tool]
            )


        FACTORY = ProviderFactory(
            section="tinyecho",
            settings=EchoSettings,
            open=open_echo,
            enabled=lambda settings, section: bool(section.words),
            publishes=(ECHO_WORDS,),
        )
    ''',
}


@pytest.fixture
def tinyecho(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "tinyecho"
    folder.mkdir()
    for name, text in PACKAGE.items():
        (folder / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    monkeypatch.setattr(simone.providers, "__path__", [*simone.providers.__path__, str(tmp_path)])
    try:
        yield folder
    finally:
        PROVIDER_FACTORIES.unregister("tinyecho")
        for name in [m for m in sys.modules if m.startswith("simone.providers.tinyecho")]:
            del sys.modules[name]


def test_a_new_builtin_package_is_discovered_opened_routed_and_its_tool_registered(
    tinyecho: Path, isolated_env: Path
) -> None:
    assert sorted(p.name for p in tinyecho.iterdir()) == ["__init__.py", "_factory.py"]
    assert discover_provider_packages() == [
        "simone.providers.documents._factory",
        "simone.providers.memory._factory",
        "simone.providers.rerank._factory",
        "simone.providers.tinyecho._factory",
        "simone.providers.web._factory",
    ]
    # opened after the four built-ins (its order is the default 100)
    assert [factory.section for factory in PROVIDER_FACTORIES.ordered()] == [
        "index",
        "memory",
        "web",
        "rerank",
        "tinyecho",
    ]
    settings = load_settings(providers={"tinyecho": {"words": ["lantern"]}})

    async def main() -> None:
        async with Runtime.open(settings, documents=False, web=False) as runtime:
            assert runtime.router is not None
            assert list(runtime.router.providers) == ["memory", "session-memory", "tinyecho"]
            # what it published is there, typed, under its own key
            from simone.providers.tinyecho._factory import ECHO_WORDS, EchoResult

            assert runtime.published.get(ECHO_WORDS) is not None
            assert runtime.published.require(ECHO_WORDS).words == ["lantern"]

            context = runtime.admit({"actor": "alice"})
            found = await runtime.retrieve(context, "where is the lantern", providers=["tinyecho"])
            assert found.status is Status.COMPLETE
            assert [e.locator for e in found.evidence] == ["echo:lantern"]

            # its tool: a registry tool with its models; the caller restriction is enforced as data
            assert "echo_known" in runtime.registry.names()
            researcher = AgentProfile(name="r", caller=Caller.RESEARCHER, tools=frozenset({"echo_known"}))
            orchestrator = AgentProfile(name="o", caller=Caller.ORCHESTRATOR, tools=frozenset({"echo_known"}))
            scout = runtime.admit({"actor": "alice"}, caller=Caller.RESEARCHER)
            result = await runtime.registry.call(researcher, scout, "echo_known", {"word": "lantern"})
            assert isinstance(result, EchoResult) and result.known
            with pytest.raises(AccessDenied, match="is for researcher"):
                await runtime.registry.call(orchestrator, context, "echo_known", {"word": "lantern"})

    anyio.run(main)


def test_a_factory_may_publish_only_what_it_declares(tinyecho: Path, isolated_env: Path) -> None:
    (tinyecho / "_factory.py").write_text(
        (tinyecho / "_factory.py").read_text(encoding="utf-8").replace("publishes=(ECHO_WORDS,),", ""),
        encoding="utf-8",
    )
    discover_provider_packages()
    settings = load_settings(providers={"tinyecho": {"words": ["lantern"]}})

    async def main() -> None:
        async with Runtime.open(settings, documents=False, memory=False, web=False):
            pass

    from simone.runtime import ConfigError

    with pytest.raises(
        ConfigError, match="published 'tinyecho_words', which its publishes= does not declare"
    ):
        anyio.run(main)


def test_a_provider_tool_that_returns_another_model_is_refused() -> None:
    from pydantic import BaseModel
    from simone.agents import ORCHESTRATOR, Tool, ToolRegistry
    from simone.runtime import InvalidResponse, ProviderTool, TrustedContext

    class Ask(BaseModel):
        word: str

    class Promised(BaseModel):
        known: bool

    class Other(BaseModel):
        anything: str

    async def wrong(context: TrustedContext, args: Ask) -> Promised:
        return Other(anything=args.word)  # type: ignore[return-value]

    registry = ToolRegistry()
    registry.register(
        Tool.of(
            ProviderTool(name="ask", description="d", args=Ask, result=Promised, run=wrong, group="memory")
        )
    )

    async def main() -> None:
        context = TrustedContext(actor="alice", caller=Caller.ORCHESTRATOR)
        with pytest.raises(InvalidResponse, match="returned a Other, not a Promised"):
            await registry.call(ORCHESTRATOR, context, "ask", {"word": "x"})

    anyio.run(main)
