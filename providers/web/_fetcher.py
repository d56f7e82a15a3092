"""The safe page fetcher: SSRF guard, byte cap, content types, redirects, robots.txt, deadlines.

Every page URL comes from the web (a search result, a redirect), so nothing about it is trusted:

* **URLs.** Only ``http``/``https``; no credentials in the URL; host names that mix scripts inside one
  label (IDN homographs such as a Cyrillic "а" in a Latin name) are refused.
* **Addresses.** The host is resolved (through an injectable resolver), and the connection is pinned to
  the address that was checked — no second DNS lookup an attacker could answer differently. Loopback,
  private, link-local, carrier-grade NAT, multicast, reserved and cloud-metadata addresses are refused
  (IPv4-mapped, 6to4, Teredo and NAT64 forms unwrapped first) unless the policy allows them. Every
  redirect hop is checked again; redirects are followed here, never by httpx.
* **Size.** ``Content-Length`` over the cap is refused before reading; bodies are streamed and the
  *decoded* bytes counted, with gzip/deflate decompressed here in bounded steps, so a gzip bomb stops
  at the cap instead of filling memory.
* **Time.** httpx's per-request timeouts, plus one total deadline over robots.txt, redirects and body.
* **Failure.** Whatever a server does (a redirect to ``javascript:``, a body cut short, a malformed
  chunk, a reset, a stall), :meth:`SafeFetcher.fetch` raises a :class:`FetchError` for that page and
  nothing else, so one hostile page never costs the other pages their evidence.
* **Charset.** A declared charset (HTTP header, then ``<meta charset>``) wins, as in browsers: bytes
  that are invalid in it become U+FFFD and a note says how many; only an undeclared page is detected.
* **Manners.** robots.txt is honoured by default (RFC 9309: 4xx means allowed, 5xx or unreachable means
  disallowed), a clear User-Agent is sent, and a capacity limiter bounds concurrent fetches.
"""

from __future__ import annotations

import codecs
import contextlib
import functools
import ipaddress
import re
import socket
import ssl
import time
import unicodedata
import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urljoin
from urllib.robotparser import RobotFileParser

import anyio
import httpx
from simone.providers.web._types import FetchedPage, FetchError, scrub_surrogates
from simone.runtime import AsyncResource, ConfigError, WebSettings
from simone.runtime.tracing import fetch_span

Resolver = Callable[[str, int], Awaitable[Sequence[str]]]
"""Resolves ``(host, port)`` to IP address strings. Injectable so tests can fake DNS answers."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

ROBOTS_MAX_BYTES = 512 * 1024
"""RFC 9309 asks crawlers to read at least 500 KiB of robots.txt."""

ROBOTS_AGENT = "simone-research"
_ALLOW_ALL = ("User-agent: *", "Allow: /")
"""The product token matched against robots.txt ``User-agent`` lines."""

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254")
)
"""Cloud instance-metadata endpoints (AWS, ECS, Alibaba, AWS IPv6): refused unless listed explicitly."""

_CONFUSABLE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC"})
"""Scripts whose letters look alike; one label mixing two of them is a likely homograph."""


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every web client (building one costs ~0.1 s of CPU)."""
    return httpx.create_ssl_context()


async def system_resolver(host: str, port: int) -> list[str]:
    """The operating system's resolver (``getaddrinfo``), run off the event loop by anyio."""
    infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True, slots=True)
