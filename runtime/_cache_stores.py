"""The persistent layer of the research cache: a small store protocol and its embedded implementations.

A :class:`CacheStore` keeps text values (the JSON of a :class:`~simone.runtime._cache.CacheEntry`) under
text keys, each with a backstop expiry, and can sweep itself. :class:`~simone.runtime.ResearchCache`
owns every rule (freshness, stale-serving, what may be stored, statistics); a store only stores.

* :class:`InProcessCacheStore` — a dict, for one process (``ResearchCache(None)``);
* :class:`DiskcacheStore` — diskcache, one SQLite file in a directory (the embedded default);
* :class:`~simone.runtime._cache_redis.RedisStore` — Redis, shared by every process that names the same
  server (``[web] cache_url``).

A store raises :class:`~simone.runtime.CacheStoreError` (a :class:`~simone.runtime.ProviderUnavailable`;
for diskcache also ``OSError``/``sqlite3.Error``) when the backend refuses an operation; the cache
counts it and the research run goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import anyio
from simone.runtime._errors import CacheStoreError
from simone.runtime._owner_only import SQLITE_SIDECARS, owner_only_file, tighten_tree

_DISKCACHE_FILE = "cache.db"
_INLINE_VALUES = 1 << 40
"""diskcache's ``disk_min_file_size``: values up to this size stay in its SQLite file (all of them)."""

CACHE_FORMAT_VERSION = 1
"""The version of the persisted entry format (part of every Redis key, reported by the doctor)."""

Doomed = Callable[[str | None], bool]
"""Given an entry's stored text (``None`` when unreadable), whether a sweep deletes it."""


@dataclass(frozen=True, slots=True)
class CacheHealth:
    """What ``simone doctor`` shows about the research cache's persistent layer.

    ``address`` never holds a password; ``answers`` says whether the backend responded just now;
    ``detail`` is the reason when it did not, or facts about its size bound when it did.
    """

    backend: str
    address: str
    answers: bool
    format_version: int = CACHE_FORMAT_VERSION
    detail: str = ""


@runtime_checkable
class CacheStore(Protocol):
    """Where the research cache persists entries (text under text keys, each with a backstop expiry)."""

    @property
    def name(self) -> str:
        """The backend's name (``memory``, ``diskcache``, ``redis``)."""
        ...

    @property
    def address(self) -> str:
        """Where it is, without secrets (a directory, or a URL without its password)."""
        ...

    async def open(self) -> None:
        """Connect or open files; a shared server that does not answer is *not* an error here."""
        ...

    async def close(self) -> None:
        """Release connections and files."""
        ...

    async def get(self, key: str) -> str | None:
        """The text under ``key``, or ``None``."""
        ...

    async def set(self, key: str, text: str, *, expire_s: float | None) -> None:
        """Store ``text`` under ``key``; the backend drops it after ``expire_s`` seconds (never if ``None``)."""
        ...

    async def delete(self, key: str) -> None:
        """Remove ``key`` if present."""
        ...

    async def sweep(self, doomed: Doomed, *, keep: str) -> int:
        """Delete every entry (except ``keep``) for which ``doomed(text)`` holds; returns how many went."""
        ...

    async def health(self) -> CacheHealth:
        """Probe the backend now (never raises)."""
        ...


class InProcessCacheStore:
    """Research-cache entries in a dict of this process (nothing persists; the cache's sweep expires).

    Not to be confused with :class:`simone.providers.memory.MemoryStore`, the agents' memory.
    """

    name = "memory"
    address = "(this process)"

    def __init__(self) -> None:
        self._items: dict[str, str] = {}

    async def open(self) -> None:
        """Nothing to open."""

    async def close(self) -> None:
        """Nothing to close (entries stay until the object goes)."""

    async def get(self, key: str) -> str | None:
        """The text under ``key``."""
        return self._items.get(key)

    async def set(self, key: str, text: str, *, expire_s: float | None) -> None:
        """Store ``text`` (``expire_s`` is ignored: the cache's own sweep evicts)."""
        self._items[key] = text

    async def delete(self, key: str) -> None:
        """Remove ``key``."""
        self._items.pop(key, None)

    async def sweep(self, doomed: Doomed, *, keep: str) -> int:
        """Delete the doomed entries."""
        gone = [k for k, v in self._items.items() if k != keep and doomed(v)]
        for key in gone:
            del self._items[key]
        return len(gone)

    async def health(self) -> CacheHealth:
        """Always answers."""
        return CacheHealth(self.name, self.address, True, detail=f"{len(self._items)} entries")


