"""Issue 15, defect 9: the router's deadline is a bound and no provider fault raises out of retrieve().

The providers here are fault-injecting doubles of *external* evidence sources: they block the loop,
run in threads, shield themselves, raise cancellation, or answer with malformed errors and responses.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from simone.runtime import (
    AccessDenied,
    Evidence,
    Exclusion,
    ProviderError,
    ProviderFailure,
    ProviderKind,
    ProviderResponse,
    ProviderUnavailable,
    RateLimited,
    RetrievalRequest,
    RetrievalResult,
    Router,
    Status,
    TrustedContext,
)
from simone.runtime.testing import StaticProvider, make_evidence

CTX = TrustedContext(actor="alice", token_budget=10_000)
GOOD = make_evidence("ok", ["alpha text one", "alpha text two"])
ITEM = make_evidence("bad", ["bad text"])[0]

Behaviour = Callable[[RetrievalRequest, TrustedContext], Awaitable[object]]


class FaultyProvider:
    """A double of an external provider whose ``retrieve`` runs ``behaviour`` (any fault it likes)."""

    def __init__(self, name: str, behaviour: Behaviour, *, kind: object = ProviderKind.CUSTOM) -> None:
        self._name = name
        self._kind = kind
        self.behaviour = behaviour
        self.calls = 0

    @property
    def name(self) -> str:
        return self._name

    @property
    def kind(self) -> ProviderKind:
        return self._kind  # type: ignore[return-value]  # malformed on purpose in some tests

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        self.calls += 1
        return await self.behaviour(request, context)  # type: ignore[return-value]  # malformed on purpose


def run(router: Router, ctx: TrustedContext = CTX, **fields: object) -> RetrievalResult:
    async def go() -> RetrievalResult:
        return await router.retrieve(router.request("question", **fields), ctx)

    return anyio.run(go)


def accounted(result: RetrievalResult) -> int:
    b = result.budget
    return b.included + b.truncated + b.omitted + b.duplicates_dropped


def ok_provider() -> StaticProvider:
    return StaticProvider("ok", GOOD)


def assert_sound(result: RetrievalResult) -> None:
    """What every result must satisfy, whatever the providers did."""
    returned = sum(p.returned for p in result.trace.providers if p.outcome == "hits")
    assert accounted(result) == returned
    assert result.budget.used_tokens <= result.budget.max_tokens
    for failure in result.failures:
        assert ProviderFailure.model_validate(failure.model_dump()) == failure
    assert RetrievalResult.model_validate(json.loads(result.to_json())) == result


# --- the deadline bounds providers that cannot be cancelled -------------------------------------

DEADLINE_S = 0.1
LATE_S = 0.4


async def _blocks_the_loop(request: RetrievalRequest, context: TrustedContext) -> object:
    time.sleep(LATE_S)  # noqa: ASYNC251 -- the fault under test: a provider that blocks the event loop
    return ProviderResponse(evidence=make_evidence("late", ["LATE-PASSAGE"]))


async def _runs_in_a_thread(request: RetrievalRequest, context: TrustedContext) -> object:
    await anyio.to_thread.run_sync(time.sleep, LATE_S)  # not abandoned on cancel: waits for the thread
    return ProviderResponse(evidence=make_evidence("late", ["LATE-PASSAGE"]))


async def _shields_itself(request: RetrievalRequest, context: TrustedContext) -> object:
    with anyio.CancelScope(shield=True):
        await anyio.sleep(LATE_S)
    return ProviderResponse(evidence=make_evidence("late", ["LATE-PASSAGE"]))


async def _swallows_cancellation(request: RetrievalRequest, context: TrustedContext) -> object:
    try:
        await anyio.sleep(LATE_S)
    except anyio.get_cancelled_exc_class():
        pass  # answers anyway, at once, with no checkpoint that could deliver the cancellation again
    return ProviderResponse(evidence=make_evidence("late", ["LATE-PASSAGE"]))


@pytest.mark.parametrize(
    "behaviour",
    [_blocks_the_loop, _runs_in_a_thread, _shields_itself, _swallows_cancellation],
    ids=["blocks-the-loop", "thread", "shielded", "swallows-cancellation"],
)
def test_an_answer_after_the_deadline_is_a_timeout_and_its_evidence_is_not_used(
    behaviour: Behaviour,
) -> None:
    late = FaultyProvider("late", behaviour)
    result = run(Router([late, ok_provider()], provider_timeout_s=DEADLINE_S))
    (failure,) = result.failures
    assert failure.provider == "late" and failure.kind == "timeout" and failure.retryable
    assert result.status is Status.PARTIAL
    assert {e.content for e in result.evidence} == {"alpha text one", "alpha text two"}
    assert "LATE-PASSAGE" not in result.to_json()
    assert_sound(result)


def test_a_late_answer_alone_is_failed_not_complete() -> None:
    result = run(Router([FaultyProvider("late", _blocks_the_loop)], provider_timeout_s=DEADLINE_S))
    assert result.status is Status.FAILED and result.evidence == []
    assert result.failures[0].kind == "timeout"


def test_the_context_deadline_bounds_a_blocking_provider() -> None:
    ctx = TrustedContext(actor="a", deadline=time.time() + DEADLINE_S)
    result = run(Router([FaultyProvider("late", _blocks_the_loop)], provider_timeout_s=60), ctx=ctx)
    assert result.status is Status.FAILED and result.failures[0].kind == "timeout"


def test_an_expired_context_asks_no_provider_and_is_never_complete() -> None:
    ok = ok_provider()
    blocking = FaultyProvider("late", _blocks_the_loop)
    ctx = TrustedContext(actor="a", deadline=time.time() - 1)
    result = run(Router([ok, blocking], provider_timeout_s=60), ctx=ctx)
    assert result.status is Status.FAILED
    assert ok.calls == [] and blocking.calls == 0
    assert [(f.provider, f.kind, f.retryable) for f in result.failures] == [
        ("ok", "timeout", False),
        ("late", "timeout", False),
    ]
    assert all("deadline had already passed" in f.message for f in result.failures)
    assert_sound(result)


def test_a_fast_answer_is_unaffected_by_the_late_check() -> None:
    result = run(Router([ok_provider()], provider_timeout_s=DEADLINE_S))
    assert result.status is Status.COMPLETE and len(result.evidence) == 2


# --- cancellation ---------------------------------------------------------------------------------


async def _raises_cancelled(request: RetrievalRequest, context: TrustedContext) -> object:
    raise anyio.get_cancelled_exc_class()()


def test_a_provider_raising_cancellation_itself_is_an_error_failure() -> None:
    result = run(Router([FaultyProvider("cancels", _raises_cancelled), ok_provider()]))
    (failure,) = result.failures
    assert failure.provider == "cancels" and failure.kind == "error"
    assert "CancelledError" in failure.message
    assert result.status is Status.PARTIAL and len(result.evidence) == 2
    assert [p.provider for p in result.trace.providers] == ["cancels", "ok"]
    assert_sound(result)


def test_a_group_holding_a_cancellation_is_an_error_failure() -> None:
    async def raises_group(request: RetrievalRequest, context: TrustedContext) -> object:
        raise BaseExceptionGroup("inner tasks", [asyncio.CancelledError(), ValueError("x")])

    result = run(Router([FaultyProvider("group", raises_group), ok_provider()]))
    assert [(f.provider, f.kind) for f in result.failures] == [("group", "error")]


def test_a_group_holding_keyboard_interrupt_still_propagates() -> None:
    async def raises_group(request: RetrievalRequest, context: TrustedContext) -> object:
        raise BaseExceptionGroup("inner tasks", [KeyboardInterrupt(), ValueError("x")])

    with pytest.raises(BaseExceptionGroup) as caught:
        run(Router([FaultyProvider("group", raises_group)]))
    assert caught.group_contains(KeyboardInterrupt)


@pytest.mark.parametrize("fresh", [True, False], ids=["raises-a-fresh-cancellation", "re-raises"])
def test_a_real_outer_cancellation_still_propagates(fresh: bool) -> None:
    seen: list[str] = []

    async def cancelled_from_outside(request: RetrievalRequest, context: TrustedContext) -> object:
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            seen.append("cancelled")
            if fresh:  # what a wrapped client library may do
                raise anyio.get_cancelled_exc_class()() from None
            raise
        return ProviderResponse()

    router = Router([FaultyProvider("slow", cancelled_from_outside), ok_provider()], provider_timeout_s=60)
    outcome: list[object] = []

    async def go() -> None:
        with anyio.move_on_after(0.1) as scope:
            outcome.append(await router.retrieve(router.request("q"), CTX))
        assert scope.cancelled_caught

    anyio.run(go)
    assert outcome == [] and seen == ["cancelled"]


# --- malformed errors -----------------------------------------------------------------------------


class _Undocumented(ProviderError):
    kind = "boom"  # type: ignore[assignment]  # not a FailureKind, on purpose


class _UnprintableError(Exception):
    def __str__(self) -> str:
        raise RuntimeError("str() is broken")


class _NotTextError(Exception):
    def __str__(self) -> str:
        return 42  # type: ignore[return-value]  # str() raises TypeError


def _no_kind(self: ProviderError) -> str:
    raise RuntimeError("no kind")


class _BrokenKind(ProviderError):
    kind = property(_no_kind)  # reading it raises, on purpose


def _unprintable_provider_error() -> ProviderError:
    error = ProviderUnavailable("")
    error.message = None  # type: ignore[assignment]
    error.__class__ = type("Unprintable", (ProviderUnavailable,), {"__str__": _UnprintableError.__str__})
    return error


def _with_message(error: ProviderError, message: object) -> ProviderError:
    error.message = message  # type: ignore[assignment]
    return error


MALFORMED_ERRORS: dict[str, Callable[[], BaseException]] = {
    "undocumented-kind": lambda: _Undocumented("what is a boom"),
    "retryable-2": lambda: ProviderUnavailable("down", retryable=2),  # type: ignore[arg-type]
    "retry-after-text": lambda: RateLimited("slow", retry_after_s="soon"),  # type: ignore[arg-type]
    "retry-after-nan": lambda: RateLimited("slow", retry_after_s=float("nan")),
    "retry-after-negative": lambda: RateLimited("slow", retry_after_s=-5.0),
    "message-none-and-str-raises": _unprintable_provider_error,
    "message-not-text": lambda: _with_message(ProviderUnavailable("down"), 42),
    "kind-property-raises": lambda: _BrokenKind("x"),
    "str-raises": lambda: _UnprintableError(),
    "str-not-text": lambda: _NotTextError(),
}


@pytest.mark.parametrize("make", MALFORMED_ERRORS.values(), ids=MALFORMED_ERRORS.keys())
def test_a_malformed_error_is_an_error_failure(make: Callable[[], BaseException]) -> None:
    async def raises(request: RetrievalRequest, context: TrustedContext) -> object:
        raise make()

    result = run(Router([FaultyProvider("bad", raises), ok_provider()]))
    (failure,) = result.failures
    assert failure.provider == "bad" and failure.kind == "error"
    assert failure.retryable is False and failure.retry_after_s is None
    assert failure.message.startswith("bad raised")
    assert result.status is Status.PARTIAL and len(result.evidence) == 2
    assert_sound(result)


def test_a_failure_message_is_safe_to_serialise() -> None:
    long_and_odd = "x\ud800" + "y" * 10_000

    async def raises(request: RetrievalRequest, context: TrustedContext) -> object:
        raise ProviderUnavailable(long_and_odd)

    result = run(Router([FaultyProvider("bad", raises)]))
    (failure,) = result.failures
    assert failure.kind == "unavailable" and failure.retryable
    assert len(failure.message) <= 2000 and failure.message.startswith("x\ufffdyyy")
    assert_sound(result)


def test_well_formed_errors_keep_their_kind_and_hints() -> None:
    failure = ProviderFailure.from_error("api", RateLimited("slow down", retry_after_s=7.5), elapsed_ms=3.0)
    assert (failure.kind, failure.message, failure.retryable, failure.retry_after_s, failure.elapsed_ms) == (
        "rate_limited",
        "slow down",
        True,
        7.5,
        3.0,
    )
    denied = ProviderFailure.from_error("web", AccessDenied("researchers only"), leg="semantic")
    assert (denied.kind, denied.retryable, denied.leg) == ("forbidden", False, "semantic")
    plain = ProviderFailure.from_error("x", ZeroDivisionError("division by zero"))
    assert (plain.kind, plain.message) == ("error", "x raised ZeroDivisionError: division by zero")


# --- malformed responses --------------------------------------------------------------------------


_M = TypeVar("_M", ProviderResponse, Evidence, ProviderFailure, Exclusion)


def _construct(model: type[_M], **fields: Any) -> _M:
    return model.model_construct(**fields)  # skips validation, as a careless provider might


def _response(**fields: Any) -> ProviderResponse:
    return _construct(ProviderResponse, **fields)


MALFORMED_RESPONSES: dict[str, Callable[[], object]] = {
    "evidence-none": lambda: _response(evidence=None),
    "evidence-a-tuple-of-strings": lambda: _response(evidence=("a", "b")),
    "evidence-items-not-evidence": lambda: _response(evidence=[ITEM, "not evidence", {"id": "x"}]),
    "evidence-item-missing-fields": lambda: _response(evidence=[_construct(Evidence, content="x")]),
    "evidence-item-content-none": lambda: _response(evidence=[ITEM.model_copy(update={"content": None})]),
    "evidence-item-id-a-list": lambda: _response(evidence=[ITEM.model_copy(update={"id": ["x"]})]),
    "evidence-item-score-nan": lambda: _response(evidence=[ITEM.model_copy(update={"score": float("nan")})]),
    "evidence-item-locator-none": lambda: _response(evidence=[ITEM.model_copy(update={"locator": None})]),
    "evidence-item-metadata-a-list": lambda: _response(
        evidence=[ITEM.model_copy(update={"metadata": [1, 2]})]
    ),
    "degraded-none": lambda: _response(evidence=[ITEM], degraded=None),
    "degraded-not-text": lambda: _response(evidence=[ITEM], degraded=[1]),
    "leg-failures-not-failures": lambda: _response(evidence=[ITEM], leg_failures=["oops"]),
    "leg-failure-undocumented-kind": lambda: _response(
        evidence=[ITEM],
        leg_failures=[_construct(ProviderFailure, provider="bad", kind="weird", message="m")],
    ),
    "leg-failure-message-not-text": lambda: _response(
        evidence=[ITEM],
        leg_failures=[_construct(ProviderFailure, provider="bad", kind="error", message=_UnprintableError())],
    ),
    "details-none": lambda: _response(evidence=[ITEM], details=None),
    "details-not-text-keys": lambda: _response(evidence=[ITEM], details={1: "x"}),
    "excluded-not-exclusions": lambda: _response(evidence=[ITEM], excluded=[object()]),
    "excluded-bad-reason": lambda: _response(
        evidence=[ITEM],
        excluded=[_construct(Exclusion, id="i", provider="bad", locator="l", reason="meh")],
    ),
    "not-a-response": lambda: {"evidence": []},
}


@pytest.mark.parametrize("make", MALFORMED_RESPONSES.values(), ids=MALFORMED_RESPONSES.keys())
def test_a_malformed_response_is_an_invalid_response_failure(make: Callable[[], object]) -> None:
    async def answers(request: RetrievalRequest, context: TrustedContext) -> object:
        return make()

    result = run(Router([FaultyProvider("bad", answers), ok_provider()]))
    (failure,) = result.failures
    assert failure.provider == "bad" and failure.kind == "invalid_response"
    assert result.status is Status.PARTIAL
    assert {e.content for e in result.evidence} == {"alpha text one", "alpha text two"}
    assert_sound(result)


def test_a_provider_reporting_an_unknown_kind_is_an_error_failure() -> None:
    async def answers(request: RetrievalRequest, context: TrustedContext) -> object:
        return ProviderResponse(evidence=[ITEM])

    result = run(Router([FaultyProvider("bad", answers, kind="banana"), ok_provider()]))
    assert [(f.provider, f.kind) for f in result.failures] == [("bad", "error")]
    assert_sound(result)


def test_a_model_construct_response_with_valid_data_is_still_accepted() -> None:
    async def answers(request: RetrievalRequest, context: TrustedContext) -> object:
        rebuilt = Evidence.model_construct(**dict(ITEM.__dict__, score=3))  # an int score validates to 3.0
        return _response(evidence=[rebuilt], degraded=[], leg_failures=[], details={}, excluded=[])

    result = run(Router([FaultyProvider("bad", answers)]))
    assert result.status is Status.COMPLETE and result.failures == []
    assert [e.score for e in result.evidence] == [3.0] and isinstance(result.evidence[0].score, float)
    assert_sound(result)


def test_a_name_that_is_not_text_is_refused_at_construction() -> None:
    from simone.runtime import InvalidRequest

    with pytest.raises(InvalidRequest, match="name must be text"):
        Router([FaultyProvider(7, _raises_cancelled)])  # type: ignore[arg-type]


# --- a property over fault-injecting providers ----------------------------------------------------


@dataclass
class FakeClock:
    """The router's clock: late providers advance it instead of sleeping."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@dataclass
