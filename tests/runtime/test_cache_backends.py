"""The research cache's behaviour suite: every test here runs against diskcache and against a real Redis.

The ``caches`` fixture opens :class:`~simone.runtime.ResearchCache` on one persistent backend (a
diskcache folder in ``tmp_path``, or the session's ``redis-server`` on loopback, emptied for the test:
``tests/servers_redis.py``; a server that cannot start fails the test with the reason, never skips it).
The first part checks the cache's rules (freshness, honesty, eviction, robustness) through the cache; the
second checks the store contract (:class:`~simone.runtime.CacheStore`) each backend implements.
Backend-specific tests sit beside this file: ``test_cache_redis.py`` (native expiry, addresses, a server
that is down), ``test_owner_only.py`` (diskcache's file modes); backend-neutral ones in ``test_cache.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from simone.runtime import (
    CacheHealth,
    CacheLookup,
    CacheStats,
    CacheStatus,
    CacheStore,
    CacheStoreError,
    ConfigError,
    DiskcacheStore,
    Freshness,
    ProviderUnavailable,
    RedisStore,
    ResearchCache,
    page_cache_key,
    research_cache_health,
)
from simone.runtime._cache import CacheEntry
from simone.runtime.testing import SecondsClock

T = TypeVar("T")

BACKENDS = ["diskcache", "redis"]
"""Every persistent backend of the research cache: each test of this file runs on each of them."""

SIZE_BOUNDS = {"diskcache": "bytes used (oldest entries culled past the limit)", "redis": "volatile-ttl"}
"""What each backend's health detail says about its size bound (the test server runs ``volatile-ttl``)."""


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


class Caches:
    """Opens the research cache on one persistent backend; every call names the same store again."""

    def __init__(self, backend: str, directory: Path, url: str | None) -> None:
        self.backend = backend
        self.directory = directory
        self.url = url

    def __call__(self, **options: Any) -> ResearchCache:
        if self.backend == "redis":
            return ResearchCache(None, url=self.url, **options)
        return ResearchCache(self.directory, **options)

    def store(self) -> CacheStore:
        """A new (unopened) store object of this backend, over the same folder or server."""
        if self.backend == "redis":
            assert self.url is not None
            return RedisStore(self.url)
        return DiskcacheStore(self.directory)

    @property
    def address(self) -> str:
        """The address the backend reports (the URL, or the folder)."""
        return self.url if self.url else str(self.directory)

    @property
    def bound(self) -> str:
        """What the backend's health detail says about its size bound."""
        return SIZE_BOUNDS[self.backend]


@pytest.fixture(params=BACKENDS)
def caches(request: pytest.FixtureRequest, tmp_path: Path) -> Caches:
    """The same cache tests run against diskcache and against a real Redis server."""
    url = request.getfixturevalue("redis_url") if request.param == "redis" else None
    return Caches(request.param, tmp_path / "c", url)


# -- the cache's rules, through ResearchCache --------------------------------------------------------


def test_second_run_hits_the_persistent_layer(caches: Caches) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[CacheStats, CacheStats, CacheLookup]:
        async with caches(clock=clock) as cache:
            first = cache.session()
            miss = await first.get("page", "k", Freshness.AUTO)
            assert miss.status is CacheStatus.MISS and miss.value is None
            assert await first.put("page", "k", {"text": "hello"}, ttl_s=60)
        # reopen: the entry survived on disk
        async with caches(clock=clock) as cache:
            second = cache.session()
            hit = await second.get("page", "k", Freshness.AUTO)
            return first.stats(), second.stats(), hit

    first, second, hit = run(main)
    assert first.page_misses == 1 and first.writes == 1
    assert second.page_hits == 1 and second.page_misses == 0
    assert hit.status is CacheStatus.HIT and hit.value == {"text": "hello"}


def test_ttl_expiry_with_a_fake_clock(caches: Caches) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> list[CacheStatus]:
        async with caches(clock=clock) as cache:
            await cache.session().put("search", "q", [1, 2], ttl_s=30 * 60)
            statuses = []
            clock.advance(30 * 60 - 1)
            statuses.append((await cache.session().get("search", "q", Freshness.AUTO)).status)
            clock.advance(2)
            statuses.append((await cache.session().get("search", "q", Freshness.AUTO)).status)
            statuses.append((await cache.session().get("search", "q", Freshness.CACHED)).status)
            return statuses

    assert run(main) == [CacheStatus.HIT, CacheStatus.MISS, CacheStatus.STALE]


