from __future__ import annotations

import itertools
import json
import time

import anyio
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from simone.runtime import (
    AccessDenied,
    Caller,
    Evidence,
    InvalidRequest,
    ProviderKind,
    ProviderResponse,
    ProviderSelection,
    ProviderUnavailable,
    RateLimited,
    RetrievalRequest,
    RetrievalResult,
    Router,
    Status,
    TrustedContext,
    UnknownProvider,
)
from simone.runtime.testing import (
    FailingProvider,
    FunctionProvider,
    SlowProvider,
    StaticProvider,
    make_evidence,
)

CTX = TrustedContext(actor="alice", token_budget=10_000)


def run(
    router: Router, query: str = "question", ctx: TrustedContext = CTX, **fields: object
) -> RetrievalResult:
    async def go() -> RetrievalResult:
        return await router.retrieve(router.request(query, **fields), ctx)

    return anyio.run(go)


def accounted(result: RetrievalResult) -> int:
    b = result.budget
    return b.included + b.truncated + b.omitted + b.duplicates_dropped


OK = StaticProvider("ok", make_evidence("ok", ["alpha text one", "alpha text two"]))
EMPTY = StaticProvider("empty", [])
FAILED = FailingProvider("failed", ProviderUnavailable("backend down"))
TIMED_OUT = SlowProvider("timed-out", 5.0, make_evidence("timed-out", ["late"]))
BEHAVIOURS = {"ok": OK, "empty": EMPTY, "failed": FAILED, "timed-out": TIMED_OUT}


def expected_status(kinds: tuple[str, ...]) -> Status:
    if all(k in ("failed", "timed-out") for k in kinds):
        return Status.FAILED
    impaired = any(k in ("failed", "timed-out") for k in kinds)
    if "ok" in kinds:
        return Status.PARTIAL if impaired else Status.COMPLETE
    return Status.FAILED if impaired else Status.NO_RESULTS


COMBOS = [c for n in (1, 2, 3) for c in itertools.combinations_with_replacement(sorted(BEHAVIOURS), n)]


@pytest.mark.parametrize("kinds", COMBOS, ids=lambda c: "+".join(c))
def test_status_for_every_combination(kinds: tuple[str, ...]) -> None:
    providers = []
    for n, kind in enumerate(kinds):
        template = BEHAVIOURS[kind]
        name = f"{kind}-{n}"
        if kind == "ok":
            providers.append(
                StaticProvider(name, make_evidence(name, [f"alpha {name} one", f"alpha {name} two"]))
            )
        elif kind == "empty":
            providers.append(StaticProvider(name, []))
        elif kind == "failed":
            providers.append(FailingProvider(name, ProviderUnavailable("backend down")))
        else:
            providers.append(SlowProvider(name, 5.0))
        assert template is not None
    result = run(Router(providers, provider_timeout_s=0.05))
    assert result.status is expected_status(kinds)
    assert len(result.failures) == sum(k in ("failed", "timed-out") for k in kinds)
    assert {f.kind for f in result.failures} <= {"unavailable", "timeout"}
    assert accounted(result) == 2 * kinds.count("ok")
    if result.status in (Status.FAILED, Status.NO_RESULTS):
        assert result.evidence == []


def test_forbidden_when_every_provider_refuses_the_caller() -> None:
    router = Router([FailingProvider("web", AccessDenied("researchers only"))])
    result = run(router)
    assert result.status is Status.FORBIDDEN
    assert result.failures[0].kind == "forbidden"


def test_forbidden_beside_a_working_provider_is_partial() -> None:
    router = Router([FailingProvider("web", AccessDenied("researchers only")), OK])
    result = run(router)
    assert result.status is Status.PARTIAL
    assert [f.provider for f in result.failures] == ["web"]