class FetchPolicy:
    """What the fetcher may do. Build it from the configuration with :meth:`from_settings`.

    Attributes:
        allowed_networks: CIDR blocks let through the SSRF guard (e.g. ``127.0.0.0/8`` in tests).
        allow_private_addresses: let every non-public address through except cloud metadata.
    """

    user_agent: str = "simone-research/0.1 (+https://pypi.org/project/simone/)"
    request_timeout_s: float = 10.0
    total_timeout_s: float = 60.0
    max_bytes: int = 5 * 1024 * 1024
    max_redirects: int = 5
    max_concurrency: int = 4
    allowed_content_types: tuple[str, ...] = ("text/html", "application/xhtml+xml", "text/plain")
    respect_robots: bool = True
    allow_private_addresses: bool = False
    allowed_networks: tuple[IPNetwork, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.request_timeout_s <= 0 or self.total_timeout_s <= 0:
            raise ConfigError("fetch timeouts must be > 0 seconds")
        if self.max_bytes < 1 or self.max_redirects < 0 or self.max_concurrency < 1:
            raise ConfigError("max_bytes and max_concurrency must be >= 1, max_redirects >= 0")

    @classmethod
    def from_settings(cls, web: WebSettings, **overrides: object) -> FetchPolicy:
        """The policy the configuration describes (``overrides`` replace single fields)."""
        values: dict[str, object] = {
            "user_agent": web.user_agent,
            "request_timeout_s": web.request_timeout_s,
            "total_timeout_s": web.total_timeout_s,
            "max_bytes": web.max_bytes,
            "max_redirects": web.max_redirects,
            "max_concurrency": web.max_concurrency,
            "allowed_content_types": tuple(t.lower() for t in web.allowed_content_types),
            "respect_robots": web.respect_robots,
            "allow_private_addresses": web.allow_private_addresses,
            "allowed_networks": parse_networks(web.allowed_networks),
        }
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


def parse_networks(blocks: Sequence[str]) -> tuple[IPNetwork, ...]:
    """CIDR strings as networks; a malformed one raises :class:`ConfigError`."""
    out: list[IPNetwork] = []
    for block in blocks:
        try:
            out.append(ipaddress.ip_network(block, strict=False))
        except ValueError as exc:
            raise ConfigError(
                f"web.allowed_networks: {block!r} is not a CIDR block such as 127.0.0.0/8"
            ) from exc
    return tuple(out)


def _scripts(label: str) -> set[str]:
    scripts = set()
    for char in label:
        if char.isalpha():
            name = unicodedata.name(char, "")
            script = name.split(" ", 1)[0] if name else ""
            if script in _CONFUSABLE_SCRIPTS:
                scripts.add(script)
    return scripts


def _unicode_host(host: str) -> str:
    labels = []
    for label in host.split("."):
        if label.lower().startswith("xn--"):
            try:
                label = label.encode("ascii").decode("idna")
            except UnicodeError:
                raise FetchError("blocked_url", f"the host label {label!r} is not valid punycode") from None
        labels.append(label)
    return ".".join(labels)


def check_url(url: str) -> httpx.URL:
    """Parse ``url`` and refuse what must never be fetched; returns the URL with an ASCII host.

    Raises:
        FetchError: reason ``blocked_url`` for another scheme, credentials, no host, or a host label
            that mixes look-alike scripts.
    """
    if not isinstance(url, str) or not url.strip():
        raise FetchError("blocked_url", "an empty URL cannot be fetched")
    try:
        parsed = httpx.URL(url.strip())
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise FetchError("blocked_url", f"{url[:200]!r} is not a valid URL", url=url) from exc
    if parsed.scheme not in ("http", "https"):
        raise FetchError(
            "blocked_url",
            f"only http and https pages are fetched, not {parsed.scheme or 'relative'}: URLs",
            url=url,
        )
    if parsed.userinfo:
        raise FetchError(
            "blocked_url", "URLs with credentials (user:password@host) are never fetched", url=url
        )
    if not parsed.host:
        raise FetchError("blocked_url", "the URL has no host", url=url)
    host = _unicode_host(parsed.host)
    for label in host.split("."):
        if len(_scripts(label)) > 1:
            raise FetchError(
                "blocked_url",
                f"the host {parsed.host} mixes look-alike scripts in {label!r} (a likely IDN homograph); not fetched",
                url=url,
            )
    return parsed


def _unwrap(address: IPAddress) -> IPAddress:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address.teredo is not None:
            return address.teredo[1]
        if address in _NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def address_problem(address: IPAddress, policy: FetchPolicy) -> str | None:
    """Why ``address`` may not be contacted under ``policy``, or ``None`` when it may."""
    # the embedded IPv4 address first: its class is what the connection really reaches
    candidates = list(dict.fromkeys((_unwrap(address), address)))
    if any(
        c in network
        for c in candidates
        for network in policy.allowed_networks
        if c.version == network.version
    ):
        return None
    for candidate in candidates:
        if candidate in _METADATA_ADDRESSES:
            return "a cloud metadata address"
        if candidate.is_multicast:
            return "a multicast address"
        if candidate.is_unspecified:
            return "an unspecified address"
        if policy.allow_private_addresses:
            continue
        if candidate.is_loopback:
            return "a loopback address"
        if candidate.is_link_local:
            return "a link-local address"
        if isinstance(candidate, ipaddress.IPv4Address) and candidate in _CGNAT:
            return "a carrier-grade NAT address"
        if candidate.is_private:
            return "a private address"
        if candidate.is_reserved or not candidate.is_global:
            return "a non-public address"
    return None


@dataclass(slots=True)
class FetchStats:
    """Counters of one fetcher: requests, bytes, refusals and the peak of concurrent fetches."""

    fetches: int = 0
    requests: int = 0
    bytes_read: int = 0
    refused: int = 0
    in_flight: int = 0
    peak_concurrency: int = 0


class _Decoder:
    """Bounded decompression of a Content-Encoding (gzip, deflate or identity)."""

    def __init__(self, encoding: str, url: str) -> None:
        encoding = encoding.strip().lower()
        self.url = url
        self._deflate_probe = False
        if encoding in ("", "identity"):
            self._z = None
        elif encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._z = zlib.decompressobj()
            self._deflate_probe = True
        else:
            raise FetchError(
                "invalid_content",
                f"the server used the content encoding {encoding!r}, which is not accepted",
                url=url,
            )

    def feed(self, chunk: bytes, room: int) -> bytes:
        """Decode ``chunk``, producing at most ``room + 1`` bytes (one more than fits means too large)."""
        if self._z is None:
            return chunk[: room + 1]
        out = bytearray()
        data = chunk
        try:
            while data or not out:
                piece = self._z.decompress(data, max(1, room + 1 - len(out)))
                out += piece
                data = self._z.unconsumed_tail
                if len(out) > room or not data:
                    break
        except zlib.error as exc:
            if self._deflate_probe and not out:  # some servers send raw deflate without the zlib header
                self._z = zlib.decompressobj(-zlib.MAX_WBITS)
                self._deflate_probe = False
                return self.feed(chunk, room)
            raise FetchError(
                "invalid_content", f"the compressed body is corrupt: {exc}", url=self.url
            ) from exc
        self._deflate_probe = False
        return bytes(out)


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.IGNORECASE)

