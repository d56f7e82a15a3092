"""The persistent embedding cache: (space key, content digest) → vector, in SQLite in the data dir.

A text already embedded in a space is never embedded again in that space — not after a restart, not
in another collection. Keys carry the space, so vectors of different models never mix. Vectors are
stored as little-endian float32 blobs; a row whose size does not match the space is ignored and
replaced. SQLite runs in WAL mode; every call goes through a worker thread behind a capacity limiter.

A cache that cannot be written (a read-only data directory, a full disk, a path that cannot be
created) never breaks what uses it: it turns itself off — lookups miss, nothing is stored, every
text is embedded — logs one warning and says why in :attr:`EmbeddingCache.disabled`.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import numpy as np
import numpy.typing as npt
from simone.runtime import (
    SQLITE_SIDECARS,
    AsyncResource,
    ConfigError,
    EmbeddingSpace,
    ProviderUnavailable,
    owner_only_file,
)

#: The cache's file name inside the data directory.
CACHE_FILE = "embedding-cache.sqlite3"
#: Digests per SQL statement (SQLite's default limit on bound parameters is 32,766).
_LOOKUP_CHUNK = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    space TEXT NOT NULL,
    digest TEXT NOT NULL,
    vector BLOB NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (space, digest)
) WITHOUT ROWID;
"""

EmbedFunction = Callable[[list[str]], Awaitable[npt.NDArray[np.float32]]]

_log = logging.getLogger("simone.providers.embeddings.cache")


class _Unwritable(Exception):
    """The cache file cannot be created or written (turn the cache off, do not fail)."""


def _space_key(space: EmbeddingSpace) -> str:
    return f"{space.key}:{'normalized' if space.normalized else 'raw'}"


