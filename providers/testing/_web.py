"""A loopback web for tests and benchmarks: a SearXNG-compatible search API and pages on 127.0.0.1.

:class:`LoopbackWeb` runs a real HTTP server (threads, real sockets) on 127.0.0.1 and serves:

* ``/search?q=…&format=json`` on its own address — the JSON shape of SearXNG, ranked by BM25 over the
  pages' visible text with the shared lexical analysis (``site:host`` and ``-site:host`` understood);
* pages under any number of virtual hosts (``news.test``, ``wiki.test``…) told apart by the ``Host``
  header, so research over the loopback web sees distinct sites. :meth:`LoopbackWeb.resolver` maps those
  names to 127.0.0.1 for the fetcher's injectable resolver — nothing ever reaches a real DNS server;
* scripted answers for the hard cases: redirects, slow or dripping servers, huge or compressed bodies,
  wrong content types, 429/500 from the search API.

Every request is logged (:attr:`LoopbackWeb.requests`) so a test can check that a warm cache sent
nothing. Use it as a context manager (``with`` or ``async with``); stopping closes the socket.
"""

from __future__ import annotations

import json
import re
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs, urlsplit

import lxml.html
from lxml import etree
from simone.runtime.text import (
    BM25Index,
    default_analyzer,
)

LOOPBACK_ADDRESS = "127.0.0.1"

Body = bytes | Callable[[], Iterable[bytes]]
"""A response body: bytes, or a function returning an iterable of chunks (for huge or slow bodies)."""


