"""The rerank stage after fusion: order, trace, per-request choice, and every fault kept as a value."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence

import anyio
import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from simone.runtime import (
    ConfigError,
    InvalidRequest,
    ProviderUnavailable,
    RateLimited,
    Reranker,
    RerankOptions,
    RerankSettings,
    RetrievalResult,
    Router,
    Status,
    TrustedContext,
)
from simone.runtime.testing import StaticProvider, make_evidence

CTX = TrustedContext(actor="alice", token_budget=10_000)
# distinct words, so no two documents are near-duplicates of each other
TEXTS = [f"document number {i}: " + " ".join(f"w{i}x{j}" for j in range(8)) for i in range(1, 31)]


class ScoringReranker:
    """A reranker that scores with a function of the document's text (a real one of the protocol)."""

    def __init__(
        self, score: Callable[[str], object], *, name: str = "rerank:test", delay_s: float = 0.0
    ) -> None:
        self.name = name
        self._score = score
        self._delay_s = delay_s
        self.calls: list[list[str]] = []

    async def rerank(self, query: str, documents: Sequence[str]) -> Sequence[float | None]:
        self.calls.append(list(documents))
        if self._delay_s:
            await anyio.sleep(self._delay_s)
        return [self._score(d) for d in documents]  # type: ignore[misc]


class RaisingReranker:
    name = "rerank:broken"

    def __init__(self, error: Exception) -> None:
        self._error = error

    async def rerank(self, query: str, documents: Sequence[str]) -> Sequence[float | None]:
        raise self._error


def number(document: str) -> int:
    match = re.search(r"number (\d+)", document)
    assert match is not None
    return int(match.group(1))


def run(router: Router, ctx: TrustedContext = CTX, **fields: object) -> RetrievalResult:
    async def go() -> RetrievalResult:
        return await router.retrieve(router.request("which document", **fields), ctx)

    return anyio.run(go)


def router_with(reranker: Reranker | None, **options: object) -> Router:
    provider = StaticProvider("docs", make_evidence("docs", TEXTS))
    return Router([provider], reranker=reranker, rerank=RerankOptions(**options))  # type: ignore[arg-type]


def numbers(result: RetrievalResult) -> list[int]:
    return [number(e.content) for e in result.evidence]


def accounted(result: RetrievalResult) -> int:
    b = result.budget
    return b.included + b.truncated + b.omitted + b.duplicates_dropped


def test_the_reranker_reorders_the_first_candidates_and_the_trace_shows_both_places() -> None:
    reranker = ScoringReranker(lambda d: float(number(d)))  # the higher the number, the better
    result = run(router_with(reranker, candidates=5), limit=5)
    assert numbers(result) == [5, 4, 3, 2, 1]
    assert result.status is Status.COMPLETE and not result.failures and not result.limitations
    trace = result.trace.rerank
    assert trace is not None and trace.status == "reranked" and trace.candidates == 5
    assert [(m.before, m.after) for m in trace.moves] == [(5, 1), (4, 2), (3, 3), (2, 4), (1, 5)]
    assert [m.id for m in trace.moves] == [e.id for e in result.evidence]
    first = result.evidence[0]
    assert first.metadata["rerank_score"] == 5.0 and first.metadata["fused_position"] == 5
    assert [f.id for f in result.trace.fusion] == [e.id for e in result.evidence]
    assert len(reranker.calls) == 1 and len(reranker.calls[0]) == 5


def test_candidates_beyond_the_limit_can_move_up_and_every_item_stays_accounted_for() -> None:
    reranker = ScoringReranker(lambda d: float(number(d)))
    result = run(router_with(reranker, candidates=20), limit=3)
    assert numbers(result) == [20, 19, 18]
    assert accounted(result) == len(TEXTS)
    beyond = result.budget.beyond_limit
    assert len(beyond) == len(TEXTS) - 3
    assert beyond[0] == result.trace.rerank.moves[3].id  # type: ignore[union-attr]


def test_only_the_first_n_are_sent_and_the_rest_keep_their_fused_places_after_them() -> None:
    reranker = ScoringReranker(lambda d: float(number(d)))
    result = run(router_with(reranker, candidates=3), limit=6)
    assert numbers(result) == [3, 2, 1, 4, 5, 6]
    assert "rerank_score" not in result.evidence[3].metadata


def test_unscored_documents_follow_the_scored_ones_in_fused_order_and_ties_keep_the_fused_order() -> None:
    reranker = ScoringReranker(lambda d: None if number(d) % 2 else 1.0)
    result = run(router_with(reranker, candidates=6), limit=6)
    assert numbers(result) == [2, 4, 6, 1, 3, 5]
    assert result.trace.rerank is not None and "did not score" in result.trace.rerank.reason


def test_a_request_can_opt_out_and_the_default_can_be_opt_in() -> None:
    reranker = ScoringReranker(lambda d: float(number(d)))
    out = run(router_with(reranker, candidates=5), limit=5, rerank=False)
    assert numbers(out) == [1, 2, 3, 4, 5] and not reranker.calls
    assert out.trace.rerank is not None and out.trace.rerank.status == "skipped"
    assert "fused order" in out.trace.rerank.reason
    opt_in = router_with(reranker, candidates=5, by_default=False)
    assert numbers(run(opt_in, limit=5)) == [1, 2, 3, 4, 5] and not reranker.calls
    assert numbers(run(opt_in, limit=5, rerank=True)) == [5, 4, 3, 2, 1]


