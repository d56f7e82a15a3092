"""The Provider protocol: one async method, taking the request and the trusted context."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from simone.runtime._contracts import ProviderKind, ProviderResponse, RetrievalRequest, TrustedContext


@runtime_checkable
class Provider(Protocol):
    """An evidence source the router can fan out to.

    ``name`` is the instance name the router and the result use; ``kind`` says what it is.
    ``retrieve`` returns the provider's evidence best first, or raises a
    :class:`~simone.runtime.ProviderError` (any other exception is recorded as kind ``error``).
    A provider must check the caller in ``context`` itself when it is restricted.

    The router cancels a provider at its deadline; an answer that still arrives later (a provider
    that blocks the event loop, waits on a thread or shields itself) is recorded as a ``timeout`` and
    its evidence is dropped. An answer that is not a valid :class:`ProviderResponse` (including one
    built with ``model_construct``) is recorded as ``invalid_response``.
    """

    @property
    def name(self) -> str:
        """The instance name (unique within a router)."""
        ...

    @property
    def kind(self) -> ProviderKind:
        """The kind of evidence it returns."""
        ...

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        """Find evidence for ``request`` within the scope of ``context``."""
        ...
