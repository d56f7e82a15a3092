from __future__ import annotations

import codecs
import gzip
import ipaddress
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from simone.providers.testing import LoopbackWeb, Route
from simone.providers.web import FetchError, FetchPolicy, SafeFetcher, address_problem, check_url, decode_body
from simone.providers.web._fetcher import parse_networks

pytestmark = pytest.mark.anyio


async def fetch(web: LoopbackWeb, policy: FetchPolicy, url: str, **extra: list[str]):  # type: ignore[no-untyped-def]
    async with SafeFetcher(policy, resolver=web.resolver(extra or None)) as fetcher:
        return await fetcher.fetch(url)


async def refused(web: LoopbackWeb, policy: FetchPolicy, url: str, **extra: list[str]) -> FetchError:
    with pytest.raises(FetchError) as info:
        await fetch(web, policy, url, **extra)
    return info.value


async def test_fetches_a_page_on_a_virtual_host(web: LoopbackWeb, policy: FetchPolicy) -> None:
    page = await fetch(web, policy, web.url("/varnholm", host="lakes.test"))
    assert page.status_code == 200 and page.content_type == "text/html" and page.charset == "utf-8"
    assert "maximum depth of 212 metres" in page.text
    logged = [r for r in web.requests if r.path == "/varnholm"]
    assert logged and logged[0].host == "lakes.test"
    assert logged[0].headers["user-agent"].startswith("simone-research/")
    assert web.count(host="lakes.test", path_prefix="/robots.txt") == 1  # robots.txt asked first


async def test_loopback_is_refused_unless_allowed(web: LoopbackWeb) -> None:
    strict = FetchPolicy(request_timeout_s=2, total_timeout_s=3)
    error = await refused(web, strict, web.url("/varnholm", host="lakes.test"))
    assert error.reason == "blocked_address" and error.kind == "forbidden"
    assert "loopback" in error.message and "allowed_networks" in error.message
    assert web.count(path_prefix="/varnholm") == 0  # nothing was sent


@pytest.mark.parametrize(
    ("location", "why"),
    [
        ("http://127.0.0.2/admin", "loopback"),
        ("http://169.254.169.254/latest/meta-data/", "metadata"),
        ("http://[::ffff:127.0.0.2]/", "loopback"),
        ("http://10.1.2.3/", "private"),
        ("file:///etc/passwd", "only http and https"),
        ("http://user:secret@lakes.test/", "credentials"),
    ],
)
async def test_every_redirect_hop_is_checked(
    web: LoopbackWeb, policy: FetchPolicy, location: str, why: str
) -> None:
    url = web.add_redirect("/jump", location, host="lakes.test")
    error = await refused(web, policy, url)
    assert error.reason in ("blocked_address", "blocked_url")
    assert why in error.message


async def test_a_dns_name_resolving_to_a_private_address_is_refused(
    web: LoopbackWeb, policy: FetchPolicy
) -> None:
    for host, answer in [
        ("intranet.test", "10.0.0.7"),
        ("cgnat.test", "100.64.1.1"),
        ("linklocal.test", "169.254.10.10"),
        ("ula.test", "fd00::1"),
        ("mapped.test", "::ffff:192.168.1.1"),
        ("nat64.test", "64:ff9b::a00:1"),
    ]:
        error = await refused(web, policy, f"http://{host}/", **{host: [answer]})
        assert error.reason == "blocked_address", host
    # one bad answer among good ones is enough to refuse (no choosing the convenient address)
    error = await refused(web, policy, "http://mixed.test/", **{"mixed.test": ["127.0.0.1", "10.0.0.1"]})
    assert error.reason == "blocked_address"


async def test_redirects_are_followed_within_the_cap(web: LoopbackWeb, policy: FetchPolicy) -> None:
    target = web.url("/varnholm", host="lakes.test")
    first = web.add_redirect("/r1", target, host="geography.test")
    page = await fetch(web, policy, first)
    assert page.final_url == target and page.redirects == [target]
    loop = web.add_redirect("/loop", "/loop", host="geography.test", status=301)
    error = await refused(web, policy, loop)
    assert error.reason == "too_many_redirects"
    assert web.count(host="geography.test", path_prefix="/loop") == policy.max_redirects + 1


def _big_html() -> Iterator[bytes]:
    chunk = b"<p>" + b"x" * 65_530 + b"</p>"
    for _ in range(800):  # about 50 MB
        yield chunk


