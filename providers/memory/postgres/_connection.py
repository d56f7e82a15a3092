"""The PostgreSQL connection pool under :class:`PostgresMemoryStore`: open, close, transactions, errors.

psycopg 3 and psycopg_pool are imported when a store opens, so the embedded SQLite default never needs
them (extra ``simone[postgres]``). The backend-neutral operations are blocking transaction functions
(:mod:`simone.providers.memory._core`); they run on anyio worker threads, as many at once as the pool
holds connections, each with its own connection from the pool (psycopg's ``ConnectionPool``, connections
checked before use so a restarted server is reconnected to). Connections are in autocommit mode; a write
is ``BEGIN`` … ``COMMIT`` holding memory's transaction-scoped advisory lock, so writers from every
process and host are serialised exactly as SQLite's ``BEGIN IMMEDIATE`` serialises them (no lost update
between a read and the write that depends on it). Every psycopg error becomes
:class:`~simone.runtime.ProviderUnavailable` of provider ``memory`` (retryable when the server could not
be reached). Its message names the backend kind only — it reaches callers of ``simone serve``, who must
not learn where the database lives —; the server and the driver's own words go to the log
(``simone.providers.memory.postgres``), and ``simone doctor`` shows the address without its password.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from types import TracebackType
from typing import Any, Self, TypeVar
from urllib.parse import urlsplit, urlunsplit

import anyio
from simone.providers.memory._clock import Clock, IdGenerator
from simone.providers.memory._core import DB, StoreCore
from simone.providers.memory._terms import TermAnalyzer, analyzer_fingerprint, default_term_analyzer
from simone.providers.memory.postgres._cache import PostgresSearchCache, prune_changes
from simone.providers.memory.postgres._schema import migrate
from simone.runtime import ConfigError, MemorySettings, ProviderUnavailable

T = TypeVar("T")

_log = logging.getLogger("simone.providers.memory.postgres")

_LOCK_KEY = 0x51_4D_45_4D  # "SMEM": memory's advisory lock (one per database)
"""The key of the advisory lock every memory write transaction holds."""


def redact(url: str) -> str:
    """``url`` without its password (for messages and ``doctor``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}:***@" if parts.username else ""
    return urlunsplit((parts.scheme, user + host, parts.path, parts.query, parts.fragment))


class Row:
    """A result row that indexes by position and by column name, like ``sqlite3.Row``."""

    __slots__ = ("_names", "_values")

    def __init__(self, values: Sequence[Any], names: dict[str, int]) -> None:
        self._values = values
        self._names = names

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self._values[self._names[key]]
        return self._values[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def keys(self) -> list[str]:
        """The column names."""
        return list(self._names)


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    names = {column.name: index for index, column in enumerate(cursor.description or ())}
    return partial(Row, names=names)


class Connection:
    """A psycopg connection speaking the neutral dialect: ``?`` parameter marks, rows like ``sqlite3``."""

    def __init__(self, connection: Any) -> None:
        self._connection = connection

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        """Run one statement; ``?`` marks take ``params`` in order."""
        if params is None:
            return self._connection.execute(sql)
        return self._connection.execute(sql.replace("%", "%%").replace("?", "%s"), list(params))

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
        """``COPY table (columns) FROM STDIN``: many rows in one statement (triggers fire once)."""
        with self._connection.cursor() as cursor:
            with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)


