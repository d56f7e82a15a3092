"""Issue 15, defect 9, in the retrieval workflow: a malformed provider is a failure, never an exception."""

from __future__ import annotations

import time

import anyio
from simone.providers.testing import FunctionProvider, make_evidence
from simone.runtime import (
    ProviderKind,
    ProviderResponse,
    RetrievalRequest,
    RetrievalResult,
    Router,
    Status,
    TrustedContext,
)
from simone.workflows.retrieval import retrieve, select

CTX = TrustedContext(actor="alice")


class _OddKind:
    """A double of an external provider whose ``kind`` is not a ProviderKind (or cannot be read)."""

    def __init__(self, name: str, kind: object) -> None:
        self._name = name
        self._kind = kind

    @property
    def name(self) -> str:
        return self._name

    @property
    def kind(self) -> ProviderKind:
        if isinstance(self._kind, BaseException):
            raise self._kind
        return self._kind  # type: ignore[return-value]  # malformed on purpose

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        return ProviderResponse(evidence=make_evidence(self._name, ["odd evidence"]))


def _docs() -> FunctionProvider:
    return FunctionProvider(
        "docs",
        lambda r, c: make_evidence("docs", ["deployments use blue green switching"]),
        kind=ProviderKind.DOCUMENT_INDEX,
    )


def _run(router: Router, ctx: TrustedContext = CTX, **fields: object) -> RetrievalResult:
    async def go() -> RetrievalResult:
        return await retrieve(router, router.request("how do deployments work?", **fields), ctx)

    return anyio.run(go)


def test_a_provider_whose_kind_is_junk_or_unreadable_is_an_error_failure_not_an_exception() -> None:
    router = Router([_OddKind("junk", "banana"), _OddKind("broken", RuntimeError("no kind")), _docs()])
    assert _run(router).status is Status.COMPLETE  # the policy asks docs only; selecting did not raise
    result = _run(router, providers=("junk", "broken", "docs"))
    assert sorted((f.provider, f.kind) for f in result.failures) == [("broken", "error"), ("junk", "error")]
    assert result.status is Status.PARTIAL
    assert [e.content for e in result.evidence] == ["deployments use blue green switching"]


def test_a_kind_given_as_plain_text_is_still_restricted() -> None:
    router = Router([_OddKind("web", "web-search"), _docs()])
    decision = select(router, RetrievalRequest.create("q", providers=("web", "docs")), CTX)
    assert [s.provider for s in decision.dropped] == ["web"]
    assert [s.provider for s in decision.selected] == ["docs"]


def test_an_expired_context_is_never_complete_through_the_workflow() -> None:
    docs = _docs()
    result = _run(Router([docs]), TrustedContext(actor="alice", deadline=time.time() - 1))
    assert result.status is Status.FAILED and docs.calls == []
    assert [f.kind for f in result.failures] == ["timeout"]
