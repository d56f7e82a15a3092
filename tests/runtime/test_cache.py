"""The research cache apart from its persistent backends: keys, the in-process store, its error.

The behaviour suite every persistent backend passes is ``test_cache_backends.py``; Redis's own tests are
in ``test_cache_redis.py``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import pytest
from simone.runtime import (
    CacheHealth,
    CacheStatus,
    CacheStore,
    CacheStoreError,
    Freshness,
    InProcessCacheStore,
    ProviderError,
    ProviderUnavailable,
    ResearchCache,
    SimoneError,
    page_cache_key,
    search_cache_key,
)
from simone.runtime._cache import CacheEntry

T = TypeVar("T")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


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


def test_the_in_process_store_is_the_cache_without_a_directory() -> None:
    async def main() -> tuple[str, list[str | None], int, CacheHealth]:
        async with ResearchCache(None) as cache:
            backend = cache.backend
        store = InProcessCacheStore()
        assert isinstance(store, CacheStore)
        await store.open()
        await store.set("a", "old", expire_s=0.0)  # expiry is the cache's sweep, not the store's
        await store.set("b", "new", expire_s=None)
        await store.set("marker", "old", expire_s=None)
        gone = await store.sweep(lambda text: text == "old", keep="marker")
        await store.delete("b")
        seen = [await store.get(k) for k in ("a", "b", "marker")]
        health = await store.health()
        await store.close()
        return backend, seen, gone, health

    backend, seen, gone, health = run(main)
    assert backend == "memory"
    assert gone == 1 and seen == [None, None, "old"]
    assert health.answers and health.backend == "memory" and health.detail == "1 entries"


def test_a_refused_store_operation_is_in_the_error_tree() -> None:
    assert issubclass(CacheStoreError, ProviderUnavailable)
    assert issubclass(CacheStoreError, ProviderError) and issubclass(CacheStoreError, SimoneError)
    error = CacheStoreError("Redis at redis://h:6379/0 is unavailable: ConnectionError")
    assert error.kind == "unavailable" and error.retryable and error.provider == "research-cache"

    async def main() -> CacheStoreError:
        async with ResearchCache(None, max_entry_bytes=10) as cache:
            with pytest.raises(CacheStoreError) as caught:
                await cache.store("page\x1fk", CacheEntry(value="x" * 100, stored_at=0.0, ttl_s=60.0))
            return caught.value

    too_large = run(main)
    assert "over max_entry_bytes (10)" in str(too_large)
    assert not too_large.retryable, "an entry over the cap stays too large however often it is tried"
