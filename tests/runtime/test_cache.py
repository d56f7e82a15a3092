from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import anyio
import pytest
from simone.runtime import (
    CacheLookup,
    CacheStats,
    CacheStatus,
    ConfigError,
    Freshness,
    ResearchCache,
    page_cache_key,
    search_cache_key,
)
from simone.runtime._cache import CacheEntry
from simone.runtime.testing import SecondsClock

T = TypeVar("T")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


def test_second_run_hits_the_persistent_layer(tmp_path: Path) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[CacheStats, CacheStats, CacheLookup]:
        async with ResearchCache(tmp_path / "c", clock=clock) as cache:
            first = cache.session()
            miss = await first.get("page", "k", Freshness.AUTO)
            assert miss.status is CacheStatus.MISS and miss.value is None
            assert await first.put("page", "k", {"text": "hello"}, ttl_s=60)
        # reopen: the entry survived on disk
        async with ResearchCache(tmp_path / "c", clock=clock) as cache:
            second = cache.session()
            hit = await second.get("page", "k", Freshness.AUTO)
            return first.stats(), second.stats(), hit

    first, second, hit = run(main)
    assert first.page_misses == 1 and first.writes == 1
    assert second.page_hits == 1 and second.page_misses == 0
    assert hit.status is CacheStatus.HIT and hit.value == {"text": "hello"}


def test_ttl_expiry_with_a_fake_clock(tmp_path: Path) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> list[CacheStatus]:
        async with ResearchCache(tmp_path, clock=clock) as cache:
            await cache.session().put("search", "q", [1, 2], ttl_s=30 * 60)
            statuses = []
            clock.advance(30 * 60 - 1)
            statuses.append((await cache.session().get("search", "q", Freshness.AUTO)).status)
            clock.advance(2)
            statuses.append((await cache.session().get("search", "q", Freshness.AUTO)).status)
            statuses.append((await cache.session().get("search", "q", Freshness.CACHED)).status)
            return statuses

    assert run(main) == [CacheStatus.HIT, CacheStatus.MISS, CacheStatus.STALE]


def test_cached_serves_stale_and_says_so(tmp_path: Path) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[CacheLookup, CacheStats]:
        async with ResearchCache(tmp_path, clock=clock) as cache:
            await cache.session().put("page", "u", "old text", ttl_s=10)
            clock.advance(100)
            session = cache.session()
            lookup = await session.get("page", "u", Freshness.CACHED)
            return lookup, session.stats()

    lookup, stats = run(main)
    assert lookup.status is CacheStatus.STALE
    assert lookup.value == "old text" and lookup.age_s == pytest.approx(100)
    assert stats.stale_served == 1 and stats.page_hits == 1


def test_fresh_bypasses_reads_but_writes(tmp_path: Path) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[CacheStatus, CacheStatus, CacheLookup, CacheStats]:
        async with ResearchCache(tmp_path, clock=clock) as cache:
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


def test_a_good_entry_is_never_overwritten_by_an_expired_one(tmp_path: Path) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[bool, CacheLookup, CacheStats]:
        async with ResearchCache(tmp_path, clock=clock) as cache:
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


def test_partial_results_stay_run_local(tmp_path: Path) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[bool, CacheLookup, CacheLookup]:
        async with ResearchCache(tmp_path, clock=clock) as cache:
            session = cache.session()
            stored = await session.put("search", "q", {"hits": [1]}, ttl_s=100, complete=False)
            same_run = await session.get("search", "q", Freshness.AUTO)
            next_run = await cache.session().get("search", "q", Freshness.CACHED)
            return stored, same_run, next_run

    stored, same_run, next_run = run(main)
    assert stored is False
    assert same_run.status is CacheStatus.HIT and same_run.complete is False
    assert next_run.status is CacheStatus.MISS


def test_expired_entries_are_evicted_after_the_stale_window(tmp_path: Path) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[int, CacheStatus, CacheStatus]:
        async with ResearchCache(tmp_path, clock=clock, stale_keep_s=50) as cache:
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


def test_auto_lookup_evicts_an_entry_past_the_stale_window(tmp_path: Path) -> None:
    clock = SecondsClock(1_000_000.0)

    async def main() -> CacheStats:
        async with ResearchCache(tmp_path, clock=clock, stale_keep_s=0) as cache:
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


def test_misuse_is_a_typed_error(tmp_path: Path) -> None:
    cache = ResearchCache(tmp_path)
    with pytest.raises(ConfigError, match="not open"):
        cache.session()
    with pytest.raises(ConfigError):
        ResearchCache(tmp_path, stale_keep_s=-1)

    async def main() -> None:
        async with ResearchCache(tmp_path) as opened:
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


def test_opening_sweeps_at_most_once_per_interval(tmp_path: Path) -> None:
    from simone.runtime._cache import SWEEP_INTERVAL_S

    clock = SecondsClock(1_000_000.0)

    async def main() -> tuple[CacheStatus, CacheStatus]:
        async with ResearchCache(tmp_path, clock=clock, stale_keep_s=0) as cache:
            await cache.session().put("page", "a", "A", ttl_s=10)
        clock.advance(20)  # expired, but the last sweep was just now: opening does not sweep
        async with ResearchCache(tmp_path, clock=clock, stale_keep_s=0) as cache:
            kept = (await cache.session().get("page", "a", Freshness.CACHED)).status
        clock.advance(SWEEP_INTERVAL_S)
        async with ResearchCache(tmp_path, clock=clock, stale_keep_s=0) as cache:
            swept = (await cache.session().get("page", "a", Freshness.CACHED)).status
        return kept, swept

    assert run(main) == (CacheStatus.STALE, CacheStatus.MISS)


def test_lone_surrogates_are_stored_as_replacement_characters(tmp_path: Path) -> None:
    """Issue 15 (6): valid JSON "\\ud800" from a search result crashed the cache write (SQLite and
    UTF-8 cannot take a lone surrogate)."""
    value = {"title": "bad \ud800 title", "url": "https://x.test/\udfff", "\udc80key": ["\ud83d\ude00"]}

    async def main() -> tuple[bool, object, object, CacheStats]:
        async with ResearchCache(tmp_path) as cache:
            session = cache.session()
            written = await session.put("search", "q\ud800", value, ttl_s=60)
            await session.put("page", page_cache_key("https://x.test/\ud800"), value, ttl_s=60)
            stats = session.stats()
        async with ResearchCache(tmp_path) as cache:
            later = cache.session()
            found = await later.get("search", "q\ud800", Freshness.AUTO)
            page = await later.get("page", page_cache_key("https://x.test/\ud800"), Freshness.AUTO)
        return written, found.value, page.value, stats

    written, found, page, stats = run(main)
    assert written and stats.writes == 2 and stats.write_errors == 0
    expected = {"title": "bad \ufffd title", "url": "https://x.test/\ufffd", "\ufffdkey": ["\U0001f600"]}
    assert found == expected and page == expected


def test_a_refused_write_is_counted_not_raised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sqlite3

    async def refuse(self: ResearchCache, key: str, entry: CacheEntry) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    async def main() -> tuple[bool, CacheStatus, CacheStats]:
        async with ResearchCache(tmp_path) as cache:
            monkeypatch.setattr(ResearchCache, "store", refuse)
            session = cache.session()
            written = await session.put("page", "k", {"text": "kept"}, ttl_s=60)
            status = (await session.get("page", "k", Freshness.AUTO)).status
            return written, status, session.stats()

    written, status, stats = run(main)
    assert not written and status is CacheStatus.HIT, "the run still has its value"
    assert stats.write_errors == 1 and stats.writes == 0
