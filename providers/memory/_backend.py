"""What a memory backend is: the part of the store that differs between SQLite and PostgreSQL.

The operations of memory (:mod:`~simone.providers.memory._editing`, :mod:`~simone.providers.memory._search`,
…) are written once, as functions of a :class:`~simone.providers.memory._core.Core` and a :class:`Db`: the
connection of one operation, speaking the SQL both backends understand with ``?`` parameter marks, whose
rows index by position and by column name. A :class:`Backend` supplies everything else:

* the life cycle (connect, close) and :meth:`Backend.run`, which runs an operation on a worker thread with
  a connection of its own, and translates the driver's errors into :mod:`simone.runtime` errors — in one
  place per backend (a broken unique key becomes :class:`ConstraintViolation`);
* the transactions, as methods of its :class:`Db`: :meth:`Db.write` (all or nothing, writers serialised
  across processes) and :meth:`Db.snapshot` (reads that see one state);
* the dialect: the tag condition, lists of row ids as one parameter, the schema and its migrations;
* full-text search: the collection statistics of BM25 and the ranking in SQL (records and turns);
* the lock that guards the in-memory search indexes.

``memory/sqlite`` (:class:`~simone.providers.memory.sqlite._backend.SQLiteBackend`) and ``memory/postgres``
(:class:`~simone.providers.memory.postgres._backend.PostgresBackend`) implement it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeAlias, TypeVar

from simone.runtime import InvalidRequest

T = TypeVar("T")

SqlValue: TypeAlias = str | int | float | bytes | None | list[int] | list[str]
"""A value bound to a ``?`` mark (lists: PostgreSQL arrays)."""

Params: TypeAlias = Sequence[SqlValue]
"""The values of a statement's ``?`` marks, in order."""


class Row(Protocol):
    """A result row: by position (``row[0]``) or by column name (``row["id"]``), like ``sqlite3.Row``."""

    def __getitem__(self, key: int | str, /) -> Any:
        """The value of one column (its type is the column's: text, integer, real, bytes or null)."""
        ...

    def __iter__(self) -> Iterator[Any]:
        """The values in column order."""
        ...

    def __len__(self) -> int:
        """How many columns."""
        ...

    def keys(self) -> list[str]:
        """The column names."""
        ...


class Cursor(Protocol):
    """The result of one statement."""

    @property
    def rowcount(self) -> int:
        """Rows changed by a ``DELETE`` / ``UPDATE`` / ``INSERT``."""
        ...

    def fetchone(self) -> Row | None:
        """The next row, if any."""
        ...

    def fetchall(self) -> Sequence[Row]:
        """Every remaining row."""
        ...

    def __iter__(self) -> Iterator[Row]:
        """The remaining rows, one by one."""
        ...


class Db(Protocol):
    """The connection of one operation (inside :meth:`Backend.run`), in the dialect both backends share."""

    def execute(self, sql: str, params: Params = (), /) -> Cursor:
        """Run one statement; ``?`` marks take ``params`` in order."""
        ...

    def insert_many(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[SqlValue]]) -> None:
        """Insert many rows in one go (triggers fire as for one-by-one inserts)."""
        ...

    def write(self, work: Callable[[Db], T]) -> T:
        """``work(db)`` in one write transaction: all of it or nothing; writers of every process queue."""
        ...

    def snapshot(self, work: Callable[[Db], T]) -> T:
        """``work(db)`` in one read transaction: every statement sees the same state of the database."""
        ...


class ConstraintViolation(InvalidRequest):
    """A write broke a constraint of the schema (a unique key): nothing of its transaction was written.

    Attributes:
        detail: the driver's description of the violation.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(f"memory refused a write that breaks a unique key, nothing was written: {detail}")
        self.detail = detail


class Backend(Protocol):
    """What differs between memory on SQLite and memory on PostgreSQL (see the module docstring)."""

    name: str
    """``sqlite`` or ``postgres``."""

    cache_lock: AbstractContextManager[object]
    """Held while the in-memory search indexes are read or patched (they are shared by the threads)."""

    @property
    def is_open(self) -> bool:
        """Whether :meth:`connect` succeeded and :meth:`close` has not run since."""
        ...

    async def connect(self) -> None:
        """Connect (open the file, or the pool). Raises ``ProviderUnavailable`` when it cannot."""
        ...

    async def close(self) -> None:
        """Disconnect (idempotent)."""
        ...

    async def run(self, work: Callable[[Db], T]) -> T:
        """``work(db)`` on a worker thread with a connection of its own, the driver's errors translated.

        Raises:
            ConfigError: the backend is not connected.
            ProviderUnavailable: the database failed (``retryable`` when it may answer again soon).
            ConstraintViolation: a write broke a unique key.
        """
        ...

    def migrate(self, db: Db) -> None:
        """Create or migrate the schema, inside the caller's write transaction.

        Raises:
            ConfigError: the database was written by a newer simone.
        """
        ...

    def tag_condition(self, alias: str) -> str:
        """SQL: the JSON array ``{alias}.tags`` holds the tag given as the one parameter."""
        ...

    def rowids_in(self, column: str, rowids: Sequence[int]) -> tuple[str, SqlValue]:
        """SQL: ``column`` is one of ``rowids``, and the one parameter that carries them."""
        ...

    def collection_stats(self, db: Db) -> tuple[int, int]:
        """BM25's collection statistics of the records: the row count and the token total (both fields)."""
        ...

    def rank_records(
        self, db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
    ) -> list[tuple[Row, float]]:
        """Full-text search in SQL: records matching any of ``terms`` in the scopes ``numbers``.

        Only rows meeting ``condition`` (on alias ``r``, with ``params``); best ``limit`` by BM25 (higher
        is better), ties by newest update then id. Rows carry the ``SELECT_RECORD`` columns.
        """
        ...

    def rank_turns(
        self, db: Db, terms: list[str], numbers: list[int], condition: str, params: Params, limit: int
    ) -> list[tuple[Row, float]]:
        """As :meth:`rank_records`, for turns and summaries (alias ``t``, the ``SELECT_TURN`` columns)."""
        ...

    def after_bulk_import(self, db: Db) -> None:
        """Upkeep after a large import, inside its transaction (merge the full-text index)."""
        ...


def scalar(cursor: Cursor) -> Any:
    """The first column of the first row of an aggregate query (``SELECT COUNT(*) …``)."""
    row = cursor.fetchone()
    assert row is not None, "an aggregate query returns one row"
    return row[0]
