"""Test doubles for the runtime layer: providers and an embedder that speak only runtime's contracts.

Reuse these instead of writing a new fake in every test (the other layers' doubles are in
:mod:`simone.providers.testing`, which re-exports these, and :mod:`simone.agents.testing`):

* :class:`FunctionProvider` — answers with whatever a function returns (:class:`StaticProvider`: always
  the same evidence; :func:`make_evidence` builds numbered evidence);
* :class:`SlowProvider` — sleeps before answering (for deadlines and cancellation);
* :class:`FailingProvider` — raises the error it was given;
* :class:`HashEmbedder` — a deterministic word-hashing embedder of any space; can be told to fail;
* :class:`SecondsClock` — a ``time.time``-like clock that moves only when told to.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import threading
from collections.abc import Awaitable, Callable, Sequence

import anyio
import numpy as np
import numpy.typing as npt
from simone.runtime import (
    EmbeddingKind,
    EmbeddingSpace,
    Evidence,
    ProviderKind,
    ProviderResponse,
    RetrievalRequest,
    TrustedContext,
)

ResponseFunction = Callable[
    [RetrievalRequest, TrustedContext],
    ProviderResponse | Sequence[Evidence] | Awaitable[ProviderResponse | Sequence[Evidence]],
]


class _Named:
    """The ``name`` and ``kind`` every test provider reports."""

    _name: str
    _kind: ProviderKind

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """The kind it reports."""
        return self._kind


class FunctionProvider(_Named):
    """A provider whose answer is computed by ``function(request, context)`` (sync or async).

    The function may return a :class:`ProviderResponse` or a list of :class:`Evidence`; anything else is
    passed through untouched so tests can check how the router handles malformed answers.
    """

    def __init__(
        self, name: str, function: ResponseFunction, *, kind: ProviderKind = ProviderKind.CUSTOM
    ) -> None:
        self._name = name
        self._kind = kind
        self._function = function
        self.calls: list[tuple[RetrievalRequest, TrustedContext]] = []

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Call the function and wrap a plain list into a response."""
        self.calls.append((request, context))
        value = self._function(request, context)
        if inspect.isawaitable(value):
            value = await value
        if isinstance(value, list | tuple):
            return ProviderResponse(evidence=list(value))
        return value  # type: ignore[return-value]  # malformed on purpose in some tests


def make_evidence(
    provider_name: str,
    texts: Sequence[str],
    *,
    kind: ProviderKind = ProviderKind.CUSTOM,
    locator_prefix: str | None = None,
) -> list[Evidence]:
    """Evidence items for ``texts``, best first, with locators ``<prefix>#<n>``."""
    prefix = locator_prefix or provider_name
    return [
        Evidence.create(
            provider=kind,
            provider_name=provider_name,
            locator=f"{prefix}#{index}",
            content=text,
            title=f"{provider_name} {index}",
            score=float(len(texts) - index),
        )
        for index, text in enumerate(texts, start=1)
    ]


class StaticProvider(FunctionProvider):
    """Always answers with the same evidence."""

    def __init__(
        self, name: str, evidence: Sequence[Evidence], *, kind: ProviderKind = ProviderKind.CUSTOM
    ) -> None:
        items = list(evidence)
        super().__init__(name, lambda request, context: ProviderResponse(evidence=items), kind=kind)


class SlowProvider(_Named):
    """Sleeps ``delay_s`` (cancellably), then answers with ``evidence``."""

    def __init__(
        self,
        name: str,
        delay_s: float,
        evidence: Sequence[Evidence] = (),
        *,
        kind: ProviderKind = ProviderKind.CUSTOM,
    ) -> None:
        self._name = name
        self._kind = kind
        self.delay_s = delay_s
        self.evidence = list(evidence)
        self.cancelled = False

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Sleep, then answer; records whether it was cancelled."""
        try:
            await anyio.sleep(self.delay_s)
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return ProviderResponse(evidence=self.evidence)


class FailingProvider(_Named):
    """Raises ``error`` on every call."""

    def __init__(self, name: str, error: Exception, *, kind: ProviderKind = ProviderKind.CUSTOM) -> None:
        self._name = name
        self._kind = kind
        self.error = error

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Raise the configured error."""
        raise self.error


_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """A deterministic embedder: each word (case-folded) adds ±1 to a hashed bucket; unit vectors.

    Texts sharing words are closer than texts that share none, so ranking tests mean something; a text
    without words still gets a non-zero vector. Set :attr:`error` to make :meth:`embed` raise it (an
    outage), back to ``None`` to recover.

    Args:
        dimension: the vector size.
        model: the model name in the space key (two embedders with the same space are interchangeable).
        provider: the provider name in the space key.

    Attributes:
        error: raised by :meth:`embed` while set.
        calls: how many times :meth:`embed` was called.
        texts_embedded: how many texts it embedded successfully.
    """

    def __init__(self, dimension: int = 64, *, model: str = "hash", provider: str = "hash") -> None:
        self._space = EmbeddingSpace(provider=provider, model=model, dimension=dimension, normalized=True)
        self.error: Exception | None = None
        self.calls = 0
        self.texts_embedded = 0

    @property
    def space(self) -> EmbeddingSpace:
        """``<provider>:<model>:<dimension>``, normalised."""
        return self._space

    def vectors(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The vectors, computed synchronously (also used by loopback servers)."""
        dimension = self._space.dimension
        out = np.zeros((len(texts), dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            words = [w.casefold() for w in _WORD.findall(text)] or ["\x00" + text]
            for word in words:
                digest = hashlib.blake2b(word.encode("utf-8", "surrogatepass"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % dimension] += 1.0 if (value >> 63) & 1 else -1.0
            norm = float(np.linalg.norm(out[row]))
            if norm == 0.0:  # the ±1s cancelled out: fall back to one bucket of the whole text
                out[
                    row,
                    int.from_bytes(
                        hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest(),
                        "little",
                    )
                    % dimension,
                ] = 1.0
                norm = 1.0
            out[row] /= norm
        return out

    async def embed(
        self, texts: Sequence[str], *, kind: EmbeddingKind = "document"
    ) -> npt.NDArray[np.float32]:
        """Embed ``texts`` (queries and documents alike), or raise :attr:`error` if set."""
        self.calls += 1
        await anyio.lowlevel.checkpoint()
        if self.error is not None:
            raise self.error
        vectors = self.vectors(list(texts))
        self.texts_embedded += len(texts)
        return vectors


class SecondsClock:
    """A wall clock in seconds that moves only when told to: expire cache entries without sleeping.

    Matches the clocks the research cache and the critic take (``time.time``-like).

    Args:
        start: the first reading (2025-01-01T00:00:00Z by default).
    """

    def __init__(self, start: float = 1_735_689_600.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        """The current reading."""
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock forward by ``seconds``."""
        with self._lock:
            self.now += seconds


__all__ = (
    "FailingProvider",
    "FunctionProvider",
    "HashEmbedder",
    "ResponseFunction",
    "SecondsClock",
    "SlowProvider",
    "StaticProvider",
    "make_evidence",
)