class Fault:
    """One fault kind: what the provider does, and the outcome the router must record for it."""

    expected: str  # "hits" or a failure kind
    act: Callable[[FakeClock, list[Evidence]], Awaitable[object]]
    kind: object = ProviderKind.CUSTOM


PROPERTY_TIMEOUT_S = 0.05  # real seconds, for the one fault that hangs until it is cancelled
LATE_BY_S = 1.0  # fake seconds, for the faults that answer late


def _raise(make: Callable[[], BaseException]) -> Callable[[FakeClock, list[Evidence]], Awaitable[object]]:
    async def act(clock: FakeClock, items: list[Evidence]) -> object:
        raise make()

    return act


def _answer(
    make: Callable[[list[Evidence]], object],
) -> Callable[[FakeClock, list[Evidence]], Awaitable[object]]:
    async def act(clock: FakeClock, items: list[Evidence]) -> object:
        return make(items)

    return act


async def _late_blocking(clock: FakeClock, items: list[Evidence]) -> object:
    clock.advance(LATE_BY_S)  # blocks the loop: no checkpoint at all
    return ProviderResponse(evidence=items)


async def _late_thread(clock: FakeClock, items: list[Evidence]) -> object:
    await anyio.to_thread.run_sync(clock.advance, LATE_BY_S)
    return ProviderResponse(evidence=items)


