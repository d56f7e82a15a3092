"""The rerank stage: after fusion, a reranker reorders the first N fused candidates — or the fused order stands.

The mechanism lives here, under the router; the rerankers themselves (a rerank server over HTTP, a local
ONNX cross-encoder) are providers (``simone.providers.rerank``), published under :data:`RERANKER`.

The stage's rules:

1. it runs only when a reranker is configured and the request wants it (``request.rerank``, else
   :attr:`RerankOptions.by_default`), and only over two or more candidates;
2. it sends the first :attr:`RerankOptions.candidates` fused candidates (title and text, cut to
   :attr:`RerankOptions.max_document_chars`); the rest keep their fused places after them;
3. it has :attr:`RerankOptions.timeout_s`, cut to what is left of the request's deadline; a reranker
   that raises, runs late, or answers with the wrong number of scores or a score that is not a finite
   number is a :class:`~simone.runtime.ProviderFailure` (a value, never an exception): the fused
   order is kept and the result says so in its limitations;
4. candidates the reranker left unscored (``None``) follow the scored ones, in fused order; ties keep
   the fused order too, so the stage is deterministic;
5. the trace (:class:`~simone.runtime.RerankTrace`) lists each candidate's place before and after.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import anyio
import anyio.lowlevel
from simone.runtime._config import RerankSettings
from simone.runtime._contracts import (
    Evidence,
    ProviderFailure,
    RerankMove,
    RerankTrace,
    RetrievalRequest,
    TrustedContext,
    safe_text,
)
from simone.runtime._detached import Detached
from simone.runtime._errors import ConfigError
from simone.runtime._handoff import Shared
from simone.runtime.tracing import fail, rerank_span

RERANK_GRACE_S = 0.05
"""Seconds past its deadline a cancelled reranker has to unwind before the stage keeps the fused order."""


@runtime_checkable
class Reranker(Protocol):
    """Scores documents against a query; higher is more relevant.

    ``rerank`` returns one score per document, in the documents' order (``None`` for one it did not
    score), or raises a :class:`~simone.runtime.ProviderError` (a timeout, a rate limit, a malformed
    answer…). The rerank stage turns anything it raises into a failure value and keeps the fused order.
    """

    @property
    def name(self) -> str:
        """The reranker's name in traces and failures (e.g. ``rerank:http``)."""
        ...

    async def rerank(self, query: str, documents: Sequence[str]) -> Sequence[float | None]:
        """One score per document of ``documents`` for ``query`` (``None``: not scored)."""
        ...


RERANKER: Shared[Reranker] = Shared("reranker", Reranker)
"""The reranker the ``[rerank]`` factory opened (``simone.providers.rerank``); the router reranks with it."""


@dataclass(frozen=True, slots=True)
class RerankOptions:
    """How the router's rerank stage runs (the numbers of ``[rerank]``).

    Attributes:
        candidates: the first N fused candidates sent to the reranker.
        timeout_s: the stage's deadline (further cut to the request's).
        by_default: rerank a request that does not say (``request.rerank is None``).
        max_document_chars: each document sent is cut to this many characters.
    """

    candidates: int = 20
    timeout_s: float = 2.0
    by_default: bool = True
    max_document_chars: int = 4000

    def __post_init__(self) -> None:
        if self.candidates < 1:
            raise ConfigError("rerank candidates must be >= 1")
        if not 0 < self.timeout_s < math.inf:
            raise ConfigError("the rerank timeout must be > 0 and finite")
        if self.max_document_chars < 1:
            raise ConfigError("rerank max_document_chars must be >= 1")

    @classmethod
    def from_settings(cls, settings: RerankSettings) -> RerankOptions:
        """The options of a ``[rerank]`` section."""
        return cls(
            candidates=settings.candidates,
            timeout_s=settings.timeout_s,
            by_default=settings.by_default,
            max_document_chars=settings.max_document_chars,
        )

    def wanted(self, request: RetrievalRequest) -> bool:
        """Whether ``request`` asks for the stage (its own ``rerank``, else :attr:`by_default`)."""
        return self.by_default if request.rerank is None else request.rerank


@dataclass(slots=True)
class Reranked:
    """What the stage made of the candidates: their new order, the trace, and the failure if any."""

    order: list[int]
    """Positions into the candidates given, best first (all of them, each once)."""
    trace: RerankTrace
    failure: ProviderFailure | None = None
    scores: dict[int, float] = field(default_factory=dict)
    """Position → the reranker's score, for the candidates it scored."""


def rerank_document(item: Evidence, max_chars: int) -> str:
    """The text a reranker reads for ``item``: its title (if any) and content, cut to ``max_chars``."""
    text = f"{item.title}\n{item.content}" if item.title else item.content
    return text[:max_chars]


def reorder(scores: Sequence[float | None]) -> list[int]:
    """Positions sorted by score (descending), unscored ones last; ties and unscored keep their order."""
    scored = [(position, score) for position, score in enumerate(scores) if score is not None]
    unscored = [position for position, score in enumerate(scores) if score is None]
    scored.sort(key=lambda pair: -pair[1])  # stable: equal scores keep the fused order
    return [position for position, _ in scored] + unscored


