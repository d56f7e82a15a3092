"""Test doubles that ship with simone: reuse these instead of writing a new fake in every test.

* :class:`FunctionProvider` — answers with whatever a function returns.
* :class:`SlowProvider` — sleeps before answering (for deadlines and cancellation).
* :class:`FailingProvider` — raises the error it was given.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence

import anyio
from simone.runtime import (
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


class FunctionProvider:
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

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """The kind it reports."""
        return self._kind

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


class SlowProvider:
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

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """The kind it reports."""
        return self._kind

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Sleep, then answer; records whether it was cancelled."""
        try:
            await anyio.sleep(self.delay_s)
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
        return ProviderResponse(evidence=self.evidence)


class FailingProvider:
    """Raises ``error`` on every call."""

    def __init__(self, name: str, error: Exception, *, kind: ProviderKind = ProviderKind.CUSTOM) -> None:
        self._name = name
        self._kind = kind
        self.error = error

    @property
    def name(self) -> str:
        """The instance name."""
        return self._name

    @property
    def kind(self) -> ProviderKind:
        """The kind it reports."""
        return self._kind

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Raise the configured error."""
        raise self.error


__all__ = (
    "FailingProvider",
    "FunctionProvider",
    "SlowProvider",
    "StaticProvider",
    "make_evidence",
)
