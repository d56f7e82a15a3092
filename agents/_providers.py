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
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import anyio
from simone.runtime import (
    PROVIDER_FACTORIES,
    ConfigError,
    EmbeddingChain,
    IndexSettings,
    MemorySettings,
    OpenedProviders,
    Provider,
    ProviderFactory,
    ProviderKind,
    ProviderResponse,
    ProviderSetup,
    RetrievalRequest,
    Settings,
    TrustedContext,
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


LAZY_OPTION = "lazy"
"""``provider_options={"index": {"lazy": True}}``: open the document index (LanceDB, the embedding model)
on its first search instead of when the runtime opens — ``simone mcp`` answers the handshake first."""


async def _open_documents(setup: ProviderSetup[IndexSettings]) -> OpenedProviders:
    if setup.options.get(LAZY_OPTION):
        lazy = LazyDocuments(setup.settings, setup.stack)
        return OpenedProviders(providers=[lazy], shared={DOCUMENTS_KEY: lazy})
    from simone.providers.documents import DocumentIndex, DocumentIndexProvider

    index = await setup.stack.enter_async_context(DocumentIndex.open(setup.settings))
    return OpenedProviders(providers=[DocumentIndexProvider(index)], shared={DOCUMENTS_KEY: index})


class LazyDocuments:
    """The ``documents`` provider, whose index is opened on its first search (then kept open).

    Its embedding chain is built at once (building opens nothing) and shared with memory's semantic
    leg. :meth:`open` starts the chain (the model) and opens the index into the runtime's exit stack,
    so both close with the runtime; an open that fails is retried by the next use. The runtime awaits
    :meth:`open` before each tool call (outside any provider's deadline), so the first call waits for
    the open instead of timing out.
    """

    def __init__(self, settings: Settings, stack: AsyncExitStack, *, name: str = "documents") -> None:
        from simone.providers.embeddings import build_chain

        self._settings = settings
        self._stack = stack
        self._name = name
        self.chain: EmbeddingChain = build_chain(settings.embeddings, data_dir=settings.data_dir)
        self._lock = anyio.Lock()
        self._provider: Provider | None = None
        self._chain_entered = False
        self.index: DocumentIndex | None = None

    @property
    def name(self) -> str:
        """The provider's name (``documents``)."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """Always ``document-index``."""
        return ProviderKind.DOCUMENT_INDEX

    async def open(self) -> Provider:
        """The real provider, opening the index first if this is the first use."""
        if self._provider is not None:
            return self._provider
        async with self._lock:
            if self._provider is None:
                from simone.providers.documents import DocumentIndex, DocumentIndexProvider

                # shielded: a search cancelled at its deadline must not leave a half-open index behind
                with anyio.CancelScope(shield=True):
                    if not self._chain_entered:
                        await self._stack.enter_async_context(self.chain)
                        self._chain_entered = True
                    index = await self._stack.enter_async_context(
                        DocumentIndex.open(self._settings, chain=self.chain)
                    )
                self.index = index
                self._provider = DocumentIndexProvider(index, name=self._name)
        return self._provider

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Open the index on first use, then search it."""
        return await (await self.open()).retrieve(request, context)


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
    if index is None or isinstance(index, LazyDocuments):  # opened on first search: none yet
        return None
    from simone.providers.documents import DocumentIndex

    return _expect(index, DocumentIndex, DOCUMENTS_KEY)


def lazy_documents_of(shared: dict[str, object]) -> LazyDocuments | None:
    """The documents provider opened on first use, when the documents factory ran lazily."""
    found = shared.get(DOCUMENTS_KEY)
    return found if isinstance(found, LazyDocuments) else None


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
