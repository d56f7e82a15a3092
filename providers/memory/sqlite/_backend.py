"""The SQLite backend of memory: open, close, transactions, error translation, the dialect, FTS5 search.

One connection per store, used by one worker thread at a time (an anyio ``CapacityLimiter`` of one, and a
lock for the synchronous paths), WAL journal, ``synchronous=NORMAL`` (a committed transaction survives a
killed process), a busy timeout, and every write in its own ``BEGIN IMMEDIATE`` transaction, so several
processes can write the same file without losing anything. SQLite errors are translated here, once
(:meth:`SQLiteBackend.translate`): into :class:`~simone.runtime.ProviderUnavailable` (retryable when the
file stayed locked), or :class:`~simone.providers.memory._backend.ConstraintViolation` for a broken unique
key.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio
from simone.providers.memory._backend import ConstraintViolation, Db, Params, Row, SqlValue
from simone.providers.memory.sqlite._cache import fts_totals
from simone.providers.memory.sqlite._schema import migrate
from simone.providers.memory.sqlite._search import rank_records, rank_turns
from simone.runtime import (
    SQLITE_SIDECARS,
    ConfigError,
    MemorySettings,
    ProviderUnavailable,
    owner_only_file,
)

T = TypeVar("T")


class SQLiteDb:
    """A ``sqlite3`` connection (autocommit, rows by position and name) as a :class:`~._backend.Db`."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def execute(self, sql: str, params: Params = (), /) -> sqlite3.Cursor:
        """Run one statement; ``?`` marks take ``params`` in order."""
        return self.connection.execute(sql, params)

    def insert_many(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[SqlValue]]) -> None:
        """``INSERT`` each row (one prepared statement; the triggers fire per row)."""
        marks = ", ".join("?" for _ in columns)
        self.connection.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)

    def write(self, work: Callable[[Db], T]) -> T:
        """``work(self)`` in one ``BEGIN IMMEDIATE`` transaction (it waits out other writers)."""
        return self._transaction("BEGIN IMMEDIATE", work)

    def snapshot(self, work: Callable[[Db], T]) -> T:
        """``work(self)`` in one read transaction (WAL: one snapshot, writers go on)."""
        return self._transaction("BEGIN", work)

    def _transaction(self, begin: str, work: Callable[[Db], T]) -> T:
        connection = self.connection
        connection.execute(begin)
        committed = False
        try:
            result = work(self)
            connection.execute("COMMIT")
            committed = True
            return result
        finally:
            if not committed and connection.in_transaction:
                connection.execute("ROLLBACK")


