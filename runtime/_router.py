"""The router mechanism: fan out, check each answer, then assemble the result.

The assembly (fuse by RRF, drop duplicates, pack into the budget, report status) is the pure steps
of :mod:`simone.runtime.ranking._assembly`; this module owns the I/O: deadlines, faults and answer checks.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import anyio
import anyio.lowlevel
from pydantic import ValidationError
from simone.runtime._config import MAX_QUERY_CHARS, describe_validation_error
from simone.runtime._contracts import (
    Evidence,
    Exclusion,
    ProviderFailure,
    ProviderHits,
    ProviderKind,
    ProviderResponse,
    ProviderSelection,
    RequestSummary,
    RerankTrace,
    RetrievalRequest,
    RetrievalResult,
    Status,
    Trace,
    Trust,
    TrustedContext,
    safe_text,
)
from simone.runtime._detached import Detached
from simone.runtime._errors import FailureKind, InvalidRequest, UnknownProvider
from simone.runtime._provider import Provider
from simone.runtime._rerank import Reranked, Reranker, RerankOptions, rerank_stage
from simone.runtime.ranking import (
    MIN_TRUNCATION_TOKENS,
    RRF_K,
    CharEstimator,
    Outcome,
    TokenEstimator,
    collect,
    pack_candidates,
    rank,
    report,
)
from simone.runtime.tracing import fail, leg_span, retrieval_span

CANCEL_GRACE_S = 0.05
"""Seconds past its deadline a cancelled provider has to unwind before the router returns without it."""


class Router:
    """Fans a request out to providers and fuses what comes back.

    Args:
        providers: the providers, by their ``name`` (names must be unique).
        rrf_k: the RRF constant (60).
        weights: optional RRF weight per provider name (1.0 by default).
        estimator: counts tokens for packing (``chars/4 ESTIMATED`` by default).
        provider_timeout_s: each provider's deadline, further bounded by the context's deadline.
        max_query_chars: longer queries are refused with :class:`InvalidRequest`.
        min_truncation_tokens: the least room for which the first misfit is truncated.
        clock: the monotonic time source in seconds for the deadline checks and the trace's timings
            (``time.perf_counter``; tests pass a fake one to make a provider late without waiting).
        cancel_grace_s: how long past its deadline a cancelled provider may take to unwind before the
            router stops waiting for it (:data:`CANCEL_GRACE_S`); the stated slack of the deadline.
        reranker: reorders the first fused candidates after fusion (see :mod:`simone.runtime._rerank`
            and docs/rerank.md); ``None`` (default) keeps the fused order.
        rerank: the stage's numbers (candidates, timeout, whether requests rerank by default).
    """

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        rrf_k: int = RRF_K,
        weights: Mapping[str, float] | None = None,
        estimator: TokenEstimator | None = None,
        provider_timeout_s: float = 10.0,
        max_query_chars: int = MAX_QUERY_CHARS,
        min_truncation_tokens: int = MIN_TRUNCATION_TOKENS,
        clock: Callable[[], float] = time.perf_counter,
        cancel_grace_s: float = CANCEL_GRACE_S,
        reranker: Reranker | None = None,
        rerank: RerankOptions | None = None,
    ) -> None:
        by_name: dict[str, Provider] = {}
        for provider in providers:
            if not isinstance(provider.name, str):
                raise InvalidRequest(f"a provider's name must be text, not {type(provider.name).__name__}")
            if provider.name in by_name:
                raise InvalidRequest(f"two providers are named {provider.name!r}; names must be unique")
            by_name[provider.name] = provider
        if rrf_k < 1:
            raise InvalidRequest("rrf_k must be >= 1")
        if provider_timeout_s <= 0:
            raise InvalidRequest("provider_timeout_s must be > 0")
        if not 0 <= cancel_grace_s < math.inf:
            raise InvalidRequest("cancel_grace_s must be >= 0 and finite")
        if reranker is not None and not isinstance(reranker, Reranker):
            raise InvalidRequest(f"the reranker must have a name and an async rerank(), not {reranker!r}")
        self._providers = by_name
        self.rrf_k = rrf_k
        self.weights = dict(weights or {})
        self.estimator: TokenEstimator = estimator or CharEstimator()
        self.provider_timeout_s = provider_timeout_s
        self.max_query_chars = max_query_chars
        self.min_truncation_tokens = min_truncation_tokens
        self.clock = clock
        self.cancel_grace_s = cancel_grace_s
        self.reranker = reranker
        self.rerank = rerank or RerankOptions()

    @property
    def providers(self) -> Mapping[str, Provider]:
        """The registered providers by name."""
        return dict(self._providers)

    def request(self, query: str, **fields: object) -> RetrievalRequest:
        """Build a request with this router's query limit (bad input raises :class:`InvalidRequest`)."""
        return RetrievalRequest.create(query, max_query_chars=self.max_query_chars, **fields)

    async def retrieve(
        self,
        request: RetrievalRequest,
        context: TrustedContext,
        *,
        selection: Sequence[ProviderSelection] | None = None,
        dropped: Sequence[ProviderSelection] = (),
    ) -> RetrievalResult:
        """Serve ``request`` for ``context``.

        The providers asked are ``request.providers`` when given (each must be registered), else
        ``selection`` (a policy's choice, with reasons), else every registered provider.

        Deadlines: each provider has ``provider_timeout_s`` from its start, cut to what is left of
        ``context.deadline`` and of the caller's cancel scopes. One still running then is cancelled,
        and the call returns by the deadline plus ``cancel_grace_s`` whatever the provider does: one
        that does not stop (it waits on a thread that is not abandoned, shields itself or swallows the
        cancellation) is left to finish on its own task and is a ``timeout`` failure. A provider that
        blocks the event loop itself cannot be preempted: it is timed when it yields, and an answer
        that arrives after its deadline is a ``timeout`` failure whose evidence is not used.
        When the context's deadline has already passed, no provider is asked: each one selected is
        recorded as a ``timeout`` failure (not retryable under this context) and the status is
        ``failed``, never ``complete``.

        Provider faults never raise out of here: a :class:`~simone.runtime.ProviderError` becomes a
        failure of its kind (see :meth:`ProviderFailure.from_error` for malformed ones), any other
        exception, or a cancellation exception the provider raised while the router itself was not
        cancelled, a failure of kind ``error``; an answer that is not a valid
        :class:`ProviderResponse` (also one built with ``model_construct``) a failure of kind
        ``invalid_response``. A real cancellation of the caller still propagates.

        Raises:
            InvalidRequest: the query is too long or nothing was selected.
            UnknownProvider: an explicit provider name is not registered.
        """
        clock = self.clock
        started = clock()
        if len(request.query) > self.max_query_chars:
            raise InvalidRequest(
                f"the query has {len(request.query):,} characters; the limit is {self.max_query_chars:,}"
            )
        chosen = self._choose(request, selection)
        if not chosen and not dropped:
            raise InvalidRequest("no provider was selected; register one or name one in the request")
        max_tokens = min(request.max_tokens or context.token_budget, context.token_budget)

        mode = request.mode.value if request.mode is not None else "default"
        with retrieval_span([c.provider for c in chosen], mode=mode, limit=request.limit) as span:
            fan_started = clock()
            outcomes = await self._fan_out(request, context, chosen)
            fan_ms = (clock() - fan_started) * 1000
            collected = collect(outcomes)
            wanted = self.reranker is not None and self.rerank.wanted(request)
            depth = max(request.limit, self.rerank.candidates) if wanted else request.limit
            ranked = rank(
                collected.evidence, collected.rankings, limit=depth, k=self.rrf_k, weights=self.weights
            )
            reranked: Reranked | None = None
            if wanted and self.reranker is not None:
                reranked = await rerank_stage(
                    self.reranker,
                    request.query,
                    [c.evidence for c in ranked.candidates],
                    self.rerank,
                    context,
                    clock=clock,
                )
                ranked = _reordered(ranked, reranked, request.limit)
                fan_ms += reranked.trace.elapsed_ms  # the stage's time is not the router's overhead
            result = self._assemble(
                request, context, chosen, list(dropped), outcomes, max_tokens, collected, ranked, reranked
            )
            span.set_attribute("simone.status", result.status.value)
            span.set_attribute("simone.evidence.count", len(result.evidence))
            span.set_attribute("simone.failures", [f.provider for f in result.failures])
        total_ms = (clock() - started) * 1000
        trace = result.trace.model_copy(
            update={"total_ms": total_ms, "router_ms": max(0.0, total_ms - fan_ms)}
        )
        return result.model_copy(update={"trace": trace})

    def _choose(
        self, request: RetrievalRequest, selection: Sequence[ProviderSelection] | None
    ) -> list[ProviderSelection]:
        if request.providers is not None:
            unknown = [name for name in request.providers if name not in self._providers]
            if unknown:
                known = ", ".join(sorted(self._providers)) or "none"
                raise UnknownProvider(
                    f"unknown provider(s) {', '.join(map(repr, unknown))}; registered: {known}"
                )
            return [
                ProviderSelection(provider=name, reason="named explicitly in the request")
                for name in request.providers
            ]
        if selection is not None:
            unknown = [s.provider for s in selection if s.provider not in self._providers]
            if unknown:
                raise UnknownProvider(f"the selection names unregistered provider(s) {unknown}")
            return list({s.provider: s for s in selection}.values())
        return [
            ProviderSelection(provider=name, reason="all registered providers (no selection given)")
            for name in self._providers
        ]

    def _deadline_s(self, context: TrustedContext) -> float:
        # The provider runs outside the caller's cancel scopes (its own task), so the tightest of them
        # is folded into its deadline: the provider still sees it (anyio.current_effective_deadline).
        remaining = context.remaining_s()
        deadline = self.provider_timeout_s if remaining is None else min(self.provider_timeout_s, remaining)
        return min(deadline, anyio.current_effective_deadline() - anyio.current_time())

    async def _fan_out(
        self, request: RetrievalRequest, context: TrustedContext, chosen: Sequence[ProviderSelection]
    ) -> list[Outcome]:
        """Ask every chosen provider at once; one outcome per provider, in ``chosen`` order."""
        outcomes: list[Outcome | None] = [None] * len(chosen)
        if chosen:
            async with anyio.create_task_group() as group:
                for index, choice in enumerate(chosen):
                    group.start_soon(self._run_one, index, choice.provider, request, context, outcomes)
        return [  # every selected provider has an outcome: none may vanish from the result
            outcome
            if outcome is not None
            else ProviderFailure(
                provider=choice.provider, kind="error", message=f"{choice.provider} left no outcome"
            )
            for outcome, choice in zip(outcomes, chosen, strict=True)
        ]

    async def _run_one(
        self,
        index: int,
        name: str,
        request: RetrievalRequest,
        context: TrustedContext,
        outcomes: list[Outcome | None],
    ) -> None:
        with leg_span(name) as span:
            outcome = await self._ask(name, request, context)
            if isinstance(outcome, ProviderFailure):
                fail(span, outcome.kind)
            else:
                span.set_attribute("simone.evidence.count", len(outcome.evidence))
        outcomes[index] = outcome

    async def _ask(self, name: str, request: RetrievalRequest, context: TrustedContext) -> Outcome:
        """One provider's outcome by its deadline (+ ``cancel_grace_s``); a provider fault is a failure.

        The provider runs in a task of its own (:class:`~simone.runtime._detached.Detached`):
        one that cannot be cancelled in time (it waits on a thread that is not abandoned, shields
        itself or swallows its cancellation) is left behind to finish on its own, and this call returns
        a ``timeout`` failure at the deadline plus the grace.
        """
        provider = self._providers[name]
        deadline = self._deadline_s(context)
        clock = self.clock
        started = clock()
        if deadline <= 0:  # the context's deadline has passed: asking would only waste the provider's time
            return ProviderFailure(
                provider=name,
                kind="timeout",
                retryable=False,
                message=f"{name} was not asked: the request's deadline had already passed",
            )

        async def attempt() -> Outcome:
            # timed from when the provider's task first runs: a provider that blocked the loop
            # before it does not make this one late
            return await self._attempt(name, provider, request, context, deadline)

        work = Detached.start(attempt)
        with anyio.move_on_after(deadline + self.cancel_grace_s):
            return await work.wait()
        if work.done:  # it answered as the wait ran out (the loop was blocked meanwhile): use its outcome
            return work.result()
        return _timeout(name, deadline, (clock() - started) * 1000, abandoned=True)

    async def _attempt(
        self,
        name: str,
        provider: Provider,
        request: RetrievalRequest,
        context: TrustedContext,
        deadline: float,
    ) -> Outcome:
        """Ask ``provider`` under its deadline; runs in the provider's own task."""
        clock = self.clock
        started = clock()

        def elapsed() -> float:
            return (clock() - started) * 1000

        cancelled = anyio.get_cancelled_exc_class()
        response: object = None
        try:
            with anyio.fail_after(deadline) as scope:
                response = await provider.retrieve(request, context)
        except TimeoutError:
            return _timeout(name, deadline, elapsed())
        except cancelled as exc:
            # Either this task is being cancelled (the caller's scope), or the provider raised the
            # cancellation exception itself. A pending cancellation re-raises here and propagates;
            # otherwise the provider failed like any other bug.
            await anyio.lowlevel.checkpoint_if_cancelled()
            return _stray_cancellation(name, exc, elapsed())
        except Exception as exc:  # noqa: BLE001 -- a provider bug must not sink the others; cancellation propagates
            return ProviderFailure.from_error(name, exc, elapsed_ms=elapsed())
        except BaseExceptionGroup as group:  # a provider's own task group: fatal leaves propagate
            if group.subgroup(lambda e: not isinstance(e, Exception | cancelled | BaseExceptionGroup)):
                raise
            await anyio.lowlevel.checkpoint_if_cancelled()
            return ProviderFailure.from_error(name, group, elapsed_ms=elapsed())
        took_ms = elapsed()
        if scope.cancel_called or took_ms > deadline * 1000:
            # It answered after its deadline: it blocked the loop, waited on a thread, shielded itself
            # or swallowed the cancellation. The answer is late; its evidence is not used.
            return _timeout(name, deadline, took_ms, late=True)
        return _validate_response(name, provider, response, took_ms)

    def _assemble(
        self,
        request: RetrievalRequest,
        context: TrustedContext,
        chosen: list[ProviderSelection],
        dropped: list[ProviderSelection],
        outcomes: list[Outcome],
        max_tokens: int,
        collected: Any,
        ranked: Any,
        reranked: Reranked | None,
    ) -> RetrievalResult:
        """The steps of :mod:`simone.runtime.ranking._assembly` after fusion and the rerank stage.

        Pack, report, then the request summary, the rerank stage's failure (if any) and the trace.
        """
        fitted = pack_candidates(
            ranked.candidates, max_tokens, self.estimator, min_truncation_tokens=self.min_truncation_tokens
        )
        summary = report(
            outcomes,
            collected,
            ranked,
            fitted,
            max_tokens=max_tokens,
            estimator_label=self.estimator.label,
            dropped=dropped,
        )
        status, failures, limitations = summary.status, list(collected.failures), list(summary.limitations)
        rerank_trace = reranked.trace if reranked is not None else self._rerank_note(request)
        if reranked is not None and reranked.failure is not None:
            failure = reranked.failure
            failures.append(failure)
            limitations.append(
                f"the reranker {failure.provider} failed ({failure.kind}): {failure.message}; "
                "the evidence is in the fused order"
            )
            if status is Status.COMPLETE:
                status = Status.PARTIAL
        elif rerank_trace is not None and not rerank_trace.reranker:
            limitations.append(f"the request asked for a rerank, but {rerank_trace.reason}")
        return RetrievalResult(
            request=RequestSummary(
                query=request.query,
                caller=context.caller,
                selected=chosen,
                dropped=dropped,
                limit=request.limit,
                max_tokens=max_tokens,
                mode=request.mode,
            ),
            status=status,
            evidence=fitted.evidence,
            failures=failures,
            budget=summary.budget,
            trace=Trace(
                providers=collected.traces,
                fusion=ranked.fusion,
                rrf_k=self.rrf_k,
                weights={name: self.weights.get(name, 1.0) for name in collected.rankings},
                total_ms=0.0,
                router_ms=0.0,
                rerank=rerank_trace,
            ),
            limitations=limitations,
        )

    def _rerank_note(self, request: RetrievalRequest) -> RerankTrace | None:
        """Why the stage did not run, when that is worth a trace entry (``None``: nobody asked)."""
        if self.reranker is None:
            if request.rerank:
                return RerankTrace(
                    reranker="", status="skipped", reason="no reranker is configured ([rerank] backend)"
                )
            return None
        why = (
            "the request asked for the fused order"
            if request.rerank is False
            else "[rerank] by_default is off"
        )
        return RerankTrace(reranker=self.reranker.name, status="skipped", reason=why)


