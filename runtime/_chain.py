"""The embedding chain mechanism: pinned spaces, ordered fallback within a space, and a health window.

A document table is created in the space of the chain's first embedder (the configured preference),
after it answered a probe; from then on only embedders of exactly that space may embed its rows and
queries. When that first embedder fails at creation the table is *not* created in a later embedder's
space (the space is pinned for good, so a passing outage would switch the model silently and for
ever): :meth:`EmbeddingChain.select_space` raises, naming the embedder that failed and the space a
fallback would have pinned. Another space's
embedder is never used in its place and a failure is never papered over with a zero vector: when every
embedder of the space fails, :meth:`EmbeddingChain.embed` raises, and the caller (the document index)
degrades visibly — lexical only, rows kept as "pending embedding".

A collection may also carry *extra* spaces beside the chain's own (a multilingual model next to the
bundled English one, say): their embedders are the chain's ``extras``. They are never chosen as a new
table's space, but :meth:`EmbeddingChain.embed` and :meth:`EmbeddingChain.embedders_for` find them
like any other embedder of their space, and the chain starts and closes them.

The health window counts, over the last ``window`` searches, how many had to fall back (their semantic
leg failed); the chain is *degraded* when more than half of at least ``min_samples`` recent searches
fell back.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import AsyncExitStack
from types import TracebackType
from typing import Annotated, Self

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field
from simone.runtime._embedding import Embedder, EmbeddingKind, EmbeddingSpace
from simone.runtime._errors import (
    InvalidResponse,
    ProviderError,
    ProviderNotConfigured,
    ProviderUnavailable,
    RateLimited,
)
from simone.runtime.tracing import embedding_span

#: The text embedded by :meth:`EmbeddingChain.select_space` to see whether an embedder answers.
PROBE_TEXT = "simone embedding probe"

#: The share of fallbacks above which a full window is called degraded (strictly more than half).
DEGRADED_RATIO = 0.5


class ChainHealth(BaseModel):
    """The chain's recent record, as ``simone doctor`` and the health call show it.

    Attributes:
        degraded: more than half of at least ``min_samples`` recent searches fell back.
        samples: searches in the window (at most ``window``).
        fallbacks: how many of them fell back (semantic leg failed).
        window: the window's capacity.
        min_samples: the fewest samples for which ``degraded`` may be true.
        last_error: the most recent embedder failure, ``"<embedder space>: <message>"``.
        last_error_at: when it happened (seconds since the epoch).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    degraded: bool
    samples: Annotated[int, Field(ge=0)]
    fallbacks: Annotated[int, Field(ge=0)]
    window: Annotated[int, Field(ge=1)]
    min_samples: Annotated[int, Field(ge=1)]
    last_error: str | None = None
    last_error_at: float | None = None

    @property
    def fallback_ratio(self) -> float:
        """``fallbacks / samples`` (0.0 with no samples)."""
        return self.fallbacks / self.samples if self.samples else 0.0


def is_degraded(samples: int, fallbacks: int, min_samples: int) -> bool:
    """The degraded rule: at least ``min_samples`` searches and strictly more than half fell back."""
    return samples >= min_samples and fallbacks > DEGRADED_RATIO * samples


class EmbeddingChainExhausted(ProviderUnavailable):
    """Every embedder of a space failed, or a new table's space could not be chosen.

    When choosing a space only the chain's first embedder counts (see
    :meth:`EmbeddingChain.select_space`), so ``causes`` then holds its error alone.

    Attributes:
        causes: each embedder's error, in chain order.
    """

    def __init__(self, message: str, causes: Sequence[ProviderError], *, provider: str = "") -> None:
        hints = [c.retry_after_s for c in causes if c.retry_after_s is not None]
        super().__init__(
            message,
            provider=provider,
            retryable=any(c.retryable for c in causes),
            retry_after_s=min(hints) if hints else None,
        )
        self.causes: tuple[ProviderError, ...] = tuple(causes)


def validate_vectors(
    vectors: object, *, count: int, space: EmbeddingSpace, source: str = ""
) -> npt.NDArray[np.float32]:
    """Check an embedder's answer: a finite float32 ``(count, dimension)`` array with no zero rows.

    Raises:
        InvalidResponse: wrong type, shape, count, non-finite values or an all-zero row.
    """
    who = source or space.key
    if not isinstance(vectors, np.ndarray):
        raise InvalidResponse(f"{who} returned {type(vectors).__name__}, not an array", provider=source)
    if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] != space.dimension:
        raise InvalidResponse(
            f"{who} returned vectors of shape {vectors.shape}, expected ({count}, {space.dimension})",
            provider=source,
        )
    array = np.ascontiguousarray(vectors, dtype=np.float32)
    if not np.isfinite(array).all():
        raise InvalidResponse(f"{who} returned non-finite values (NaN or infinity)", provider=source)
    if count and not np.any(array, axis=1).all():
        raise InvalidResponse(f"{who} returned an all-zero vector", provider=source)
    return array