def test_degraded_provider_makes_the_result_partial() -> None:
    def degraded(request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        return ProviderResponse(
            evidence=make_evidence("docs", ["some text"]), degraded=["semantic leg unavailable"]
        )

    result = run(Router([FunctionProvider("docs", degraded)]))
    assert result.status is Status.PARTIAL
    assert any("semantic leg unavailable" in note for note in result.limitations)


def test_a_raising_provider_is_a_failure_and_others_are_intact() -> None:
    boom = FunctionProvider("boom", lambda r, c: 1 / 0)
    result = run(Router([boom, OK]))
    assert result.status is Status.PARTIAL
    (failure,) = result.failures
    assert failure.kind == "error" and "ZeroDivisionError" in failure.message
    assert {e.content for e in result.evidence} == {"alpha text one", "alpha text two"}


def test_a_hanging_provider_times_out_without_delaying_the_others_much() -> None:
    slow = SlowProvider("slow", 30.0)
    result = run(Router([slow, OK], provider_timeout_s=0.2))
    assert slow.cancelled  # it was cut at its deadline, not waited for (30 s)
    (failure,) = result.failures
    assert failure.kind == "timeout" and failure.retryable
    assert len(result.evidence) == 2


def test_context_deadline_bounds_the_provider_deadline() -> None:
    ctx = TrustedContext(actor="a", deadline=time.time() + 0.1)
    result = run(Router([SlowProvider("slow", 30.0)], provider_timeout_s=60), ctx=ctx)
    assert result.status is Status.FAILED and result.failures[0].kind == "timeout"


@pytest.mark.parametrize(
    "bad",
    [
        None,
        "a string",
        {"evidence": []},
        ProviderResponse.model_construct(evidence=["not evidence"]),
    ],
    ids=["none", "string", "dict", "non-evidence-items"],
)
def test_malformed_answers_become_invalid_response(bad: object) -> None:
    result = run(Router([FunctionProvider("bad", lambda r, c: bad), OK]))
    (failure,) = result.failures
    assert failure.provider == "bad" and failure.kind == "invalid_response"
    assert result.status is Status.PARTIAL and len(result.evidence) == 2


def test_rate_limit_hint_is_kept() -> None:
    result = run(Router([FailingProvider("api", RateLimited("slow down", retry_after_s=7.5))]))
    (failure,) = result.failures
    assert failure.kind == "rate_limited" and failure.retryable and failure.retry_after_s == 7.5


def test_cancellation_propagates_and_is_not_swallowed() -> None:
    slow = SlowProvider("slow", 30.0)
    router = Router([slow], provider_timeout_s=60)
    outcome: list[object] = []

    async def go() -> None:
        with anyio.move_on_after(0.1) as scope:
            outcome.append(await router.retrieve(router.request("q"), CTX))
        assert scope.cancelled_caught

    anyio.run(go)
    assert outcome == [] and slow.cancelled


def test_cross_provider_duplicates_are_dropped_and_counted() -> None:
    same = "Exactly the same passage in two places."
    a = StaticProvider("a", make_evidence("a", [same, "only in a"]))
    b = StaticProvider("b", make_evidence("b", [same, "only in b"]))
    result = run(Router([a, b]))
    assert [e.content for e in result.evidence].count(same) == 1
    assert result.budget.duplicates_dropped == 1
    assert any(x.reason == "duplicate" for x in result.budget.exclusions)
    assert accounted(result) == 4


def test_within_provider_duplicates_count_once() -> None:
    items = make_evidence("a", ["one", "two"])
    result = run(Router([StaticProvider("a", [items[0], items[0], items[1]])]))
    assert result.budget.duplicates_dropped == 1
    assert result.trace.providers[0].duplicates_within == 1
    assert [e.rank for e in result.evidence] == [1, 2]


def test_trace_has_ranks_and_contributions() -> None:
    a = StaticProvider("a", make_evidence("a", ["first a", "second a"]))
    b = StaticProvider("b", make_evidence("b", ["first b"]))
    result = run(Router([a, b], weights={"b": 2.0}))
    top = result.trace.fusion[0]
    assert top.contributions[0].provider == "b" and top.contributions[0].rank == 1
    assert top.fused_score == pytest.approx(2 / 61)
    assert result.evidence[0].fused_score == pytest.approx(2 / 61)
    assert {p.provider for p in result.trace.providers} == {"a", "b"}
    assert result.trace.weights == {"a": 1.0, "b": 2.0}


def test_limit_and_budget_exclusions_are_listed() -> None:
    texts = [f"passage number {n} " + "word " * 60 for n in range(8)]
    result = run(Router([StaticProvider("a", make_evidence("a", texts))]), limit=5, max_tokens=200)
    reasons = [x.reason for x in result.budget.exclusions]
    assert len(result.budget.beyond_limit) == 3
    assert "over_budget" in reasons
    assert result.budget.used_tokens <= 200
    assert accounted(result) == 8


def test_nothing_fits_is_partial_and_said() -> None:
    result = run(Router([StaticProvider("a", make_evidence("a", ["x" * 4000]))]), max_tokens=5)
    assert result.evidence == []
    assert result.status is Status.PARTIAL
    assert any("none of it fit" in note for note in result.limitations)


def test_result_is_json_serialisable_and_round_trips() -> None:
    result = run(Router([OK, FAILED]))
    data = json.loads(result.to_json())
    assert data["status"] == "partial"
    assert RetrievalResult.model_validate(data) == result


def test_selection_reasons_are_recorded() -> None:
    router = Router([OK, EMPTY])

    async def go() -> RetrievalResult:
        return await router.retrieve(
            router.request("q"),
            CTX,
            selection=[ProviderSelection(provider="ok", reason="general context")],
            dropped=[ProviderSelection(provider="web", reason="forbidden for the orchestrator")],
        )

    result = anyio.run(go)
    assert [s.provider for s in result.request.selected] == ["ok"]
    assert result.request.dropped[0].reason.startswith("forbidden")
    assert result.trace.providers[0].provider == "ok"


def test_only_dropped_for_forbidden_reasons_is_forbidden() -> None:
    router = Router([OK])

    async def go() -> RetrievalResult:
        return await router.retrieve(
            router.request("q"),
            CTX,
            selection=[],
            dropped=[ProviderSelection(provider="web", reason="forbidden: x")],
        )

    assert anyio.run(go).status is Status.FORBIDDEN


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
def test_empty_query_is_refused(query: str) -> None:
    with pytest.raises(InvalidRequest, match="empty"):
        Router([OK]).request(query)


def test_one_megabyte_query_is_refused_with_the_limit() -> None:
    with pytest.raises(InvalidRequest, match="limit is 8,192"):
        Router([OK]).request("x" * 1_000_000)


@pytest.mark.parametrize("limit", [0, -1, 1001])
def test_bad_limits_are_refused(limit: int) -> None:
    with pytest.raises(InvalidRequest, match="limit"):
        Router([OK]).request("q", limit=limit)


def test_zero_budget_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="max_tokens"):
        Router([OK]).request("q", max_tokens=0)


