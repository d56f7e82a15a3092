"""Keeping an index fresh: follow file changes as they happen (``--watch``), or re-index on a schedule.

:func:`watch_index` watches the folders with `watchfiles <https://watchfiles.helpmanual.io/>`_
(the Rust ``notify`` crate: inotify, FSEvents, ReadDirectoryChangesW; kept by the pydantic
maintainers). Changes are **batched**: watchfiles waits until the tree has been quiet for
``debounce_ms``, and every change that arrived while a run was writing is folded into the next
run. Each run is an ordinary :meth:`DocumentIndex.index_paths` over the same folders, told which
files changed (the others are kept without being read; the walk still finds added, removed and
newly skipped files), under the collection's **one writer lock**: when another process holds it,
the batch waits and is tried again.

The watcher starts *before* the first full run, so a change made while that run reads the tree
is not lost: it is queued and indexed by the next run.

:func:`refresh_periodically` is the schedule ``simone serve`` uses for ``[index] watch``: a full
incremental run every ``refresh_seconds`` (cheap in a git work tree: only files changed since
the last indexed commit are read).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
from simone.providers.documents._index import DocumentIndex, IndexReport, _absolute
from simone.providers.documents._lock import CollectionBusy
from simone.runtime import InvalidRequest, ProviderError

WATCH_TIMEOUT_MS = 500
"""How often the watcher thread looks up from waiting (the latency of a stop, at most)."""

BUSY_RETRY_S = 2.0
"""Seconds before a batch is tried again when another process holds the writer lock."""


@dataclass(frozen=True, slots=True)
class WatchRun:
    """One run of a watched or scheduled index, for the caller to show.

    Attributes:
        kind: ``initial`` (the first full run), ``changes`` (a batch of file events), ``scheduled``
            (a run of :func:`refresh_periodically`) or ``error`` (the run failed; the next batch
            or tick tries again).
        added: files created in the batch (``changes`` runs).
        modified: files changed in the batch.
        deleted: files removed in the batch.
        report: what the run did (``None`` for an error).
        error: why the run failed, in plain words.
    """

    kind: Literal["initial", "changes", "scheduled", "error"]
    added: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    report: IndexReport | None = None
    error: str = ""


@dataclass(slots=True)
class _Batch:
    """Changes gathered since the last run: path → the latest kind (``added``/``modified``/``deleted``)."""

    kinds: dict[str, str] = field(default_factory=dict)

    def add(self, changes: set[tuple[object, str]]) -> None:
        for change, path in changes:
            name = getattr(change, "name", str(change))
            previous = self.kinds.get(path)
            if previous == "added" and name == "modified":
                continue  # still new to the index
            self.kinds[path] = name

    def named(self, kind: str) -> tuple[str, ...]:
        return tuple(sorted(path for path, name in self.kinds.items() if name == kind))


async def watch_index(
    index: DocumentIndex,
    paths: Sequence[str | Path],
    *,
    on_run: Callable[[WatchRun], None],
    project: str = "",
    embed: bool = True,
    debounce_ms: int = 1600,
    stop: anyio.Event | None = None,
) -> None:
    """Index ``paths``, then re-index the files that change under them until ``stop`` is set.

    Args:
        index: the opened index.
        paths: files or folders, as for :meth:`DocumentIndex.index_paths`.
        on_run: told after every run (:class:`WatchRun`), the first full run included.
        project: the project the chunks belong to.
        embed: embed new chunks now (else they wait as pending).
        debounce_ms: how long the tree must stay quiet before a batch is indexed.
        stop: ends the watch (after the run in progress) when set; otherwise it runs until cancelled.

    Raises:
        InvalidRequest: a path does not exist (checked before watching).
    """
    roots = [_absolute(path) for path in paths]
    missing = [root for root in roots if not await anyio.Path(root).exists()]
    if missing:
        raise InvalidRequest(f"{', '.join(missing)} does not exist; give existing files or folders to watch")
    from watchfiles import DefaultFilter, awatch

    stop = stop or anyio.Event()
    ignored = [index.store.uri] if "://" not in index.store.uri else []
    watch_filter = DefaultFilter(ignore_paths=ignored)
    send, receive = anyio.create_memory_object_stream[set[tuple[object, str]]](math.inf)
    ready = anyio.Event()

    async def follow() -> None:
        async with send:
            async for changes in awatch(
                *roots,
                watch_filter=watch_filter,
                debounce=debounce_ms,
                stop_event=stop,
                rust_timeout=WATCH_TIMEOUT_MS,
                yield_on_timeout=True,
            ):
                ready.set()  # the first answer (a change or a timeout): the watcher is running
                if changes:
                    try:
                        await send.send(set(changes))
                    except anyio.BrokenResourceError:  # the runs ended (stopped): so does the watch
                        return

    async def run(kind: Literal["initial", "changes"], batch: _Batch | None) -> bool:
        changed = None if batch is None else set(batch.kinds)
        try:
            report = await index.index_paths(roots, project=project, embed=embed, changed=changed)
        except CollectionBusy as exc:
            on_run(WatchRun("error", error=f"{exc.message} (trying again in {BUSY_RETRY_S:g} s)"))
            return False
        except (InvalidRequest, ProviderError) as exc:
            on_run(WatchRun("error", error=str(exc)))
            return True  # a vanished root or a failing store: wait for the next change
        if batch is None:
            on_run(WatchRun(kind, report=report))
        else:
            on_run(
                WatchRun(
                    kind,
                    added=batch.named("added"),
                    modified=batch.named("modified"),
                    deleted=batch.named("deleted"),
                    report=report,
                )
            )
        return True

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(follow)
        with anyio.move_on_after(30):  # the watcher answers within WATCH_TIMEOUT_MS once it runs
            await ready.wait()
        while not await run("initial", None):
            await _sleep_unless(stop, BUSY_RETRY_S)
            if stop.is_set():
                return
        batch = _Batch()
        async with receive:
            async for changes in receive:
                batch.add(changes)
                while True:
                    try:
                        batch.add(receive.receive_nowait())
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                while not await run("changes", batch):
                    await _sleep_unless(stop, BUSY_RETRY_S)
                    while True:  # changes that came meanwhile join the batch
                        try:
                            batch.add(receive.receive_nowait())
                        except (anyio.WouldBlock, anyio.EndOfStream):
                            break
                    if stop.is_set():
                        break
                batch = _Batch()
                if stop.is_set():
                    break
        stop.set()


async def refresh_periodically(
    index: DocumentIndex,
    paths: Sequence[str | Path],
    *,
    every_s: float,
    on_run: Callable[[WatchRun], None],
    project: str = "",
    stop: anyio.Event | None = None,
) -> None:
    """Re-index ``paths`` now and then every ``every_s`` seconds until ``stop`` is set (or cancelled).

    A failing run (another writer holds the lock, a folder is missing, the store fails) is
    reported through ``on_run`` and tried again at the next tick; the schedule never ends on one.
    """
    stop = stop or anyio.Event()
    while not stop.is_set():
        try:
            report = await index.index_paths(paths, project=project)
        except (InvalidRequest, ProviderError) as exc:
            on_run(WatchRun("error", error=str(exc)))
        else:
            on_run(WatchRun("scheduled", report=report))
        await _sleep_unless(stop, every_s)


async def _sleep_unless(stop: anyio.Event, seconds: float) -> None:
    with anyio.move_on_after(seconds):
        await stop.wait()
