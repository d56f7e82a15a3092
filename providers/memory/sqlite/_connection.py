"""The SQLite connection under :class:`SQLiteMemoryStore`: open, close, transactions, error translation.

One connection per store, used by one worker thread at a time (an anyio ``CapacityLimiter`` of one, and a
lock for the synchronous paths), WAL journal, ``synchronous=NORMAL``, a busy timeout, and every operation
in its own ``BEGIN IMMEDIATE`` transaction. SQLite errors are translated here, once, into
:class:`~simone.runtime.ProviderUnavailable` (retryable when the file stayed locked).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

import anyio
from simone.providers.memory._clock import Clock, IdGenerator
from simone.providers.memory._core import DB, StoreCore
from simone.providers.memory._scope import visible_signatures
from simone.providers.memory._terms import TermAnalyzer, analyzer_fingerprint, default_term_analyzer
from simone.providers.memory.sqlite._cache import SearchCache, prune_changes
from simone.providers.memory.sqlite._schema import migrate
from simone.runtime import (
    SQLITE_SIDECARS,
    ConfigError,
    MemorySettings,
    ProviderUnavailable,
    TrustedContext,
    owner_only_file,
)

T = TypeVar("T")


class SQLiteCore(StoreCore):
    """Life cycle and transactions of the SQLite memory database (see :class:`SQLiteMemoryStore`)."""

    backend = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        settings: MemorySettings | None = None,
        analyzer: TermAnalyzer | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        limiter: anyio.CapacityLimiter | None = None,
        purge_on_open: bool = True,
        analyzer_key: str = "",
    ) -> None:
        if str(path) in ("", ":memory:"):
            raise ConfigError("memory needs a file path (several connections must see one database)")
        super().__init__(
            settings=settings,
            analyzer=analyzer,
            clock=clock,
            ids=ids,
            purge_on_open=purge_on_open,
            analyzer_key=analyzer_key,
        )
        self._path = Path(path).expanduser()
        self._limiter = limiter or anyio.CapacityLimiter(1)
        self._db: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._cache = SearchCache(self._settings.search_cache_postings)

    # -- life cycle ------------------------------------------------------------------------------------

    async def open(self) -> None:
        """Open (create, migrate, re-index if needed) the database."""
        if self._db is not None:
            return
        await anyio.to_thread.run_sync(self._open_sync, limiter=self._limiter)

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        await anyio.to_thread.run_sync(self._close_sync, limiter=self._limiter)

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _open_sync(self) -> None:
        with self._lock:
            try:
                owner_only_file(self._path, sidecars=SQLITE_SIDECARS)
                db = sqlite3.connect(
                    self._path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self._settings.busy_timeout_s,
                )
            except (OSError, sqlite3.Error) as exc:
                raise ProviderUnavailable(
                    f"cannot open the memory database {self._path}: {exc}; check that the folder is "
                    "writable or set memory.path",
                    provider="memory",
                ) from exc
            db.row_factory = sqlite3.Row
            try:
                db.execute(f"PRAGMA busy_timeout = {int(self._settings.busy_timeout_s * 1000)}")
                _wal(db, self._settings.busy_timeout_s)
                db.execute("PRAGMA synchronous = NORMAL")
                # a larger page cache and memory-mapped reads keep rank-then-fetch lookups off the syscalls
                db.execute("PRAGMA cache_size = -65536")
                db.execute("PRAGMA mmap_size = 268435456")
                if self._analyzer is None:
                    self._analyzer = default_term_analyzer()
                fingerprint = analyzer_fingerprint(self._analyzer, self._analyzer_key)
                self._db = db
                self._write(lambda c: self._prepare(c, fingerprint))
            except Exception as exc:
                self._db = None
                db.close()
                if isinstance(exc, sqlite3.Error):
                    raise self._translate(exc) from exc
                raise
        if self._purge_on_open:
            self._guarded(self._purge_sync)

    def _prepare(self, db: sqlite3.Connection, fingerprint: str) -> None:
        migrate(db, str(self._path))
        row = db.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()
        if row is None or row[0] != fingerprint:
            if row is not None:
                self._reindex(db)
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('analyzer', ?)", (fingerprint,))

    def _close_sync(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._cache.clear()

    # -- plumbing --------------------------------------------------------------------------------------

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(partial(self._guarded, function, *args), limiter=self._limiter)

    def _guarded(self, function: Callable[..., T], *args: Any) -> T:
        with self._lock:
            if self._db is None:
                raise ConfigError(
                    "the memory store is not open; use `async with store:` or await store.open()"
                )
            try:
                return function(*args)
            except sqlite3.Error as exc:
                raise self._translate(exc) from exc

    def _translate(self, exc: sqlite3.Error) -> ProviderUnavailable:
        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return ProviderUnavailable(
                f"the memory database {self._path} stayed locked by another process for more than "
                f"{self._settings.busy_timeout_s:g} s; try again, or raise memory.busy_timeout_s",
                provider="memory",
                retryable=True,
            )
        return ProviderUnavailable(
            f"the memory database {self._path} failed: {text}; check the file (disk full? damaged?) "
            "or restore it from `simone memory export` output",
            provider="memory",
        )

    def _write(self, function: Callable[[DB], T]) -> T:
        db = self._db
        assert db is not None
        db.execute("BEGIN IMMEDIATE")
        committed = False
        try:
            result = function(db)
            db.execute("COMMIT")
            committed = True
            return result
        finally:
            if not committed and db.in_transaction:
                db.execute("ROLLBACK")

    def _read(self) -> DB:
        assert self._db is not None
        return self._db

    @staticmethod
    def _visible_scopes(db: sqlite3.Connection, context: TrustedContext) -> list[tuple[int, str, int]]:
        """``(number, signature, epoch)`` of the scopes that exist and are visible to ``context``."""
        signatures = visible_signatures(context)
        marks = ", ".join("?" for _ in signatures)
        rows = db.execute(f"SELECT n, sig, epoch FROM scopes WHERE sig IN ({marks}) ORDER BY n", signatures)
        return [(int(n), str(sig), int(epoch)) for n, sig, epoch in rows.fetchall()]

    def _tag_condition(self, alias: str) -> str:
        return f"EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE json_each.value = ?)"

    def _after_purge(self, db: DB) -> None:
        prune_changes(db)


def _wal(db: sqlite3.Connection, timeout_s: float) -> None:
    """Switch ``db`` to WAL, retrying while another process holds the lock the switch needs.

    SQLite does not call the busy handler for this switch in every lock state: two processes
    opening a new database at once saw "database is locked" at once (tests: two writers).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.02)