def _distinct_spaces(embedders: Sequence[Embedder]) -> tuple[EmbeddingSpace, ...]:
    seen: dict[str, EmbeddingSpace] = {}
    for embedder in embedders:
        seen.setdefault(embedder.space.key, embedder.space)
    return tuple(seen.values())


def _describe(embedder: Embedder) -> str:
    try:
        return embedder.space.key
    except Exception:  # noqa: BLE001 - a broken embedder must not break the chain's messages
        return type(embedder).__name__


def _as_provider_error(exc: Exception, who: str) -> ProviderError:
    if isinstance(exc, ProviderError):
        return exc
    return ProviderError(f"{who} failed unexpectedly: {type(exc).__name__}: {exc}", provider=who)


class EmbeddingChain:
    """Ordered embedders; a table's space is chosen once and pinned.

    Args:
        embedders: the embedders in preference order (cloud, bundled ONNX, local server…).
        extras: embedders of the additional spaces collections carry beside the chain's own; never
            chosen by :meth:`select_space`, but used by :meth:`embed` for their space (after any chain
            embedder of the same space).
        window: how many recent searches the health window keeps.
        min_samples: the fewest searches before the chain may be called degraded.
        clock: seconds, monotonic; used to honour a rate-limited embedder's ``retry_after_s``.

    Use it as an async context manager to start (and later close) every embedder, extras included,
    that is one; an embedder whose start-up fails with a :class:`ProviderError` is recorded in the health's
    ``last_error`` and left out of the start-up (its later calls fail, visibly, until it can start).
    """

    def __init__(
        self,
        embedders: Sequence[Embedder],
        *,
        extras: Sequence[Embedder] = (),
        window: int = 100,
        min_samples: int = 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if window < 1:
            raise ValueError("window must be at least 1")
        if not 1 <= min_samples <= window:
            raise ValueError("min_samples must be between 1 and window")
        self._embedders = tuple(embedders)
        self._extras = tuple(extras)
        self._window: deque[bool] = deque(maxlen=window)
        self._min_samples = min_samples
        self._clock = clock
        self._cooling: dict[int, tuple[float, ProviderError]] = {}
        self._last_error: str | None = None
        self._last_error_at: float | None = None
        self._stack: AsyncExitStack | None = None

    @property
    def embedders(self) -> tuple[Embedder, ...]:
        """The embedders in chain order."""
        return self._embedders

    @property
    def spaces(self) -> tuple[EmbeddingSpace, ...]:
        """The distinct spaces of the chain, in chain order (extras not included)."""
        return _distinct_spaces(self._embedders)

    @property
    def extras(self) -> tuple[Embedder, ...]:
        """The embedders of the additional spaces, in the order given."""
        return self._extras

    @property
    def extra_spaces(self) -> tuple[EmbeddingSpace, ...]:
        """The distinct spaces of the extras, in the order given (chain spaces may be among them)."""
        return _distinct_spaces(self._extras)

    async def __aenter__(self) -> Self:
        async with AsyncExitStack() as stack:
            # one object listed twice (a chain embedder reused as an extra) is started once
            members = {id(e): e for e in (*self._embedders, *self._extras)}
            for embedder in members.values():
                if hasattr(embedder, "__aenter__") and hasattr(embedder, "__aexit__"):
                    try:
                        await stack.enter_async_context(embedder)  # type: ignore[arg-type]
                    except ProviderError as exc:
                        # one embedder that cannot start must not take the others down; its calls
                        # will fail (and be recorded) until it can
                        self._failed(embedder, exc)
            self._stack = stack.pop_all()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the embedders this chain started."""
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    def embedders_for(self, space: EmbeddingSpace) -> list[Embedder]:
        """The embedders of exactly ``space`` (same key and normalisation): chain order, then extras."""
        found = {id(e): e for e in (*self._embedders, *self._extras) if e.space == space}
        return list(found.values())

    async def select_space(self) -> EmbeddingSpace:
        """Choose the space of a new table: the chain's first embedder's, once it answered a probe.

        A later embedder of another space is never chosen in its place: the table's space is pinned
        for good, and the first embedder is the one configured to be preferred, so a passing outage
        must not switch the model silently and for ever. The caller retries later (the error is
        retryable when the failure is), or changes the chain.

        Raises:
            ProviderNotConfigured: the chain is empty.
            EmbeddingChainExhausted: the first embedder failed; the message names it, its error and
                the space a fallback would have pinned, ``causes`` holds its error and
                ``retry_after_s`` its hint.
        """
        if not self._embedders:
            raise ProviderNotConfigured(
                "no embedder is configured; enable the bundled ONNX model or configure a server "
                "in the [embeddings] settings"
                + (" (extra spaces are never a collection's own space)" if self._extras else ""),
                provider="embeddings",
            )
        first = self._embedders[0]
        try:
            await self._call(first, [PROBE_TEXT], "query")
        except Exception as exc:  # noqa: BLE001 - the cause is recorded; cancellation is BaseException
            cause = self._failed(first, exc)
        else:
            return first.space
        who = _describe(first)
        others = [s.key for s in self.spaces if s != first.space]
        fallback = (
            f"; the collection was not created in {others[0]}, the next embedder's space, because a "
            "collection's space is pinned for good and that would switch the model silently. Try again "
            f"when {who} answers, or put {others[0].split(':', 1)[0]} first in [embeddings] chain to "
            "use that model"
            if others
            else "; try again when it answers"
        )
        raise EmbeddingChainExhausted(
            f"the configured embedder {who} failed ({cause.kind}: {cause.message}), so a new "
            f"collection's space cannot be chosen{fallback}",
            [cause],
            provider="embeddings",
        )

    async def embed(
        self, texts: Sequence[str], *, space: EmbeddingSpace, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts`` with the first embedder of ``space`` that succeeds (chain order, then extras).

        Returns:
            float32 array of shape ``(len(texts), space.dimension)``, finite, no zero rows.

        Raises:
            ProviderNotConfigured: no embedder of this space is in the chain or among the extras.
            ProviderError: the only embedder of the space failed (its own typed error).
            EmbeddingChainExhausted: several embedders of the space failed; ``causes`` holds each.
        """
        texts = list(texts)
        if not texts:
            return np.empty((0, space.dimension), dtype=np.float32)
        candidates = self.embedders_for(space)
        if not candidates:
            configured = ", ".join(s.key for s in self.spaces) or "none"
            extra = "".join(f", extra {s.key}" for s in self.extra_spaces)
            raise ProviderNotConfigured(
                f"no embedder of space {space.key} is configured (chain spaces: {configured}{extra}); "
                "configure that model again, or build a new space and drop the old one",
                provider=space.key,
            )
        causes: list[ProviderError] = []
        for embedder in candidates:
            try:
                return await self._call(embedder, texts, kind)
            except Exception as exc:  # noqa: BLE001 - every cause is recorded; cancellation is BaseException
                causes.append(self._failed(embedder, exc))
        if len(causes) == 1:
            raise causes[0]
        raise EmbeddingChainExhausted(
            f"every embedder of space {space.key} failed: "
            + "; ".join(f"#{i}: {c.message}" for i, c in enumerate(causes, start=1)),
            causes,
            provider=space.key,
        )

    def record_search(self, *, fell_back: bool) -> None:
        """Record one search: ``fell_back`` is true when its semantic leg failed."""
        self._window.append(fell_back)

    def health(self) -> ChainHealth:
        """The health window's current figures."""
        samples = len(self._window)
        fallbacks = sum(self._window)
        return ChainHealth(
            degraded=is_degraded(samples, fallbacks, self._min_samples),
            samples=samples,
            fallbacks=fallbacks,
            window=self._window.maxlen or 1,
            min_samples=self._min_samples,
            last_error=self._last_error,
            last_error_at=self._last_error_at,
        )

    async def _call(
        self, embedder: Embedder, texts: list[str], kind: EmbeddingKind
    ) -> npt.NDArray[np.float32]:
        cooling = self._cooling.get(id(embedder))
        if cooling is not None:
            until, error = cooling
            left = until - self._clock()
            if left > 0:
                again = RateLimited if isinstance(error, RateLimited) else ProviderUnavailable
                raise again(
                    f"{error.message} (still waiting {left:.1f} s before calling it again)",
                    provider=error.provider,
                    retryable=True,
                    retry_after_s=left,
                )
            del self._cooling[id(embedder)]
        space = embedder.space
        with embedding_span(space.model, provider=space.provider, inputs=len(texts), purpose=kind):
            vectors = await embedder.embed(texts, kind=kind)
        return validate_vectors(vectors, count=len(texts), space=embedder.space, source=_describe(embedder))

    def _failed(self, embedder: Embedder, exc: Exception) -> ProviderError:
        who = _describe(embedder)
        error = _as_provider_error(exc, who)
        if not error.provider:
            error.provider = who
        if error.retry_after_s is not None and error.retry_after_s > 0:
            self._cooling[id(embedder)] = (self._clock() + error.retry_after_s, error)
        self._last_error = f"{who}: {error.message}"
        self._last_error_at = time.time()
        return error