_NOT_WEB_CODECS = frozenset(
    {
        "unicode-escape",
        "raw-unicode-escape",
        "unicode-internal",
        "idna",
        "punycode",
        "undefined",
        "mbcs",
        "oem",
    }
)
"""Python codecs that are no web charset (escape codecs would turn ``\\ud800`` text into surrogates)."""

_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def _web_codec(label: str) -> str | None:
    """The Python codec for a charset label, or ``None`` when it is unknown or not a text charset."""
    try:
        name = codecs.lookup(label.strip().strip("\"'")).name
        b"".decode(name)  # bytes-to-bytes codecs (base64, rot13…) raise LookupError here
    except (LookupError, ValueError):
        return None
    return None if name.replace("_", "-") in _NOT_WEB_CODECS else name


def _decode_declared(body: bytes, codec: str, source: str) -> tuple[str, str, str | None]:
    try:
        return body.decode(codec), codec, None
    except UnicodeDecodeError:
        pass
    text = body.decode(codec, errors="replace")
    bad = text.count("\ufffd") - body.decode(codec, errors="ignore").count("\ufffd")
    return text, codec, f"{bad} byte sequence(s) invalid in the {source} charset {codec} were replaced"


def decode_body(body: bytes, declared: str | None) -> tuple[str, str, str | None]:
    """Decode ``body``: byte order mark, declared charset, ``<meta charset>``, then UTF-8, then detection.

    A declared charset wins even when some bytes are invalid in it (they become U+FFFD, as in
    browsers): one bad byte must not turn a whole UTF-8 page into mojibake by detection. Lone
    surrogates never come out.

    Returns ``(text, codec, note)``; ``note`` says when the declared charset was missing, unusable or
    had to replace bytes.
    """
    text, codec, note = _decode(body, declared)
    return scrub_surrogates(text), codec, note