def _reordered(ranked: Any, reranked: Reranked, limit: int) -> Any:
    """``ranked`` in the stage's order, cut to ``limit`` (the cut ones go to ``beyond_limit``, in order).

    The candidates the reranker scored carry ``rerank_score`` and ``fused_position`` in their metadata.
    """
    candidates = list(ranked.candidates)
    fusion = list(ranked.fusion)
    ordered = []
    for position in reranked.order:
        candidate = candidates[position]
        score = reranked.scores.get(position)
        if score is not None:
            item = candidate.evidence
            metadata = {**item.metadata, "rerank_score": score, "fused_position": position + 1}
            candidate = dataclasses.replace(
                candidate, evidence=item.model_copy(update={"metadata": metadata})
            )
        ordered.append(candidate)
    fused_trace = [fusion[position] for position in reranked.order]
    cut = [c.evidence.id for c in ordered[limit:]]
    return dataclasses.replace(
        ranked,
        candidates=ordered[:limit],
        fusion=fused_trace[:limit],
        beyond_limit=[*cut, *ranked.beyond_limit],
    )


def _stray_cancellation(name: str, exc: BaseException, elapsed_ms: float) -> ProviderFailure:
    return ProviderFailure(
        provider=name,
        kind="error",
        elapsed_ms=elapsed_ms,
        message=f"{name} raised {type(exc).__name__} although the router was not cancelled: "
        + safe_text(exc, limit=500),
    )


