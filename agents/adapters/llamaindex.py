"""LlamaIndex: a ``BaseRetriever`` over simone's routed retrieval (extra ``simone[llamaindex]``).

::

    retriever = SimoneRetriever(runtime, {"actor": "alice"}, limit=5)
    nodes = await retriever.aretrieve("how are rankings fused?")
    engine = RetrieverQueryEngine.from_args(retriever, llm=...)  # or any LlamaIndex consumer

Each result is a :class:`~llama_index.core.schema.NodeWithScore` whose node is a
:class:`~llama_index.core.schema.TextNode` (``id_`` the evidence id, ``text`` its content, ``metadata``
:func:`~simone.agents.adapters.evidence_metadata`) and whose ``score`` is the fused (RRF) score. The
LLM sees a node's title, locator, provider and trust next to its text; ids, digests, scores and details
stay out of the LLM's and the embedder's view (``excluded_*_metadata_keys``). A failed or forbidden
retrieval raises :class:`~simone.agents.adapters.RetrievalFailed` /
:class:`~simone.agents.adapters.RetrievalForbidden`; a partial one warns with
:class:`~simone.agents.adapters.PartialRetrievalWarning` (or raises, with ``partial="raise"``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from simone.agents.adapters._core import (
    SimoneSource,
    SourceOptions,
    evidence_metadata,
    missing_extra,
    ranking_score,
)
from simone.runtime import Evidence, RetrievalResult, TrustedContext

try:
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover -- exercised in a subprocess without the package
    raise missing_extra("llamaindex", "llama-index-core", exc) from exc

if TYPE_CHECKING:
    from simone.agents import Event, Runtime

__all__ = ("LLM_METADATA_KEYS", "SimoneRetriever", "to_node")

LLM_METADATA_KEYS = ("title", "locator", "provider_name", "trust")
"""The metadata keys an LLM reads with a node's text (the rest is for programs)."""


def to_node(item: Evidence, result: RetrievalResult | None = None) -> NodeWithScore:
    """One piece of evidence as a LlamaIndex node with its fused score."""
    metadata = evidence_metadata(item, result)
    hidden = [key for key in metadata if key not in LLM_METADATA_KEYS]
    node = TextNode(
        id_=item.id,
        text=item.content,
        metadata=metadata,
        excluded_llm_metadata_keys=hidden,
        excluded_embed_metadata_keys=list(metadata),
    )
    return NodeWithScore(node=node, score=ranking_score(item))


class SimoneRetriever(BaseRetriever):
    """simone's routed retrieval as a LlamaIndex retriever, for one trusted scope.

    Args:
        runtime: an open :class:`~simone.agents.Runtime`.
        context: the trusted context, or the event to admit on each call (see
            :class:`~simone.agents.adapters.SimoneSource`).
        callback_manager: LlamaIndex's callback manager (its default otherwise).
        **options: :class:`~simone.agents.adapters.SourceOptions` (``limit``, ``providers``, ``partial``,
            ``portal`` for ``retrieve`` from synchronous code…).

    ``aretrieve`` runs in the caller's event loop (the runtime's); ``retrieve`` needs a ``portal``
    (:func:`~simone.agents.adapters.open_blocking`) or an anyio worker thread.
    """

    def __init__(
        self,
        runtime: Runtime,
        context: TrustedContext | Event | Mapping[str, Any],
        *,
        callback_manager: CallbackManager | None = None,
        **options: Unpack[SourceOptions],
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        self.source = SimoneSource(runtime, context, **options)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.source.retrieve(query_bundle.query_str)
        return [to_node(item, result) for item in result.evidence]

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = await self.source.aretrieve(query_bundle.query_str)
        return [to_node(item, result) for item in result.evidence]
