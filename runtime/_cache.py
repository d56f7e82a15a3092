r"""The two-layer research cache: a run-local layer over a persistent, swappable store.

* **Layers.** A :class:`ResearchCache` owns the persistent layer, a :class:`CacheStore`: diskcache (one
  SQLite file in a directory, the embedded default), Redis (``url="redis://…"``, shared by every process
  that names the server; see :mod:`simone.runtime._cache_redis`), or memory (``None``: this process
  only). Each research run opens a :class:`CacheSession`, the run-local layer: what the run read or
  wrote is served again from memory, and the session counts its own statistics. Every rule below lives
  here, so both persistent backends behave the same (the same tests run against both).
* **Freshness** (DESIGN.md): ``auto`` serves an entry while its TTL lasts; ``fresh`` bypasses reads of
  older entries but still writes, and never overwrites a good entry with an expired one; ``cached``
  serves an expired entry when there is one, and says so (``stale``).
* **Honesty.** Failures are never stored; partial results (``complete=False``) stay in the run-local
  layer only, so they are never served later as complete. Expired entries are evicted once they are
  older than their TTL plus the stale window (``stale_keep_s``) that ``cached`` may still use: when an
  ``auto`` lookup meets one, by :meth:`ResearchCache.evict_expired`, and by a sweep when the cache is
  opened (at most hourly, since a sweep reads every entry). Backends also drop an entry on their own
  (diskcache's expiry, Redis's ``PX``) an hour after that window: the freshness timestamp is inside the
  value, so the stale copy outlives the fresh TTL.
* **Size bound.** diskcache culls the least recently stored entries past ``size_limit_bytes``; Redis is
  bounded by the server's ``maxmemory`` policy; on every backend an entry over ``max_entry_bytes`` is
  not persisted (counted as a write error; the run keeps it).
* **Time** comes from an injectable clock so tests can expire entries without sleeping.
* **Robustness.** Values come from the web: lone surrogates (valid JSON ``"\ud800"``, unencodable as
  UTF-8) are replaced by U+FFFD in what is persisted and in keys. A write the persistent layer refuses
  (disk full, locked, unencodable, server down or out of memory) is counted (``write_errors``), and a
  read it cannot answer is counted (``read_errors``) and treated as a miss, instead of failing the run.
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

from pydantic import BaseModel, ConfigDict, Field
from simone.runtime._cache_redis import RedisStore, is_redis_url
from simone.runtime._cache_stores import (
    CacheHealth,
    CacheStore,
    DiskcacheStore,
    InProcessCacheStore,
    backstop_expiry_s,
)
from simone.runtime._errors import CacheStoreError, ConfigError
from simone.runtime.ranking import normalize_url

Clock = Callable[[], float]
"""Returns the current time in seconds (``time.time`` by default; a fake clock in tests)."""

CacheNamespace = Literal["search", "page"]
"""What an entry holds: search results of one query, or one extracted page."""

DEFAULT_STALE_KEEP_S = 7 * 24 * 3600.0
"""How long past its TTL an entry is kept for ``cached`` freshness before it is evicted."""

_KEY_SEPARATOR = "\x1f"

_SURROGATE = re.compile("[\ud800-\udfff]")

_STORE_ERRORS = (CacheStoreError, OSError, UnicodeError, sqlite3.Error)
"""What a refused read or write of the persistent layer raises (counted, never fatal to a run)."""

DEFAULT_MAX_ENTRY_BYTES = 8 * 1024 * 1024
"""Entries larger than this are never persisted (one extracted page is far smaller)."""


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
    """Writes the persistent layer refused (disk full, locked, server down, too large…): the value
    stayed run-local."""
    read_errors: Annotated[int, Field(ge=0)] = 0
    """Reads the persistent layer could not answer (server down…): counted as misses, fetched live."""


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


def cache_store(
    directory: str | Path | None,
    *,
    url: str | None = None,
    password: str | None = None,
    size_limit_bytes: int = 1 << 30,
) -> CacheStore:
    """The persistent store a configuration names: Redis for ``url``, diskcache for ``directory``, else memory.

    Raises:
        ConfigError: ``url`` is not a Redis URL.
    """
    if url:
        if not is_redis_url(url):
            raise ConfigError("the research cache URL must start with redis://, rediss:// or unix://")
        return RedisStore(url, password=password)
    if directory is not None:
        return DiskcacheStore(directory, size_limit_bytes=size_limit_bytes)
    return InProcessCacheStore()


async def research_cache_health(
    directory: str | Path | None, *, url: str | None = None, password: str | None = None
) -> CacheHealth:
    """Probe the research cache a configuration names, without keeping it open (for ``simone doctor``).

    Returns the backend (``diskcache``/``redis``/``memory``), its address without a password, whether it
    answers now and a detail (the failure, or its size bound). Never raises for an unreachable backend.

    Example:
        ``await research_cache_health(web.cache_dir or data_dir / "web-cache", url=web.cache_url)``
    """
    try:
        store = cache_store(directory, url=url, password=password)
    except ConfigError as exc:
        return CacheHealth("redis" if url else "diskcache", "(invalid)", False, detail=str(exc))
    return await store.health()


class ResearchCache:
    """The persistent layer, shared by runs; open it with ``async with``.

    Args:
        directory: where diskcache keeps its SQLite file; ``None`` keeps entries in memory only.
        url: a Redis URL (``redis://host:port/db``): entries live in that server, shared by every
            process that names it (needs ``simone[redis]``); ``directory`` is then ignored.
        password: the Redis password (from the environment), overriding the URL's.
        store: any :class:`CacheStore` (overrides ``directory`` and ``url``).
        clock: the time source (``time.time``).
        stale_keep_s: how long past its TTL an entry remains available to ``cached`` freshness.
        size_limit_bytes: diskcache's size limit (least recently stored entries are culled past it).
        max_entry_bytes: entries larger than this are never persisted (counted as ``write_errors``);
            on Redis the total is bounded by the server's ``maxmemory`` policy.

    Example:
        ``async with ResearchCache(data_dir / "web-cache") as cache: session = cache.session()``
    """

    def __init__(
        self,
        directory: str | Path | None,
        *,
        url: str | None = None,
        password: str | None = None,
        store: CacheStore | None = None,
        clock: Clock = time.time,
        stale_keep_s: float = DEFAULT_STALE_KEEP_S,
        size_limit_bytes: int = 1 << 30,
        max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES,
    ) -> None:
        if stale_keep_s < 0:
            raise ConfigError("stale_keep_s must be >= 0")
        if max_entry_bytes < 1:
            raise ConfigError("max_entry_bytes must be >= 1")
        self.directory = Path(directory) if directory is not None and url is None else None
        self.clock = clock
        self.stale_keep_s = stale_keep_s
        self.size_limit_bytes = size_limit_bytes
        self.max_entry_bytes = max_entry_bytes
        if store is None:
            store = cache_store(self.directory, url=url, password=password, size_limit_bytes=size_limit_bytes)
        self.persistent: CacheStore = store
        self._opened = False

    @property
    def backend(self) -> str:
        """The persistent layer's backend name (``memory``, ``diskcache``, ``redis``)."""
        return self.persistent.name

    async def __aenter__(self) -> Self:
        try:
            await self.persistent.open()
        except OSError as exc:
            raise ConfigError(
                f"cannot open the research cache in {self.persistent.address}: {exc}; check the data directory"
            ) from exc
        self._opened = True
        try:
            await self._maybe_sweep()
        except _STORE_ERRORS:
            pass  # an unreachable shared store degrades the cache; lookups count the errors
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._opened = False
        await self.persistent.close()

    def session(self) -> CacheSession:
        """A new run-local layer with its own statistics."""
        if not self._opened:
            raise ConfigError("the research cache is not open; use `async with ResearchCache(...)` first")
        return CacheSession(self)

    async def health(self) -> CacheHealth:
        """Probe the persistent layer now (backend, address without secrets, whether it answers)."""
        return await self.persistent.health()

    async def load(self, key: str) -> CacheEntry | None:
        """The persisted entry under ``key`` (namespaced key), or ``None``.

        Raises:
            CacheStoreError, OSError, sqlite3.Error: the persistent layer could not be read.
        """
        text = await self.persistent.get(_scrub(key))
        return CacheEntry.from_json(text) if isinstance(text, str) else None

    async def store(self, key: str, entry: CacheEntry) -> None:
        """Persist ``entry`` under ``key`` (callers decide whether it may be stored).

        Raises:
            CacheStoreError, OSError, UnicodeError, sqlite3.Error: the persistent layer refused the write
            (an entry over ``max_entry_bytes`` is refused as :class:`CacheStoreError`).
        """
        text = entry.to_json()
        size = len(text.encode("utf-8"))
        if size > self.max_entry_bytes:
            raise CacheStoreError(
                f"entry of {size} bytes is over max_entry_bytes ({self.max_entry_bytes})", retryable=False
            )
        expire = backstop_expiry_s(entry.ttl_s, self.stale_keep_s)
        await self.persistent.set(_scrub(key), text, expire_s=expire)

    async def delete(self, key: str) -> None:
        """Remove the entry under ``key`` if present."""
        await self.persistent.delete(_scrub(key))

    async def _maybe_sweep(self) -> None:
        """Sweep at start-up, at most once per ``SWEEP_INTERVAL_S`` (a sweep reads every entry)."""
        now = self.clock()
        last = await self.persistent.get(_SWEEP_KEY)
        try:
            due = last is None or now - float(last) >= SWEEP_INTERVAL_S or now < float(last)
        except ValueError:
            due = True
        if due:
            await self.evict_expired()

    async def evict_expired(self) -> int:
        """Delete every entry older than its TTL plus the stale window; returns how many went."""
        now = self.clock()
        limit = self.stale_keep_s

        def doomed(text: str | None) -> bool:
            entry = CacheEntry.from_json(text) if isinstance(text, str) else None
            return entry is None or now >= entry.expires_at + limit

        gone = await self.persistent.sweep(doomed, keep=_SWEEP_KEY)
        await self.persistent.set(_SWEEP_KEY, repr(now), expire_s=None)
        return gone


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
        if local is not None:
            entry: CacheEntry | None = local.entry
        else:
            try:
                entry = await self._cache.load(full_key)
            except _STORE_ERRORS:
                self._counts["read_errors"] += 1  # a down store is a miss: the value is fetched live
                return CacheLookup(CacheStatus.MISS)
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
            try:
                await self._cache.delete(full_key)
            except _STORE_ERRORS:
                self._counts["write_errors"] += 1
            else:
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
        try:
            existing = await self._cache.load(full_key)
        except _STORE_ERRORS:
            self._counts["read_errors"] += 1
            existing = None
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