def _timeout(
    name: str, deadline: float, elapsed_ms: float, *, late: bool = False, abandoned: bool = False
) -> ProviderFailure:
    if abandoned:
        message = (
            f"{name} did not answer within its {deadline:.2f}s deadline and had not stopped "
            f"{elapsed_ms / 1000 - deadline:.2f}s later; it was left to finish on its own and "
            "anything it returns is dropped"
        )
    elif late:
        message = (
            f"{name} answered after {elapsed_ms / 1000:.2f}s, past its {deadline:.2f}s deadline "
            "(it could not be cancelled in time); its late evidence was not used"
        )
    else:
        message = f"{name} did not answer within its {deadline:.2f}s deadline"
    return ProviderFailure(
        provider=name, kind="timeout", retryable=True, elapsed_ms=elapsed_ms, message=message
    )


def _validate_response(
    name: str, provider: Provider, response: object, elapsed_ms: float
) -> ProviderHits | ProviderFailure:
    """The provider's answer as hits, or the failure it stands for; never raises."""
    try:
        checked = _check_response(name, provider, response, elapsed_ms)
    except Exception as exc:  # noqa: BLE001 -- the last guard: an answer we cannot even read is invalid
        checked = ("invalid_response", f"{name} returned an answer that could not be read: {safe_text(exc)}")
    if isinstance(checked, ProviderHits):
        return checked
    kind, problem = checked
    return ProviderFailure(provider=name, kind=kind, elapsed_ms=elapsed_ms, message=safe_text(problem))