def _decode(body: bytes, declared: str | None) -> tuple[str, str, str | None]:
    for bom, bom_codec in _BOMS:
        if body.startswith(bom):
            return _decode_declared(body[len(bom) :], bom_codec, "byte-order-mark")
    note: str | None = None
    if declared:
        codec = _web_codec(declared)
        if codec is not None:
            return _decode_declared(body, codec, "declared")
        note = f"the declared charset {declared[:40]!r} is unknown"
    meta = _META_CHARSET.search(body[:4096])
    if meta:
        label = meta.group(1).decode("ascii", "replace")
        codec = _web_codec(label)
        if codec is not None:
            if codec.startswith("utf-16"):  # an ASCII-readable <meta> cannot be UTF-16 (WHATWG)
                codec = "utf-8"
            text, codec, replaced = _decode_declared(body, codec, "<meta>")
            return text, codec, note or replaced
        note = note or "the page's <meta charset> is unknown"
    try:
        return body.decode("utf-8"), "utf-8", note
    except UnicodeDecodeError:
        pass
    from charset_normalizer import from_bytes

    best = from_bytes(body[:200_000]).best()
    if best is not None and best.encoding:
        codec = _web_codec(best.encoding) or "utf-8"
        return body.decode(codec, errors="replace"), codec, (note or "charset detected from the bytes")
    return body.decode("utf-8", errors="replace"), "utf-8", (note or "undecodable bytes were replaced")