async def test_byte_cap_stops_a_50_mb_page(web: LoopbackWeb, policy: FetchPolicy) -> None:
    streamed = web.add_route("/huge", Route(body=_big_html), host="lakes.test")
    error = await refused(web, policy, streamed)
    assert error.reason == "too_large"  # cut at the cap: the 50 MB were not read
    declared = web.add_route(
        "/declared",
        Route(body=_big_html, headers={"Content-Length": str(50 * 1024 * 1024)}),
        host="lakes.test",
    )
    error = await refused(web, policy, declared)
    assert error.reason == "too_large" and "52,428,800" in error.message


async def test_a_gzip_bomb_stops_at_the_cap(web: LoopbackWeb, policy: FetchPolicy) -> None:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    zeros = b"\0" * (1 << 20)
    bomb = b"".join(compressor.compress(zeros) for _ in range(200)) + compressor.flush()  # 200 MB → ~200 kB
    assert len(bomb) < 400_000
    url = web.add_route(
        "/bomb",
        Route(body=bomb, headers={"Content-Type": "text/html", "Content-Encoding": "gzip"}),
        host="lakes.test",
    )
    error = await refused(web, policy, url)
    assert error.reason == "too_large"


async def test_gzip_pages_are_decoded(web: LoopbackWeb, policy: FetchPolicy) -> None:
    body = gzip.compress("<html><body><p>Compressed café</p></body></html>".encode())
    url = web.add_route(
        "/gz",
        Route(body=body, headers={"Content-Type": "text/html; charset=utf-8", "Content-Encoding": "gzip"}),
        host="lakes.test",
    )
    page = await fetch(web, policy, url)
    assert "Compressed café" in page.text


@pytest.mark.parametrize("content_type", ["application/pdf", "image/png", "application/octet-stream"])
async def test_wrong_content_type_is_refused(
    web: LoopbackWeb, policy: FetchPolicy, content_type: str
) -> None:
    url = web.add_route(
        "/file", Route(body=b"%PDF-1.4", headers={"Content-Type": content_type}), host="lakes.test"
    )
    error = await refused(web, policy, url)
    assert error.reason == "content_type" and content_type in error.message


async def test_slow_server_past_the_deadline(web: LoopbackWeb, policy: FetchPolicy) -> None:
    slow = web.add_route("/slow", Route(body=b"<p>late</p>", delay_s=5), host="lakes.test")
    error = await refused(web, policy, slow)  # unbounded, it would read the page after 5 s
    assert error.reason == "timeout" and error.kind == "timeout"

    def drip() -> Iterator[bytes]:
        for _ in range(100):
            yield b"<p>drop</p>"

    dripping = web.add_route("/drip", Route(body=drip, chunk_delay_s=0.2), host="lakes.test")
    error = await refused(web, policy, dripping)  # each read is quick, the total is not
    assert error.reason == "timeout"


async def test_http_errors_are_typed(web: LoopbackWeb, policy: FetchPolicy) -> None:
    url = web.add_route("/broken", Route(status=500, body=b"oops"), host="lakes.test")
    error = await refused(web, policy, url)
    assert error.reason == "http_status" and error.status_code == 500 and error.retryable
    error = await refused(web, policy, web.url("/missing", host="lakes.test"))
    assert error.status_code == 404


async def test_robots_txt_is_respected(web: LoopbackWeb, policy: FetchPolicy) -> None:
    web.set_robots("User-agent: *\nDisallow: /private/\n", host="robots.test")
    web.add_page("/private/page", "<p>secret</p>", host="robots.test")
    ok = web.add_page("/public", "<p>open</p>", host="robots.test")
    error = await refused(web, policy, web.url("/private/page", host="robots.test"))
    assert error.reason == "robots"
    assert (await fetch(web, policy, ok)).status_code == 200
    web.set_robots("down", host="flaky.test", status=503)
    web.add_page("/a", "<p>a</p>", host="flaky.test")
    error = await refused(web, policy, web.url("/a", host="flaky.test"))
    assert error.reason == "robots" and "could not be read" in error.message
    hop = web.add_redirect("/to-private", web.url("/private/page", host="robots.test"), host="lakes.test")
    error = await refused(web, policy, hop)
    assert error.reason == "robots", "the redirect target's robots.txt counts too"
    relaxed = FetchPolicy(allowed_networks=policy.allowed_networks, respect_robots=False)
    assert (await fetch(web, relaxed, web.url("/private/page", host="robots.test"))).status_code == 200


