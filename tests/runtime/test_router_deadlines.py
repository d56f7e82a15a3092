"""Issue 26, item 5: deadlines that bind whatever a provider does.

No test here times anything. Each blocking provider waits on an event that the test sets only after
the call returned, so a call that returns at all while the provider is still blocked proves it did not
wait for it. A watchdog sets the event after a while so the old behaviour (waiting for the thread)
ends in a failed assertion rather than a hang.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from functools import partial

import anyio
import anyio.to_thread
import pytest
from simone.runtime import (
    ProviderKind,
    ProviderResponse,
    RetrievalRequest,
    RetrievalResult,
    Router,
    Status,
    TrustedContext,
    run_blocking,
)
from simone.runtime.testing import StaticProvider, make_evidence

CTX = TrustedContext(actor="alice", token_budget=10_000)
DEADLINE_S = 0.2
WATCHDOG_S = 20.0  # only ends a hang of the old behaviour; no assertion depends on it


class Gate:
    """A thread-safe gate the blocked work waits on; ``finished`` is set when the work has ended."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.finished = threading.Event()
        self._watchdog = threading.Timer(WATCHDOG_S, self.release.set)
        self._watchdog.daemon = True
        self._watchdog.start()

    def block(self) -> None:
        """What the blocking work runs in its thread."""
        self.started.set()
        try:
            self.release.wait()
        finally:
            self.finished.set()

    def open(self) -> None:
        """Let the blocked work finish, and wait (in this thread) until it has."""
        self.release.set()
        self._watchdog.cancel()
        assert self.finished.wait(WATCHDOG_S)


async def open_gate(gate: Gate) -> None:
    """Open ``gate`` from a thread of its own limiter: the blocked work may hold every default token."""
    await anyio.to_thread.run_sync(gate.open, limiter=anyio.CapacityLimiter(1))


@pytest.fixture
def gate() -> Iterator[Gate]:
    g = Gate()
    yield g
    g.release.set()
    g._watchdog.cancel()


class ThreadProvider:
    """A third-party provider that waits on a thread it does not abandon on cancellation."""

    kind = ProviderKind.CUSTOM

    def __init__(self, name: str, gate: Gate) -> None:
        self.name = name
        self.gate = gate

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        await anyio.to_thread.run_sync(self.gate.block)  # not abandon_on_cancel: anyio waits for it
        return ProviderResponse(evidence=make_evidence(self.name, ["LATE-PASSAGE"]))


class ShieldedProvider:
    """A provider that shields its work from cancellation until an anyio event is set."""

    kind = ProviderKind.CUSTOM

    def __init__(self, name: str) -> None:
        self.name = name
        self.release = anyio.Event()
        self.done = anyio.Event()
        self.finished = False

    async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
        with anyio.CancelScope(shield=True):
            with anyio.move_on_after(WATCHDOG_S):
                await self.release.wait()
        self.finished = True
        self.done.set()
        return ProviderResponse(evidence=make_evidence(self.name, ["LATE-PASSAGE"]))


def ok() -> StaticProvider:
    return StaticProvider("ok", make_evidence("ok", ["alpha text one"]))


def test_a_provider_waiting_on_a_thread_is_left_behind_at_its_deadline(gate: Gate) -> None:
    router = Router([ThreadProvider("blocked", gate), ok()], provider_timeout_s=DEADLINE_S)

    async def go() -> tuple[RetrievalResult, bool]:
        result = await router.retrieve(router.request("question"), CTX)
        still_running = gate.started.is_set() and not gate.finished.is_set()
        await open_gate(gate)
        return result, still_running

    result, still_running = anyio.run(go)
    assert still_running, "the call waited for the blocked thread instead of returning at its deadline"
    (failure,) = result.failures
    assert failure.provider == "blocked" and failure.kind == "timeout" and failure.retryable
    assert "left to finish on its own" in failure.message
    assert result.status is Status.PARTIAL
    assert [e.content for e in result.evidence] == ["alpha text one"]
    assert "LATE-PASSAGE" not in result.to_json()


def test_a_shielded_provider_is_left_behind_and_its_late_answer_dropped() -> None:
    shielded = ShieldedProvider("shielded")
    router = Router([shielded], provider_timeout_s=DEADLINE_S)

    async def go() -> tuple[RetrievalResult, bool]:
        result = await router.retrieve(router.request("question"), CTX)
        finished_before_return = shielded.finished
        shielded.release.set()
        with anyio.fail_after(WATCHDOG_S):
            await shielded.done.wait()
        return result, finished_before_return

    result, finished_before_return = anyio.run(go)
    assert not finished_before_return
    assert result.status is Status.FAILED and [f.kind for f in result.failures] == ["timeout"]


