"""The LangChain adapter against langchain-core itself: a real runtime, the handbook indexed, real memory."""

import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest
from simone.agents import Runtime
from simone.agents.adapters import (
    PartialRetrieval,
    PartialRetrievalWarning,
    RetrievalFailed,
    open_blocking,
)
from simone.providers.testing import FailingProvider
from simone.runtime import ConfigError, RetrievalResult, Settings

pytest.importorskip("langchain_core")
from langchain_core.messages import ToolMessage
from langchain_core.tools import ToolException
from simone.agents.adapters.langchain import SimoneRetriever, simone_tool

pytestmark = pytest.mark.slow

QUESTION = "How are the rankings of several providers fused?"


def _call(args: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_call", "id": "call-1", "name": "retrieve_context", "args": args}


def test_the_retriever_maps_evidence_to_documents_with_metadata(settings: Settings) -> None:
    async def main() -> None:
        async with Runtime(settings, web=False) as runtime:
            retriever = SimoneRetriever(runtime, {"actor": "alice"}, limit=3, providers=("documents",))
            docs = await retriever.ainvoke(QUESTION)
            assert docs and len(docs) <= 3
            first = docs[0]
            meta = first.metadata
            assert "retrieval.md#L" in meta["locator"] and meta["source"] == meta["locator"]
            assert first.id == meta["id"] and len(first.id) == 64
            assert meta["provider"] == "document-index" and meta["provider_name"] == "documents"
            assert meta["trust"] == "trusted" and meta["rank"] == 1
            assert meta["fused_score"] > 0 and isinstance(meta["score"], float)
            assert meta["retrieval_status"] == "complete" and meta["limitations"] == []
            assert meta["details"]["method"] in ("hybrid", "lexical", "semantic")
            assert "fus" in first.page_content.lower()
            # the sync entry point in the event loop's own thread cannot reach the loop: said, not hung
            with pytest.raises(ConfigError, match="ainvoke"):
                retriever.invoke(QUESTION)
            # from an anyio worker thread of the runtime's loop, the sync entry point needs no portal
            synced = await anyio.to_thread.run_sync(retriever.invoke, QUESTION)
            assert [doc.id for doc in synced] == [doc.id for doc in docs]

    anyio.run(main)


def test_invoke_from_synchronous_code_through_the_portal(settings: Settings) -> None:
    with open_blocking(settings, web=False) as (runtime, portal):
        retriever = SimoneRetriever(runtime, {"actor": "alice"}, portal=portal, providers=("documents",))
        docs = retriever.invoke(QUESTION)
        assert docs and "retrieval.md" in docs[0].metadata["locator"]
        batch = retriever.batch([QUESTION, "embedding spaces"])
        assert len(batch) == 2 and all(batch)


def test_scope_is_the_builders_and_the_model_cannot_change_it(settings: Settings) -> None:
    async def main() -> None:
        async with Runtime(settings, web=False) as runtime:
            memory = SimoneRetriever(runtime, {"actor": "alice"}, providers=("memory",))
            notes = [doc.page_content for doc in await memory.ainvoke("deploy window")]
            assert any("Tuesday" in text for text in notes) and not any("Friday" in text for text in notes)

            tool = simone_tool(runtime, {"actor": "alice"}, providers=("memory",))
            assert set(tool.tool_call_schema.model_json_schema()["properties"]) == {"query"}
            message = await tool.ainvoke(_call({"query": "deploy window"}))
            assert isinstance(message, ToolMessage) and message.status == "success"
            assert "Tuesday" in message.content and "Friday" not in message.content
            assert isinstance(message.artifact, RetrievalResult)
            assert message.artifact.status.value == "complete"

            forged = await tool.ainvoke(_call({"query": "deploy window", "actor": "bob"}))
            assert forged.status == "error" and "ScopeViolation" in forged.content
            assert "Friday" not in forged.content

    anyio.run(main)


def test_failed_partial_and_the_tool_conventions(settings: Settings, wiki_down: FailingProvider) -> None:
    async def main() -> None:
        async with Runtime(settings, web=False, providers=[wiki_down]) as runtime:
            failed = SimoneRetriever(runtime, {"actor": "alice"}, providers=("wiki",))
            with pytest.raises(RetrievalFailed, match="the wiki is down") as caught:
                await failed.ainvoke(QUESTION)
            assert caught.value.kind == "unavailable" and caught.value.retryable
            assert caught.value.result.status.value == "failed" and caught.value.result.evidence == []

            both = ("documents", "wiki")
            partial = SimoneRetriever(runtime, {"actor": "alice"}, providers=both)
            with pytest.warns(PartialRetrievalWarning, match="wiki failed") as warned:
                docs = await partial.ainvoke(QUESTION)
            assert docs and all(doc.metadata["retrieval_status"] == "partial" for doc in docs)
            assert any("wiki" in note for note in docs[0].metadata["limitations"])
            assert isinstance(warned[0].message, PartialRetrievalWarning)
            strict = SimoneRetriever(runtime, {"actor": "alice"}, providers=both, partial="raise")
            with pytest.raises(PartialRetrieval):
                await strict.ainvoke(QUESTION)

            tool = simone_tool(runtime, {"actor": "alice"}, providers=("wiki",))
            message = await tool.ainvoke(_call({"query": QUESTION}))
            assert message.status == "error"
            assert (
                message.content.startswith("retrieve_context: failed")
                and "the wiki is down" in message.content
            )
            loud = simone_tool(runtime, {"actor": "alice"}, providers=("wiki",), handle_tool_error=False)
            with pytest.raises(ToolException, match="failed"):
                await loud.ainvoke(_call({"query": QUESTION}))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", PartialRetrievalWarning)
                mixed = simone_tool(runtime, {"actor": "alice"}, providers=both)
                ok = await mixed.ainvoke(_call({"query": QUESTION}))
            assert ok.status == "success" and ok.content.startswith("retrieve_context: partial")
            assert "wiki" in ok.content

    anyio.run(main)


def test_the_tool_runs_from_synchronous_code(settings: Settings, isolated_env: Path) -> None:
    with open_blocking(settings, web=False) as (runtime, portal):
        tool = simone_tool(runtime, {"actor": "alice"}, portal=portal, providers=("documents",))
        message = tool.invoke(_call({"query": QUESTION}))
        assert message.status == "success" and "retrieval.md" in message.content
        empty = tool.invoke(_call({"query": "   "}))
        assert empty.status == "error" and "empty" in empty.content
