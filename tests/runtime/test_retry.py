"""The one retry policy, and the three clients that share it (chat, embeddings, web search).

The policy's rules run on a fake clock; the clients run against loopback servers the tests start.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anyio
import httpx
import pytest
from simone.agents._chat import ChatMessage
from simone.agents._openai_chat import OpenAIChatModel
from simone.providers.embeddings import OpenAIEmbedder
from simone.providers.testing import LoopbackEmbeddingServer, LoopbackWeb, Route
from simone.providers.web import SearxngBackend
from simone.runtime import (
    AccessDenied,
    ConfigError,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
    RetryPolicy,
    parse_retry_after,
    retry_after_from_headers,
)


class FakeTime:
    """A clock that moves only when the policy sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def _failing(*errors: ProviderError, then: str = "ok") -> tuple[list[int], Any]:
    calls: list[int] = []

    async def attempt(number: int) -> str:
        calls.append(number)
        if len(calls) <= len(errors):
            raise errors[len(calls) - 1]
        return then

    return calls, attempt


def _policy(fake: FakeTime, **options: Any) -> RetryPolicy:
    return RetryPolicy(sleep=fake.sleep, clock=fake.clock, **options)


# -- the policy ---------------------------------------------------------------------------------------


def test_retry_after_is_a_floor_never_shortened() -> None:
    fake = FakeTime()
    calls, attempt = _failing(RateLimited("429", retry_after_s=7.0), ProviderUnavailable("503"))
    result = anyio.run(lambda: _policy(fake, backoff_s=0.5).run(attempt))
    assert result == "ok" and calls == [1, 2, 3]
    assert fake.slept == [7.0, 1.0], "the server's 7 s, then the backoff (0.5 doubled)"


def test_a_wait_past_the_deadline_stops_at_once_with_retry_after() -> None:
    fake = FakeTime()
    calls, attempt = _failing(RateLimited("429", retry_after_s=120.0))
    with pytest.raises(RateLimited) as caught:
        anyio.run(lambda: _policy(fake, max_wait_s=600).run(attempt, deadline=fake.now + 60))
    assert calls == [1] and fake.slept == [], "nothing slept, nothing retried before the server allows"
    assert caught.value.retry_after_s == 120.0 and caught.value.retryable
    assert "past the deadline" in caught.value.message


def test_a_wait_longer_than_max_wait_stops_at_once() -> None:
    fake = FakeTime()
    calls, attempt = _failing(RateLimited("429", retry_after_s=120.0))
    with pytest.raises(RateLimited, match="longest wait allowed") as caught:
        anyio.run(lambda: _policy(fake, max_wait_s=30).run(attempt))
    assert calls == [1] and fake.slept == [] and caught.value.retry_after_s == 120.0


def test_a_rate_limit_without_a_hint_reports_the_wait_it_needed() -> None:
    fake = FakeTime()
    calls, attempt = _failing(RateLimited("429"), RateLimited("429"))
    with pytest.raises(RateLimited) as caught:
        anyio.run(lambda: _policy(fake, backoff_s=2.0).run(attempt, deadline=fake.now + 3))
    assert calls == [1, 2] and fake.slept == [2.0]
    assert caught.value.retry_after_s == 4.0, "the doubled backoff did not fit in the 1 s left"


def test_the_enclosing_cancel_scope_is_the_deadline() -> None:
    calls, attempt = _failing(RateLimited("429", retry_after_s=5.0))

    async def go() -> None:
        with anyio.fail_after(2):
            await RetryPolicy().run(attempt)

    with pytest.raises(RateLimited) as caught:  # had it slept, the scope's TimeoutError would be raised
        anyio.run(go)
    assert calls == [1]
    assert caught.value.retry_after_s == 5.0


def test_attempts_are_bounded_and_the_last_error_is_raised() -> None:
    fake = FakeTime()
    calls, attempt = _failing(*(ProviderUnavailable(f"down {n}") for n in range(5)))
    with pytest.raises(ProviderUnavailable, match="down 2"):
        anyio.run(lambda: _policy(fake, max_attempts=3, backoff_s=1.0).run(attempt))
    assert calls == [1, 2, 3] and fake.slept == [1.0, 2.0]