async def _late_shielded(clock: FakeClock, items: list[Evidence]) -> object:
    with anyio.CancelScope(shield=True):
        await anyio.lowlevel.checkpoint()
        clock.advance(LATE_BY_S)
    return ProviderResponse(evidence=items)


async def _swallows(clock: FakeClock, items: list[Evidence]) -> object:
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        clock.advance(LATE_BY_S)  # the real deadline passed; so does the fake one
    return ProviderResponse(evidence=items)


async def _hangs(clock: FakeClock, items: list[Evidence]) -> object:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


def _ignoring_items(make: Callable[[], object]) -> Callable[[list[Evidence]], object]:
    return lambda items: make()


def _bad_item(**update: object) -> Callable[[list[Evidence]], object]:
    return lambda items: _response(evidence=[*items, ITEM.model_copy(update=update)])


FAULTS: dict[str, Fault] = {
    "ok": Fault("hits", _answer(lambda items: ProviderResponse(evidence=items))),
    "returns-a-list": Fault("invalid_response", _answer(lambda items: items)),
    "ok-constructed": Fault("hits", _answer(lambda items: _response(evidence=items))),
    "unavailable": Fault("unavailable", _raise(lambda: ProviderUnavailable("down"))),
    "rate-limited": Fault("rate_limited", _raise(lambda: RateLimited("slow", retry_after_s=2.0))),
    "forbidden": Fault("forbidden", _raise(lambda: AccessDenied("no"))),
    "own-timeout-error": Fault("timeout", _raise(lambda: TimeoutError("socket timed out"))),
    **{f"error-{name}": Fault("error", _raise(make)) for name, make in MALFORMED_ERRORS.items()},
    "zero-division": Fault("error", _raise(lambda: ZeroDivisionError("x"))),
    "exception-group": Fault("error", _raise(lambda: ExceptionGroup("g", [ValueError("a")]))),
    "base-group-with-cancellation": Fault(
        "error", _raise(lambda: BaseExceptionGroup("g", [asyncio.CancelledError(), ValueError("a")]))
    ),
    "raises-cancelled": Fault("error", _raise(lambda: asyncio.CancelledError())),
    **{
        f"response-{name}": Fault("invalid_response", _answer(_ignoring_items(make)))
        for name, make in MALFORMED_RESPONSES.items()
    },
    "returns-none": Fault("invalid_response", _answer(lambda items: None)),
    "returns-text": Fault("invalid_response", _answer(lambda items: "evidence")),
    "good-items-then-a-bad-one": Fault("invalid_response", _answer(_bad_item(content=None))),
    "good-items-then-nan": Fault("invalid_response", _answer(_bad_item(score=float("inf")))),
    "unknown-provider-kind": Fault(
        "error", _answer(lambda items: ProviderResponse(evidence=items)), "banana"
    ),
    "late-blocking": Fault("timeout", _late_blocking),
    "late-thread": Fault("timeout", _late_thread),
    "late-shielded": Fault("timeout", _late_shielded),
    "swallows-cancellation": Fault("timeout", _swallows),
    "hangs": Fault("timeout", _hangs),
}