class PostgresCore(StoreCore):
    """Life cycle, pool and transactions of the PostgreSQL memory database."""

    backend = "postgres"

    def __init__(
        self,
        url: str,
        *,
        settings: MemorySettings | None = None,
        analyzer: TermAnalyzer | None = None,
        clock: Clock | None = None,
        ids: IdGenerator | None = None,
        purge_on_open: bool = True,
        analyzer_key: str = "",
        pool_size: int = 8,
        connect_timeout_s: float = 10.0,
    ) -> None:
        if not url.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"memory.url must be a postgresql:// URL, not {redact(url)!r}")
        super().__init__(
            settings=settings,
            analyzer=analyzer,
            clock=clock,
            ids=ids,
            purge_on_open=purge_on_open,
            analyzer_key=analyzer_key,
        )
        self._url = url
        self._pool_size = pool_size
        self._connect_timeout_s = connect_timeout_s
        self._limiter = anyio.CapacityLimiter(pool_size)
        self._pool: Any = None
        self._local = threading.local()
        self._errors: tuple[type[Exception], ...] = ()
        self._schema_version = 0
        self._cache = PostgresSearchCache(self._settings.search_cache_postings)
        self._cache_lock = threading.Lock()

    @property
    def address(self) -> str:
        """The server and database, without the password."""
        return redact(self._url)

    @property
    def schema_version(self) -> int:
        """The schema version of the open database (0 before opening)."""
        return self._schema_version

    # -- life cycle ------------------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect (the pool), create or migrate the schema, re-index if the analysis changed."""
        if self._pool is not None:
            return
        try:
            import psycopg
            import psycopg_pool
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ConfigError(
                "memory.url names a PostgreSQL server, but psycopg is not installed; "
                "pip install 'simone[postgres]'"
            ) from exc
        self._errors = (psycopg.Error, psycopg_pool.PoolTimeout)
        self._integrity_errors = (psycopg.errors.IntegrityError,)
        pool = psycopg_pool.ConnectionPool(
            self._url,
            min_size=1,
            max_size=self._pool_size,
            open=False,
            kwargs={
                "autocommit": True,
                "row_factory": _row_factory,
                "connect_timeout": max(1, round(self._connect_timeout_s)),
            },
            check=psycopg_pool.ConnectionPool.check_connection,
            timeout=self._settings.busy_timeout_s,
            reconnect_timeout=self._connect_timeout_s,
            name="simone-memory",
        )
        try:
            await anyio.to_thread.run_sync(partial(pool.open, wait=True, timeout=self._connect_timeout_s))
        except self._errors as exc:
            await anyio.to_thread.run_sync(pool.close)
            _log.warning("cannot reach the memory database %s: %s", self.address, exc)
            raise ProviderUnavailable(
                f"memory backend postgresql unavailable: cannot connect ({type(exc).__name__}); check that "
                "PostgreSQL runs at [memory] url ('simone doctor' shows the address, the log the reason)",
                provider="memory",
                retryable=True,
            ) from exc
        self._pool = pool
        if self._analyzer is None:
            self._analyzer = default_term_analyzer()
        fingerprint = analyzer_fingerprint(self._analyzer, self._analyzer_key)
        try:
            await self._run(self._write, partial(self._prepare, fingerprint=fingerprint))
            if self._purge_on_open:
                await self._run(self._purge_sync)
        except BaseException:
            await self.close()
            raise

    def _prepare(self, db: DB, fingerprint: str) -> None:
        migrate(db, self.address)
        self._schema_version = int(db.execute("SELECT max(version) FROM schema_version").fetchone()[0])
        row = db.execute("SELECT value FROM meta WHERE key = 'analyzer'").fetchone()
        if row is None or row[0] != fingerprint:
            if row is not None:
                self._reindex(db)
            db.execute(
                "INSERT INTO meta (key, value) VALUES ('analyzer', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (fingerprint,),
            )

    async def close(self) -> None:
        """Close the pool (idempotent)."""
        pool, self._pool = self._pool, None
        with self._cache_lock:
            self._cache.clear()
        if pool is not None:
            await anyio.to_thread.run_sync(pool.close)

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- plumbing --------------------------------------------------------------------------------------

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        return await anyio.to_thread.run_sync(partial(self._guarded, function, *args), limiter=self._limiter)

    def _guarded(self, function: Callable[..., T], *args: Any) -> T:
        pool = self._pool
        if pool is None:
            raise ConfigError("the memory store is not open; use `async with store:` or await store.open()")
        try:
            with pool.connection() as connection:
                self._local.db = Connection(connection)
                try:
                    return function(*args)
                finally:
                    self._local.db = None
        except self._errors as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: Exception) -> ProviderUnavailable:
        import psycopg

        reached = not isinstance(exc, psycopg.OperationalError) and "PoolTimeout" not in type(exc).__name__
        _log.warning(
            "the memory database %s failed: %s", self.address, str(exc).strip() or type(exc).__name__
        )
        if reached:
            sqlstate = getattr(exc, "sqlstate", None)
            code = f", SQLSTATE {sqlstate}" if sqlstate else ""
            return ProviderUnavailable(
                f"memory backend postgresql failed ({type(exc).__name__}{code}); nothing was written by this "
                "operation (the server log has the detail)",
                provider="memory",
            )
        return ProviderUnavailable(
            f"memory backend postgresql unavailable ({type(exc).__name__}); nothing was written by this "
            "operation, try again once PostgreSQL answers",
            provider="memory",
            retryable=True,
        )

    def _read(self) -> DB:
        db = getattr(self._local, "db", None)
        assert db is not None, "memory work ran outside a pooled connection"
        return db

    def _write(self, function: Callable[[DB], T]) -> T:
        db = self._read()
        db.execute("BEGIN")
        committed = False
        try:
            db.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK_KEY,))
            result = function(db)
            db.execute("COMMIT")
            committed = True
            return result
        finally:
            if not committed:
                try:
                    db.execute("ROLLBACK")
                except self._errors:
                    pass  # the connection is gone: the server dropped the transaction with it

    def _tag_condition(self, alias: str) -> str:
        return f"{alias}.tags::jsonb @> jsonb_build_array(?::text)"

    def _after_purge(self, db: DB) -> None:
        prune_changes(db)

    def _after_bulk_import(self, db: DB) -> None:
        prune_changes(db)