def test_errors_not_worth_retrying_are_raised_at_once() -> None:
    fake = FakeTime()
    calls, attempt = _failing(AccessDenied("wrong key"))
    with pytest.raises(AccessDenied):
        anyio.run(lambda: _policy(fake).run(attempt))
    assert calls == [1]
    calls, attempt = _failing(ProviderUnavailable("503"))
    with pytest.raises(ProviderUnavailable):
        anyio.run(lambda: _policy(fake).run(attempt, retry_if=lambda e: isinstance(e, RateLimited)))
    assert calls == [1] and fake.slept == []


def test_a_policy_is_checked() -> None:
    with pytest.raises(ConfigError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ConfigError):
        RetryPolicy(backoff_s=-1)


def test_retry_after_seconds_and_http_dates() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    later = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 2.5 ") == 2.5
    assert parse_retry_after(later, now=now.timestamp()) == pytest.approx(90)
    assert parse_retry_after("Wed, 01 Jan 2025 00:01:30 -0000", now=now.timestamp()) == pytest.approx(90)
    assert parse_retry_after(format_datetime(now - timedelta(seconds=5)), now=now.timestamp()) == 0.0
    assert parse_retry_after("-5") == 0.0
    for junk in (None, "", "soon", "inf", "nan"):
        assert parse_retry_after(junk) is None
    assert retry_after_from_headers({"Retry-After": "7"}) == 7.0
    assert retry_after_from_headers({"retry-after-ms": "250", "retry-after": "7"}) == 0.25
    assert retry_after_from_headers({"retry-after-ms": "x", "retry-after": "7"}) == 7.0
    assert retry_after_from_headers(httpx.Headers({"RETRY-AFTER": "4"})) == 4.0
    assert retry_after_from_headers({}) is None


# -- the three clients, one behaviour -----------------------------------------------------------------


def test_chat_stops_at_once_when_retry_after_exceeds_what_it_may_wait() -> None:
    """Chat used to sleep min(Retry-After, timeout) and retry before the server allowed (124 s for 120)."""
    with LoopbackWeb() as web:
        url = web.add_route(
            "/v1/chat/completions", Route(status=429, body=b"{}", headers={"Retry-After": "120"})
        )

        async def go() -> None:
            async with httpx.AsyncClient() as client:
                model = OpenAIChatModel(client, base_url=url.removesuffix("/chat/completions"), model="m")
                with anyio.fail_after(10):
                    await model.complete([ChatMessage(role="user", content="hi")])

        with pytest.raises(RateLimited) as caught:  # a sleep would end in the scope's TimeoutError
            anyio.run(go)
        assert caught.value.retry_after_s == 120.0
        assert web.count(path_prefix="/v1/chat") == 1


def test_web_search_retries_a_429_without_a_hint_after_a_backoff() -> None:
    """The search backend used to give up at once on a 429 that named no wait."""
    with LoopbackWeb() as web:
        web.script_search(Route(status=429, body=b"slow down"))

        async def go() -> int:
            async with httpx.AsyncClient() as client:
                page = await SearxngBackend(web.search_url, client).search("anything", count=2, timeout_s=5)
            return len(page.hits)

        assert anyio.run(go) == 0
        searches = [r for r in web.requests if r.path == "/search"]
        assert len(searches) == 2
        assert searches[1].at - searches[0].at >= 0.45, "the backoff was slept before the retry"


def test_embeddings_stop_at_once_when_the_wait_would_pass_the_callers_deadline() -> None:
    """The embeddings client used to sleep through its caller's deadline and be cancelled."""
    with LoopbackEmbeddingServer(dimension=8, retry_after="2") as server:
        server.mode = "rate_limit"

        async def go() -> None:
            async with OpenAIEmbedder("m", base_url=server.base_url, dimensions=8, max_retries=3) as embedder:
                with anyio.fail_after(3):
                    await embedder.embed(["x"])

        with pytest.raises(RateLimited) as caught:  # a second sleep would end in the scope's TimeoutError
            anyio.run(go)
        assert caught.value.retry_after_s == 2.0
        assert len(server.requests) == 2, "one wait of 2 s fitted in 3 s, the second did not"