TEXTS = ["a b c", "d e f", "shared passage", "x" * 300, "y" * 900]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(FAULTS)), st.lists(st.sampled_from(TEXTS), max_size=5)),
        min_size=1,
        max_size=4,
    ),
    st.integers(min_value=1, max_value=400),
    st.integers(min_value=1, max_value=10),
    st.booleans(),
)
def test_retrieve_never_raises_and_accounts_for_every_item(
    plan: list[tuple[str, list[str]]], budget: int, limit: int, expired: bool
) -> None:
    clock = FakeClock()
    providers = []
    expected: dict[str, tuple[str, int]] = {}
    for n, (fault_name, texts) in enumerate(plan):
        fault = FAULTS[fault_name]
        name = f"p{n}-{fault_name}"
        items = make_evidence(name, texts)

        async def behaviour(
            request: RetrievalRequest,
            context: TrustedContext,
            act: Fault = fault,
            items: list[Evidence] = items,
        ) -> object:
            return await act.act(clock, items)

        providers.append(FaultyProvider(name, behaviour, kind=fault.kind))
        expected[name] = ("timeout", 0) if expired else (fault.expected, len(texts))
    ctx = TrustedContext(actor="a", token_budget=10_000, deadline=time.time() - 1 if expired else None)
    router = Router(providers, provider_timeout_s=PROPERTY_TIMEOUT_S, clock=clock)

    result = run(router, ctx=ctx, max_tokens=budget, limit=limit)  # must not raise

    failures = {f.provider: f for f in result.failures}
    for trace in result.trace.providers:
        outcome, count = expected[trace.provider]
        if outcome == "hits":
            assert trace.outcome == "hits" and trace.returned == count, trace
        else:
            assert failures[trace.provider].kind == outcome, failures[trace.provider]
    assert [t.provider for t in result.trace.providers] == list(expected)
    answered = sum(count for outcome, count in expected.values() if outcome == "hits")
    assert accounted(result) == answered  # the budget invariant, with late and invalid evidence left out
    assert len(result.evidence) <= limit and result.budget.used_tokens <= budget
    assert all(not e.content.startswith(("late", "bad")) for e in result.evidence)
    if any(outcome != "hits" for outcome, _ in expected.values()):
        assert result.status is not Status.COMPLETE
    if expired:
        assert result.status is Status.FAILED
        assert all(p.calls == 0 for p in providers)
    if all(outcome != "hits" for outcome, _ in expected.values()):
        assert result.status in (Status.FAILED, Status.FORBIDDEN) and result.evidence == []
    assert_sound(result)