async def rerank_stage(
    reranker: Reranker,
    query: str,
    items: Sequence[Evidence],
    options: RerankOptions,
    context: TrustedContext,
    *,
    clock: Callable[[], float] = time.perf_counter,
) -> Reranked:
    """Rerank the first ``options.candidates`` of ``items`` (fused order) with ``reranker``.

    Never raises for the reranker's faults (see the module's rules): a failure keeps the fused order
    (``order`` is ``0, 1, 2…``) and comes back as :attr:`Reranked.failure`. A real cancellation of the
    caller still propagates.
    """
    name = _name_of(reranker)
    count = min(len(items), options.candidates)
    fused = list(range(len(items)))
    if count < 2:
        why = "fewer than two candidates: nothing to reorder"
        return Reranked(fused, RerankTrace(reranker=name, status="skipped", reason=why, candidates=count))
    remaining = context.remaining_s()
    timeout = options.timeout_s if remaining is None else min(options.timeout_s, remaining)
    timeout = min(timeout, anyio.current_effective_deadline() - anyio.current_time())
    started = clock()

    def kept(failure: ProviderFailure) -> Reranked:
        elapsed = (clock() - started) * 1000
        failure = failure.model_copy(update={"elapsed_ms": elapsed})
        trace = RerankTrace(
            reranker=name,
            status="kept_fused",
            reason=f"the reranker failed ({failure.kind}); the fused order was kept",
            candidates=count,
            elapsed_ms=elapsed,
            moves=[RerankMove(id=items[i].id, before=i + 1, after=i + 1) for i in range(count)],
        )
        return Reranked(fused, trace, failure)

    with rerank_span(name, count) as span:
        if timeout <= 0:
            span.set_attribute("simone.rerank.status", "kept_fused")
            fail(span, "timeout")
            return kept(
                ProviderFailure(
                    provider=name,
                    kind="timeout",
                    message=f"{name} was not asked: the request's deadline had already passed",
                )
            )
        documents = [rerank_document(item, options.max_document_chars) for item in items[:count]]
        answer = await _ask(reranker, name, query, documents, limit_s=timeout)
        checked = answer if isinstance(answer, ProviderFailure) else _checked(name, answer, count)
        if isinstance(checked, ProviderFailure):
            span.set_attribute("simone.rerank.status", "kept_fused")
            fail(span, checked.kind)
            return kept(checked)
        head = reorder(checked)
        order = head + fused[count:]
        elapsed = (clock() - started) * 1000
        moves = [
            RerankMove(id=items[position].id, before=position + 1, after=after, score=checked[position])
            for after, position in enumerate(head, start=1)
        ]
        span.set_attribute("simone.rerank.status", "reranked")
        span.set_attribute("simone.rerank.before", [position + 1 for position in head])
        span.set_attribute("simone.rerank.moved", sum(1 for m in moves if m.before != m.after))
        unscored = sum(1 for score in checked if score is None)
        reason = f"{count} candidate(s) reordered by {name}"
        if unscored:
            reason += f"; {unscored} it did not score keep their fused order after the scored ones"
        trace = RerankTrace(
            reranker=name, status="reranked", reason=reason, candidates=count, elapsed_ms=elapsed, moves=moves
        )
        scores = {p: s for p, s in enumerate(checked) if s is not None}
        return Reranked(order, trace, None, scores)


async def _ask(
    reranker: Reranker, name: str, query: str, documents: list[str], *, limit_s: float
) -> Sequence[object] | ProviderFailure:
    """The reranker's answer within ``limit_s`` (+ the grace), or the failure it stands for."""
    timeout = limit_s
    cancelled = anyio.get_cancelled_exc_class()

    async def attempt() -> Sequence[object] | ProviderFailure:
        try:
            with anyio.fail_after(timeout):
                answer = await reranker.rerank(query, documents)
        except TimeoutError:
            return _late(name, timeout)
        except cancelled as exc:
            await anyio.lowlevel.checkpoint_if_cancelled()
            return ProviderFailure(
                provider=name, kind="error", message=f"{name} raised {type(exc).__name__}: {safe_text(exc)}"
            )
        except Exception as exc:  # noqa: BLE001 -- a reranker's fault keeps the fused order; cancellation propagates
            return ProviderFailure.from_error(name, exc)
        if not isinstance(answer, Sequence) or isinstance(answer, str | bytes):
            return ProviderFailure(
                provider=name,
                kind="invalid_response",
                message=f"{name} returned {type(answer).__name__}, not a sequence of scores",
            )
        return answer

    work = Detached.start(attempt)
    with anyio.move_on_after(timeout + RERANK_GRACE_S):
        return await work.wait()
    if work.done:
        return work.result()
    return _late(name, timeout)


def _late(name: str, timeout: float) -> ProviderFailure:
    return ProviderFailure(
        provider=name,
        kind="timeout",
        retryable=True,
        message=f"{name} did not answer within its {timeout:.2f}s deadline",
    )


def _checked(name: str, answer: Sequence[object], count: int) -> list[float | None] | ProviderFailure:
    """The scores of a well-formed answer (one finite number or ``None`` per document), or the failure."""
    if len(answer) != count:
        return ProviderFailure(
            provider=name,
            kind="invalid_response",
            message=f"{name} returned {len(answer)} score(s) for {count} document(s)",
        )
    scores: list[float | None] = []
    for position, score in enumerate(answer):
        if score is None:
            scores.append(None)
            continue
        if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
            return ProviderFailure(
                provider=name,
                kind="invalid_response",
                message=f"{name} returned a score that is not a finite number for document {position}",
            )
        scores.append(float(score))
    if all(score is None for score in scores):
        return ProviderFailure(
            provider=name, kind="invalid_response", message=f"{name} scored none of the {count} document(s)"
        )
    return scores


def _name_of(reranker: Reranker) -> str:
    try:
        name = reranker.name
    except Exception:  # noqa: BLE001 -- a broken reranker is reported by its type
        return type(reranker).__name__
    return name if isinstance(name, str) and name else type(reranker).__name__