def test_without_a_reranker_nothing_changes_and_an_explicit_ask_is_disclosed() -> None:
    plain = run(router_with(None), limit=5)
    assert plain.trace.rerank is None and plain.status is Status.COMPLETE and not plain.limitations
    asked = run(router_with(None), limit=5, rerank=True)
    assert numbers(asked) == [1, 2, 3, 4, 5] and asked.status is Status.COMPLETE
    assert asked.trace.rerank is not None and asked.trace.rerank.reranker == ""
    assert any("no reranker is configured" in note for note in asked.limitations)


def test_one_candidate_is_not_sent() -> None:
    reranker = ScoringReranker(lambda d: 1.0)
    router = Router([StaticProvider("docs", make_evidence("docs", ["only one"]))], reranker=reranker)
    result = run(router)
    assert not reranker.calls and result.trace.rerank is not None
    assert result.trace.rerank.status == "skipped" and result.status is Status.COMPLETE


@pytest.mark.parametrize(
    ("reranker", "kind"),
    [
        (RaisingReranker(RateLimited("slow down", retry_after_s=7.0)), "rate_limited"),
        (RaisingReranker(ProviderUnavailable("server down")), "unavailable"),
        (RaisingReranker(RuntimeError("a bug")), "error"),
        (ScoringReranker(lambda d: float("nan")), "invalid_response"),
        (ScoringReranker(lambda d: "high"), "invalid_response"),
        (ScoringReranker(lambda d: None), "invalid_response"),
    ],
    ids=["rate-limited", "unavailable", "bug", "nan", "not-a-number", "nothing-scored"],
)
def test_a_failing_reranker_keeps_the_fused_order_and_says_so(reranker: Reranker, kind: str) -> None:
    result = run(router_with(reranker, candidates=5), limit=5)
    assert numbers(result) == [1, 2, 3, 4, 5]
    assert result.status is Status.PARTIAL
    (failure,) = result.failures
    assert failure.kind == kind and failure.provider == reranker.name
    if kind == "rate_limited":
        assert failure.retry_after_s == 7.0 and failure.retryable
    assert any(f"the reranker {reranker.name} failed ({kind})" in note for note in result.limitations)
    trace = result.trace.rerank
    assert trace is not None and trace.status == "kept_fused"
    assert all(m.before == m.after for m in trace.moves)


def test_a_wrong_number_of_scores_is_invalid() -> None:
    class Short:
        name = "rerank:short"

        async def rerank(self, query: str, documents: Sequence[str]) -> Sequence[float | None]:
            return [1.0]

    result = run(router_with(Short(), candidates=5), limit=5)
    assert result.failures[0].kind == "invalid_response" and "1 score(s) for 5" in result.failures[0].message


def test_a_slow_reranker_times_out_within_the_stage_deadline() -> None:
    reranker = ScoringReranker(lambda d: float(number(d)), delay_s=5.0)
    result = run(router_with(reranker, candidates=5, timeout_s=0.1), limit=5)
    assert numbers(result) == [1, 2, 3, 4, 5]
    assert result.failures[0].kind == "timeout" and result.status is Status.PARTIAL


def test_the_request_deadline_cuts_the_stage() -> None:
    reranker = ScoringReranker(lambda d: float(number(d)), delay_s=5.0)
    ctx = TrustedContext(actor="alice", token_budget=10_000, deadline=time.time() + 0.3)
    result = run(router_with(reranker, candidates=5, timeout_s=30.0), ctx, limit=5)
    assert result.failures[0].kind == "timeout"
    past = TrustedContext(actor="alice", token_budget=10_000, deadline=time.time() - 1)
    late = anyio.run(_rerank_only, reranker, past)
    assert late.failure is not None and "already passed" in late.failure.message


async def _rerank_only(reranker: Reranker, ctx: TrustedContext):  # type: ignore[no-untyped-def]
    from simone.runtime import rerank_stage

    items = make_evidence("docs", TEXTS[:4])
    return await rerank_stage(reranker, "q", items, RerankOptions(), ctx)


def test_the_span_records_the_places_before_and_after(spans: InMemorySpanExporter) -> None:
    reranker = ScoringReranker(lambda d: float(number(d)))
    run(router_with(reranker, candidates=4), limit=4)
    (span,) = [s for s in spans.get_finished_spans() if s.name == "rerank rerank:test"]
    attributes = dict(span.attributes or {})
    assert attributes["simone.rerank.status"] == "reranked"
    assert list(attributes["simone.rerank.before"]) == [4, 3, 2, 1]  # type: ignore[arg-type]
    assert attributes["simone.rerank.candidates"] == 4 and attributes["simone.rerank.moved"] == 4
    failing = RaisingReranker(ProviderUnavailable("down"))
    spans.clear()
    run(router_with(failing, candidates=4), limit=4)
    (span,) = [s for s in spans.get_finished_spans() if s.name == "rerank rerank:broken"]
    assert dict(span.attributes or {})["error.type"] == "unavailable"


def test_options_and_settings_are_checked() -> None:
    with pytest.raises(ConfigError):
        RerankOptions(candidates=0)
    with pytest.raises(ConfigError):
        RerankOptions(timeout_s=0)
    options = RerankOptions.from_settings(RerankSettings(candidates=7, timeout_s=1.5, by_default=False))
    assert (options.candidates, options.timeout_s, options.by_default) == (7, 1.5, False)
    with pytest.raises(InvalidRequest):
        Router([], reranker=object())  # type: ignore[arg-type]