def test_cached_serves_stale_and_says_so(caches: Caches) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[CacheLookup, CacheStats]:
        async with caches(clock=clock) as cache:
            await cache.session().put("page", "u", "old text", ttl_s=10)
            clock.advance(100)
            session = cache.session()
            lookup = await session.get("page", "u", Freshness.CACHED)
            return lookup, session.stats()

    lookup, stats = run(main)
    assert lookup.status is CacheStatus.STALE
    assert lookup.value == "old text" and lookup.age_s == pytest.approx(100)
    assert stats.stale_served == 1 and stats.page_hits == 1


def test_fresh_bypasses_reads_but_writes(caches: Caches) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[CacheStatus, CacheStatus, CacheLookup, CacheStats]:
        async with caches(clock=clock) as cache:
            await cache.session().put("page", "u", "v1", ttl_s=100)
            session = cache.session()
            bypassed = (await session.get("page", "u", Freshness.FRESH)).status
            await session.put("page", "u", "v2", ttl_s=100)
            again = (await session.get("page", "u", Freshness.FRESH)).status  # written by this run
            later = await cache.session().get("page", "u", Freshness.AUTO)
            return bypassed, again, later, session.stats()

    bypassed, again, later, stats = run(main)
    assert bypassed is CacheStatus.BYPASSED
    assert again is CacheStatus.HIT
    assert later.value == "v2"
    assert stats.bypassed == 1 and stats.writes == 1


def test_a_good_entry_is_never_overwritten_by_an_expired_one(caches: Caches) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[bool, CacheLookup, CacheStats]:
        async with caches(clock=clock) as cache:
            await cache.session().put("page", "u", "good", ttl_s=1000)
            session = cache.session()
            # a value produced long ago (e.g. served stale elsewhere) arrives late
            stored = await session.put("page", "u", "expired", ttl_s=10, stored_at=clock.now - 500)
            lookup = await cache.session().get("page", "u", Freshness.AUTO)
            return stored, lookup, session.stats()

    stored, lookup, stats = run(main)
    assert stored is False
    assert lookup.value == "good"
    assert stats.kept_existing == 1 and stats.writes == 0


def test_partial_results_stay_run_local(caches: Caches) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[bool, CacheLookup, CacheLookup]:
        async with caches(clock=clock) as cache:
            session = cache.session()
            stored = await session.put("search", "q", {"hits": [1]}, ttl_s=100, complete=False)
            same_run = await session.get("search", "q", Freshness.AUTO)
            next_run = await cache.session().get("search", "q", Freshness.CACHED)
            return stored, same_run, next_run

    stored, same_run, next_run = run(main)
    assert stored is False
    assert same_run.status is CacheStatus.HIT and same_run.complete is False
    assert next_run.status is CacheStatus.MISS


def test_expired_entries_are_evicted_after_the_stale_window(caches: Caches) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[int, CacheStatus, CacheStatus]:
        async with caches(clock=clock, stale_keep_s=50) as cache:
            session = cache.session()
            await session.put("page", "a", "A", ttl_s=10)
            await session.put("page", "b", "B", ttl_s=1000)
            clock.advance(40)  # a expired, inside the stale window
            still = (await cache.session().get("page", "a", Freshness.CACHED)).status
            clock.advance(30)  # a is past ttl + stale window
            evicted = await cache.evict_expired()
            gone = (await cache.session().get("page", "a", Freshness.CACHED)).status
            return evicted, still, gone

    evicted, still, gone = run(main)
    assert (evicted, still, gone) == (1, CacheStatus.STALE, CacheStatus.MISS)


def test_auto_lookup_evicts_an_entry_past_the_stale_window(caches: Caches) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> CacheStats:
        async with caches(clock=clock, stale_keep_s=0) as cache:
            await cache.session().put("page", "a", "A", ttl_s=10)
            clock.advance(11)
            session = cache.session()
            await session.get("page", "a", Freshness.AUTO)
            return session.stats()

    assert run(main).evicted == 1


