"""The built-in provider factories (documents, memory, web), registered with the default registry.

Each is a :class:`~simone.runtime.ProviderFactory` keyed by its settings section; :class:`Runtime`
opens every registered factory the settings enable, in registration order, so a provider of your own
(or a new built-in package) needs no change here or in the runtime: register a factory with
:func:`~simone.runtime.register_provider`, or — for a package under ``simone.providers`` — define it in
the package's ``_factory.py``, which :func:`discover_provider_packages` imports.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from simone.runtime import (
    PROVIDER_FACTORIES,
    ConfigError,
    EmbeddingChain,
    IndexSettings,
    MemorySettings,
    OpenedProviders,
    ProviderFactory,
    ProviderSetup,
    Settings,
    WebSettings,
)

if TYPE_CHECKING:
    from simone.agents._session import ResearchRunner
    from simone.providers.documents import DocumentIndex
    from simone.providers.memory import MemoryStore, SessionStore

    class RuntimeMemoryStore(MemoryStore, SessionStore, Protocol):
        """What the runtime needs of a memory store: structured memory (its tools) and session turns."""


DOCUMENTS_KEY = "documents"
"""The name the documents factory publishes the open :class:`DocumentIndex` under."""
MEMORY_STORE_KEY = "memory_store"
"""The name the memory factory publishes its store under (the runtime registers its memory tools)."""
RESEARCH_KEY = "research"
"""The name the web factory publishes its research runner under."""


async def _open_documents(setup: ProviderSetup[IndexSettings]) -> OpenedProviders:
    from simone.providers.documents import DocumentIndex, DocumentIndexProvider

    index = await setup.stack.enter_async_context(DocumentIndex.open(setup.settings))
    return OpenedProviders(providers=[DocumentIndexProvider(index)], shared={DOCUMENTS_KEY: index})


async def _open_memory(setup: ProviderSetup[MemorySettings]) -> OpenedProviders:
    from simone.providers.memory import MemoryProvider, SessionMemoryProvider, open_memory_store

    # The semantic leg embeds with the open document index's chain (opened first); lexical only without it.
    chain = getattr(setup.shared.get(DOCUMENTS_KEY), "chain", None)
    store = open_memory_store(setup.settings)  # PostgreSQL when memory.url is set, else SQLite
    await setup.stack.enter_async_context(store)
    limit = setup.section.max_query_limit
    return OpenedProviders(
        providers=[
            MemoryProvider.from_settings(
                store, setup.section, chain=chain if isinstance(chain, EmbeddingChain) else None
            ),
            SessionMemoryProvider(store, max_limit=limit),
        ],
        shared={MEMORY_STORE_KEY: store},
    )


def _web_wanted(settings: Settings, section: WebSettings) -> bool:
    from simone.agents._research import web_configured

    return web_configured(settings)


async def _open_web(setup: ProviderSetup[WebSettings]) -> OpenedProviders:
    from simone.agents._research import open_web_research

    opened = await open_web_research(setup.settings, setup.stack, **setup.options)
    if opened is None:  # _web_wanted said a backend is configured
        return OpenedProviders()
    runner, provider = opened
    return OpenedProviders(providers=[provider], shared={RESEARCH_KEY: runner})


DOCUMENTS = ProviderFactory(section="index", settings=IndexSettings, open=_open_documents)
"""The document index (``[index]``): the ``documents`` provider."""
MEMORY = ProviderFactory(section="memory", settings=MemorySettings, open=_open_memory)
"""Memory (``[memory]``: SQLite, or PostgreSQL with ``url``): the ``memory`` and ``session-memory`` providers, and the memory tools."""
WEB = ProviderFactory(section="web", settings=WebSettings, open=_open_web, enabled=_web_wanted)
"""Web search and research (``[web]``, only with a search backend): the researcher-only ``web`` provider."""

BUILTIN_FACTORIES: tuple[ProviderFactory[Any], ...] = (
    DOCUMENTS,
    MEMORY,
    WEB,
)
"""The built-in factories, in the router's provider order."""

FACTORY_MODULE = "_factory"
"""A package under ``simone.providers`` with a module of this name registers its factory on import."""


def discover_provider_packages() -> list[str]:
    """Import the ``_factory`` module of every ``simone.providers`` package that has one.

    Such a module registers its factory (``register_provider(ProviderFactory(...))``) with the default
    registry. Returns the modules imported. Packages without one are not imported.
    """
    import simone.providers

    imported: list[str] = []
    for info in pkgutil.iter_modules(simone.providers.__path__):
        if not info.ispkg:
            continue
        folders = [Path(p) / info.name for p in simone.providers.__path__]
        if any((folder / f"{FACTORY_MODULE}.py").is_file() for folder in folders):
            name = f"simone.providers.{info.name}.{FACTORY_MODULE}"
            importlib.import_module(name)
            imported.append(name)
    return imported


def documents_of(shared: dict[str, object]) -> DocumentIndex | None:
    """The document index the documents factory opened, if it ran."""
    index = shared.get(DOCUMENTS_KEY)
    if index is None:
        return None
    from simone.providers.documents import DocumentIndex

    return _expect(index, DocumentIndex, DOCUMENTS_KEY)


def memory_store_of(shared: dict[str, object]) -> RuntimeMemoryStore | None:
    """The memory store the memory factory opened, if it ran."""
    store = shared.get(MEMORY_STORE_KEY)
    if store is None:
        return None
    from simone.providers.memory import MemoryStore, SessionStore

    if not (isinstance(store, MemoryStore) and isinstance(store, SessionStore)):
        raise ConfigError(f"{MEMORY_STORE_KEY!r} is a {type(store).__name__}, not a memory and session store")
    return store


def research_of(shared: dict[str, object]) -> ResearchRunner | None:
    """The research runner the web factory opened, if it ran."""
    runner = shared.get(RESEARCH_KEY)
    if runner is None:
        return None
    from simone.agents._research import WorkflowResearchRunner

    return _expect(runner, WorkflowResearchRunner, RESEARCH_KEY)


_T = TypeVar("_T")


def _expect(value: object, cls: type[_T], key: str) -> _T:
    if not isinstance(value, cls):
        raise ConfigError(f"{key!r} is a {type(value).__name__}, not a {cls.__name__}")
    return value


for _factory in BUILTIN_FACTORIES:
    if PROVIDER_FACTORIES.get(_factory.section) is None:
        PROVIDER_FACTORIES.register(_factory)
