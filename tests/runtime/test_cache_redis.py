"""The research cache on Redis only: native expiry, addresses without secrets, a server that is down.

The behaviour every backend shares runs on Redis in ``test_cache_backends.py``; these tests are what only
Redis has. The server is a real ``redis-server`` on loopback (``tests/servers_redis.py``).
"""

from __future__ import annotations

import socket
from collections.abc import Awaitable, Callable
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
    redact_url,
)

T = TypeVar("T")


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


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
    # bare: what an object store's address shows (its user part is an access key, its query a signature)
    assert redact_url("http://AKID:s3cret@MinIO:9000/b/?X-Amz-Signature=s3cret#f", bare=True) == (
        "http://minio:9000/b/"
    )
    assert redact_url("http://[::1]:9000/b", bare=True) == "http://[::1]:9000/b"
    assert redact_url("https://k:s3cret@h:port/b", bare=True) == "https://h:port/b"
    assert redact_url("/a/local/folder?x", bare=True) == "/a/local/folder?x", "a path is not a URL"
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


def test_a_store_reads_sweeps_and_counts_only_its_own_prefix(redis_url: str) -> None:
    async def main() -> tuple[int, list[str | None]]:
        ours = RedisStore(redis_url, prefix="app:*:")  # a glob character in the prefix is matched literally
        theirs = RedisStore(redis_url, prefix="app:x:")  # which "app:*:*" unescaped would match
        default = RedisStore(redis_url)
        stores = (ours, theirs, default)
        for store in stores:
            await store.open()
        try:
            for store in stores:
                await store.set("k", store.prefix, expire_s=None)
            gone = await ours.sweep(lambda _: True, keep="")
            return gone, [await store.get("k") for store in stores]
        finally:
            for store in stores:
                await store.close()

    assert run(main) == (1, [None, "app:x:", "simone:research-cache:v1:"])