def test_misuse_is_a_typed_error(caches: Caches) -> None:
    cache = caches()
    with pytest.raises(ConfigError, match="not open"):
        cache.session()
    with pytest.raises(ConfigError):
        caches(stale_keep_s=-1)

    async def main() -> None:
        async with caches() as opened:
            await opened.session().put("page", "k", "v", ttl_s=0)

    with pytest.raises(ConfigError, match="TTL"):
        run(main)


def test_opening_sweeps_at_most_once_per_interval(caches: Caches) -> None:
    from simone.runtime._cache import SWEEP_INTERVAL_S

    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[CacheStatus, CacheStatus]:
        async with caches(clock=clock, stale_keep_s=0) as cache:
            await cache.session().put("page", "a", "A", ttl_s=10)
        clock.advance(20)  # expired, but the last sweep was just now: opening does not sweep
        async with caches(clock=clock, stale_keep_s=0) as cache:
            kept = (await cache.session().get("page", "a", Freshness.CACHED)).status
        clock.advance(SWEEP_INTERVAL_S)
        async with caches(clock=clock, stale_keep_s=0) as cache:
            swept = (await cache.session().get("page", "a", Freshness.CACHED)).status
        return kept, swept

    assert run(main) == (CacheStatus.STALE, CacheStatus.MISS)


def test_lone_surrogates_are_stored_as_replacement_characters(caches: Caches) -> None:
    """Issue 15 (6): valid JSON "\\ud800" from a search result crashed the cache write (SQLite and
    UTF-8 cannot take a lone surrogate)."""
    value = {"title": "bad \ud800 title", "url": "https://x.test/\udfff", "\udc80key": ["\ud83d\ude00"]}

    async def main() -> tuple[bool, object, object, CacheStats]:
        async with caches() as cache:
            session = cache.session()
            written = await session.put("search", "q\ud800", value, ttl_s=60)
            await session.put("page", page_cache_key("https://x.test/\ud800"), value, ttl_s=60)
            stats = session.stats()
        async with caches() as cache:
            later = cache.session()
            found = await later.get("search", "q\ud800", Freshness.AUTO)
            page = await later.get("page", page_cache_key("https://x.test/\ud800"), Freshness.AUTO)
        return written, found.value, page.value, stats

    written, found, page, stats = run(main)
    assert written and stats.writes == 2 and stats.write_errors == 0
    expected = {"title": "bad \ufffd title", "url": "https://x.test/\ufffd", "\ufffdkey": ["\U0001f600"]}
    assert found == expected and page == expected