class SQLiteBackend:
    """Memory in one SQLite file (see the module docstring).

    Args:
        path: the database file (created with its folder if missing).
        settings: memory limits (the busy timeout).
        limiter: the thread limiter for blocking SQLite work (default: one thread per store).
    """

    name = "sqlite"

    def __init__(
        self, path: str | Path, settings: MemorySettings, limiter: anyio.CapacityLimiter | None = None
    ) -> None:
        if str(path) in ("", ":memory:"):
            raise ConfigError("memory needs a file path (several connections must see one database)")
        self.path = Path(path).expanduser()
        self._settings = settings
        self._limiter = limiter or anyio.CapacityLimiter(1)
        self._db: SQLiteDb | None = None
        self._lock = threading.Lock()
        self.cache_lock: AbstractContextManager[object] = nullcontext()
        """Nothing to take: every operation already holds the connection's lock."""

    @property
    def is_open(self) -> bool:
        """Whether the file is open."""
        return self._db is not None

    # -- life cycle ------------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Open the file (its folder and the file owner-only), WAL, the pragmas."""
        await anyio.to_thread.run_sync(self._connect_sync, limiter=self._limiter)

    def _connect_sync(self) -> None:
        with self._lock:
            try:
                owner_only_file(self.path, sidecars=SQLITE_SIDECARS)
                connection = sqlite3.connect(
                    self.path,
                    isolation_level=None,
                    check_same_thread=False,
                    timeout=self._settings.busy_timeout_s,
                )
            except (OSError, sqlite3.Error) as exc:
                raise ProviderUnavailable(
                    f"cannot open the memory database {self.path}: {exc}; check that the folder is "
                    "writable or set memory.path",
                    provider="memory",
                ) from exc
            connection.row_factory = sqlite3.Row
            try:
                connection.execute(f"PRAGMA busy_timeout = {int(self._settings.busy_timeout_s * 1000)}")
                _wal(connection, self._settings.busy_timeout_s)
                connection.execute("PRAGMA synchronous = NORMAL")
                # a larger page cache and memory-mapped reads keep rank-then-fetch lookups off the syscalls
                connection.execute("PRAGMA cache_size = -65536")
                connection.execute("PRAGMA mmap_size = 268435456")
            except sqlite3.Error as exc:
                connection.close()
                raise self.translate(exc) from exc
            self._db = SQLiteDb(connection)

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        await anyio.to_thread.run_sync(self._close_sync, limiter=self._limiter)

    def _close_sync(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.connection.close()
                self._db = None

    # -- running operations ----------------------------------------------------------------------------

    async def run(self, work: Callable[[Db], T]) -> T:
        """``work(db)`` on the store's worker thread, SQLite's errors translated."""
        return await anyio.to_thread.run_sync(partial(self._guarded, work), limiter=self._limiter)

    def _guarded(self, work: Callable[[Db], T]) -> T:
        with self._lock:
            if self._db is None:
                raise ConfigError(
                    "the memory store is not open; use `async with store:` or await store.open()"
                )
            try:
                return work(self._db)
            except sqlite3.Error as exc:
                raise self.translate(exc) from exc

    def translate(self, exc: sqlite3.Error) -> ProviderUnavailable | ConstraintViolation:
        """The runtime error of a SQLite error (the one place SQLite's errors are translated)."""
        text = str(exc)
        if isinstance(exc, sqlite3.IntegrityError):
            return ConstraintViolation(text)
        if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return ProviderUnavailable(
                f"the memory database {self.path} stayed locked by another process for more than "
                f"{self._settings.busy_timeout_s:g} s; try again, or raise memory.busy_timeout_s",
                provider="memory",
                retryable=True,
            )
        return ProviderUnavailable(
            f"the memory database {self.path} failed: {text}; check the file (disk full? damaged?) "
            "or restore it from `simone memory export` output",
            provider="memory",
        )

    # -- the dialect -----------------------------------------------------------------------------------

    def migrate(self, db: Db) -> None:
        """Bring the schema to the version this code writes (``PRAGMA user_version``)."""
        migrate(db, str(self.path))

    def tag_condition(self, alias: str) -> str:
        """The JSON array ``{alias}.tags`` holds the parameter (``json_each``)."""
        return f"EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE json_each.value = ?)"

    def rowids_in(self, column: str, rowids: Sequence[int]) -> tuple[str, SqlValue]:
        """``column`` is one of ``rowids``: a JSON array, unpacked by ``json_each``."""
        return f"{column} IN (SELECT value FROM json_each(?))", json.dumps(list(rowids))

    # -- full-text search ------------------------------------------------------------------------------

    def collection_stats(self, db: Db) -> tuple[int, int]:
        """FTS5's row count and token total, as ``bm25()`` reads them."""
        return fts_totals(db)

    def rank_records(
        self, db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
    ) -> list[tuple[Row, float]]:
        """FTS5's ``bm25()`` (:func:`~.sqlite._search.rank_records`)."""
        return rank_records(db, terms, numbers, condition, params, limit)

    def rank_turns(
        self, db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
    ) -> list[tuple[Row, float]]:
        """FTS5's ``bm25()`` over the turns (:func:`~.sqlite._search.rank_turns`)."""
        return rank_turns(db, terms, numbers, condition, params, limit)

    def after_bulk_import(self, db: Db) -> None:
        """Merge the records' full-text index into one segment."""
        db.execute("INSERT INTO records_fts (records_fts) VALUES ('optimize')")


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