class DiskcacheStore:
    """diskcache in ``directory`` (one SQLite file); blocking calls run in worker threads.

    The folder is created owner-only (``0700``) and its SQLite file ``0600``; every value is kept inside
    that file (no value files, whose mode would follow the umask).

    Size bound: diskcache culls the least recently stored entries once the directory passes
    ``size_limit_bytes``.
    """

    name = "diskcache"

    def __init__(self, directory: str | Path, *, size_limit_bytes: int = 1 << 30) -> None:
        self.directory = Path(directory)
        self.size_limit_bytes = size_limit_bytes
        self._disk: Any = None
        self._limiter = anyio.CapacityLimiter(4)

    @property
    def address(self) -> str:
        """The directory."""
        return str(self.directory)

    def _cache(self) -> Any:
        if self._disk is None:
            raise CacheStoreError("the diskcache store is not open")
        return self._disk

    async def open(self) -> None:
        """Create the directory and open the SQLite file.

        Raises:
            OSError: the directory cannot be created or opened.
        """
        import diskcache

        directory = self.directory

        def _open() -> Any:
            owner_only_file(directory / _DISKCACHE_FILE, sidecars=SQLITE_SIDECARS)
            tighten_tree(directory)  # an older version's folder and value files
            return diskcache.Cache(
                str(directory), size_limit=self.size_limit_bytes, disk_min_file_size=_INLINE_VALUES
            )

        self._disk = await anyio.to_thread.run_sync(_open, limiter=self._limiter)

    async def close(self) -> None:
        """Close the SQLite file."""
        disk, self._disk = self._disk, None
        if disk is not None:
            await anyio.to_thread.run_sync(disk.close, limiter=self._limiter)

    async def get(self, key: str) -> str | None:
        """The text under ``key``."""
        disk = self._cache()
        value = await anyio.to_thread.run_sync(lambda: disk.get(key), limiter=self._limiter)
        return value if isinstance(value, str) else None

    async def set(self, key: str, text: str, *, expire_s: float | None) -> None:
        """Store ``text`` with diskcache's own (wall-clock) expiry."""
        disk = self._cache()
        await anyio.to_thread.run_sync(lambda: disk.set(key, text, expire=expire_s), limiter=self._limiter)

    async def delete(self, key: str) -> None:
        """Remove ``key``."""
        disk = self._cache()
        await anyio.to_thread.run_sync(lambda: disk.delete(key), limiter=self._limiter)

    async def sweep(self, doomed: Doomed, *, keep: str) -> int:
        """Read every entry in a worker thread and delete the doomed ones."""
        disk = self._cache()

        def _sweep() -> int:
            gone = 0
            for key in list(disk.iterkeys()):
                if key == keep:
                    continue
                value = disk.get(key)
                if doomed(value if isinstance(value, str) else None):
                    disk.delete(key)
                    gone += 1
            return gone

        return await anyio.to_thread.run_sync(_sweep, limiter=self._limiter)

    async def health(self) -> CacheHealth:
        """Whether the directory is open (or can be opened) and how large it is."""
        try:
            if self._disk is None:
                await self.open()
                try:
                    volume = await anyio.to_thread.run_sync(self._cache().volume, limiter=self._limiter)
                finally:
                    await self.close()
            else:
                volume = await anyio.to_thread.run_sync(self._cache().volume, limiter=self._limiter)
        except Exception as exc:  # noqa: BLE001 - a probe reports every failure instead of raising
            return CacheHealth(self.name, self.address, False, detail=f"{type(exc).__name__}: {exc}")
        return CacheHealth(
            self.name,
            self.address,
            True,
            detail=f"{volume} of {self.size_limit_bytes} bytes used (oldest entries culled past the limit)",
        )


def backstop_expiry_s(ttl_s: float, stale_keep_s: float) -> float:
    """How long a backend keeps an entry: its TTL, the stale window ``cached`` may use, and an hour."""
    return ttl_s + stale_keep_s + 3600.0
