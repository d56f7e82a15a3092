r"""The research cache's persistent layer on Redis, shared by every process that names the same server.

Selected by ``[web] cache_url = "redis://host:6379/0"`` (``rediss://`` for TLS, ``unix:///path`` for a
socket; the password from ``SIMONE_WEB__CACHE_PASSWORD`` or the URL given in the environment). Needs
the optional extra ``simone[redis]`` (redis-py, asyncio client); it is imported only when this store
opens, so the embedded default never needs it.

* **Keys** are ``simone:research-cache:v<format>:<namespace>\x1f<key>`` (UTF-8); a new entry format
  gets new keys instead of misreading old ones.
* **Expiry** is Redis's own: ``SET … PX`` with the entry's TTL plus the stale window plus an hour, so the
  stale copy that ``cached`` freshness serves outlives the fresh TTL; the freshness timestamp stays
  inside the value (the cache's clock decides what is fresh, Redis only drops what no mode can use).
* **Size bound**: Redis bounds memory with the server's ``maxmemory`` and ``maxmemory-policy`` (the
  operator's job: ``volatile-ttl`` or ``allkeys-lru`` evicts the oldest entries; ``noeviction`` makes
  writes fail, which the cache counts as ``write_errors``); the cache itself refuses entries over
  ``max_entry_bytes`` on every backend. :meth:`RedisStore.health` reports the server's bound.
* **Down is not fatal.** A server that does not answer makes each operation raise
  :class:`~simone.runtime.CacheStoreError` (counted by the cache, the run goes on); after a
  connection failure, operations fail at once for ``retry_after_s`` instead of waiting for a timeout
  each, then the next one tries the server again (redis-py reconnects).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from simone.runtime._cache_stores import CACHE_FORMAT_VERSION, CacheHealth, Doomed
from simone.runtime._errors import CacheStoreError, ConfigError

T = TypeVar("T")

REDIS_SCHEMES = ("redis", "rediss", "unix")
"""URL schemes that select the Redis store."""

DEFAULT_PREFIX = f"simone:research-cache:v{CACHE_FORMAT_VERSION}:"

_SWEEP_BATCH = 500


def redact_url(url: str, *, bare: bool = False, mask: str = "") -> str:
    """``url`` without its password (in the user part or a ``password=`` query parameter).

    ``bare=True`` keeps only the scheme, host, port and path (the host as :func:`urllib.parse.urlsplit`
    reads it, lower-case): for an object store, whose user part is an access key and whose query may
    carry a signature. A text without a scheme (a path) is returned as it is. With ``mask``, a user's
    password is shown as ``mask`` instead of dropped (``user:***@host``: the reader sees there is one).

    Example:
        ``redact_url("redis://u:pw@h:6379/0") == "redis://u@h:6379/0"``;
        ``redact_url("http://key:s@Minio:9000/b?X-Amz-Signature=x", bare=True) == "http://minio:9000/b"``
    """
    parts = urlsplit(url)
    if bare:
        if not parts.scheme:
            return url
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"  # an IPv6 address
        try:
            port = parts.port
        except ValueError:  # not a number: the host part as written, still without the user part
            host, port = parts.netloc.rpartition("@")[2], None
        if port:
            host = f"{host}:{port}"
        return f"{parts.scheme}://{host}{parts.path}"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        shown = f"{user}:{mask}" if mask and colon and user else user
        netloc = f"{shown}@{host}" if user else host
    query = urlencode([(k, v) for k, v in parse_qsl(parts.query) if k.lower() != "password"])
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def is_redis_url(url: str) -> bool:
    """Whether ``url`` names a Redis server (``redis://``, ``rediss://``, ``unix://``)."""
    return urlsplit(url).scheme.lower() in REDIS_SCHEMES


class RedisStore:
    """Cache entries in Redis (redis-py's asyncio client, one connection pool per store).

    Args:
        url: ``redis://[user[:password]@]host:port/db`` (or ``rediss://``, ``unix://``).
        password: overrides the URL's password (from the environment, never a file).
        prefix: the key prefix (entries of another prefix are never read, swept or counted).
        connect_timeout_s, timeout_s: socket timeouts of the client.
        retry_after_s: after a connection failure, how long operations fail at once.
    """

    name = "redis"

    def __init__(
        self,
        url: str,
        *,
        password: str | None = None,
        prefix: str = DEFAULT_PREFIX,
        connect_timeout_s: float = 1.0,
        timeout_s: float = 3.0,
        retry_after_s: float = 5.0,
    ) -> None:
        if not is_redis_url(url):
            raise ConfigError(f"not a Redis URL: {redact_url(url)!r}; use redis://host:port/db")
        self.url = url
        self.password = password
        self.prefix = prefix
        self.connect_timeout_s = connect_timeout_s
        self.timeout_s = timeout_s
        self.retry_after_s = retry_after_s
        self._client: Any = None
        self._down_until = 0.0
        self._down_reason = ""

    @property
    def address(self) -> str:
        """The URL without its password."""
        return redact_url(self.url)

    def _new_client(self) -> Any:
        try:
            import redis.asyncio as aioredis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
        except ImportError as exc:
            raise ConfigError(
                "web.cache_url names a Redis server but redis-py is not installed; "
                "install the extra: pip install 'simone[redis]'"
            ) from exc
        options: dict[str, Any] = {
            "socket_connect_timeout": self.connect_timeout_s,
            "socket_timeout": self.timeout_s,
            # one immediate retry replaces a pooled connection the server closed (a restart); more
            # would multiply the wait for a server that is down (the circuit below handles that)
            "retry": Retry(NoBackoff(), 1),
        }
        if self.password is not None:
            options["password"] = self.password
        try:
            return aioredis.Redis.from_url(self.url, **options)
        except ValueError as exc:
            raise ConfigError(f"invalid Redis URL {self.address!r}: {exc}") from exc

    async def open(self) -> None:
        """Create the client and ping once; a server that does not answer is noted, not raised.

        Raises:
            ConfigError: redis-py is missing or the URL is malformed.
        """
        self._client = self._new_client()
        try:
            await self._call(lambda c: c.ping())
        except CacheStoreError:
            pass  # degraded: every operation counts an error until the server answers

    async def close(self) -> None:
        """Close the connection pool."""
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.aclose()
            except Exception:  # noqa: BLE001 - closing a dead connection must not fail the run
                pass

    @property
    def down_reason(self) -> str:
        """Why the last operation failed to reach the server (empty while it answers)."""
        return self._down_reason

    async def _call(self, op: Callable[[Any], Awaitable[T]]) -> T:
        from redis.exceptions import ConnectionError as RedisConnectionError, RedisError, TimeoutError

        client = self._client
        if client is None:
            raise CacheStoreError("the Redis store is not open")
        if self._down_reason and time.monotonic() < self._down_until:
            raise CacheStoreError(f"Redis at {self.address} is unavailable: {self._down_reason}")
        try:
            result = await op(client)
        except (RedisConnectionError, TimeoutError, OSError) as exc:
            self._down_reason = f"{type(exc).__name__}: {exc}"
            self._down_until = time.monotonic() + self.retry_after_s
            raise CacheStoreError(f"Redis at {self.address} is unavailable: {self._down_reason}") from exc
        except RedisError as exc:  # e.g. OOM under maxmemory-policy noeviction: the server answered
            raise CacheStoreError(f"Redis at {self.address} refused: {type(exc).__name__}: {exc}") from exc
        self._down_reason = ""
        return result

    def _key(self, key: str) -> bytes:
        return (self.prefix + key).encode("utf-8")

    async def get(self, key: str) -> str | None:
        """The text under ``key``."""
        value = await self._call(lambda c: c.get(self._key(key)))
        return value.decode("utf-8", "replace") if isinstance(value, bytes) else None

    async def set(self, key: str, text: str, *, expire_s: float | None) -> None:
        """``SET key text PX expire`` (no expiry for ``None``)."""
        px = None if expire_s is None else max(1, int(expire_s * 1000))
        data = text.encode("utf-8")
        await self._call(lambda c: c.set(self._key(key), data, px=px))

    async def delete(self, key: str) -> None:
        """``UNLINK key``."""
        await self._call(lambda c: c.unlink(self._key(key)))

    async def sweep(self, doomed: Doomed, *, keep: str) -> int:
        """``SCAN`` this prefix's keys, read them in batches and unlink the doomed ones."""
        keep_key = self._key(keep)
        pattern = _glob_escape(self.prefix.encode("utf-8")) + b"*"

        async def _sweep(client: Any) -> int:
            gone = 0
            batch: list[bytes] = []

            async def flush() -> int:
                values = await client.mget(batch)
                dead = [
                    k
                    for k, v in zip(batch, values, strict=True)
                    if v is not None and doomed(v.decode("utf-8", "replace"))
                ]
                if dead:
                    await client.unlink(*dead)
                batch.clear()
                return len(dead)

            async for key in client.scan_iter(match=pattern, count=_SWEEP_BATCH):
                if key == keep_key:
                    continue
                batch.append(key)
                if len(batch) >= _SWEEP_BATCH:
                    gone += await flush()
            if batch:
                gone += await flush()
            return gone

        return await self._call(_sweep)

    async def health(self) -> CacheHealth:
        """Ping the server and read its memory bound (``INFO memory``); never raises."""
        opened_here = self._client is None
        try:
            if opened_here:
                self._client = self._new_client()
            self._down_reason, self._down_until = "", 0.0
            await self._call(lambda c: c.ping())
            detail = "answers PING"
            try:
                info = await self._call(lambda c: c.info("memory"))
                limit = int(info.get("maxmemory", 0))
                policy = info.get("maxmemory_policy", "?")
                bound = f"maxmemory {limit} bytes" if limit else "no maxmemory (unbounded)"
                detail = f"used {info.get('used_memory', '?')} bytes, {bound}, policy {policy}"
            except CacheStoreError:
                pass  # INFO may be disabled on managed servers
        except (CacheStoreError, ConfigError) as exc:
            return CacheHealth(self.name, self.address, False, detail=str(exc))
        finally:
            if opened_here:
                await self.close()
        return CacheHealth(self.name, self.address, True, detail=detail)


def _glob_escape(pattern: bytes) -> bytes:
    out = bytearray()
    for byte in pattern:
        if byte in b"*?[]\\":
            out.append(ord("\\"))
        out.append(byte)
    return bytes(out)
