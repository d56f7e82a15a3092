"""Deadlines that bind: wait for work with a deadline, and leave behind work that ignores it.

anyio's structured concurrency waits for every child task, so a call whose provider waits on a thread
that is not abandoned on cancellation (``anyio.to_thread.run_sync`` without ``abandon_on_cancel``),
shields itself or swallows its cancellation returns only when that work is done, however early its
deadline. Here the work runs in a task of its own (an asyncio task the caller does not own). The
caller waits for the result; when the caller is cancelled (its deadline or an explicit cancel) the
work's scope is cancelled too, the caller waits at most ``grace_s`` more for it to unwind and then
re-raises its own cancellation, leaving the work to finish or die on its own; its result is dropped.

What still cannot bind: work that blocks the event loop itself (a coroutine that calls ``time.sleep``
or a C extension without a thread) holds every task, this one included; it is timed when it yields.
Without a running asyncio loop (trio) the work runs inline, as structured concurrency has it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import anyio
import anyio.to_thread

T = TypeVar("T")

_LEFT_BEHIND: set[asyncio.Task[None]] = set()
"""Tasks still running: asyncio keeps only weak references to tasks, so they are kept here until done."""


class Detached(Generic[T]):
    """Work running in a task of its own, which its caller may stop waiting for.

    Start it with :meth:`start`, then :meth:`wait` for it; when the waiting caller is cancelled, the
    work is cancelled too and may be left behind (see :func:`wait_detached`).
    """

    def __init__(self, func: Callable[[], Awaitable[T]]) -> None:
        self._func = func
        self._done = anyio.Event()
        self._scope = anyio.CancelScope()
        self._result: T | None = None
        self._error: BaseException | None = None
        self._detached = False

    @classmethod
    def start(cls, func: Callable[[], Awaitable[T]]) -> Detached[T]:
        """Start ``func()`` in a task of its own (without asyncio, it runs inline in :meth:`wait`)."""
        work = cls(func)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # not asyncio (trio): no task may outlive its caller there
            return work
        task = loop.create_task(work._run())
        _LEFT_BEHIND.add(task)
        task.add_done_callback(_LEFT_BEHIND.discard)
        work._detached = True
        return work

    async def _run(self) -> None:
        try:
            with self._scope:
                self._result = await self._func()
        except BaseException as exc:  # noqa: BLE001 -- carried to the waiting caller, which re-raises it
            self._error = exc
        finally:
            self._done.set()

    @property
    def done(self) -> bool:
        """Whether the work has finished (returned or raised)."""
        return self._done.is_set()

    def result(self) -> T:
        """What the work returned; what it raised is re-raised. Only once :attr:`done`."""
        if not self.done:
            raise RuntimeError("the detached work has not finished")
        if self._error is not None:
            raise self._error
        return self._result  # type: ignore[return-value]  # set: done without an error

    async def wait(self, *, grace_s: float = 0.0) -> T:
        """The work's result; a cancelled caller cancels the work, waits ``grace_s`` and re-raises."""
        if not self._detached:
            return await self._func()
        try:
            await self._done.wait()
        except anyio.get_cancelled_exc_class():
            self._scope.cancel()
            if grace_s > 0:
                with anyio.move_on_after(grace_s, shield=True):
                    await self._done.wait()
            raise
        return self.result()


async def wait_detached(func: Callable[[], Awaitable[T]], *, grace_s: float = 0.0) -> T:
    """Await ``func()`` run in a task of its own that this call may leave behind.

    The work runs outside the caller's cancel scopes: give it its own deadline (``anyio.fail_after``
    inside ``func``) where it should see one. When the caller is cancelled, the work is cancelled too;
    the caller waits (shielded) at most ``grace_s`` seconds for it to finish,
    then re-raises its cancellation. Work that has not finished by then is left to finish or die on
    its own; what it returns or raises later is dropped.

    Args:
        func: the work, a coroutine function of no arguments.
        grace_s: seconds a cancelled caller still waits for the work to unwind (0: none).

    Returns:
        What ``func()`` returned; what it raised is re-raised (cancellation included).
    """
    return await Detached.start(func).wait(grace_s=grace_s)


async def run_blocking(
    func: Callable[..., T], *args: object, limiter: anyio.CapacityLimiter | None = None
) -> T:
    """``func(*args)`` in a worker thread; a cancelled caller returns at once, the thread runs on.

    Unlike ``anyio.to_thread.run_sync(..., abandon_on_cancel=True)``, the ``limiter``'s token stays
    held until the thread is really done (not only until the caller stops waiting), so a limiter of
    one that guards a connection or a model session still guards it: the next call queues behind the
    abandoned one. A call cancelled while it waits for a token never starts its thread. Time spent
    waiting for a token counts against the caller's deadline.

    Args:
        func: the blocking callable.
        *args: its positional arguments.
        limiter: the capacity limiter (anyio's default thread limiter when ``None``).
    """

    async def in_thread() -> T:
        return await anyio.to_thread.run_sync(func, *args, limiter=limiter)

    return await wait_detached(in_thread)