def text_digest(text: str) -> str:
    """sha256 of the exact UTF-8 text: the cache's default content digest."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class CachedEmbedding:
    """What :meth:`EmbeddingCache.embed` returns.

    Attributes:
        vectors: one row per input text, in input order.
        hits: how many came from the cache.
        misses: how many were embedded now (and stored).
    """

    vectors: npt.NDArray[np.float32]
    hits: int
    misses: int


class EmbeddingCache(AsyncResource):
    """A persistent cache of embeddings keyed by (space key, content digest).

    Args:
        path: the SQLite file (created with its folder); see :meth:`in_data_dir`.
        limiter: bounds concurrent SQLite work (one at a time by default).

    Open it with ``async with`` (or :meth:`open`); close with :meth:`close`. When the file cannot
    be created or written the cache turns itself off instead of failing (see :attr:`disabled`).
    """

    def __init__(self, path: str | Path, *, limiter: anyio.CapacityLimiter | None = None) -> None:
        self._path = Path(path)
        self._limiter = limiter or anyio.CapacityLimiter(1)
        self._db: sqlite3.Connection | None = None
        self._disabled: str | None = None

    @classmethod
    def in_data_dir(cls, data_dir: str | Path) -> EmbeddingCache:
        """The cache at its usual place, ``<data_dir>/embedding-cache.sqlite3``."""
        return cls(Path(data_dir) / CACHE_FILE)

    @property
    def path(self) -> Path:
        """The SQLite file."""
        return self._path

    @property
    def disabled(self) -> str | None:
        """Why the cache is off (it could not be created or written), or ``None`` while it works."""
        return self._disabled

    async def open(self) -> None:
        """Open (and create) the database. Safe to call more than once.

        A file that cannot be created or written turns the cache off (:attr:`disabled`, one logged
        warning) instead of raising: the cache is an optimisation and must not break a search.

        Raises:
            ConfigError: the file exists but is not a cache database (delete it to rebuild it).
        """
        if self._db is None and self._disabled is None:
            try:
                self._db = await anyio.to_thread.run_sync(self._open, limiter=self._limiter)
            except _Unwritable as exc:
                self._disable(str(exc))

    async def close(self) -> None:
        """Close the database."""
        db, self._db = self._db, None
        if db is not None:
            await anyio.to_thread.run_sync(db.close, limiter=self._limiter)

    async def get_many(
        self, space: EmbeddingSpace, digests: Sequence[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        """The cached vectors of ``digests`` in ``space`` (absent digests are simply missing)."""
        db = self._require()
        if db is None:
            return {}
        try:
            return await anyio.to_thread.run_sync(
                self._get_many, db, space, list(digests), limiter=self._limiter
            )
        except sqlite3.OperationalError as exc:
            await self._turn_off(f"cannot read {self._path}: {exc}")
            return {}

    async def put_many(
        self, space: EmbeddingSpace, digests: Sequence[str], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Store one vector per digest (replacing what was there).

        Nothing is stored, and the cache turns itself off, when the file cannot be written.

        Raises:
            ValueError: ``vectors`` is not ``(len(digests), space.dimension)`` of finite values.
        """
        array = np.ascontiguousarray(vectors, dtype="<f4")
        if array.shape != (len(digests), space.dimension):
            raise ValueError(f"expected {len(digests)} vectors of {space.dimension}, got {array.shape}")
        if not np.isfinite(array).all():
            raise ValueError("refusing to cache non-finite vectors")
        db = self._require()
        if db is None:
            return
        try:
            await anyio.to_thread.run_sync(
                self._put_many, db, space, list(digests), array, limiter=self._limiter
            )
        except (sqlite3.OperationalError, OSError) as exc:
            await self._turn_off(f"cannot write {self._path}: {exc}")

    async def embed(
        self,
        texts: Sequence[str],
        *,
        space: EmbeddingSpace,
        embed: EmbedFunction,
        digests: Sequence[str] | None = None,
    ) -> CachedEmbedding:
        """Vectors for ``texts`` in ``space``: cached ones read, the rest embedded once and stored.

        Args:
            texts: the texts.
            space: the space the vectors belong to (part of the key).
            embed: embeds the missing texts, e.g.
                ``lambda batch: chain.embed(batch, space=space)``; it must return vectors of ``space``.
            digests: the texts' content digests if the caller has them (sha256 of the text otherwise).
                Equal digests must mean equal text.

        Raises:
            Whatever ``embed`` raises (nothing is stored then).
        """
        texts = list(texts)
        keys = list(digests) if digests is not None else [text_digest(t) for t in texts]
        if len(keys) != len(texts):
            raise ValueError("digests and texts differ in length")
        found = await self.get_many(space, keys)
        out = np.empty((len(texts), space.dimension), dtype=np.float32)
        missing: dict[str, int] = {}
        for position, key in enumerate(keys):
            vector = found.get(key)
            if vector is not None:
                out[position] = vector
            elif key not in missing:
                missing[key] = position
        if missing:
            fresh = await embed([texts[p] for p in missing.values()])
            fresh = np.asarray(fresh, dtype=np.float32)
            if fresh.shape != (len(missing), space.dimension):
                raise ValueError(
                    f"embed returned shape {fresh.shape}, expected ({len(missing)}, {space.dimension})"
                )
            await self.put_many(space, list(missing), fresh)
            computed = dict(zip(missing, fresh, strict=True))
            for position, key in enumerate(keys):
                if key not in found:
                    out[position] = computed[key]
        hits = sum(1 for key in keys if key in found)
        return CachedEmbedding(vectors=out, hits=hits, misses=len(texts) - hits)

    async def count(self, space: EmbeddingSpace | None = None) -> int:
        """Cached vectors in ``space`` (or in all spaces); 0 while the cache is off."""
        db = self._require()
        if db is None:
            return 0
        return await anyio.to_thread.run_sync(self._count, db, space, limiter=self._limiter)

    async def drop_space(self, space: EmbeddingSpace) -> int:
        """Forget every vector of ``space`` (after the space was dropped); returns how many."""
        db = self._require()
        if db is None:
            return 0
        try:
            return await anyio.to_thread.run_sync(self._drop, db, space, limiter=self._limiter)
        except (sqlite3.OperationalError, OSError) as exc:
            await self._turn_off(f"cannot write {self._path}: {exc}")
            return 0

    def _require(self) -> sqlite3.Connection | None:
        """The open database; ``None`` when the cache is off."""
        if self._disabled is not None:
            return None
        if self._db is None:
            raise ProviderUnavailable(
                "the embedding cache is not open; use 'async with' or await open() first",
                provider="embedding-cache",
            )
        return self._db

    def _disable(self, why: str) -> None:
        self._disabled = why
        _log.warning(
            "the embedding cache is off, every text is embedded again: %s; "
            "make the data directory writable (or set cache = false in [embeddings]) to silence this",
            why,
        )

    async def _turn_off(self, why: str) -> None:
        self._disable(why)
        await self.close()

    def _open(self) -> sqlite3.Connection:
        try:
            owner_only_file(self._path, sidecars=SQLITE_SIDECARS)
            db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None, timeout=30.0)
        except (OSError, sqlite3.Error) as exc:
            raise _Unwritable(f"cannot create {self._path}: {exc}") from exc
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_SCHEMA)
        except sqlite3.OperationalError as exc:
            # "unable to open database file", "attempt to write a readonly database": the file or
            # its folder cannot be written (a read-only data directory), not a damaged cache
            db.close()
            raise _Unwritable(f"cannot write {self._path}: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            db.close()
            raise ConfigError(
                f"{self._path} is not a usable embedding cache ({exc}); delete it and it will be rebuilt"
            ) from exc
        return db

    @staticmethod
    def _get_many(
        db: sqlite3.Connection, space: EmbeddingSpace, digests: list[str]
    ) -> dict[str, npt.NDArray[np.float32]]:
        found: dict[str, npt.NDArray[np.float32]] = {}
        expected = space.dimension * 4
        unique = list(dict.fromkeys(digests))
        for start in range(0, len(unique), _LOOKUP_CHUNK):
            part = unique[start : start + _LOOKUP_CHUNK]
            marks = ",".join("?" * len(part))
            rows = db.execute(
                f"SELECT digest, vector FROM vectors WHERE space = ? AND digest IN ({marks})",
                [_space_key(space), *part],
            ).fetchall()
            for digest, blob in rows:
                if len(blob) == expected:
                    found[digest] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
        return found

    @staticmethod
    def _put_many(
        db: sqlite3.Connection, space: EmbeddingSpace, digests: list[str], vectors: npt.NDArray[np.float32]
    ) -> None:
        now = time.time()
        rows = [(_space_key(space), d, vectors[i].tobytes(), now) for i, d in enumerate(digests)]
        with db:
            db.execute("BEGIN")
            db.executemany(
                "INSERT OR REPLACE INTO vectors (space, digest, vector, created) VALUES (?, ?, ?, ?)", rows
            )

    @staticmethod
    def _count(db: sqlite3.Connection, space: EmbeddingSpace | None) -> int:
        if space is None:
            row = db.execute("SELECT COUNT(*) FROM vectors").fetchone()
        else:
            row = db.execute("SELECT COUNT(*) FROM vectors WHERE space = ?", (_space_key(space),)).fetchone()
        return int(row[0])

    @staticmethod
    def _drop(db: sqlite3.Connection, space: EmbeddingSpace) -> int:
        with db:
            db.execute("BEGIN")
            cursor = db.execute("DELETE FROM vectors WHERE space = ?", (_space_key(space),))
        return int(cursor.rowcount)
