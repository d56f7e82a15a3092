"""The PostgreSQL token store: one table in memory's database, shared by every host that names it.

``[serve] tokens = "postgres"`` keeps the tokens in the table :data:`TABLE` of the database at
``[memory] url`` — only each token's SHA-256, never a secret. Every change is one statement: a create
is an ``INSERT … ON CONFLICT DO NOTHING`` (a taken id draws again), a revoke an ``UPDATE`` of one row
that keeps the first revocation time, so nothing a concurrent writer does can undo it.

:meth:`~simone.agents.serve.TokenStore.verify` answers from the whole table read at most
``refresh_s`` seconds ago (default 2 s: the bound on how long a revocation takes to reach every worker
on every host), so a server queries PostgreSQL at most once per ``refresh_s``, not once per request. The
process that revokes a token reads the table again at once. When the table cannot be read and the copy
is older than ``refresh_s``, ``verify`` raises :class:`~simone.runtime.ProviderUnavailable` (provider
``tokens``): a store that cannot tell whether a token was revoked admits nobody.

psycopg is imported when the store first connects (extra ``simone[postgres]``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from simone.agents.serve._tokens import TokenRecord, TokenStore
from simone.runtime import ConfigError, ProviderUnavailable, redact_url

T = TypeVar("T")

TABLE = "simone_serve_tokens"
"""The table of the tokens (created on first use)."""

_LOCK_KEY = 0x53_54_4F_4B  # "STOK": held while the table is created, so two first uses do not race
_COLUMNS = "id, hash, actor, projects, client, role, tools, created, expires, revoked"
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id text PRIMARY KEY,
    hash text NOT NULL,
    actor text NOT NULL,
    projects text[] NOT NULL DEFAULT '{{}}',
    client text,
    role text NOT NULL,
    tools text,
    created double precision NOT NULL,
    expires double precision,
    revoked double precision
)
"""
_MIGRATIONS = (f"ALTER TABLE {TABLE} ADD COLUMN IF NOT EXISTS tools text",)
"""``tools`` (the token's tool profile) came after the first tables: this brings an older table up to
date; an older server names its columns, so it ignores the new one (its tokens get the server's)."""


class PostgresTokenStore(TokenStore):
    """Tokens in a PostgreSQL table (see the module docstring).

    Args:
        url: a ``postgresql://`` URL (``[memory] url``).
        refresh_s: how old the copy ``verify`` answers from may be (0: read the table at every call).
        connect_timeout_s: how long connecting may take.
    """

    blocking = True  # a refresh reads the table: the server verifies in a worker thread

    def __init__(self, url: str, *, refresh_s: float = 2.0, connect_timeout_s: float = 5.0) -> None:
        if not url.startswith(("postgresql://", "postgres://")):
            raise ConfigError(f"the token store needs a postgresql:// URL, not {redact_url(url)!r}")
        self._url = url
        self.refresh_s = refresh_s
        self.connect_timeout_s = connect_timeout_s
        self._connection: Any = None
        self._lock = threading.Lock()
        self._records: dict[str, TokenRecord] = {}
        self._loaded_at: float | None = None

    def __repr__(self) -> str:
        return f"PostgresTokenStore({self.where!r})"

    @property
    def where(self) -> str:
        """The database (without its password) and the table."""
        return f"{redact_url(self._url)} (table {TABLE})"

    def close(self) -> None:
        """Close the connection (idempotent; the next call connects again)."""
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    # -- plumbing --------------------------------------------------------------------------------
    def _connect(self) -> Any:
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ConfigError(
                "[serve] tokens = \"postgres\" needs psycopg; pip install 'simone[postgres]'"
            ) from exc
        connection = psycopg.connect(
            self._url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout_s))
        )
        try:
            connection.execute("SET statement_timeout = '10s'")
            with connection.transaction():
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                connection.execute(_SCHEMA)
                for migration in _MIGRATIONS:
                    connection.execute(migration)
        except BaseException:
            connection.close()
            raise
        return connection

    def _run(self, work: Callable[[Any], T]) -> T:
        """``work(connection)`` on the store's connection, psycopg's errors translated."""
        import psycopg

        with self._lock:
            try:
                if self._connection is None or self._connection.closed:
                    self._connection = self._connect()
                return work(self._connection)
            except psycopg.Error as exc:
                connection, self._connection = self._connection, None
                if connection is not None:
                    connection.close()
                raise ProviderUnavailable(
                    f"the token store {self.where} failed: {exc}; check that PostgreSQL runs there and "
                    "[memory] url is right",
                    provider="tokens",
                    retryable=True,
                ) from exc

    # -- the primitives --------------------------------------------------------------------------
    def _snapshot(self, *, fresh: bool) -> Mapping[str, TokenRecord]:
        loaded = self._loaded_at
        if not fresh and loaded is not None and time.monotonic() - loaded < self.refresh_s:
            return self._records
        started = time.monotonic()
        rows = self._run(lambda db: db.execute(f"SELECT {_COLUMNS} FROM {TABLE}").fetchall())
        self._records = {row[0]: _record(row) for row in rows}
        self._loaded_at = started
        return self._records

    def _insert(self, record: TokenRecord) -> bool:
        data = record.to_json()
        row = self._run(
            lambda db: db.execute(
                f"INSERT INTO {TABLE} ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (id) DO NOTHING RETURNING id",
                [data[name] for name in _COLUMNS.split(", ")],
            ).fetchone()
        )
        self._loaded_at = None
        return row is not None

    def _revoke(self, token_id: str, moment: float) -> TokenRecord | None:
        row = self._run(
            lambda db: db.execute(
                f"UPDATE {TABLE} SET revoked = COALESCE(revoked, %s) WHERE id = %s RETURNING {_COLUMNS}",
                (moment, token_id),
            ).fetchone()
        )
        self._loaded_at = None
        return None if row is None else _record(row)


def _record(row: Any) -> TokenRecord:
    names = _COLUMNS.split(", ")
    return TokenRecord.from_json(dict(zip(names, row, strict=True)))
