"""Haystack: a retriever component over simone's routed retrieval (extra ``simone[haystack]``).

::

    retriever = SimoneRetriever(runtime, {"actor": "alice"}, limit=5)
    pipeline = AsyncPipeline()
    pipeline.add_component("retriever", retriever)
    out = await pipeline.run_async({"retriever": {"query": "how are rankings fused?"}})

The component has ``run`` and ``run_async`` with the same sockets — input ``query`` (and ``top_k``, which
overrides the limit), output ``documents``: :class:`~haystack.Document` objects whose ``id`` is the
evidence id, ``content`` its text, ``score`` the fused (RRF) score and ``meta``
:func:`~simone.agents.adapters.evidence_metadata`. Like Haystack's own components it raises on failure
(:class:`~simone.agents.adapters.RetrievalFailed`, :class:`~simone.agents.adapters.RetrievalForbidden`;
a pipeline wraps them in its ``PipelineRuntimeError``) and warns with
:class:`~simone.agents.adapters.PartialRetrievalWarning` on a partial result (or raises, with
``partial="raise"``). It holds a live runtime, so it is not serialisable (``to_dict``).
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
from simone.runtime import ConfigError, Evidence, RetrievalResult, TrustedContext

try:
    from haystack import Document, component
except ImportError as exc:  # pragma: no cover -- exercised in a subprocess without the package
    raise missing_extra("haystack", "haystack-ai", exc) from exc

if TYPE_CHECKING:
    from simone.agents import Event, Runtime

__all__ = ("SimoneRetriever", "to_document")


def to_document(item: Evidence, result: RetrievalResult | None = None) -> Document:
    """One piece of evidence as a Haystack document with its fused score."""
    return Document(
        id=item.id, content=item.content, meta=evidence_metadata(item, result), score=ranking_score(item)
    )


@component
class SimoneRetriever:
    """simone's routed retrieval as a Haystack component, for one trusted scope.

    Args:
        runtime: an open :class:`~simone.agents.Runtime`.
        context: the trusted context, or the event to admit on each call (see
            :class:`~simone.agents.adapters.SimoneSource`).
        **options: :class:`~simone.agents.adapters.SourceOptions` (``limit``, ``providers``, ``partial``,
            ``portal`` for ``run`` from synchronous code…).

    ``run_async`` runs in the caller's event loop (an ``AsyncPipeline`` in the runtime's loop); ``run``
    needs a ``portal`` (:func:`~simone.agents.adapters.open_blocking`) or an anyio worker thread.
    """

    def __init__(
        self,
        runtime: Runtime,
        context: TrustedContext | Event | Mapping[str, Any],
        **options: Unpack[SourceOptions],
    ) -> None:
        self.source = SimoneSource(runtime, context, **options)

    def to_dict(self) -> dict[str, Any]:
        """Refused: the component holds an open runtime, which a pipeline file cannot describe."""
        raise ConfigError(
            "SimoneRetriever holds an open simone runtime and cannot be serialised; build it in code "
            "and add it to the pipeline after loading the rest"
        )

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """Retrieve evidence for ``query`` (``top_k`` overrides the limit).

        Raises:
            RetrievalFailed: every selected provider failed.
            RetrievalForbidden: the caller may not use what it asked for.
        """
        result = self.source.retrieve(query, limit=top_k)
        return {"documents": [to_document(item, result) for item in result.evidence]}

    @component.output_types(documents=list[Document])
    async def run_async(self, query: str, top_k: int | None = None) -> dict[str, list[Document]]:
        """:meth:`run` in the caller's event loop."""
        result = await self.source.aretrieve(query, limit=top_k)
        return {"documents": [to_document(item, result) for item in result.evidence]}