async def test_invalid_charsets_are_survived(web: LoopbackWeb, policy: FetchPolicy) -> None:
    url = web.add_route(
        "/odd",
        Route(body="<p>naïve</p>".encode(), headers={"Content-Type": "text/html; charset=x-nonsense"}),
        host="lakes.test",
    )
    page = await fetch(web, policy, url)
    assert "naïve" in page.text and page.charset == "utf-8" and "unknown" in (page.charset_note or "")
    latin = web.add_route(
        "/latin",
        Route(
            body="<p>Déjà vu à Paris, où l'été est chaud</p>".encode("latin-1"),
            headers={"Content-Type": "text/html; charset=utf-8"},
        ),
        host="lakes.test",
    )
    page = await fetch(web, policy, latin)
    assert "Paris" in page.text and page.charset_note


async def test_concurrency_is_limited(web: LoopbackWeb, policy: FetchPolicy) -> None:
    limited = FetchPolicy(allowed_networks=policy.allowed_networks, max_concurrency=2, respect_robots=False)
    urls = [
        web.add_route(f"/p{i}", Route(body=b"<p>x</p>", delay_s=0.3), host="lakes.test") for i in range(6)
    ]
    async with SafeFetcher(limited, resolver=web.resolver()) as fetcher:
        async with anyio.create_task_group() as group:
            for url in urls:
                group.start_soon(fetcher.fetch, url)
        assert fetcher.stats.peak_concurrency == 2 and fetcher.stats.fetches == 6


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "javascript:alert(1)",
        "data:text/html,<p>x</p>",
        "http://user:pass@example.com/",
        "http://example.com@evil.test/",
        "//example.com/relative",
        "",
        "http://\u0430pple.com/",  # Cyrillic а + Latin pple
        "http://xn--pple-43d.com/",  # the same homograph, in punycode
        "http://g\u03bf\u03bfgle.com/",  # Greek omicrons
    ],
)
def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(FetchError) as info:
        check_url(url)
    assert info.value.reason == "blocked_url"


def test_single_script_idn_hosts_are_allowed() -> None:
    assert check_url("http://пример.рф/страница").raw_host == b"xn--e1afmkfd.xn--p1ai"
    assert check_url("https://münchen.de/").scheme == "https"


@pytest.mark.parametrize(
    ("address", "problem"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.0.1", "private"),
        ("100.64.0.1", "carrier-grade NAT"),
        ("169.254.169.254", "metadata"),
        ("fd00:ec2::254", "metadata"),
        ("fe80::1", "link-local"),
        ("::ffff:10.0.0.1", "private"),
        ("2002:7f00:1::", "loopback"),  # 6to4 wrapping 127.0.0.1
        ("224.0.0.1", "multicast"),
        ("0.0.0.0", "unspecified"),
        ("93.184.216.34", None),
        ("2606:4700:4700::1111", None),
    ],
)
def test_address_classification(address: str, problem: str | None) -> None:
    found = address_problem(ipaddress.ip_address(address), FetchPolicy())
    assert (found is None) if problem is None else (problem in (found or ""))


def test_private_allowance_still_refuses_metadata() -> None:
    lenient = FetchPolicy(allow_private_addresses=True)
    assert address_problem(ipaddress.ip_address("10.0.0.1"), lenient) is None
    assert "metadata" in (address_problem(ipaddress.ip_address("169.254.169.254"), lenient) or "")


def test_decode_body_falls_back_in_order() -> None:
    assert decode_body("é".encode(), "utf-8")[:2] == ("é", "utf-8")
    text, codec, note = decode_body(b'<meta charset="iso-8859-1"><p>\xe9t\xe9</p>', None)
    assert "été" in text and codec == "iso8859-1" and note is None
    text, codec, note = decode_body("été".encode(), "bogus")
    assert text == "été" and "unknown" in (note or "")


def _self_signed(hostname: str) -> tuple[bytes, bytes]:
    crypto = pytest.importorskip("cryptography")
    del crypto
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