def test_a_refused_write_is_counted_not_raised(caches: Caches, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    async def refuse(self: ResearchCache, key: str, entry: CacheEntry) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    async def main() -> tuple[bool, CacheStatus, CacheStats]:
        async with caches() as cache:
            monkeypatch.setattr(ResearchCache, "store", refuse)
            session = cache.session()
            written = await session.put("page", "k", {"text": "kept"}, ttl_s=60)
            status = (await session.get("page", "k", Freshness.AUTO)).status
            return written, status, session.stats()

    written, status, stats = run(main)
    assert not written and status is CacheStatus.HIT, "the run still has its value"
    assert stats.write_errors == 1 and stats.writes == 0


def test_an_entry_over_the_size_cap_stays_run_local(caches: Caches) -> None:
    async def main() -> tuple[bool, CacheStatus, CacheStatus, CacheStats]:
        async with caches(max_entry_bytes=1000) as cache:
            session = cache.session()
            written = await session.put("page", "big", "x" * 2000, ttl_s=60)
            assert await session.put("page", "small", "x" * 10, ttl_s=60)
            same_run = (await session.get("page", "big", Freshness.AUTO)).status
            next_run = (await cache.session().get("page", "big", Freshness.AUTO)).status
            return written, same_run, next_run, session.stats()

    written, same_run, next_run, stats = run(main)
    assert not written and same_run is CacheStatus.HIT and next_run is CacheStatus.MISS
    assert stats.write_errors == 1 and stats.writes == 1


def test_health_names_the_backend_and_says_it_answers(caches: Caches) -> None:
    async def main() -> tuple[CacheHealth, CacheHealth]:
        async with caches() as cache:
            opened = await cache.health()
        probed = await research_cache_health(caches.directory, url=caches.url)
        return opened, probed

    opened, probed = run(main)
    for health in (opened, probed):
        assert health.backend == caches.backend and health.answers, health
        assert health.address == (caches.url if caches.url else str(caches.directory))
        assert caches.bound in health.detail, "the doctor shows the backend's size bound"


# -- the store contract, through CacheStore ----------------------------------------------------------


def test_a_store_keeps_text_under_keys(caches: Caches) -> None:
    key = "page\x1fhttps://x.test/ü"
    text = '{"v":"ünïcödé \ufffd","t":1}'
    big = "x" * 200_000  # above diskcache's own file threshold; a page can be this large

    async def main() -> list[str | None]:
        store = caches.store()
        assert isinstance(store, CacheStore) and store.name == caches.backend
        assert store.address == caches.address
        await store.open()
        try:
            seen = [await store.get(key)]
            await store.set(key, text, expire_s=None)
            seen.append(await store.get(key))
            await store.set(key, "second", expire_s=60.0)
            seen.append(await store.get(key))
            await store.set("big", big, expire_s=60.0)
            seen.append(await store.get("big"))
            await store.delete(key)
            await store.delete("never stored")
            seen.append(await store.get(key))
            return seen
        finally:
            await store.close()

    assert run(main) == [None, text, "second", big, None]


def test_a_store_keeps_its_entries_for_the_next_store_object(caches: Caches) -> None:
    async def main() -> tuple[str | None, str | None]:
        first = caches.store()
        await first.open()
        try:
            await first.set("kept", "across processes", expire_s=None)
            await first.set("gone", "deleted", expire_s=None)
            await first.delete("gone")
        finally:
            await first.close()
        second = caches.store()  # another process naming the same folder or server
        await second.open()
        try:
            return await second.get("kept"), await second.get("gone")
        finally:
            await second.close()

    assert run(main) == ("across processes", None)


def test_a_store_drops_an_entry_when_its_backstop_expiry_passes(caches: Caches) -> None:
    async def main() -> tuple[str | None, str | None, str | None]:
        store = caches.store()
        await store.open()
        try:
            await store.set("short", "s", expire_s=0.05)
            await store.set("long", "l", expire_s=3600.0)
            await store.set("forever", "f", expire_s=None)
            await anyio.sleep(0.5)  # well past the short expiry, in the backend's own clock
            return await store.get("short"), await store.get("long"), await store.get("forever")
        finally:
            await store.close()

    assert run(main) == (None, "l", "f")


def test_a_sweep_deletes_what_is_doomed_except_the_kept_key(caches: Caches) -> None:
    async def main() -> tuple[int, list[str | None], list[str | None]]:
        store = caches.store()
        await store.open()
        try:
            for key, text in [("a", "old"), ("b", "new"), ("c", "old"), ("marker", "old")]:
                await store.set(key, text, expire_s=None)
            read: list[str | None] = []

            def doomed(text: str | None) -> bool:
                read.append(text)
                return text == "old"

            gone = await store.sweep(doomed, keep="marker")
            left = [await store.get(k) for k in ("a", "b", "c", "marker")]
            return gone, sorted(read, key=str), left
        finally:
            await store.close()

    gone, read, left = run(main)
    assert gone == 2
    assert read == ["new", "old", "old"], "every entry but the kept one is read once"
    assert left == [None, "new", None, "old"]


def test_a_closed_store_refuses_with_a_cache_store_error(caches: Caches) -> None:
    async def main() -> list[str]:
        store = caches.store()
        await store.open()
        await store.set("k", "v", expire_s=None)
        await store.close()
        refused = []
        for operation in (
            lambda: store.get("k"),
            lambda: store.set("k", "w", expire_s=None),
            lambda: store.delete("k"),
            lambda: store.sweep(lambda _: True, keep=""),
        ):
            with pytest.raises(CacheStoreError) as caught:
                await operation()
            assert isinstance(caught.value, ProviderUnavailable), "a refusal is in simone's error tree"
            refused.append(str(caught.value))
        return refused

    refused = run(main)
    assert len(refused) == 4 and all("not open" in message for message in refused), refused


def test_a_store_reports_its_health_open_or_not(caches: Caches) -> None:
    async def main() -> tuple[CacheHealth, CacheHealth]:
        store = caches.store()
        probed = await store.health()  # opens and closes on its own
        await store.open()
        try:
            return probed, await store.health()
        finally:
            await store.close()

    for health in run(main):
        assert health.backend == caches.backend and health.address == caches.address and health.answers
        assert health.format_version == 1 and caches.bound in health.detail, health
