"""Memory's provider factory (``[memory]``: SQLite, or PostgreSQL with ``url``): ``FACTORY``.

It opens the store, offers the ``memory`` and ``session-memory`` providers and the memory tools
(:func:`~simone.providers.memory.memory_tools`), and publishes the store (:data:`MEMORY_STORE`: the
runtime appends conversation turns to it). The semantic leg embeds with the chain another factory
published (:data:`~simone.runtime.EMBEDDING_CHAIN`, the document index's); lexical only without it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from simone.providers.memory._open import open_memory_store
from simone.providers.memory._providers import MemoryProvider, SessionMemoryProvider
from simone.providers.memory._store import MemoryStore, SessionStore
from simone.providers.memory._tools import memory_tools
from simone.runtime import (
    EMBEDDING_CHAIN,
    MemorySettings,
    OpenedProviders,
    ProviderFactory,
    ProviderSetup,
    Shared,
)


@runtime_checkable
class RuntimeMemoryStore(MemoryStore, SessionStore, Protocol):
    """What the runtime needs of a memory store: structured memory (its tools) and session turns."""


MEMORY_STORE: Shared[RuntimeMemoryStore] = Shared("memory_store", RuntimeMemoryStore)
"""The open memory store (structured records and session turns)."""


async def open_memory(setup: ProviderSetup[MemorySettings]) -> OpenedProviders:
    """The memory providers and tools over the store the settings describe."""
    store = open_memory_store(setup.settings)  # PostgreSQL when memory.url is set, else SQLite
    await setup.stack.enter_async_context(store)
    limit = setup.section.max_query_limit
    chain = setup.published.get(EMBEDDING_CHAIN)
    return OpenedProviders(
        providers=[
            MemoryProvider.from_settings(store, setup.section, chain=chain),
            SessionMemoryProvider(store, max_limit=limit),
        ],
        published={MEMORY_STORE: store},
        tools=list(memory_tools(store)),
    )


FACTORY: ProviderFactory[MemorySettings] = ProviderFactory(
    section="memory",
    settings=MemorySettings,
    open=open_memory,
    order=20,
    publishes=(MEMORY_STORE,),
    reads=(EMBEDDING_CHAIN,),
)
"""Memory (``[memory]``): the ``memory`` and ``session-memory`` providers, and the memory tools."""