_M = TypeVar("_M", Evidence, Exclusion, ProviderFailure)


def _fine_evidence(item: object) -> bool:
    """Whether ``item`` is an :class:`Evidence` whose fields have exactly the validated types.

    Cheap enough for every item of every answer; an item that fails it is validated in full.
    """
    if type(item) is not Evidence:
        return False
    fields = item.__dict__
    try:
        score = fields["score"]
        rank = fields["rank"]
        fused = fields["fused_score"]
        return (
            type(fields["id"]) is str
            and type(fields["digest"]) is str
            and type(fields["content"]) is str
            and type(fields["locator"]) is str
            and type(fields["provider_name"]) is str
            and type(fields["title"]) is str
            and type(fields["provider"]) is ProviderKind
            and type(fields["trust"]) is Trust
            and type(fields["metadata"]) is dict
            and type(score) is float
            and math.isfinite(score)
            and (rank is None or type(rank) is int)
            and (fused is None or type(fused) is float)
        )
    except KeyError:  # model_construct() leaves out required fields it was not given
        return False


def _fine_exclusion(item: object) -> bool:
    if type(item) is not Exclusion:
        return False
    fields = item.__dict__
    try:
        tokens = fields["tokens"]
        return (
            type(fields["id"]) is str
            and type(fields["provider"]) is str
            and type(fields["locator"]) is str
            and type(fields["detail"]) is str
            and fields["reason"] in ("duplicate", "over_budget", "not_relevant")
            and (tokens is None or type(tokens) is int)
        )
    except KeyError:
        return False


