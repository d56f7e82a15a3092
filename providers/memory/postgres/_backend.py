"""The PostgreSQL backend of memory: the pool, transactions, error translation, the dialect, search in SQL.

psycopg 3 and psycopg_pool are imported when a store opens, so the embedded SQLite default never needs
them (extra ``simone[postgres]``). Operations run on anyio worker threads, as many at once as the pool
holds connections, each with its own connection from the pool (psycopg's ``ConnectionPool``, connections
checked before use so a restarted server is reconnected to). Connections are in autocommit mode; a write
is ``BEGIN`` … ``COMMIT`` holding memory's transaction-scoped advisory lock, so writers from every
process and host are serialised exactly as SQLite's ``BEGIN IMMEDIATE`` serialises them (no lost update
between a read and the write that depends on it); a snapshot is one ``REPEATABLE READ`` read-only
transaction. Every psycopg error is translated here, once (:meth:`PostgresBackend.translate`): into
:class:`~simone.runtime.ProviderUnavailable` of provider ``memory`` (retryable when the server could not
be reached), or :class:`~simone.providers.memory._backend.ConstraintViolation` for a broken constraint.
Its message names the backend kind only — it reaches callers of ``simone serve``, who must not learn
where the database lives —; the server and the driver's own words go to the log
(``simone.providers.memory.postgres``), and ``simone doctor`` shows the address without its password.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

import anyio
from simone.providers.memory._backend import ConstraintViolation, Db, Params, Row, SqlValue
from simone.providers.memory.postgres import _search as search
from simone.providers.memory.postgres._schema import migrate
from simone.runtime import ConfigError, MemorySettings, ProviderUnavailable, redact_url

if TYPE_CHECKING:
    import psycopg
    from psycopg.rows import RowMaker
    from psycopg_pool import ConnectionPool

T = TypeVar("T")

_log = logging.getLogger("simone.providers.memory.postgres")

_LOCK_KEY = 0x51_4D_45_4D  # "SMEM": memory's advisory lock (one per database)
"""The key of the advisory lock every memory write transaction holds."""


class PgRow:
    """A result row that indexes by position and by column name, like ``sqlite3.Row``."""

    __slots__ = ("_names", "_values")

    def __init__(self, values: Sequence[Any], names: dict[str, int]) -> None:
        self._values = values
        self._names = names

    def __getitem__(self, key: int | str, /) -> Any:
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


def _row_factory(cursor: psycopg.Cursor[Any]) -> RowMaker[PgRow]:
    names = {column.name: index for index, column in enumerate(cursor.description or ())}
    return partial(PgRow, names=names)


class PgDb:
    """A pooled psycopg connection as a :class:`~._backend.Db`: ``?`` parameter marks, rows like ``sqlite3``."""

    def __init__(self, connection: psycopg.Connection[PgRow], errors: tuple[type[Exception], ...]) -> None:
        self._connection = connection
        self._errors = errors

    def execute(self, sql: str, params: Params = (), /) -> psycopg.Cursor[PgRow]:
        """Run one statement; ``?`` marks take ``params`` in order (``%`` is taken literally)."""
        if not params:
            return self._connection.execute(sql)  # no parameters: sent as it is
        return self._connection.execute(sql.replace("%", "%%").replace("?", "%s"), list(params))

    def insert_many(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[SqlValue]]) -> None:
        """``COPY table (columns) FROM STDIN``: many rows in one statement (triggers fire once)."""
        with self._connection.cursor() as cursor:
            with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)

    def write(self, work: Callable[[Db], T]) -> T:
        """``work(self)`` in one transaction holding memory's advisory lock (writers queue)."""
        return self._transaction("BEGIN", work, lock=True)

    def snapshot(self, work: Callable[[Db], T]) -> T:
        """``work(self)`` in one ``REPEATABLE READ`` read-only transaction (one snapshot)."""
        return self._transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", work, lock=False)

    def _transaction(self, begin: str, work: Callable[[Db], T], *, lock: bool) -> T:
        self.execute(begin)
        committed = False
        try:
            if lock:
                self.execute("SELECT pg_advisory_xact_lock(?)", (_LOCK_KEY,))
            result = work(self)
            self.execute("COMMIT")
            committed = True
            return result
        finally:
            if not committed:
                try:
                    self.execute("ROLLBACK")
                except self._errors:
                    pass  # the connection is gone: the server dropped the transaction with it


