"""The one exception tree of simone.

Every error simone raises on purpose derives from :class:`SimoneError`::

    SimoneError
    ├── ConfigError                 the caller's or the owner's mistake; fix the input or the config
    │   ├── InvalidRequest          a request that cannot be served as asked (empty query, limit 0, …)
    │   └── UnknownProvider         a provider name nobody registered
    ├── ProviderError               a provider could not answer (carries provider, kind, retryable)
    │   ├── ProviderTimeout         it ran past its deadline                      kind=timeout
    │   ├── ProviderUnavailable     the service behind it is down or unreachable  kind=unavailable
    │   │   └── CacheStoreError     the research cache's store refused (counted; the run goes on)
    │   ├── ProviderNotConfigured   nothing is configured for it                  kind=not_configured
    │   ├── RateLimited             the service said 429; see retry_after_s       kind=rate_limited
    │   ├── AccessDenied            the caller may not use it                     kind=forbidden
    │   ├── InvalidResponse         the service answered with something malformed kind=invalid_response
    │   └── EmbeddingSpaceMismatch  vectors of another model/dimension            kind=invalid_response
    ├── ScopeViolation              model-supplied arguments tried to carry or widen a trusted scope
    ├── BudgetExceeded              a bounded run would go past what it was given
    └── NotFound                    an id that does not exist (or is not visible in this scope)

Where work fans out (the router, the embedding chain) failures become values
(:class:`~simone.runtime.ProviderFailure`) instead of exceptions; these classes
are what providers raise and what the router translates.
"""

from __future__ import annotations

from typing import Literal

FailureKind = Literal[
    "timeout", "unavailable", "not_configured", "rate_limited", "forbidden", "invalid_response", "error"
]


class SimoneError(Exception):
    """Base class of every error simone raises on purpose."""


class ConfigError(SimoneError):
    """The configuration or the caller's input is wrong; the message says what to change."""


class InvalidRequest(ConfigError, ValueError):
    """A request that cannot be served as asked (empty or oversized query, bad limit or budget…)."""


class UnknownProvider(ConfigError, KeyError):
    """A provider name that is not registered with the router."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown provider"


class ProviderError(SimoneError):
    """A provider could not answer.

    Attributes:
        provider: the provider instance name (may be empty when raised deep inside a client).
        kind: the failure kind the router records.
        retryable: whether trying again later may succeed.
        retry_after_s: the service's own hint, when it gave one.
    """

    kind: FailureKind = "error"
    default_retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        retryable: bool | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.provider = provider
        self.retryable = self.default_retryable if retryable is None else retryable
        self.retry_after_s = retry_after_s


class ProviderTimeout(ProviderError):
    """The provider ran past its deadline."""

    kind: FailureKind = "timeout"
    default_retryable = True


class ProviderUnavailable(ProviderError):
    """The service behind the provider is down or unreachable."""

    kind: FailureKind = "unavailable"
    default_retryable = True


class CacheStoreError(ProviderUnavailable):
    """The research cache's persistent layer refused an operation (server down, out of memory, timeout…).

    An entry over the cache's size cap is refused the same way. :class:`~simone.runtime.ResearchCache`
    counts it (``read_errors``/``write_errors``) and the research run goes on without the cache; it
    reaches a caller only from the cache's low-level ``load``/``store``.
    """

    def __init__(
        self, message: str, *, provider: str = "research-cache", retryable: bool | None = None
    ) -> None:
        super().__init__(message, provider=provider, retryable=retryable)


class ProviderNotConfigured(ProviderError):
    """Nothing is configured for this provider (no backend, no key, no URL)."""

    kind: FailureKind = "not_configured"


class RateLimited(ProviderError):
    """The service refused with 429; ``retry_after_s`` holds its hint."""

    kind: FailureKind = "rate_limited"
    default_retryable = True


class AccessDenied(ProviderError):
    """The caller (from the trusted context) may not use this provider or tool."""

    kind: FailureKind = "forbidden"


class InvalidResponse(ProviderError):
    """The service answered with something malformed (bad JSON, wrong count, NaN…)."""

    kind: FailureKind = "invalid_response"


class EmbeddingSpaceMismatch(InvalidResponse):
    """Vectors that belong to another embedding space (model or dimension) than the table's."""


class ScopeViolation(SimoneError):
    """Model-supplied arguments tried to carry, forge or widen a trusted scope."""


class BudgetExceeded(SimoneError):
    """A bounded run would go past the budget it was given."""


class NotFound(SimoneError, KeyError):
    """An id that does not exist, or is not visible in the caller's scope."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"
