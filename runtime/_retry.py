"""One retry policy for every client that talks to a model or search server (chat, embeddings, web search).

The rules, in the order they are checked after a failed attempt:

1. an error that is not ``retryable`` (or that the caller's ``retry_if`` refuses) is raised at once;
2. after ``max_attempts`` attempts the last error is raised;
3. the pause is the exponential backoff, or the server's ``Retry-After`` when that is longer: the
   server's hint is a *floor*, never shortened, so a retry never comes before the server allows it;
4. when that pause is longer than ``max_wait_s``, or would not end before the remaining deadline (the
   ``deadline`` given, or the enclosing anyio cancel scope's, whichever comes first), nothing is slept:
   the error is raised at once. A rate limit is raised as :class:`~simone.runtime.RateLimited` with
   ``retry_after_s`` set (the server's hint, else the pause it would have needed), so the caller can
   report when trying again makes sense.

:func:`parse_retry_after` reads the header (delta seconds or an HTTP date); :func:`retry_after_from_headers`
reads ``retry-after-ms`` (sent by OpenAI-style servers) before ``Retry-After``.
"""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC
from typing import TypeVar

import anyio
from simone.runtime._errors import ConfigError, ProviderError, RateLimited

T = TypeVar("T")


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delta seconds or an HTTP date.

    A date in the past and a negative delta mean "now" (``0.0``); a date without a zone is read as
    GMT (HTTP dates always are). Anything unreadable, infinite or NaN is ``None`` (no hint).

    Args:
        value: the header's value.
        now: the current time in seconds since the epoch (``time.time()`` by default).
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = when.timestamp() - (time.time() if now is None else now)
    if not math.isfinite(seconds):
        return None
    return max(0.0, seconds)


def retry_after_from_headers(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """The server's wait hint: ``retry-after-ms`` (milliseconds) if readable, else ``Retry-After``.

    Header names are matched case-insensitively (an ``httpx.Headers`` or a plain dict both work).
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = math.nan
        if math.isfinite(value) and value >= 0:
            return value
    return parse_retry_after(lowered.get("retry-after"), now=now)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded retries with exponential backoff, ``Retry-After`` as a floor and a deadline.

    Attributes:
        max_attempts: attempts in all, the first included (``1``: never retry).
        backoff_s: the pause after the first failure that carries no server hint.
        multiplier: how much the backoff grows after each retry.
        max_backoff_s: the longest backoff (a server's own hint may be longer, up to ``max_wait_s``).
        max_wait_s: the longest pause honoured; a server asking for more is not waited for.
        sleep: how to pause (``anyio.sleep``; tests may pass a fake that advances a fake clock).
        clock: seconds on the clock ``deadline`` is given in (``anyio.current_time``).
    """

    max_attempts: int = 3
    backoff_s: float = 0.5
    multiplier: float = 2.0
    max_backoff_s: float = 30.0
    max_wait_s: float = 30.0
    sleep: Callable[[float], Awaitable[None]] = field(default=anyio.sleep, repr=False, compare=False)
    clock: Callable[[], float] = field(default=anyio.current_time, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError("a retry policy needs max_attempts >= 1")
        if min(self.backoff_s, self.max_backoff_s, self.max_wait_s) < 0 or self.multiplier < 1:
            raise ConfigError("retry pauses must be >= 0 and the multiplier >= 1")

    def backoff(self, retry: int) -> float:
        """The backoff before retry number ``retry`` (0 for the first), capped at ``max_backoff_s``."""
        return float(min(self.backoff_s * self.multiplier**retry, self.max_backoff_s))

    def pause(self, error: ProviderError, retry: int) -> float:
        """The pause before retry ``retry`` after ``error``: the backoff, or the server's longer hint."""
        hint = error.retry_after_s
        backoff = self.backoff(retry)
        return backoff if hint is None else max(backoff, hint)

    def remaining(self, deadline: float | None) -> float:
        """Seconds left before ``deadline`` or the enclosing cancel scope's deadline (``inf``: none)."""
        left = math.inf
        if deadline is not None:
            left = deadline - self.clock()
        scope = anyio.current_effective_deadline()
        if math.isfinite(scope):
            left = min(left, scope - anyio.current_time())
        return left

    async def run(
        self,
        attempt: Callable[[int], Awaitable[T]],
        *,
        deadline: float | None = None,
        retry_if: Callable[[ProviderError], bool] | None = None,
    ) -> T:
        """Call ``attempt(n)`` (``n`` = 1, 2, …) until it returns, retrying as the policy allows.

        Args:
            attempt: one try; it raises a :class:`~simone.runtime.ProviderError` on failure.
            deadline: when the caller needs an answer, on :attr:`clock` (the enclosing cancel scope's
                deadline also counts).
            retry_if: further narrows which retryable errors are retried (all of them by default).

        Raises:
            ProviderError: the last attempt's error; a rate limit whose pause is too long for
                ``max_wait_s`` or the deadline as :class:`~simone.runtime.RateLimited` with
                ``retry_after_s`` set.
        """
        number = 0
        while True:
            number += 1
            try:
                return await attempt(number)
            except ProviderError as error:
                if not error.retryable or (retry_if is not None and not retry_if(error)):
                    raise
                if number >= self.max_attempts:
                    raise
                wait = self.pause(error, number - 1)
                left = self.remaining(deadline)
                why = None
                if wait > self.max_wait_s:
                    why = f"more than the longest wait allowed ({self.max_wait_s:g} s)"
                elif wait >= left:
                    why = f"past the deadline ({max(left, 0.0):.1f} s left)"
                if why is None:
                    await self.sleep(wait)
                    continue
                if isinstance(error, RateLimited):
                    raise RateLimited(
                        f"{error.message} (not retried: waiting {wait:.1f} s would be {why})",
                        provider=error.provider,
                        retryable=True,
                        retry_after_s=error.retry_after_s if error.retry_after_s is not None else wait,
                    ) from error
                raise
