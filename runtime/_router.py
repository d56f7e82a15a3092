"""The router mechanism: fan out, fuse by RRF, drop duplicates, pack into the budget, report status."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import anyio
from simone.runtime._contracts import (
    BudgetReport,
    Contribution,
    Evidence,
    Exclusion,
    FusedItem,
    ProviderFailure,
    ProviderHits,
    ProviderResponse,
    ProviderSelection,
    ProviderTrace,
    RequestSummary,
    RetrievalRequest,
    RetrievalResult,
    Status,
    Trace,
    TrustedContext,
)
from simone.runtime._dedup import DuplicateFinder
from simone.runtime._errors import InvalidRequest, ProviderError, UnknownProvider
from simone.runtime._fusion import RRF_K, contributions_of, rank_positions, rrf_scores
from simone.runtime._packing import MIN_TRUNCATION_TOKENS, CharEstimator, PackItem, TokenEstimator, pack
from simone.runtime._provider import Provider


def compute_status(outcomes: Sequence[ProviderHits | ProviderFailure], found: int) -> Status:
    """The status of a result from its outcomes and the number of distinct items found.

    * every provider failed → ``forbidden`` when every failure is ``forbidden``, else ``failed``;
    * items found → ``complete`` if no provider failed or was degraded, else ``partial``;
    * nothing found → ``no_results`` if every provider answered fully; if one failed or was
      degraded the search was incomplete, so it is ``failed`` (never reported as "nothing found").
    """
    if not outcomes:
        return Status.FAILED
    failures = [o for o in outcomes if isinstance(o, ProviderFailure)]
    if len(failures) == len(outcomes):
        return Status.FORBIDDEN if all(f.kind == "forbidden" for f in failures) else Status.FAILED
    impaired = bool(failures) or any(isinstance(o, ProviderHits) and o.degraded for o in outcomes)
    if found:
        return Status.PARTIAL if impaired else Status.COMPLETE
    return Status.FAILED if impaired else Status.NO_RESULTS


@dataclass(frozen=True, slots=True)
class _Timed:
    outcome: ProviderHits | ProviderFailure


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
    """

    def __init__(
        self,
        providers: Sequence[Provider],
        *,
        rrf_k: int = RRF_K,
        weights: Mapping[str, float] | None = None,
        estimator: TokenEstimator | None = None,
        provider_timeout_s: float = 10.0,
        max_query_chars: int = 8192,
        min_truncation_tokens: int = MIN_TRUNCATION_TOKENS,
    ) -> None:
        by_name: dict[str, Provider] = {}
        for provider in providers:
            if provider.name in by_name:
                raise InvalidRequest(f"two providers are named {provider.name!r}; names must be unique")
            by_name[provider.name] = provider
        if rrf_k < 1:
            raise InvalidRequest("rrf_k must be >= 1")
        if provider_timeout_s <= 0:
            raise InvalidRequest("provider_timeout_s must be > 0")
        self._providers = by_name
        self.rrf_k = rrf_k
        self.weights = dict(weights or {})
        self.estimator: TokenEstimator = estimator or CharEstimator()
        self.provider_timeout_s = provider_timeout_s
        self.max_query_chars = max_query_chars
        self.min_truncation_tokens = min_truncation_tokens

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

        Raises:
            InvalidRequest: the query is too long or nothing was selected.
            UnknownProvider: an explicit provider name is not registered.
        """
        started = time.perf_counter()
        if len(request.query) > self.max_query_chars:
            raise InvalidRequest(
                f"the query has {len(request.query):,} characters; the limit is {self.max_query_chars:,}"
            )
        chosen = self._choose(request, selection)
        if not chosen and not dropped:
            raise InvalidRequest("no provider was selected; register one or name one in the request")
        max_tokens = min(request.max_tokens or context.token_budget, context.token_budget)

        outcomes: list[ProviderHits | ProviderFailure | None] = [None] * len(chosen)
        fan_started = time.perf_counter()
        if chosen:
            async with anyio.create_task_group() as group:
                for index, choice in enumerate(chosen):
                    group.start_soon(
                        self._run_one, index, self._providers[choice.provider], request, context, outcomes
                    )
        fan_ms = (time.perf_counter() - fan_started) * 1000
        done = [outcome for outcome in outcomes if outcome is not None]
        result = self._assemble(request, context, chosen, list(dropped), done, max_tokens)
        total_ms = (time.perf_counter() - started) * 1000
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
        remaining = context.remaining_s()
        return self.provider_timeout_s if remaining is None else min(self.provider_timeout_s, remaining)

    async def _run_one(
        self,
        index: int,
        provider: Provider,
        request: RetrievalRequest,
        context: TrustedContext,
        outcomes: list[ProviderHits | ProviderFailure | None],
    ) -> None:
        name = provider.name
        deadline = self._deadline_s(context)
        started = time.perf_counter()

        def elapsed() -> float:
            return (time.perf_counter() - started) * 1000

        response: object = None
        try:
            with anyio.fail_after(deadline):
                response = await provider.retrieve(request, context)
        except TimeoutError:
            outcomes[index] = ProviderFailure(
                provider=name,
                kind="timeout",
                retryable=True,
                elapsed_ms=elapsed(),
                message=f"{name} did not answer within its {deadline:.2f}s deadline",
            )
            return
        except ProviderError as exc:
            outcomes[index] = ProviderFailure(
                provider=name,
                kind=exc.kind,
                message=exc.message or str(exc),
                retryable=exc.retryable,
                retry_after_s=exc.retry_after_s,
                elapsed_ms=elapsed(),
            )
            return
        except Exception as exc:  # noqa: BLE001 -- a provider bug must not sink the others; cancellation propagates
            outcomes[index] = ProviderFailure(
                provider=name,
                kind="error",
                retryable=False,
                elapsed_ms=elapsed(),
                message=f"{name} raised {type(exc).__name__}: {exc}",
            )
            return
        outcomes[index] = _validate_response(name, provider, response, elapsed())

    def _assemble(
        self,
        request: RetrievalRequest,
        context: TrustedContext,
        chosen: list[ProviderSelection],
        dropped: list[ProviderSelection],
        outcomes: list[ProviderHits | ProviderFailure],
        max_tokens: int,
    ) -> RetrievalResult:
        # This is the hot path of every request: plain dicts and C-level sorts, models only at the end.
        by_id: dict[str, Evidence] = {}
        rankings: dict[str, list[str]] = {}
        exclusions: list[Exclusion] = []
        traces: list[ProviderTrace] = []
        failures: list[ProviderFailure] = []
        returned_total = 0
        duplicates = 0
        for outcome in outcomes:
            if isinstance(outcome, ProviderFailure):
                failures.append(outcome)
                traces.append(
                    ProviderTrace(
                        provider=outcome.provider,
                        outcome="failure",
                        elapsed_ms=outcome.elapsed_ms,
                        returned=0,
                        kept=0,
                        duplicates_within=0,
                    )
                )
                continue
            failures.extend(outcome.leg_failures)
            exclusions.extend(outcome.excluded)
            items = outcome.evidence
            returned_total += len(items)
            ids = [item.id for item in items]
            digests = [item.digest for item in items]
            if (
                len(set(ids)) == len(ids)
                and len(set(digests)) == len(digests)
                and not set(ids) & set(digests)
            ):
                ranking = ids  # the common case: no duplicates within the provider
                fresh = dict(zip(ids, items, strict=True))
            else:  # dedup within the provider first: one rank per item (by id or digest)
                seen: set[str] = set()
                ranking = []
                fresh = {}
                for item in items:
                    if item.id in seen or item.digest in seen:
                        duplicates += 1
                        exclusions.append(
                            Exclusion(
                                id=item.id,
                                provider=outcome.provider,
                                locator=item.locator,
                                reason="duplicate",
                                detail="repeated within its provider",
                            )
                        )
                        continue
                    seen.add(item.id)
                    seen.add(item.digest)
                    ranking.append(item.id)
                    fresh[item.id] = item
            fresh.update(by_id)  # the same id from two providers is one item; the first provider's copy wins
            by_id = fresh
            rankings[outcome.provider] = ranking
            traces.append(
                ProviderTrace(
                    provider=outcome.provider,
                    outcome="hits",
                    elapsed_ms=outcome.elapsed_ms,
                    returned=len(items),
                    kept=len(ranking),
                    duplicates_within=len(items) - len(ranking),
                    degraded=list(outcome.degraded),
                    details=dict(outcome.details),
                )
            )
        # an id returned by two providers is one item: count the extra copies as duplicates
        duplicates += sum(len(r) for r in rankings.values()) - len(by_id)

        scores = rrf_scores(rankings, k=self.rrf_k, weights=self.weights)
        positions = rank_positions(rankings)
        order = sorted(sorted(scores), key=scores.__getitem__, reverse=True)  # score desc, ties by id
        finder = DuplicateFinder()
        candidates: list[tuple[Evidence, float, int]] = []
        fused_trace: list[FusedItem] = []
        position = 0
        while position < len(order) and len(candidates) < request.limit:
            evidence = by_id[order[position]]
            position += 1
            duplicate = finder.check(evidence.id, evidence.digest, evidence.locator, evidence.content)
            if duplicate is not None:
                duplicates += 1
                exclusions.append(
                    Exclusion(
                        id=evidence.id,
                        provider=evidence.provider_name,
                        locator=evidence.locator,
                        reason="duplicate",
                        detail=f"{duplicate[1]} as {duplicate[0][:12]}",
                    )
                )
                continue
            parts = contributions_of(evidence.id, positions, k=self.rrf_k, weights=self.weights)
            candidates.append((evidence, scores[evidence.id], min(rank for _, rank, _ in parts)))
            fused_trace.append(
                FusedItem(
                    id=evidence.id,
                    fused_score=scores[evidence.id],
                    contributions=[Contribution(provider=n, rank=r, contribution=c) for n, r, c in parts],
                )
            )
        beyond_limit = order[position:]

        packed = pack(
            [PackItem(e.id, e.content, e.provider_name, e.locator) for e, _, _ in candidates],
            max_tokens,
            self.estimator,
            min_truncation_tokens=self.min_truncation_tokens,
        )
        evidence_out: list[Evidence] = []
        truncated = 0
        for index, text, cut, tokens in packed.kept:
            evidence, score, rank = candidates[index]
            update: dict[str, object] = {"fused_score": score, "rank": rank}
            if cut:
                truncated += 1
                update["content"] = text
                update["metadata"] = {
                    **evidence.metadata,
                    "truncated": True,
                    "original_tokens": self.estimator.count(evidence.content),
                    "tokens": tokens,
                }
            evidence_out.append(evidence.model_copy(update=update))
        for index, tokens in packed.over_budget:
            evidence, _, _ = candidates[index]
            exclusions.append(
                Exclusion(
                    id=evidence.id,
                    provider=evidence.provider_name,
                    locator=evidence.locator,
                    reason="over_budget",
                    tokens=tokens,
                    detail=f"needs {tokens} tokens; the budget is {max_tokens}",
                )
            )
        omitted = len(packed.over_budget) + len(beyond_limit)
        budget = BudgetReport(
            max_tokens=max_tokens,
            used_tokens=packed.used_tokens,
            included=len(evidence_out) - truncated,
            truncated=truncated,
            omitted=omitted,
            duplicates_dropped=duplicates,
            estimator=self.estimator.label,
            exclusions=exclusions,
            beyond_limit=beyond_limit,
        )
        if (
            budget.included + truncated + omitted + duplicates != returned_total
        ):  # pragma: no cover - invariant
            raise AssertionError("packing lost track of an item; please report this as a bug")

        status = compute_status(outcomes, len(by_id))
        limitations = _limitations(outcomes, failures, status, evidence_out, budget)
        if status in (Status.COMPLETE, Status.PARTIAL) and not evidence_out:
            status = Status.PARTIAL
        if not chosen and dropped:
            status = Status.FORBIDDEN if all("forbidden" in d.reason for d in dropped) else Status.NO_RESULTS
        summary = RequestSummary(
            query=request.query,
            caller=context.caller,
            selected=chosen,
            dropped=dropped,
            limit=request.limit,
            max_tokens=max_tokens,
            mode=request.mode,
        )
        trace = Trace(
            providers=traces,
            fusion=fused_trace,
            rrf_k=self.rrf_k,
            weights={name: self.weights.get(name, 1.0) for name in rankings},
            total_ms=0.0,
            router_ms=0.0,
        )
        return RetrievalResult(
            request=summary,
            status=status,
            evidence=evidence_out,
            failures=failures,
            budget=budget,
            trace=trace,
            limitations=limitations,
        )


def _validate_response(
    name: str, provider: Provider, response: object, elapsed_ms: float
) -> ProviderHits | ProviderFailure:
    if not isinstance(response, ProviderResponse):
        return ProviderFailure(
            provider=name,
            kind="invalid_response",
            elapsed_ms=elapsed_ms,
            message=f"{name} returned {type(response).__name__}, not a ProviderResponse",
        )
    bad = nonfinite = 0
    for item in response.evidence:  # one pass; model_construct() could have skipped Evidence's validators
        if not isinstance(item, Evidence):
            bad += 1
        elif not math.isfinite(item.score):
            nonfinite += 1
    if bad:
        return ProviderFailure(
            provider=name,
            kind="invalid_response",
            elapsed_ms=elapsed_ms,
            message=f"{name} returned {bad} item(s) that are not Evidence",
        )
    if nonfinite:
        return ProviderFailure(
            provider=name,
            kind="invalid_response",
            elapsed_ms=elapsed_ms,
            message=f"{name} returned {nonfinite} item(s) with a non-finite score",
        )
    return ProviderHits(
        provider=name,
        kind=provider.kind,
        evidence=list(response.evidence),
        elapsed_ms=elapsed_ms,
        degraded=list(response.degraded),
        leg_failures=list(response.leg_failures),
        details=dict(response.details),
        excluded=list(response.excluded),
    )


def _limitations(
    outcomes: Sequence[ProviderHits | ProviderFailure],
    failures: Sequence[ProviderFailure],
    status: Status,
    evidence: Sequence[Evidence],
    budget: BudgetReport,
) -> list[str]:
    notes: list[str] = []
    for failure in failures:
        where = f"{failure.provider} ({failure.leg})" if failure.leg else failure.provider
        notes.append(f"{where} failed ({failure.kind}): {failure.message}")
    for outcome in outcomes:
        if isinstance(outcome, ProviderHits):
            notes.extend(f"{outcome.provider} was degraded: {reason}" for reason in outcome.degraded)
    if budget.truncated:
        notes.append(
            f"{budget.truncated} item(s) were truncated to fit the budget of {budget.max_tokens} tokens"
        )
    over = sum(1 for e in budget.exclusions if e.reason == "over_budget")
    if over:
        notes.append(f"{over} item(s) did not fit the budget of {budget.max_tokens} tokens and were left out")
    if status in (Status.COMPLETE, Status.PARTIAL) and not evidence:
        notes.append("evidence was found but none of it fit the token budget")
    return notes