class SafeFetcher(AsyncResource):
    """Fetches web pages under a :class:`FetchPolicy`; open it with ``async with``.

    Args:
        policy: the limits and the SSRF allowances.
        client: an ``httpx.AsyncClient`` to use (not closed here); one is created when omitted.
        resolver: resolves host names (the system resolver by default; tests inject fakes).
        transport: a transport for the client created here (ignored when ``client`` is given).
    """

    def __init__(
        self,
        policy: FetchPolicy | None = None,
        *,
        client: httpx.AsyncClient | None = None,
        resolver: Resolver | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.policy = policy or FetchPolicy()
        self._client = client
        self._owns_client = client is None
        self._transport = transport
        self._resolver: Resolver = resolver or system_resolver
        self._limiter = anyio.CapacityLimiter(self.policy.max_concurrency)
        self._robots: dict[str, RobotFileParser | None] = {}
        self.stats = FetchStats()

    async def open(self) -> None:
        """Create the HTTP client (when none was given); ``async with`` calls it."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                transport=self._transport,
                follow_redirects=False,
                timeout=httpx.Timeout(self.policy.request_timeout_s),
                verify=shared_ssl_context(),
                trust_env=False,
            )
            self._owns_client = True

    async def close(self) -> None:
        """Close the HTTP client if this fetcher created it."""
        client, self._client = self._client, None
        if client is not None and self._owns_client:
            await client.aclose()

    @property
    def client(self) -> httpx.AsyncClient:
        """The HTTP client (only while open)."""
        if self._client is None:
            raise ConfigError("the fetcher is not open; use `async with SafeFetcher(...)` first")
        return self._client

    async def fetch(self, url: str, *, timeout_s: float | None = None) -> FetchedPage:
        """Fetch one page within ``timeout_s`` (the policy's total timeout at most).

        Raises:
            FetchError: with a ``reason`` (blocked_url, blocked_address, robots, too_large,
                content_type, too_many_redirects, http_status, timeout, unreachable, invalid_content).
        """
        client = self.client
        try:
            target = check_url(url)
        except FetchError:
            self.stats.refused += 1
            raise
        limit = (
            self.policy.total_timeout_s
            if timeout_s is None
            else max(0.0, min(timeout_s, self.policy.total_timeout_s))
        )
        async with self._limiter:
            self.stats.fetches += 1
            self.stats.in_flight += 1
            self.stats.peak_concurrency = max(self.stats.peak_concurrency, self.stats.in_flight)
            started = time.perf_counter()
            try:
                with fetch_span(url) as span, anyio.fail_after(limit):
                    if self.policy.respect_robots:
                        await self._check_robots(client, target)
                    page = await self._follow(
                        client,
                        url,
                        target,
                        self.policy.max_bytes,
                        self.policy.allowed_content_types,
                        robots=self.policy.respect_robots,
                    )
                    span.set_attribute("http.response.status_code", page.status_code)
            except TimeoutError as exc:
                raise FetchError(
                    "timeout", f"{target.host} did not deliver the page within {limit:.1f} s", url=url
                ) from exc
            except FetchError as exc:
                if exc.kind == "forbidden":
                    self.stats.refused += 1
                raise
            except Exception as exc:  # whatever a server provokes fails this page only
                raise FetchError(
                    "invalid_content",
                    f"fetching from {target.host} failed unexpectedly ({type(exc).__name__}: {exc})",
                    url=url,
                ) from exc
            finally:
                self.stats.in_flight -= 1
            self.stats.bytes_read += page.bytes_read
            return page.model_copy(update={"elapsed_ms": (time.perf_counter() - started) * 1000})

    async def _pinned_address(self, target: httpx.URL) -> str:
        host = target.raw_host.decode("ascii")
        port = target.port or (443 if target.scheme == "https" else 80)
        try:
            literal: IPAddress | None = ipaddress.ip_address(host.strip("[]"))
        except ValueError:
            literal = None
        if literal is not None:
            answers: Sequence[str] = [str(literal)]
        else:
            try:
                answers = await self._resolver(host, port)
            except OSError as exc:
                raise FetchError("unreachable", f"cannot resolve {host}: {exc}", url=str(target)) from exc
        if not answers:
            raise FetchError("unreachable", f"{host} has no address", url=str(target))
        addresses: list[IPAddress] = []
        for answer in answers:
            try:
                address = ipaddress.ip_address(answer.split("%", 1)[0])
            except ValueError as exc:
                raise FetchError(
                    "unreachable", f"the resolver returned {answer!r} for {host}", url=str(target)
                ) from exc
            problem = address_problem(address, self.policy)
            if problem is not None:
                raise FetchError(
                    "blocked_address",
                    f"{host} resolves to {address}, {problem}; not fetched (allow it with web.allowed_networks "
                    "only if you trust that network)",
                    url=str(target),
                )
            addresses.append(address)
        return str(addresses[0])

    async def _request(self, client: httpx.AsyncClient, target: httpx.URL) -> httpx.Response:
        address = await self._pinned_address(target)
        host_header = target.netloc.decode("ascii")  # IDNA-encoded, brackets for IPv6, port if given
        pinned = target.copy_with(host=address)
        extensions = {"sni_hostname": target.raw_host.decode("ascii")} if target.scheme == "https" else {}
        request = client.build_request(
            "GET",
            pinned,
            headers={
                "Host": host_header,
                "User-Agent": self.policy.user_agent,
                "Accept": "text/html,application/xhtml+xml,text/plain;q=0.8,*/*;q=0.1",
                "Accept-Encoding": "gzip, deflate",
            },
            extensions=extensions,
        )
        self.stats.requests += 1
        try:
            return await client.send(request, stream=True, follow_redirects=False)
        except httpx.InvalidURL as exc:
            # httpx prepares the next request of a redirect even when it does not follow it, and a
            # Location such as javascript:, data: or mailto: cannot be made into one.
            raise FetchError(
                "blocked_url",
                f"{target.host} redirected to a location that is not an http(s) URL ({exc}); not followed",
                url=str(target),
            ) from exc
        except httpx.TimeoutException as exc:
            raise FetchError(
                "timeout", f"{target.host} timed out ({type(exc).__name__})", url=str(target)
            ) from exc
        except httpx.HTTPError as exc:
            cause: BaseException | None = exc
            while cause is not None and not isinstance(cause, ssl.SSLCertVerificationError):
                cause = cause.__cause__ or cause.__context__
            why = f"its TLS certificate was refused ({cause.verify_message})" if cause else type(exc).__name__
            raise FetchError("unreachable", f"cannot reach {target.host}: {why}", url=str(target)) from exc

    async def _follow(
        self,
        client: httpx.AsyncClient,
        url: str,
        target: httpx.URL,
        max_bytes: int,
        allowed_types: Sequence[str] | None,
        *,
        robots: bool = False,
    ) -> FetchedPage:
        hops: list[str] = []
        current = target
        for _ in range(self.policy.max_redirects + 1):
            response = await self._request(client, current)
            try:
                if response.status_code in REDIRECT_STATUSES:
                    location = response.headers.get("location")
                    if not location:
                        raise FetchError(
                            "http_status", f"{current.host} redirected without a Location", url=url
                        )
                    try:
                        joined = urljoin(str(current), location)
                    except ValueError as exc:
                        raise FetchError(
                            "blocked_url", f"{current.host} redirected to a malformed location", url=url
                        ) from exc
                    current = check_url(joined)
                    hops.append(str(current))
                    if robots:  # a redirect to another site is subject to that site's robots.txt
                        await self._check_robots(client, current)
                    continue
                if response.status_code >= 400:
                    raise FetchError(
                        "http_status",
                        f"{current.host} answered {response.status_code}",
                        url=url,
                        status_code=response.status_code,
                    )
                return await self._read(response, url, current, hops, max_bytes, allowed_types)
            finally:
                with contextlib.suppress(httpx.HTTPError, OSError):  # a broken stream closes as it can
                    await response.aclose()
        raise FetchError(
            "too_many_redirects",
            f"more than {self.policy.max_redirects} redirects from {target.host}",
            url=url,
        )

    async def _read(
        self,
        response: httpx.Response,
        url: str,
        final: httpx.URL,
        hops: list[str],
        max_bytes: int,
        allowed_types: Sequence[str] | None,
    ) -> FetchedPage:
        content_type = response.headers.get("content-type", "")
        media_type = content_type.split(";", 1)[0].strip().lower()
        if media_type and allowed_types is not None and media_type not in allowed_types:
            raise FetchError(
                "content_type",
                f"{final.host} sent {media_type}, not one of {', '.join(allowed_types)}",
                url=url,
            )
        declared_length = response.headers.get("content-length", "")
        if (
            declared_length.isdigit()
            and int(declared_length) > max_bytes
            and "content-encoding" not in response.headers
        ):
            raise FetchError(
                "too_large", f"the page is {int(declared_length):,} bytes; the cap is {max_bytes:,}", url=url
            )
        decoder = _Decoder(response.headers.get("content-encoding", ""), url)
        body = bytearray()
        raw_read = 0
        try:
            async for chunk in response.aiter_raw():
                raw_read += len(chunk)
                body += decoder.feed(chunk, max_bytes - len(body))
                if len(body) > max_bytes or raw_read > max_bytes:
                    raise FetchError(
                        "too_large",
                        f"the page from {final.host} is larger than the {max_bytes:,}-byte cap",
                        url=url,
                    )
        except httpx.TimeoutException as exc:
            raise FetchError(
                "timeout", f"{final.host} stopped sending the body ({type(exc).__name__})", url=url
            ) from exc
        except httpx.RemoteProtocolError as exc:  # cut short, malformed chunks…
            raise FetchError(
                "invalid_content", f"the body from {final.host} is broken: {exc}", url=url
            ) from exc
        except httpx.HTTPError as exc:  # reset, or another transport failure mid-body
            raise FetchError(
                "unreachable",
                f"the connection to {final.host} broke while reading the body ({type(exc).__name__})",
                url=url,
            ) from exc
        data = bytes(body)
        if not media_type:
            head = data[:512].lstrip().lower()
            if not head.startswith((b"<!doctype html", b"<html", b"<head", b"<body", b"<")):
                raise FetchError("content_type", f"{final.host} sent no content type and no HTML", url=url)
            media_type = "text/html"
        text, codec, note = decode_body(data, response.charset_encoding)
        return FetchedPage(
            url=url,
            final_url=str(final),
            redirects=hops,
            status_code=response.status_code,
            content_type=media_type,
            charset=codec,
            charset_note=note,
            text=text,
            bytes_read=len(data),
        )

    async def _check_robots(self, client: httpx.AsyncClient, target: httpx.URL) -> None:
        origin = f"{target.scheme}://{target.netloc.decode('ascii')}"
        if origin not in self._robots:
            if len(self._robots) > 1024:
                self._robots.clear()
            self._robots[origin] = await self._load_robots(client, origin)
        parser = self._robots[origin]
        if parser is None:
            raise FetchError(
                "robots",
                f"robots.txt of {target.host} could not be read, so the site counts as disallowed",
                url=str(target),
            )
        if not parser.can_fetch(ROBOTS_AGENT, str(target)):
            raise FetchError(
                "robots", f"robots.txt of {target.host} disallows this page for crawlers", url=str(target)
            )

    async def _load_robots(self, client: httpx.AsyncClient, origin: str) -> RobotFileParser | None:
        parser = RobotFileParser()
        robots_url = f"{origin}/robots.txt"
        try:
            page = await self._follow(client, robots_url, check_url(robots_url), ROBOTS_MAX_BYTES, None)
        except FetchError as exc:
            if exc.reason == "http_status" and exc.status_code is not None and 400 <= exc.status_code < 500:
                parser.parse(_ALLOW_ALL)
                return parser
            if exc.reason == "too_large":
                parser.parse(_ALLOW_ALL)  # RFC 9309 lets a crawler stop parsing past 500 KiB
                return parser
            if exc.reason in ("blocked_address", "blocked_url"):
                raise
            return None
        parser.parse(page.text.splitlines())
        return parser
