from __future__ import annotations

import socket
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
    ConfigError,
    Freshness,
    RedisStore,
    ResearchCache,
    cache_store,
    page_cache_key,
    research_cache_health,
    search_cache_key,
)
from simone.runtime._cache import CacheEntry
from simone.runtime._cache_redis import redact_url
from simone.runtime.testing import SecondsClock

T = TypeVar("T")

BACKENDS = ["diskcache", "redis"]


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


@pytest.fixture(params=BACKENDS)
def caches(request: pytest.FixtureRequest, tmp_path: Path) -> Caches:
    """The same cache tests run against diskcache and against a real Redis server."""
    url = request.getfixturevalue("redis_url") if request.param == "redis" else None
    return Caches(request.param, tmp_path / "c", url)


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


def test_memory_only_cache_and_malformed_entries() -> None:
    async def main() -> tuple[CacheStatus, CacheStatus]:
        async with ResearchCache(None) as cache:
            await cache.session().put("page", "a", {"x": 1}, ttl_s=10)
            hit = (await cache.session().get("page", "a", Freshness.AUTO)).status
            await cache.store("page\x1fb", cache_entry_garbage())
            bad = (await cache.session().get("page", "b", Freshness.AUTO)).status
            return hit, bad

    def cache_entry_garbage() -> CacheEntry:

        return CacheEntry(value=None, stored_at=0, ttl_s=1, complete=False)

    assert run(main) == (CacheStatus.HIT, CacheStatus.MISS)


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


def test_keys_normalise_urls_and_queries() -> None:
    spellings = [
        "https://Example.com/a/",
        "http://www.example.com/a",
        "https://example.com/a#frag",
        "https://example.com/a?utm_source=x",
        "HTTPS://EXAMPLE.COM:443/a",
    ]
    assert len({page_cache_key(u) for u in spellings}) == 1
    assert search_cache_key("searxng", "a  b", 5) == search_cache_key("searxng", "a b", 5)
    assert search_cache_key("searxng", "a b", 5) != search_cache_key("brave", "a b", 5)
    assert search_cache_key("searxng", "a b", 5) != search_cache_key("searxng", "a b", 8)


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
    if caches.backend == "redis":
        assert "volatile-ttl" in probed.detail, "the doctor shows the server's size bound"


# -- Redis only: native expiry, addresses, a server that is down -----------------------------------


def test_redis_keys_expire_natively_after_the_stale_window(redis_url: str) -> None:
    import redis.asyncio as aioredis

    async def main() -> tuple[int, int, int]:
        async with ResearchCache(None, url=redis_url, stale_keep_s=50) as cache:
            assert cache.backend == "redis"
            await cache.session().put("search", "q", [1], ttl_s=10)
        client = aioredis.Redis.from_url(redis_url)
        try:
            keys = [k async for k in client.scan_iter(match=b"simone:research-cache:v1:search*")]
            assert len(keys) == 1
            pttl = await client.pttl(keys[0])
            sweep_ttl = await client.pttl(b"simone:research-cache:v1:\x1fmeta\x1flast-sweep")
            return len(keys), pttl, sweep_ttl
        finally:
            await client.aclose()

    _, pttl, sweep_ttl = run(main)
    # the stale copy outlives the fresh TTL: ttl + stale window + an hour, in Redis's own clock
    assert (10 + 50 + 3600) * 1000 - 5000 < pttl <= (10 + 50 + 3600) * 1000
    assert sweep_ttl == -1, "the sweep marker never expires (and volatile-ttl never evicts it)"


def test_redis_addresses_never_show_the_password() -> None:
    assert redact_url("redis://u:s3cret@h:6379/0") == "redis://u@h:6379/0"
    assert redact_url("redis://:s3cret@h:6379/0") == "redis://h:6379/0"
    assert redact_url("rediss://h:6380/1?password=s3cret&ssl_cert_reqs=none") == (
        "rediss://h:6380/1?ssl_cert_reqs=none"
    )
    assert RedisStore("redis://u:pw@h/0").address == "redis://u@h/0"
    with pytest.raises(ConfigError):
        cache_store(None, url="http://h/0")


def test_a_redis_server_that_is_down_degrades_the_cache() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once the socket is closed
    url = f"redis://:pw@127.0.0.1:{port}/0"

    async def main() -> tuple[bool, CacheStatus, CacheStats, CacheHealth]:
        async with ResearchCache(None, url=url) as cache:  # opening does not raise
            session = cache.session()
            written = await session.put("page", "k", "v", ttl_s=60)
            status = (await cache.session().get("page", "k", Freshness.AUTO)).status
            same = await session.get("page", "k", Freshness.AUTO)
            assert same.status is CacheStatus.HIT, "the run keeps what it fetched"
            reader = cache.session()
            await reader.get("page", "other", Freshness.AUTO)
            return written, status, reader.stats(), await cache.health()

    written, status, stats, health = run(main)
    assert not written and status is CacheStatus.MISS
    assert stats.read_errors == 1 and stats.page_misses == 1
    assert not health.answers and health.backend == "redis" and "pw" not in health.address
    assert "unavailable" in health.detail


def test_the_cache_recovers_when_redis_comes_back(redis_factory: Callable[[], Any]) -> None:
    server = redis_factory()

    async def main() -> tuple[CacheStats, CacheStats, CacheLookup]:
        store = RedisStore(server.url, retry_after_s=0.0)
        async with ResearchCache(None, store=store) as cache:
            assert await cache.session().put("page", "k", "v1", ttl_s=60)
            server.stop()
            down = cache.session()
            await down.get("page", "k", Freshness.AUTO)
            await down.put("page", "k", "v2", ttl_s=60)
            server.start()  # same port, empty (no persistence)
            back = cache.session()
            assert await back.put("page", "k", "v3", ttl_s=60)
            return down.stats(), back.stats(), await cache.session().get("page", "k", Freshness.AUTO)

    down, back, later = run(main)
    assert down.read_errors == 2 and down.write_errors == 1 and down.writes == 0
    assert back.writes == 1 and back.read_errors == back.write_errors == 0
    assert later.value == "v3"
