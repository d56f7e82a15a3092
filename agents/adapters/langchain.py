"""LangChain: a ``BaseRetriever`` and a tool over simone's routed retrieval (extra ``simone[langchain]``).

::

    retriever = SimoneRetriever(runtime, {"actor": "alice", "project": "docs"}, limit=5)
    docs = await retriever.ainvoke("how are rankings fused?")

    tool = simone_tool(runtime, {"actor": "alice"})  # for an agent: the model gives only the query

Each :class:`~langchain_core.documents.Document` carries the evidence's text as ``page_content``, its id as
``id``, and :func:`~simone.agents.adapters.evidence_metadata` as ``metadata`` (locator, provider, scores,
trust…). The retriever raises :class:`~simone.agents.adapters.RetrievalFailed` /
:class:`~simone.agents.adapters.RetrievalForbidden` (LangChain reports them to the callbacks'
``on_retriever_error``) and warns with :class:`~simone.agents.adapters.PartialRetrievalWarning`. The tool
follows LangChain's tool convention instead: a failed or forbidden retrieval raises
:class:`~langchain_core.tools.ToolException`, which ``handle_tool_error=True`` (the default here) turns
into a ``ToolMessage`` with ``status="error"`` whose text says what failed; its successful answer is
``content_and_artifact``: simone's rendered text for the model, the whole
:class:`~simone.runtime.RetrievalResult` as the artifact.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from pydantic import PrivateAttr
from simone.agents import render_tool_result
from simone.agents.adapters._core import (
    TOOL_DESCRIPTION,
    PartialRetrieval,
    RetrievalFailed,
    RetrievalForbidden,
    RetrieveArgs,
    SimoneSource,
    SourceOptions,
    check_result,
    evidence_metadata,
    missing_extra,
)
from simone.runtime import Evidence, InvalidRequest, RetrievalResult, TrustedContext

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
    )
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.tools import StructuredTool, ToolException
except ImportError as exc:  # pragma: no cover -- exercised in a subprocess without the package
    raise missing_extra("langchain", "langchain-core", exc) from exc

if TYPE_CHECKING:
    from simone.agents import Event, Runtime

__all__ = ("SimoneRetriever", "simone_tool", "to_document")


def to_document(item: Evidence, result: RetrievalResult | None = None) -> Document:
    """One piece of evidence as a LangChain document (metadata: :func:`evidence_metadata`)."""
    return Document(id=item.id, page_content=item.content, metadata=evidence_metadata(item, result))


class SimoneRetriever(BaseRetriever):
    """simone's routed retrieval as a LangChain retriever, for one trusted scope.

    Args:
        runtime: an open :class:`~simone.agents.Runtime`.
        context: the trusted context, or the event to admit on each call (see
            :class:`~simone.agents.adapters.SimoneSource`).
        **options: :class:`~simone.agents.adapters.SourceOptions` (``limit``, ``providers``, ``partial``,
            ``portal`` for ``invoke`` from synchronous code…).

    ``ainvoke`` runs in the caller's event loop (the runtime's); ``invoke`` needs a ``portal``
    (:func:`~simone.agents.adapters.open_blocking`) or an anyio worker thread.
    """

    _source: SimoneSource = PrivateAttr()

    def __init__(
        self,
        runtime: Runtime,
        context: TrustedContext | Event | Mapping[str, Any],
        **options: Unpack[SourceOptions],
    ) -> None:
        super().__init__()
        self._source = SimoneSource(runtime, context, **options)

    @property
    def source(self) -> SimoneSource:
        """The scoped retrieval this retriever calls."""
        return self._source

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        result = self._source.retrieve(query)
        return [to_document(item, result) for item in result.evidence]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        result = await self._source.aretrieve(query)
        return [to_document(item, result) for item in result.evidence]


def simone_tool(
    runtime: Runtime,
    context: TrustedContext | Event | Mapping[str, Any],
    *,
    name: str = "retrieve_context",
    description: str = TOOL_DESCRIPTION,
    handle_tool_error: bool = True,
    **options: Unpack[SourceOptions],
) -> StructuredTool:
    """A LangChain tool over simone's retrieval, whose only argument is the query.

    The scope is ``context``, fixed here by the builder; a call that carries a scope field is refused by
    :class:`~simone.agents.adapters.RetrieveArgs`' validation. The tool answers
    ``content_and_artifact``: the text simone renders for a model (status, limitations, numbered evidence
    blocks with source, locator and trust) and the :class:`~simone.runtime.RetrievalResult`.

    Args:
        runtime: an open :class:`~simone.agents.Runtime`.
        context: the trusted context, or the event to admit on each call.
        name: the tool's name.
        description: what the model reads about it.
        handle_tool_error: ``True``: a failed, forbidden (or, with ``partial="raise"``, partial) retrieval,
            an invalid query or arguments that carry scope become an error ``ToolMessage`` the model
            reads; ``False``: the :class:`~langchain_core.tools.ToolException` (or the arguments'
            ``ValidationError``) propagates.
        **options: :class:`~simone.agents.adapters.SourceOptions`.
    """
    source = SimoneSource(runtime, context, **options)

    def answer(result: RetrievalResult) -> tuple[str, RetrievalResult]:
        text = render_tool_result(name, result)
        try:
            check_result(result, partial=source.partial)
        except (RetrievalFailed, RetrievalForbidden, PartialRetrieval) as exc:
            raise ToolException(text) from exc
        return text, result

    async def aretrieve(query: str) -> tuple[str, RetrievalResult]:
        try:
            result = await source.raw(query)
        except InvalidRequest as exc:
            raise ToolException(str(exc)) from exc
        return answer(result)

    def retrieve(query: str) -> tuple[str, RetrievalResult]:
        try:
            result = source.blocking(lambda: source.raw(query))
        except InvalidRequest as exc:
            raise ToolException(str(exc)) from exc
        return answer(result)

    return StructuredTool.from_function(
        func=retrieve,
        coroutine=aretrieve,
        name=name,
        description=description,
        args_schema=RetrieveArgs,
        response_format="content_and_artifact",
        handle_tool_error=handle_tool_error,
        handle_validation_error=_invalid_arguments if handle_tool_error else False,
    )


def _invalid_arguments(error: Exception) -> str:
    """What the model reads when its arguments are refused (the reasons, not LangChain's bare notice)."""
    errors = getattr(error, "errors", None)
    reasons = [str(e.get("msg", e)) for e in errors()] if callable(errors) else [str(error)]
    return "invalid arguments for the retrieval tool: " + "; ".join(reasons)
