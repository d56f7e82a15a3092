"""The document index's provider factory (``[index]``): ``FACTORY``, which discovery registers.

It opens the ``documents`` provider over a :class:`DocumentIndex` and publishes the index
(:data:`DOCUMENT_INDEX`) and its embedding chain (:data:`~simone.runtime.EMBEDDING_CHAIN`, which
memory's semantic leg reuses). With ``provider_options={"index": {"lazy": True}}`` (:data:`LAZY_OPTION`)
the index — LanceDB and the model — opens on the first search instead (:class:`LazyDocuments`), so
``simone mcp`` answers its handshake first.

This module imports nothing heavy: the index's modules are imported when the factory opens.
"""

from __future__ import annotations

from contextlib import AsyncExitStack
from typing import TYPE_CHECKING

import anyio
from simone.runtime import (
    EMBEDDING_CHAIN,
    EmbeddingChain,
    IndexSettings,
    OpenedProviders,
    Provider,
    ProviderFactory,
    ProviderKind,
    ProviderResponse,
    ProviderSetup,
    RetrievalRequest,
    Settings,
    Shared,
    TrustedContext,
)

if TYPE_CHECKING:
    from simone.providers.documents._index import DocumentIndex


def _index_type() -> type[DocumentIndex]:
    from simone.providers.documents._index import DocumentIndex

    return DocumentIndex


DOCUMENT_INDEX: Shared[DocumentIndex] = Shared("document_index", _index_type)
"""The open document index (published when it opens with the runtime, not when it opens lazily)."""

LAZY_OPTION = "lazy"
"""``provider_options={"index": {"lazy": True}}``: open the document index (LanceDB, the embedding model)
on its first search instead of when the runtime opens — ``simone mcp`` answers the handshake first."""


class LazyDocuments:
    """The ``documents`` provider, whose index is opened on its first search (then kept open).

    Its embedding chain is built at once (building opens nothing) and shared with memory's semantic
    leg. :meth:`open` starts the chain (the model) and opens the index into the runtime's exit stack,
    so both close with the runtime; an open that fails is retried by the next use. The runtime awaits
    :meth:`open` before each tool call (outside any provider's deadline), so the first call waits for
    the open instead of timing out.
    """

    kind = ProviderKind.DOCUMENT_INDEX
    """Always ``document-index``."""

    def __init__(self, settings: Settings, stack: AsyncExitStack, *, name: str = "documents") -> None:
        from simone.providers.embeddings import build_chain

        self._settings = settings
        self._stack = stack
        self.name = name
        """The provider's name (``documents``)."""
        self.chain: EmbeddingChain = build_chain(settings.embeddings, data_dir=settings.data_dir)
        self._lock = anyio.Lock()
        self._provider: Provider | None = None
        self._chain_entered = False
        self.index: DocumentIndex | None = None

    async def open(self) -> Provider:
        """The real provider, opening the index first if this is the first use."""
        if self._provider is not None:
            return self._provider
        async with self._lock:
            if self._provider is None:
                from simone.providers.documents._index import DocumentIndex
                from simone.providers.documents._provider import DocumentIndexProvider

                # shielded: a search cancelled at its deadline must not leave a half-open index behind
                with anyio.CancelScope(shield=True):
                    if not self._chain_entered:
                        await self._stack.enter_async_context(self.chain)
                        self._chain_entered = True
                    index = await self._stack.enter_async_context(
                        DocumentIndex.open(self._settings, chain=self.chain)
                    )
                self.index = index
                self._provider = DocumentIndexProvider(index, name=self.name)
        return self._provider

    async def prepare(self) -> None:
        """Open the index before a tool call; a failure is left to the provider, which reports it."""
        try:
            await self.open()
        except Exception:  # noqa: BLE001 - the documents provider raises it again as its own failure
            pass

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Open the index on first use, then search it."""
        return await (await self.open()).retrieve(request, context)


async def open_documents(setup: ProviderSetup[IndexSettings]) -> OpenedProviders:
    """The ``documents`` provider the settings describe, opened now or (``lazy``) on its first search."""
    if setup.options.get(LAZY_OPTION):
        lazy = LazyDocuments(setup.settings, setup.stack)
        return OpenedProviders(
            providers=[lazy], published={EMBEDDING_CHAIN: lazy.chain}, prepare=[lazy.prepare]
        )
    from simone.providers.documents._index import DocumentIndex
    from simone.providers.documents._provider import DocumentIndexProvider

    index = await setup.stack.enter_async_context(DocumentIndex.open(setup.settings))
    return OpenedProviders(
        providers=[DocumentIndexProvider(index)],
        published={DOCUMENT_INDEX: index, EMBEDDING_CHAIN: index.chain},
    )


FACTORY: ProviderFactory[IndexSettings] = ProviderFactory(
    section="index",
    settings=IndexSettings,
    open=open_documents,
    order=10,
    publishes=(DOCUMENT_INDEX, EMBEDDING_CHAIN),
)
"""The document index (``[index]``): the ``documents`` provider."""