class PostgresBackend:
    """Memory in a PostgreSQL database (see the module docstring).

    Args:
        url: ``postgresql://user:password@host:port/database`` (libpq URL; its parameters apply).
        settings: memory limits (the busy timeout: how long an operation waits for a pooled connection).
        pool_size: connections (and concurrent operations) per store.
        connect_timeout_s: how long opening waits for the server.
    """

    name = "postgres"

    def __init__(
        self, url: str, settings: MemorySettings, *, pool_size: int = 8, connect_timeout_s: float = 10.0
    ) -> None:
        if not url.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"memory.url must be a postgresql:// URL, not {redact_url(url)!r}")
        self._url = url
        self._settings = settings
        self._pool_size = pool_size
        self._connect_timeout_s = connect_timeout_s
        self._limiter = anyio.CapacityLimiter(pool_size)
        self._pool: ConnectionPool[psycopg.Connection[PgRow]] | None = None
        self._errors: tuple[type[Exception], ...] = ()
        self.schema_version = 0
        """The schema version of the open database (0 before opening)."""
        self.cache_lock: AbstractContextManager[object] = threading.Lock()
        """Operations run on several threads at once: one of them at a time reads or patches the indexes."""

    @property
    def address(self) -> str:
        """The server and database, without the password."""
        return redact_url(self._url, mask="***")

    @property
    def is_open(self) -> bool:
        """Whether the pool is open."""
        return self._pool is not None

    # -- life cycle ------------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Open the pool and wait for its first connection."""
        try:
            import psycopg
            import psycopg_pool
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ConfigError(
                "memory.url names a PostgreSQL server, but psycopg is not installed; "
                "pip install 'simone[postgres]'"
            ) from exc
        self._errors = (psycopg.Error, psycopg_pool.PoolTimeout)
        pool = cast(
            "ConnectionPool[psycopg.Connection[PgRow]]",
            psycopg_pool.ConnectionPool(
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
            ),
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

    async def close(self) -> None:
        """Close the pool (idempotent)."""
        pool, self._pool = self._pool, None
        if pool is not None:
            await anyio.to_thread.run_sync(pool.close)

    # -- running operations ----------------------------------------------------------------------------

    async def run(self, work: Callable[[Db], T]) -> T:
        """``work(db)`` on a worker thread with a pooled connection, psycopg's errors translated."""
        return await anyio.to_thread.run_sync(partial(self._guarded, work), limiter=self._limiter)

    def _guarded(self, work: Callable[[Db], T]) -> T:
        pool = self._pool
        if pool is None:
            raise ConfigError("the memory store is not open; use `async with store:` or await store.open()")
        try:
            with pool.connection() as connection:
                return work(PgDb(connection, self._errors))
        except self._errors as exc:
            raise self.translate(exc) from exc

    def translate(self, exc: Exception) -> ProviderUnavailable | ConstraintViolation:
        """The runtime error of a psycopg error (the one place psycopg's errors are translated)."""
        import psycopg

        if isinstance(exc, psycopg.errors.IntegrityError):
            return ConstraintViolation(str(exc).strip() or type(exc).__name__)
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

    # -- the dialect -----------------------------------------------------------------------------------

    def migrate(self, db: Db) -> None:
        """Bring the schema to the version this code writes (the ``schema_version`` table)."""
        migrate(db, self.address)
        row = db.execute("SELECT max(version) FROM schema_version").fetchone()
        self.schema_version = int(row[0]) if row is not None else 0

    def tag_condition(self, alias: str) -> str:
        """The JSON array ``{alias}.tags`` holds the parameter (``jsonb`` containment)."""
        return f"{alias}.tags::jsonb @> jsonb_build_array(?::text)"

    def rowids_in(self, column: str, rowids: Sequence[int]) -> tuple[str, SqlValue]:
        """``column`` is one of ``rowids``: one ``bigint[]`` parameter."""
        return f"{column} = ANY(CAST(? AS bigint[]))", list(rowids)

    # -- full-text search ------------------------------------------------------------------------------

    def collection_stats(self, db: Db) -> tuple[int, int]:
        """The records' row count and token total (``memory_stats``)."""
        return search.collection_stats(db)

    def rank_records(
        self, db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
    ) -> list[tuple[Row, float]]:
        """BM25 in SQL (:func:`~.postgres._search.rank_records`)."""
        return search.rank_records(db, terms, numbers, condition, params, limit)

    def rank_turns(
        self, db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
    ) -> list[tuple[Row, float]]:
        """BM25 in SQL over the turns (:func:`~.postgres._search.rank_turns`)."""
        return search.rank_turns(db, terms, numbers, condition, params, limit)

    def after_bulk_import(self, db: Db) -> None:
        """Nothing: the ``tsvector`` index needs no merging."""