def _revalidated(model: type[_M], item: object) -> tuple[_M | None, str]:
    """``item`` validated in full as ``model`` (its own subclass, when it is one), or the reason not."""
    if not isinstance(item, model):
        return None, f"{type(item).__name__}, not {model.__name__}"
    try:
        return type(item).model_validate(dict(item.__dict__)), ""
    except ValidationError as exc:
        return None, describe_validation_error(exc, limit=1, root=model.__name__)


def _check_response(
    name: str, provider: Provider, response: object, elapsed_ms: float
) -> ProviderHits | tuple[FailureKind, str]:
    """The hits of a well-formed answer, or the failure kind and problem of a malformed one.

    ``model_construct()`` skips validation, so every field is checked here; the common, well-formed
    answer costs one type check per field and item.
    """
    invalid: FailureKind = "invalid_response"
    if not isinstance(response, ProviderResponse):
        return invalid, f"{name} returned {type(response).__name__}, not a ProviderResponse"
    try:
        kind = ProviderKind(provider.kind)
    except Exception as exc:  # noqa: BLE001 -- the provider itself is broken, not its answer
        return "error", f"{name} reports a kind that is not a ProviderKind ({safe_text(exc, limit=200)})"
    fields = response.__dict__
    evidence, degraded, leg_failures, excluded, details, skipped = (
        fields.get(field)
        for field in ("evidence", "degraded", "leg_failures", "excluded", "details", "skipped_legs")
    )
    if not isinstance(evidence, list):
        return invalid, f"{name} returned a response whose evidence is {type(evidence).__name__}, not a list"
    if not (isinstance(degraded, list) and isinstance(leg_failures, list) and isinstance(excluded, list)):
        return invalid, f"{name} returned a response whose degraded, leg_failures or excluded is not a list"
    if not isinstance(details, dict):
        return invalid, f"{name} returned a response whose details are {type(details).__name__}, not a dict"
    items = _checked_evidence(name, evidence)
    if isinstance(items, str):
        return invalid, items
    if not all(isinstance(reason, str) for reason in degraded):
        return invalid, f"{name} returned degraded reasons that are not text"
    if skipped is None:  # a response built before the field existed (model_construct, pickles)
        skipped = {}
    if not (isinstance(skipped, dict) and all(isinstance(x, str) for pair in skipped.items() for x in pair)):
        return invalid, f"{name} returned skipped legs that are not a mapping of text to text"
    legs = _checked_legs(name, leg_failures)
    if isinstance(legs, str):
        return invalid, legs
    exclusions = _checked_exclusions(name, excluded)
    if isinstance(exclusions, str):
        return invalid, exclusions
    return ProviderHits(
        provider=name,
        kind=kind,
        evidence=list(items),
        elapsed_ms=elapsed_ms,
        degraded=list(degraded),
        leg_failures=legs,
        details=dict(details),
        excluded=list(exclusions),
        skipped_legs=dict(skipped),
    )


