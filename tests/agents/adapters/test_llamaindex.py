"""The LlamaIndex adapter against llama-index-core itself: a real runtime over the indexed handbook."""

import anyio
import pytest
from simone.agents import Runtime
from simone.agents.adapters import PartialRetrievalWarning, RetrievalFailed, RetrievalForbidden, open_blocking
from simone.providers.testing import FailingProvider, LoopbackWeb
from simone.runtime import AccessDenied, Settings

pytest.importorskip("llama_index.core")
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode
from simone.agents.adapters.llamaindex import SimoneRetriever

pytestmark = pytest.mark.slow

QUESTION = "How are the rankings of several providers fused?"


def test_nodes_carry_the_evidence_its_fused_score_and_metadata(settings: Settings) -> None:
    async def main() -> None:
        async with Runtime(settings, web=False) as runtime:
            retriever = SimoneRetriever(runtime, {"actor": "alice"}, limit=4, providers=("documents",))
            nodes = await retriever.aretrieve(QUESTION)
            assert nodes and len(nodes) <= 4
            first = nodes[0]
            assert isinstance(first, NodeWithScore) and isinstance(first.node, TextNode)
            meta = first.node.metadata
            assert first.node.node_id == meta["id"] and "retrieval.md#L" in meta["locator"]
            assert first.score == meta["fused_score"] and first.score is not None
            assert [n.score for n in nodes] == sorted((n.score or 0.0 for n in nodes), reverse=True)
            assert meta["provider"] == "document-index" and meta["trust"] == "trusted"
            assert meta["retrieval_status"] == "complete"
            # what an LLM reads: title, locator, provider and trust with the text; no digests or scores
            shown = first.node.get_content(metadata_mode=MetadataMode.LLM)
            assert f"locator: {meta['locator']}" in shown and "trust: trusted" in shown
            assert meta["digest"] not in shown and "fused_score" not in shown
            assert first.node.get_content(metadata_mode=MetadataMode.EMBED) == first.node.text

    anyio.run(main)


def test_retrieve_from_synchronous_code_through_the_portal(settings: Settings) -> None:
    with open_blocking(settings, web=False) as (runtime, portal):
        retriever = SimoneRetriever(runtime, {"actor": "alice"}, portal=portal, providers=("memory",))
        nodes = retriever.retrieve("deploy window")
        assert [n.node.metadata["provider"] for n in nodes] == ["memory"]
        assert "Tuesday" in nodes[0].node.get_content()


def test_failed_and_partial_raise_and_warn(settings: Settings, wiki_down: FailingProvider) -> None:
    async def main() -> None:
        async with Runtime(settings, web=False, providers=[wiki_down]) as runtime:
            with pytest.raises(RetrievalFailed, match="wiki failed \\(unavailable\\)"):
                await SimoneRetriever(runtime, {"actor": "alice"}, providers=("wiki",)).aretrieve(QUESTION)
            partial = SimoneRetriever(runtime, {"actor": "alice"}, providers=("documents", "wiki"))
            with pytest.warns(PartialRetrievalWarning):
                nodes = await partial.aretrieve(QUESTION)
            assert nodes and nodes[0].node.metadata["retrieval_status"] == "partial"

    anyio.run(main)


def test_asking_for_the_web_as_the_orchestrator_is_forbidden(
    web_settings: Settings, loopback_web: LoopbackWeb
) -> None:
    async def main() -> None:
        options = {"documents": False, "web_options": {"resolver": loopback_web.resolver()}}
        async with Runtime(web_settings, **options) as runtime:
            retriever = SimoneRetriever(runtime, {"actor": "alice"}, providers=("web",))
            with pytest.raises(RetrievalForbidden) as caught:
                await retriever.aretrieve("latest release notes")
            assert isinstance(caught.value, AccessDenied) and caught.value.kind == "forbidden"
            assert caught.value.result.status.value == "forbidden" and "web" in str(caught.value)

    anyio.run(main)
