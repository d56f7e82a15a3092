"""The retrieval workflow with a rerank stage: selection, fan-out, fusion, then the reranker, per request."""

from __future__ import annotations

import anyio
from simone.providers.rerank import HttpReranker
from simone.providers.testing import LoopbackRerankServer, StaticProvider, make_evidence
from simone.runtime import ProviderKind, RerankOptions, RetrievalResult, Router, Status, TrustedContext
from simone.workflows.retrieval import retrieve

CTX = TrustedContext(actor="alice", project="simone")
QUERY = "project deployment checklist"


def _providers() -> list[StaticProvider]:
    memory = StaticProvider(
        "memory",
        make_evidence(
            "memory", ["lunch at noon", "the deployment checklist of the project"], kind=ProviderKind.MEMORY
        ),
        kind=ProviderKind.MEMORY,
    )
    documents = StaticProvider(
        "documents",
        make_evidence(
            "documents", ["the project logo", "deployment steps"], kind=ProviderKind.DOCUMENT_INDEX
        ),
        kind=ProviderKind.DOCUMENT_INDEX,
    )
    return [memory, documents]


def test_the_workflow_reranks_after_fusion_and_a_request_can_keep_the_fused_order() -> None:
    with LoopbackRerankServer() as server:

        async def go(rerank: bool | None) -> RetrievalResult:
            async with HttpReranker(server.url, api="tei") as reranker:
                router = Router(_providers(), reranker=reranker, rerank=RerankOptions(candidates=10))
                return await retrieve(router, router.request(QUERY, rerank=rerank), CTX)

        reranked = anyio.run(go, None)
        fused = anyio.run(go, False)
    assert {s.provider for s in reranked.request.selected} == {"memory", "documents"}
    assert reranked.evidence[0].content == "the deployment checklist of the project"
    assert reranked.trace.rerank is not None and reranked.trace.rerank.status == "reranked"
    assert reranked.status is Status.COMPLETE
    assert fused.trace.rerank is not None and fused.trace.rerank.status == "skipped"
    assert [e.content for e in fused.evidence] != [e.content for e in reranked.evidence]
    assert sorted(e.id for e in fused.evidence) == sorted(e.id for e in reranked.evidence)
    assert len(server.requests) == 1  # the opted-out request never reached the reranker