@dataclass(slots=True)
class Route:
    """A scripted response.

    Attributes:
        status: HTTP status.
        body: bytes, or a callable yielding chunks (streamed; no Content-Length unless given).
        headers: extra headers (``Content-Type`` defaults to HTML).
        delay_s: sleep before the status line (a slow server).
        chunk_delay_s: sleep between chunks (a dripping server).
    """

    status: int = 200
    body: Body = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    chunk_delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class LoopbackPage:
    """A page served by the loopback web and known to its search API."""

    url: str
    host: str
    path: str
    title: str
    text: str
    snippet: str
    published: str | None


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request the loopback web answered."""

    host: str
    path: str
    query: str
    at: float
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""


def visible_text(html: str) -> tuple[str, str]:
    """``(title, visible text)`` of an HTML page (scripts and styles dropped), for the search index."""
    try:
        tree = lxml.html.document_fromstring(
            html.encode("utf-8", "replace"), parser=lxml.html.HTMLParser(encoding="utf-8")
        )
    except (etree.ParserError, ValueError):
        return "", ""
    for element in tree.xpath("//script | //style | //noscript"):
        element.drop_tree()
    title_el = tree.find(".//title")
    title = " ".join((title_el.text_content() if title_el is not None else "").split())
    body = tree.find("body")
    text = " ".join((body if body is not None else tree).text_content().split())
    return title, text


_SITE = re.compile(r"(?:^|\s)(-?)site:(\S+)")


class LoopbackWeb:
    """A small web on 127.0.0.1: a SearXNG-compatible search API plus pages under virtual hosts.

    Args:
        results_per_page: how many results one search answers at most (SearXNG pages hold about 20).
        tls: a server-side TLS context; every URL is then ``https`` (tests of certificate checks).
    """

    def __init__(self, *, results_per_page: int = 20, tls: ssl.SSLContext | None = None) -> None:
        self.results_per_page = results_per_page
        self.tls = tls
        self.scheme = "https" if tls is not None else "http"
        self._lock = threading.Lock()
        self._routes: dict[tuple[str, str], Route] = {}
        self._pages: dict[str, LoopbackPage] = {}
        self._index: BM25Index | None = None
        self._search_script: list[Route] = []
        self._search_function: Callable[[str, int], list[dict[str, Any]]] | None = None
        self._robots: dict[str, Route] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[LoggedRequest] = []
        self.hosts: set[str] = {LOOPBACK_ADDRESS}

    # -- life cycle ---------------------------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free port on 127.0.0.1 and serve in a background thread."""
        if self._server is not None:
            return self
        handler = type("Handler", (_Handler,), {"owner": self})
        server = ThreadingHTTPServer((LOOPBACK_ADDRESS, 0), handler)
        if self.tls is not None:
            server.socket = self.tls.wrap_socket(server.socket, server_side=True)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The port the server listens on (only while started)."""
        if self._server is None:
            raise RuntimeError("the loopback web is not started; use it as a context manager")
        return int(self._server.server_address[1])

    @property
    def search_url(self) -> str:
        """The base URL to give a SearXNG backend (``…/search`` is appended by the backend)."""
        return f"{self.scheme}://{LOOPBACK_ADDRESS}:{self.port}"

    def url(self, path: str, host: str = LOOPBACK_ADDRESS) -> str:
        """The URL of ``path`` on ``host`` (a virtual host name or 127.0.0.1)."""
        if not path.startswith("/"):
            path = "/" + path
        return f"{self.scheme}://{host}:{self.port}{path}"

    def resolver(self, extra: Mapping[str, Sequence[str]] | None = None) -> Callable[[str, int], Any]:
        """A resolver for :class:`~simone.providers.web.SafeFetcher`: virtual hosts → 127.0.0.1.

        ``extra`` adds fixed answers (e.g. ``{"intranet.test": ["10.0.0.7"]}`` to test the SSRF guard);
        any other name fails to resolve, so nothing leaves the machine.
        """
        fixed = {name.lower(): list(addresses) for name, addresses in (extra or {}).items()}

        async def resolve(host: str, port: int) -> list[str]:
            name = host.lower().rstrip(".")
            if name in fixed:
                return fixed[name]
            if name in self.hosts:
                return [LOOPBACK_ADDRESS]
            raise OSError(f"{host} is not a host of the loopback web")

        return resolve

    # -- content ------------------------------------------------------------------------------------

    def add_page(
        self,
        path: str,
        html: str,
        *,
        host: str = LOOPBACK_ADDRESS,
        searchable: bool = True,
        snippet: str | None = None,
        published: str | None = None,
        content_type: str = "text/html; charset=utf-8",
        headers: dict[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> str:
        """Serve ``html`` at ``path`` on ``host`` and (unless ``searchable=False``) index it; returns its URL.

        The web must be started (its port is part of every URL). ``delay_s`` simulates network latency.
        """
        host = host.lower()
        port = self.port
        if not path.startswith("/"):
            path = "/" + path
        route = Route(
            body=html.encode("utf-8"),
            headers={"Content-Type": content_type, **(headers or {})},
            delay_s=delay_s,
        )
        title, text = visible_text(html) if "html" in content_type else ("", html)
        with self._lock:
            self.hosts.add(host)
            self._routes[(host, path)] = route
            if searchable:
                key = f"{host}{path}"
                self._pages[key] = LoopbackPage(
                    url=f"{self.scheme}://{host}:{port}{path}",
                    host=host,
                    path=path,
                    title=title,
                    text=text,
                    snippet=snippet if snippet is not None else text[:240],
                    published=published,
                )
                self._index = None
        return self.url(path, host)

    def add_route(self, path: str, route: Route, *, host: str = LOOPBACK_ADDRESS) -> str:
        """Serve a scripted response at ``path`` on ``host``; returns its URL."""
        host = host.lower()
        if not path.startswith("/"):
            path = "/" + path
        with self._lock:
            self.hosts.add(host)
            self._routes[(host, path)] = route
        return self.url(path, host)

    def add_redirect(
        self, path: str, location: str, *, host: str = LOOPBACK_ADDRESS, status: int = 302
    ) -> str:
        """Redirect ``path`` on ``host`` to ``location``; returns the redirecting URL."""
        return self.add_route(path, Route(status=status, headers={"Location": location}), host=host)

    def set_robots(self, text: str, *, host: str = LOOPBACK_ADDRESS, status: int = 200) -> None:
        """Serve ``text`` as ``/robots.txt`` of ``host`` (404 by default: everything allowed)."""
        with self._lock:
            self.hosts.add(host.lower())
            self._robots[host.lower()] = Route(
                status=status, body=text.encode(), headers={"Content-Type": "text/plain"}
            )

    def script_search(self, *responses: Route) -> None:
        """Answer the next searches with ``responses``, in order, before searching normally again."""
        with self._lock:
            self._search_script.extend(responses)

    def set_search(self, function: Callable[[str, int], list[dict[str, Any]]] | None) -> None:
        """Replace the built-in search by ``function(query, limit)`` returning SearXNG result dicts."""
        with self._lock:
            self._search_function = function

    @property
    def pages(self) -> list[LoopbackPage]:
        """The searchable pages, with their URLs filled in."""
        with self._lock:
            return list(self._pages.values())

    def count(self, *, host: str | None = None, path_prefix: str = "") -> int:
        """How many logged requests match ``host`` and start with ``path_prefix``."""
        with self._lock:
            return sum(
                1
                for r in self.requests
                if (host is None or r.host == host.lower()) and r.path.startswith(path_prefix)
            )

    def clear_log(self) -> None:
        """Forget the logged requests."""
        with self._lock:
            self.requests.clear()

    # -- search -------------------------------------------------------------------------------------

    def search(self, query: str, limit: int | None = None) -> list[dict[str, Any]]:
        """The built-in search: BM25 over the pages' titles and visible text, SearXNG result dicts."""
        limit = limit or self.results_per_page
        include = {m.group(2).lower() for m in _SITE.finditer(query) if not m.group(1)}
        exclude = {m.group(2).lower() for m in _SITE.finditer(query) if m.group(1)}
        text = _SITE.sub(" ", query)
        with self._lock:
            if self._index is None:
                index = BM25Index(default_analyzer())
                for key, page in self._pages.items():
                    index.add(key, page.text, title=page.title, locator=key)
                self._index = index
            index = self._index
            pages = dict(self._pages)
        results: list[dict[str, Any]] = []
        for hit in index.search(text, limit=max(1, len(pages))):
            page = pages[hit.id]
            if (include and page.host not in include) or page.host in exclude:
                continue
            item: dict[str, Any] = {
                "url": page.url,
                "title": page.title,
                "content": page.snippet,
                "engine": "loopback",
                "engines": ["loopback"],
                "score": round(hit.score, 6),
                "category": "general",
            }
            if page.published:
                item["publishedDate"] = page.published
            results.append(item)
            if len(results) >= limit:
                break
        return results

    def _answer_search(self, query: str) -> Route:
        with self._lock:
            scripted = self._search_script.pop(0) if self._search_script else None
            function = self._search_function
        if scripted is not None:
            return scripted
        results = function(query, self.results_per_page) if function else self.search(query)
        body = {
            "query": query,
            "number_of_results": len(results),
            "results": results,
            "answers": [],
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }
        return Route(body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})

    def _route(self, host: str, path: str, query: str, headers: dict[str, str], body: bytes) -> Route:
        with self._lock:
            self.requests.append(
                LoggedRequest(host=host, path=path, query=query, at=time.time(), headers=headers, body=body)
            )
            route = self._routes.get((host, path))
            robots = self._robots.get(host)
        if route is not None:
            return route
        if path == "/search" and host == LOOPBACK_ADDRESS:
            params = parse_qs(query)
            return self._answer_search((params.get("q") or [""])[0])
        if path == "/robots.txt":
            return robots or Route(status=404, body=b"no robots.txt", headers={"Content-Type": "text/plain"})
        return Route(status=404, body=b"<html><body>not found</body></html>")