def _checked_evidence(name: str, evidence: list[Any]) -> list[Evidence] | str:
    """The evidence items (odd ones validated in full), or the problem with them."""
    if all(map(_fine_evidence, evidence)):
        return evidence
    items: list[Evidence] = []  # the slow path: validate each odd item in full
    alien = nonfinite = invalid_items = 0
    reason = ""
    for item in evidence:
        if _fine_evidence(item):
            items.append(item)
        elif not isinstance(item, Evidence):
            alien += 1
        elif isinstance(getattr(item, "score", None), float) and not math.isfinite(item.score):
            nonfinite += 1
        else:
            checked, why = _revalidated(Evidence, item)
            if checked is None:
                invalid_items += 1
                reason = reason or why
            else:
                items.append(checked)
    if alien:
        return f"{name} returned {alien} item(s) that are not Evidence"
    if nonfinite:
        return f"{name} returned {nonfinite} item(s) with a non-finite score"
    if invalid_items:
        return f"{name} returned {invalid_items} Evidence item(s) that do not validate ({reason})"
    return items


def _checked_legs(name: str, leg_failures: list[Any]) -> list[ProviderFailure] | str:
    """The leg failures, each validated in full, or the problem with the first malformed one."""
    legs: list[ProviderFailure] = []
    for leg in leg_failures:
        checked_leg, why = _revalidated(ProviderFailure, leg)
        if checked_leg is None:
            return f"{name} returned a malformed leg failure ({why})"
        legs.append(checked_leg)
    return legs


def _checked_exclusions(name: str, excluded: list[Any]) -> list[Exclusion] | str:
    """The exclusions (odd ones validated in full), or the problem with the first malformed one."""
    if all(map(_fine_exclusion, excluded)):
        return excluded
    exclusions: list[Exclusion] = []
    for item in excluded:
        checked, why = (item, "") if _fine_exclusion(item) else _revalidated(Exclusion, item)
        if checked is None:
            return f"{name} returned a malformed exclusion ({why})"
        exclusions.append(checked)
    return exclusions
