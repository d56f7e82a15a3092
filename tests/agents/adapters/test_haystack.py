"""The Haystack adapter against haystack-ai itself: the component alone and inside pipelines."""

import anyio
import pytest
from simone.agents import Runtime
from simone.agents.adapters import PartialRetrievalWarning, RetrievalFailed, open_blocking
from simone.providers.testing import FailingProvider
from simone.runtime import ConfigError, Settings

pytest.importorskip("haystack")
from haystack import Document, Pipeline
from haystack.core.errors import PipelineRuntimeError
from simone.agents.adapters.haystack import SimoneRetriever

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_haystack_telemetry")]

QUESTION = "How are the rankings of several providers fused?"


def test_the_component_returns_documents_with_scores_and_metadata(settings: Settings) -> None:
    async def main() -> None:
        async with Runtime(settings, web=False) as runtime:
            retriever = SimoneRetriever(runtime, {"actor": "alice"}, providers=("documents",))
            out = await retriever.run_async(query=QUESTION)
            assert set(out) == {"documents"}
            docs = out["documents"]
            assert docs and all(isinstance(doc, Document) for doc in docs)
            first = docs[0]
            assert first.id == first.meta["id"] and first.score == first.meta["fused_score"]
            assert "retrieval.md#L" in first.meta["locator"] and first.meta["trust"] == "trusted"
            assert first.meta["provider"] == "document-index" and first.meta["retrieval_status"] == "complete"
            assert first.content and "fus" in first.content.lower()

            pipeline = Pipeline()
            pipeline.add_component("retriever", retriever)
            result = await pipeline.run_async({"retriever": {"query": QUESTION, "top_k": 1}})
            assert [d.id for d in result["retriever"]["documents"]] == [first.id]
            with pytest.raises(ConfigError, match="cannot be serialised"):
                pipeline.to_dict()

    anyio.run(main)


def test_a_synchronous_pipeline_through_the_portal(settings: Settings) -> None:
    with open_blocking(settings, web=False) as (runtime, portal):
        pipeline = Pipeline()
        pipeline.add_component("retriever", SimoneRetriever(runtime, {"actor": "alice"}, portal=portal))
        docs = pipeline.run({"retriever": {"query": "deploy window"}})["retriever"]["documents"]
        assert any("Tuesday" in (doc.content or "") for doc in docs)
        assert not any("Friday" in (doc.content or "") for doc in docs)


def test_failures_raise_and_partial_warns(settings: Settings, wiki_down: FailingProvider) -> None:
    async def main() -> None:
        async with Runtime(settings, web=False, providers=[wiki_down]) as runtime:
            failing = SimoneRetriever(runtime, {"actor": "alice"}, providers=("wiki",))
            with pytest.raises(RetrievalFailed, match="the wiki is down"):
                await failing.run_async(query=QUESTION)
            pipeline = Pipeline()
            pipeline.add_component("retriever", failing)
            with pytest.raises(PipelineRuntimeError) as caught:
                await pipeline.run_async({"retriever": {"query": QUESTION}})
            assert isinstance(caught.value.__cause__, RetrievalFailed)

            partial = SimoneRetriever(runtime, {"actor": "alice"}, providers=("documents", "wiki"))
            with pytest.warns(PartialRetrievalWarning, match="wiki failed"):
                docs = (await partial.run_async(query=QUESTION))["documents"]
            assert docs and docs[0].meta["retrieval_status"] == "partial"

    anyio.run(main)