def test_the_context_deadline_binds_a_provider_waiting_on_a_thread(gate: Gate) -> None:
    router = Router([ThreadProvider("blocked", gate)], provider_timeout_s=600)
    ctx = TrustedContext(actor="a", deadline=time.time() + DEADLINE_S)

    async def go() -> tuple[RetrievalResult, bool]:
        result = await router.retrieve(router.request("question"), ctx)
        still_running = not gate.finished.is_set()
        await open_gate(gate)
        return result, still_running

    result, still_running = anyio.run(go)
    assert still_running
    assert result.status is Status.FAILED and result.failures[0].kind == "timeout"


def test_a_caller_cancelled_while_a_provider_is_shielded_is_not_held_by_it() -> None:
    shielded = ShieldedProvider("shielded")
    router = Router([shielded], provider_timeout_s=600)
    outcome: list[object] = []

    async def go() -> bool:
        with anyio.move_on_after(DEADLINE_S) as scope:
            outcome.append(await router.retrieve(router.request("question"), CTX))
        assert scope.cancelled_caught
        finished_before_return = shielded.finished
        shielded.release.set()
        return finished_before_return

    assert anyio.run(go) is False
    assert outcome == []


def test_the_caller_scope_deadline_is_the_providers_deadline_too() -> None:
    seen: list[float] = []

    class Looks:
        name = "looks"
        kind = ProviderKind.CUSTOM

        async def retrieve(self, request: RetrievalRequest, context: TrustedContext) -> ProviderResponse:
            seen.append(anyio.current_effective_deadline() - anyio.current_time())
            return ProviderResponse()

    router = Router([Looks()], provider_timeout_s=600)

    async def go() -> None:
        with anyio.fail_after(30):
            await router.retrieve(router.request("question"), CTX)

    anyio.run(go)
    (left,) = seen
    assert left <= 30  # the provider runs in a task of its own, yet it sees the caller's deadline


def test_many_concurrent_calls_all_return_before_any_blocked_thread_finishes(gate: Gate) -> None:
    # More calls than anyio's default thread limiter has tokens (40): the ones queued behind it never
    # started a thread, and the waiting counts against their deadline too.
    router = Router([ThreadProvider("blocked", gate), ok()], provider_timeout_s=DEADLINE_S * 5)
    results: list[RetrievalResult] = []

    async def one() -> None:
        results.append(await router.retrieve(router.request("question"), CTX))

    async def go() -> bool:
        async with anyio.create_task_group() as group:
            for _ in range(200):
                group.start_soon(one)
        still_running = not gate.finished.is_set()
        await open_gate(gate)
        return still_running

    assert anyio.run(go)
    assert len(results) == 200
    assert all(r.status is Status.PARTIAL and [f.kind for f in r.failures] == ["timeout"] for r in results)


# --- run_blocking: a provider's own blocking work ------------------------------------------------


def test_run_blocking_returns_when_cancelled_and_keeps_its_token_until_the_thread_ends(
    gate: Gate,
) -> None:
    limiter = anyio.CapacityLimiter(1)

    async def go() -> tuple[bool, float, float]:
        with anyio.move_on_after(DEADLINE_S) as scope:
            await run_blocking(gate.block, limiter=limiter)
        assert scope.cancelled_caught
        still_running = not gate.finished.is_set()
        held_while_running = limiter.borrowed_tokens
        await open_gate(gate)
        with anyio.fail_after(WATCHDOG_S):
            async with limiter:  # the token comes back once the abandoned thread has ended
                pass
        return still_running, held_while_running, limiter.borrowed_tokens

    still_running, held, after = anyio.run(go)
    assert still_running
    assert held == 1  # the abandoned thread still holds the connection the limiter guards
    assert after == 0


def test_run_blocking_cancelled_while_queued_never_starts_its_work(gate: Gate) -> None:
    limiter = anyio.CapacityLimiter(1)
    ran: list[str] = []

    async def go() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(partial(run_blocking, gate.block, limiter=limiter))
            await anyio.to_thread.run_sync(gate.started.wait)
            with anyio.move_on_after(DEADLINE_S):
                await run_blocking(ran.append, "queued", limiter=limiter)
            await open_gate(gate)
        await run_blocking(ran.append, "later", limiter=limiter)

    anyio.run(go)
    assert ran == ["later"]


def test_run_blocking_returns_the_result_and_raises_the_error() -> None:
    def boom() -> None:
        raise ValueError("broken")

    async def go() -> int:
        with pytest.raises(ValueError, match="broken"):
            await run_blocking(boom)
        return await run_blocking(sum, [1, 2, 3])

    assert anyio.run(go) == 6
