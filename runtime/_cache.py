r"""The two-layer research cache: a run-local layer over a persistent diskcache.

* **Layers.** A :class:`ResearchCache` owns the persistent layer (``diskcache``, one SQLite file in a
  directory; ``None`` keeps everything in memory for the process). Each research run opens a
  :class:`CacheSession`, the run-local layer: what the run read or wrote is served again from memory,
  and the session counts its own statistics.
* **Freshness** (DESIGN.md): ``auto`` serves an entry while its TTL lasts; ``fresh`` bypasses reads of
  older entries but still writes, and never overwrites a good entry with an expired one; ``cached``
  serves an expired entry when there is one, and says so (``stale``).
* **Honesty.** Failures are never stored; partial results (``complete=False``) stay in the run-local
  layer only, so they are never served later as complete. Expired entries are evicted once they are
  older than their TTL plus the stale window (``stale_keep_s``) that ``cached`` may still use: when an
  ``auto`` lookup meets one, by :meth:`ResearchCache.evict_expired`, and by a sweep when the cache is
  opened (at most hourly, since a sweep reads every entry).
* **Time** comes from an injectable clock so tests can expire entries without sleeping.
* **Robustness.** Values come from the web: lone surrogates (valid JSON ``"\ud800"``, unencodable as
  UTF-8) are replaced by U+FFFD in what is persisted and in keys, and a write the persistent layer
  refuses (disk full, locked, unencodable) is counted (``write_errors``) instead of failing the run.

The persistent layer is blocking SQLite, so it runs in worker threads under a capacity limiter.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, Self

import anyio
from pydantic import BaseModel, ConfigDict, Field
from simone.runtime._errors import ConfigError
from simone.runtime.ranking import normalize_url

Clock = Callable[[], float]
"""Returns the current time in seconds (``time.time`` by default; a fake clock in tests)."""

CacheNamespace = Literal["search", "page"]
"""What an entry holds: search results of one query, or one extracted page."""

DEFAULT_STALE_KEEP_S = 7 * 24 * 3600.0
"""How long past its TTL an entry is kept for ``cached`` freshness before it is evicted."""

_KEY_SEPARATOR = "\x1f"

_SURROGATE = re.compile("[\ud800-\udfff]")

_STORE_ERRORS = (OSError, UnicodeError, sqlite3.Error)
"""What a refused write of the persistent layer raises (counted, never fatal to a run)."""


def _scrub(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD (SQLite and UTF-8 cannot take them)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


_SWEEP_KEY = "\x1fmeta\x1flast-sweep"
"""When the persistent layer was last swept for expired entries (clock seconds, as text)."""

SWEEP_INTERVAL_S = 3600.0
"""Opening the cache sweeps it for expired entries at most this often."""


class Freshness(StrEnum):
    """How a research run uses the cache."""

    AUTO = "auto"
    """Serve entries within their TTL; fetch otherwise."""
    FRESH = "fresh"
    """Ignore entries from earlier runs; still write what is fetched."""
    CACHED = "cached"
    """Prefer the cache: serve an expired entry when present (reported as stale)."""


class CacheStatus(StrEnum):
    """What one lookup found."""

    HIT = "hit"
    MISS = "miss"
    STALE = "stale"
    BYPASSED = "bypassed"


class CacheStats(BaseModel):
    """Cache statistics of one run, reported in every research result."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    search_hits: Annotated[int, Field(ge=0)] = 0
    search_misses: Annotated[int, Field(ge=0)] = 0
    page_hits: Annotated[int, Field(ge=0)] = 0
    page_misses: Annotated[int, Field(ge=0)] = 0
    stale_served: Annotated[int, Field(ge=0)] = 0
    bypassed: Annotated[int, Field(ge=0)] = 0
    writes: Annotated[int, Field(ge=0)] = 0
    kept_existing: Annotated[int, Field(ge=0)] = 0
    """Writes refused because a good entry was already stored (never overwritten by a worse one)."""
    evicted: Annotated[int, Field(ge=0)] = 0
    write_errors: Annotated[int, Field(ge=0)] = 0
    """Writes the persistent layer refused (disk full, locked…): the value stayed run-local."""


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """One stored value with the time it was produced and how long it stays fresh."""

    value: Any
    stored_at: float
    ttl_s: float
    complete: bool = True

    @property
    def expires_at(self) -> float:
        """When the entry stops being served by ``auto``."""
        return self.stored_at + self.ttl_s

    def expired(self, now: float) -> bool:
        """Whether the TTL has passed at ``now``."""
        return now >= self.expires_at

    def to_json(self) -> str:
        """The persisted form (JSON text, never pickle: values may come from the web).

        Lone surrogates in the value become U+FFFD, so the text always encodes as UTF-8.
        """
        return _scrub(
            json.dumps(
                {"v": self.value, "t": self.stored_at, "ttl": self.ttl_s, "c": self.complete},
                ensure_ascii=False,
                separators=(",", ":"),
            )
        )

    @classmethod
    def from_json(cls, text: str) -> CacheEntry | None:
        """Parse a persisted entry; ``None`` for anything malformed (it is then treated as absent)."""
        try:
            data = json.loads(text)
            return cls(
                value=data["v"],
                stored_at=float(data["t"]),
                ttl_s=float(data["ttl"]),
                complete=bool(data["c"]),
            )
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True, slots=True)
class CacheLookup:
    """The answer of :meth:`CacheSession.get`.

    ``value`` is set for ``hit`` and ``stale``; ``age_s`` is how old the served entry is;
    ``complete`` is ``False`` for a partial result kept in the run-local layer.
    """

    status: CacheStatus
    value: Any = None
    age_s: float | None = None
    complete: bool = True

    @property
    def found(self) -> bool:
        """Whether a value is served (hit or stale)."""
        return self.status in (CacheStatus.HIT, CacheStatus.STALE)


