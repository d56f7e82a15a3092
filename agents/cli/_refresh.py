"""``simone serve`` keeps ``[index] watch`` folders fresh: re-indexed every ``[index] refresh_seconds``.

The refresh runs beside the server — in its event loop with one worker, in a thread of the
supervisor with several (workers only read the index; the one writer lock per collection keeps a
``simone index`` started by hand from writing at the same time: the tick that meets it says so and
waits for the next). A run reads only what changed: in a git work tree, the files changed since
the last indexed commit; elsewhere every file's digest is compared and only changed files are
embedded. Each run that changed something, and each failure, is one line on stderr.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

import anyio
from simone.providers.documents import DocumentIndex, WatchRun, refresh_periodically, skipped_counts
from simone.runtime import EMBEDDING_CHAIN, EmbeddingChain, Settings

if TYPE_CHECKING:
    from simone.agents._runtime import Runtime


def _say(message: str) -> None:
    print(f"simone serve: {message}", file=sys.stderr, flush=True)  # noqa: T201


def describe(run: WatchRun) -> str | None:
    """The line for a scheduled run, or ``None`` when it changed nothing (quiet ticks)."""
    if run.report is None:
        return f"refreshing the index failed: {run.error}; trying again at the next tick"
    report = run.report
    if not (report.files_indexed or report.files_deleted):
        return None
    return (
        f"refreshed the index: {report.files_indexed} file(s) indexed, {report.files_deleted} removed, "
        f"{report.files_unchanged} unchanged, {skipped_counts(report.skipped)} in {report.elapsed_s:.1f} s"
    )


async def keep_fresh(
    settings: Settings, *, say: Callable[[str], None] = _say, chain: EmbeddingChain | None = None
) -> None:
    """Re-index ``settings.index.watch`` every ``refresh_seconds`` until cancelled.

    ``chain``: an open embedding chain to embed with (the server's runtime's); else one is built
    from the settings and opened for the refresh.
    """
    folders = [str(path) for path in settings.index.watch]
    every = settings.index.refresh_seconds
    say(f"keeping {len(folders)} folder(s) fresh, every {every:g} s ([index] watch)")

    def on_run(run: WatchRun) -> None:
        line = describe(run)
        if line is not None:
            say(line)

    try:
        async with DocumentIndex.open(settings, chain=chain) as index:
            await refresh_periodically(index, folders, every_s=every, on_run=on_run)
    except Exception as exc:  # noqa: BLE001 - the server goes on without the refresh, and says why
        say(f"the index refresh stopped: {type(exc).__name__}: {exc}; serving without it")


@asynccontextmanager
async def refreshing(settings: Settings, runtime: Runtime | None = None) -> AsyncIterator[None]:
    """Keep the watched folders fresh in this event loop while the body runs (nothing without them).

    With the server's open ``runtime`` the refresh embeds with the chain its document index
    published (:data:`~simone.runtime.EMBEDDING_CHAIN`), so the server holds one model session.
    """
    if not settings.index.watch:
        yield
        return
    chain = runtime.published.get(EMBEDDING_CHAIN) if runtime is not None else None
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(functools.partial(keep_fresh, settings, chain=chain))
        try:
            yield
        finally:
            tasks.cancel_scope.cancel()


@contextmanager
def refreshing_in_thread(settings: Settings) -> Iterator[None]:
    """:func:`refreshing` for a blocking body (the multi-worker supervisor): the loop runs in a thread."""
    if not settings.index.watch:
        yield
        return
    with anyio.from_thread.start_blocking_portal() as portal:
        future = portal.start_task_soon(keep_fresh, settings)
        try:
            yield
        finally:
            future.cancel()