def test_unknown_provider_is_named() -> None:
    with pytest.raises(UnknownProvider, match="'nope'.*registered: empty, ok"):
        run(Router([OK, EMPTY]), providers=("ok", "nope"))


def test_duplicate_names_in_a_request_collapse() -> None:
    result = run(Router([OK]), providers=("ok", "ok", "ok"))
    assert [s.provider for s in result.request.selected] == ["ok"]
    assert result.status is Status.COMPLETE


def test_empty_explicit_list_is_refused() -> None:
    with pytest.raises(InvalidRequest, match="at least one provider"):
        Router([OK]).request("q", providers=())


def test_duplicate_provider_names_at_construction() -> None:
    with pytest.raises(InvalidRequest, match="unique"):
        Router([OK, StaticProvider("ok", [])])


def test_not_a_string_query() -> None:
    with pytest.raises(InvalidRequest, match="text"):
        RetrievalRequest.create(42)  # type: ignore[arg-type]


def test_non_finite_score_is_refused_at_creation() -> None:
    with pytest.raises(ValueError, match="finite"):
        Evidence.create(
            provider=ProviderKind.CUSTOM, provider_name="x", locator="l", content="c", score=float("nan")
        )


# --- a property over whole router runs ------------------------------------------------------------

provider_texts = st.lists(
    st.lists(
        st.sampled_from(["a b c", "d e f", "g h i", "shared passage", "x" * 300, "y" * 900]), max_size=6
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(provider_texts, st.integers(min_value=1, max_value=400), st.integers(min_value=1, max_value=10))
def test_every_item_is_accounted_for_and_budget_respected(
    texts: list[list[str]], budget: int, limit: int
) -> None:
    providers = [StaticProvider(f"p{n}", make_evidence(f"p{n}", t)) for n, t in enumerate(texts)]
    result = run(
        Router(providers), max_tokens=budget, limit=limit, ctx=TrustedContext(actor="a", caller=Caller.SYSTEM)
    )
    assert accounted(result) == sum(len(t) for t in texts)
    assert result.budget.used_tokens <= budget
    assert len(result.evidence) <= limit