def page_cache_key(url: str) -> str:
    """The cache key of a page: its normalised URL, so five spellings of one page share an entry."""
    return normalize_url(_scrub(url))


def search_cache_key(backend: str, query: str, count: int, **options: Any) -> str:
    """The cache key of a search: backend, whitespace-normalised query, result count and options."""
    payload = json.dumps(
        {"b": backend, "q": " ".join(query.split()), "n": count, "o": options},
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


class ResearchCache:
    """The persistent layer, shared by runs; open it with ``async with``.

    Args:
        directory: where diskcache keeps its SQLite file; ``None`` keeps entries in memory only.
        clock: the time source (``time.time``).
        stale_keep_s: how long past its TTL an entry remains available to ``cached`` freshness.
        size_limit_bytes: diskcache's size limit (least recently stored entries are culled past it).

    Example:
        ``async with ResearchCache(data_dir / "web-cache") as cache: session = cache.session()``
    """

    def __init__(
        self,
        directory: str | Path | None,
        *,
        clock: Clock = time.time,
        stale_keep_s: float = DEFAULT_STALE_KEEP_S,
        size_limit_bytes: int = 1 << 30,
    ) -> None:
        if stale_keep_s < 0:
            raise ConfigError("stale_keep_s must be >= 0")
        self.directory = Path(directory) if directory is not None else None
        self.clock = clock
        self.stale_keep_s = stale_keep_s
        self.size_limit_bytes = size_limit_bytes
        self._disk: Any = None
        self._memory: dict[str, str] = {}
        self._limiter = anyio.CapacityLimiter(4)
        self._opened = False

    async def __aenter__(self) -> Self:
        if self.directory is not None:
            import diskcache

            directory = self.directory

            def _open() -> Any:
                directory.mkdir(parents=True, exist_ok=True)
                return diskcache.Cache(str(directory), size_limit=self.size_limit_bytes)

            try:
                self._disk = await anyio.to_thread.run_sync(_open, limiter=self._limiter)
            except OSError as exc:
                raise ConfigError(
                    f"cannot open the research cache in {directory}: {exc}; check the data directory"
                ) from exc
        self._opened = True
        await self._maybe_sweep()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        disk, self._disk = self._disk, None
        self._opened = False
        if disk is not None:
            await anyio.to_thread.run_sync(disk.close, limiter=self._limiter)

    def session(self) -> CacheSession:
        """A new run-local layer with its own statistics."""
        if not self._opened:
            raise ConfigError("the research cache is not open; use `async with ResearchCache(...)` first")
        return CacheSession(self)

    async def load(self, key: str) -> CacheEntry | None:
        """The persisted entry under ``key`` (namespaced key), or ``None``."""
        key = _scrub(key)
        if self._disk is None:
            text = self._memory.get(key)
        else:
            disk = self._disk
            text = await anyio.to_thread.run_sync(lambda: disk.get(key), limiter=self._limiter)
        return CacheEntry.from_json(text) if isinstance(text, str) else None

    async def store(self, key: str, entry: CacheEntry) -> None:
        """Persist ``entry`` under ``key`` (callers decide whether it may be stored).

        Raises:
            OSError, UnicodeError, sqlite3.Error: the persistent layer refused the write.
        """
        key = _scrub(key)
        text = entry.to_json()
        if self._disk is None:
            self._memory[key] = text
            return
        disk = self._disk
        # diskcache's own expiry (wall clock) is only a backstop, well past the stale window.
        expire = entry.ttl_s + self.stale_keep_s + 3600.0
        await anyio.to_thread.run_sync(lambda: disk.set(key, text, expire=expire), limiter=self._limiter)

    async def delete(self, key: str) -> None:
        """Remove the entry under ``key`` if present."""
        key = _scrub(key)
        if self._disk is None:
            self._memory.pop(key, None)
            return
        disk = self._disk
        await anyio.to_thread.run_sync(lambda: disk.delete(key), limiter=self._limiter)

    async def _maybe_sweep(self) -> None:
        """Sweep at start-up, at most once per ``SWEEP_INTERVAL_S`` (a sweep reads every entry)."""
        now = self.clock()
        last = await self._get_raw(_SWEEP_KEY)
        try:
            due = last is None or now - float(last) >= SWEEP_INTERVAL_S or now < float(last)
        except ValueError:
            due = True
        if due:
            await self.evict_expired()

    async def _get_raw(self, key: str) -> str | None:
        if self._disk is None:
            return self._memory.get(key)
        disk = self._disk
        value = await anyio.to_thread.run_sync(lambda: disk.get(key), limiter=self._limiter)
        return value if isinstance(value, str) else None

    async def evict_expired(self) -> int:
        """Delete every entry older than its TTL plus the stale window; returns how many went."""
        now = self.clock()
        limit = self.stale_keep_s

        def _evict(items: dict[str, str] | Any) -> int:
            doomed = []
            for key in list(items.keys() if isinstance(items, dict) else items.iterkeys()):
                if key == _SWEEP_KEY:
                    continue
                text = items.get(key)
                entry = CacheEntry.from_json(text) if isinstance(text, str) else None
                if entry is None or now >= entry.expires_at + limit:
                    doomed.append(key)
            for key in doomed:
                if isinstance(items, dict):
                    items.pop(key, None)
                else:
                    items.delete(key)
            if isinstance(items, dict):
                items[_SWEEP_KEY] = repr(now)
            else:
                items.set(_SWEEP_KEY, repr(now))
            return len(doomed)

        if self._disk is None:
            return _evict(self._memory)
        disk = self._disk
        return await anyio.to_thread.run_sync(lambda: _evict(disk), limiter=self._limiter)


@dataclass(slots=True)
class _Local:
    entry: CacheEntry
    written_this_run: bool


class CacheSession:
    """The run-local layer of one research run, with that run's statistics."""

    def __init__(self, cache: ResearchCache) -> None:
        self._cache = cache
        self._local: dict[str, _Local] = {}
        self._counts: dict[str, int] = dict.fromkeys(CacheStats.model_fields, 0)

    @property
    def clock(self) -> Clock:
        """The cache's clock."""
        return self._cache.clock

    def stats(self) -> CacheStats:
        """The statistics of this run so far."""
        return CacheStats(**self._counts)

    def _count(self, namespace: CacheNamespace, status: CacheStatus) -> None:
        if status is CacheStatus.BYPASSED:
            self._counts["bypassed"] += 1
            self._counts[f"{namespace}_misses"] += 1
        elif status is CacheStatus.STALE:
            self._counts["stale_served"] += 1
            self._counts[f"{namespace}_hits"] += 1
        elif status is CacheStatus.HIT:
            self._counts[f"{namespace}_hits"] += 1
        else:
            self._counts[f"{namespace}_misses"] += 1

    async def get(self, namespace: CacheNamespace, key: str, freshness: Freshness) -> CacheLookup:
        """Look ``key`` up under ``freshness``; counts a hit, miss, stale or bypass.

        A ``bypassed`` lookup also counts as a miss of its namespace (the value will be fetched).
        """
        lookup = await self._lookup(namespace, key, Freshness(freshness))
        self._count(namespace, lookup.status)
        return lookup

    async def _lookup(self, namespace: CacheNamespace, key: str, freshness: Freshness) -> CacheLookup:
        full_key = f"{namespace}{_KEY_SEPARATOR}{key}"
        now = self._cache.clock()
        local = self._local.get(full_key)
        if local is not None and local.written_this_run:
            # Produced by this very run: fresh by definition, whatever the freshness mode.
            return CacheLookup(
                CacheStatus.HIT,
                local.entry.value,
                max(0.0, now - local.entry.stored_at),
                local.entry.complete,
            )
        if freshness is Freshness.FRESH:
            return CacheLookup(CacheStatus.BYPASSED)
        entry = local.entry if local is not None else await self._cache.load(full_key)
        if entry is None or not entry.complete:
            return CacheLookup(CacheStatus.MISS)
        age = max(0.0, now - entry.stored_at)
        if not entry.expired(now):
            self._local[full_key] = _Local(entry, written_this_run=False)
            return CacheLookup(CacheStatus.HIT, entry.value, age)
        if freshness is Freshness.CACHED:
            self._local[full_key] = _Local(entry, written_this_run=False)
            return CacheLookup(CacheStatus.STALE, entry.value, age)
        if now >= entry.expires_at + self._cache.stale_keep_s:
            await self._cache.delete(full_key)
            self._counts["evicted"] += 1
        return CacheLookup(CacheStatus.MISS)

    async def put(
        self,
        namespace: CacheNamespace,
        key: str,
        value: Any,
        *,
        ttl_s: float,
        complete: bool = True,
        stored_at: float | None = None,
    ) -> bool:
        """Remember ``value``; returns whether it reached the persistent layer.

        Args:
            namespace: ``search`` or ``page``.
            key: the entry key (see :func:`page_cache_key`, :func:`search_cache_key`).
            value: JSON-serialisable data.
            ttl_s: how long ``auto`` serves it.
            complete: ``False`` for a partial result: kept for this run only, never persisted.
            stored_at: when the value was produced (now by default); an already expired entry is
                never written over a good one.
        """
        if ttl_s <= 0:
            raise ConfigError("a cache TTL must be > 0 seconds")
        now = self._cache.clock()
        entry = CacheEntry(
            value=value, stored_at=now if stored_at is None else stored_at, ttl_s=ttl_s, complete=complete
        )
        full_key = f"{namespace}{_KEY_SEPARATOR}{key}"
        self._local[full_key] = _Local(entry, written_this_run=True)
        if not complete:
            return False
        existing = await self._cache.load(full_key)
        if existing is not None and existing.complete and not existing.expired(now):
            if (
                entry.expired(now)
                or entry.expires_at <= existing.expires_at
                and entry.stored_at < existing.stored_at
            ):
                self._counts["kept_existing"] += 1
                return False
        try:
            await self._cache.store(full_key, entry)
        except _STORE_ERRORS:
            self._counts["write_errors"] += 1  # the run keeps the value in its local layer
            return False
        self._counts["writes"] += 1
        return True