class _Handler(BaseHTTPRequestHandler):
    owner: LoopbackWeb
    server_version = "simone-loopback/1"

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def do_GET(self) -> None:
        """Answer from the routes, the search API or 404."""
        parts = urlsplit(self.path)
        host = (self.headers.get("Host") or LOOPBACK_ADDRESS).rsplit(":", 1)[0].strip("[]").lower()
        length = self.headers.get("Content-Length", "0")
        body = self.rfile.read(min(int(length), 1 << 20)) if length.isdigit() and int(length) > 0 else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        route = self.owner._route(host, parts.path or "/", parts.query, headers, body)
        try:
            self._send(route)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            return

    def do_POST(self) -> None:
        """Only the search API takes POST (as SearXNG does)."""
        self.do_GET()

    def _send(self, route: Route) -> None:
        if route.delay_s:
            time.sleep(route.delay_s)
        headers = {"Content-Type": "text/html; charset=utf-8", **route.headers}
        self.send_response(route.status)
        for name, value in headers.items():
            self.send_header(name, value)
        if isinstance(route.body, bytes):
            if "Content-Length" not in headers:
                self.send_header("Content-Length", str(len(route.body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(route.body)
            return
        self.send_header("Connection", "close")
        self.end_headers()
        chunks: Iterator[bytes] = iter(route.body())
        for chunk in chunks:
            self.wfile.write(chunk)
            self.wfile.flush()
            if route.chunk_delay_s:
                time.sleep(route.chunk_delay_s)