async def test_https_keeps_verifying_the_name_while_the_address_is_pinned(tmp_path: Path) -> None:
    import ssl

    cert_pem, key_pem = _self_signed("secure.test")
    (tmp_path / "cert.pem").write_bytes(cert_pem)
    (tmp_path / "key.pem").write_bytes(key_pem)
    server_side = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_side.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    client_side = ssl.create_default_context(cadata=cert_pem.decode())
    policy = FetchPolicy(allowed_networks=parse_networks(["127.0.0.1/32"]), respect_robots=False)
    with LoopbackWeb(tls=server_side) as secure:
        good = secure.add_page("/page", "<html><body><p>over TLS</p></body></html>", host="secure.test")
        wrong = secure.add_page("/page", "<html><body><p>wrong name</p></body></html>", host="impostor.test")
        async with httpx.AsyncClient(verify=client_side) as client:
            fetcher = SafeFetcher(policy, client=client, resolver=secure.resolver())
            async with fetcher:
                page = await fetcher.fetch(good)
                assert good.startswith("https://") and "over TLS" in page.text
                with pytest.raises(FetchError) as info:
                    await fetcher.fetch(wrong)  # same address, but the certificate is not for this name
                assert info.value.reason == "unreachable" and "certificate" in info.value.message


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS])  # zlib-wrapped and raw deflate
async def test_deflate_pages_are_decoded(web: LoopbackWeb, policy: FetchPolicy, wbits: int) -> None:
    compressor = zlib.compressobj(6, zlib.DEFLATED, wbits)
    body = compressor.compress(b"<html><body><p>deflated words</p></body></html>") + compressor.flush()
    url = web.add_route(
        f"/deflate{wbits}",
        Route(body=body, headers={"Content-Type": "text/html", "Content-Encoding": "deflate"}),
        host="lakes.test",
    )
    assert "deflated words" in (await fetch(web, policy, url)).text


async def test_unknown_encodings_and_corrupt_bodies_are_refused(
    web: LoopbackWeb, policy: FetchPolicy
) -> None:
    brotli = web.add_route(
        "/br",
        Route(body=b"\x0b\x02\x80hello\x03", headers={"Content-Type": "text/html", "Content-Encoding": "br"}),
        host="lakes.test",
    )
    error = await refused(web, policy, brotli)
    assert error.reason == "invalid_content" and "br" in error.message
    corrupt = web.add_route(
        "/corrupt",
        Route(
            body=b"\x1f\x8b\x08\x00garbage-not-gzip",
            headers={"Content-Type": "text/html", "Content-Encoding": "gzip"},
        ),
        host="lakes.test",
    )
    error = await refused(web, policy, corrupt)
    assert error.reason == "invalid_content"


HOSTILE_REASONS = {
    "redirect-javascript": "blocked_url",
    "redirect-data": "blocked_url",
    "redirect-mailto": "blocked_url",
    "short-body": "invalid_content",
    "bad-chunks": "invalid_content",
    "reset": "unreachable",
    "stall": "timeout",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE_REASONS))
async def test_every_hostile_answer_is_a_fetch_error(hostile: Any, policy: FetchPolicy, kind: str) -> None:
    """Issue 15 (4): a redirect to javascript:/data:/mailto: raised httpx.InvalidURL, a broken body raw
    httpx errors; every one must be a FetchError of that page."""
    quick = FetchPolicy(allowed_networks=policy.allowed_networks, request_timeout_s=1.0, total_timeout_s=1.5)
    async with SafeFetcher(quick) as fetcher:
        with pytest.raises(FetchError) as info:
            await fetcher.fetch(hostile.url(f"/{kind}"))
    assert info.value.reason == HOSTILE_REASONS[kind], info.value.message


def test_a_declared_charset_wins_with_replacement_characters() -> None:
    """Issue 15 (12): one invalid byte in a UTF-8 page made the whole page decode as a detected
    charset (mac-latin2, cp1250…), mangling every other character."""
    words = "Żółć gęślą jaźń — naïve café, Varnholm’s “depth” is 212 m. " * 40
    body = ("<html><body><p>" + words + "</p>").encode() + b"\xff" + "<p>Ende ü</p></body></html>".encode()
    text, codec, note = decode_body(body, "utf-8")
    assert codec == "utf-8" and words in text and "Ende ü" in text
    assert text.count("\ufffd") == 1 and note and "1 byte" in note
    # a <meta charset> is a declaration too
    text, codec, note = decode_body(b'<meta charset="utf-8">' + body, None)
    assert codec == "utf-8" and words in text and note
    # escape codecs are no web charset: no lone surrogate can come out of a page
    text, codec, _ = decode_body(b"<p>\\ud800 x</p>", "unicode_escape")
    assert "\ud800" not in text and codec == "utf-8"
    # a byte order mark says it all
    assert decode_body(codecs.BOM_UTF8 + "été".encode(), "iso-8859-1")[:2] == ("été", "utf-8")
