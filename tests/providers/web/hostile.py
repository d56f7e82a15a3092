"""A hostile HTTP server on 127.0.0.1 for tests: raw sockets, so it can break HTTP on purpose.

:class:`LoopbackWeb` speaks correct HTTP; this one answers each path with a scripted misbehaviour
(a redirect to ``javascript:``, a body shorter than its ``Content-Length``, malformed chunks, a TCP
reset in the middle of the body, a stall) and ``/robots.txt`` with 404. Load it with
:func:`load_hostile` (the tests folder is no package).
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable, Iterator
from typing import Self

import pytest

Behaviour = Callable[[socket.socket, threading.Event], None]

_PAGE_HEAD = b"<html><head><title>Lake Varnholm depth</title></head><body><p>Lake Varnholm depth "


def _head(status: str, *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def redirect_to(location: str) -> Behaviour:
    """A 302 to ``location`` (anything, e.g. ``javascript:alert(1)``)."""

    def send(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(_head("302 Found", f"Location: {location}", "Content-Length: 0", "Connection: close"))

    return send


def short_body(conn: socket.socket, stop: threading.Event) -> None:
    """``Content-Length`` larger than the body, then the connection closes."""
    conn.sendall(
        _head(
            "200 OK", "Content-Type: text/html; charset=utf-8", "Content-Length: 100000", "Connection: close"
        )
        + _PAGE_HEAD
    )


def bad_chunks(conn: socket.socket, stop: threading.Event) -> None:
    """``Transfer-Encoding: chunked`` with a chunk header that is no hexadecimal size."""
    conn.sendall(
        _head("200 OK", "Content-Type: text/html; charset=utf-8", "Transfer-Encoding: chunked")
        + b"10\r\n<html><body><p>x\r\nzz-not-a-size\r\nmore\r\n0\r\n\r\n"
    )


def reset_mid_body(conn: socket.socket, stop: threading.Event) -> None:
    """Half the body, then a TCP reset (``SO_LINGER`` 0 makes ``close`` send RST)."""
    conn.sendall(
        _head("200 OK", "Content-Type: text/html; charset=utf-8", "Content-Length: 5000") + _PAGE_HEAD
    )
    stop.wait(0.2)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def stall(conn: socket.socket, stop: threading.Event) -> None:
    """Headers and a first piece of the body, then nothing until the server stops."""
    conn.sendall(
        _head("200 OK", "Content-Type: text/html; charset=utf-8", "Content-Length: 5000") + _PAGE_HEAD
    )
    stop.wait(60)


def page(html: str, content_type: str = "text/html; charset=utf-8") -> Behaviour:
    """A correct page (``html`` sent as UTF-8)."""
    body = html.encode("utf-8")

    def send(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(
            _head(
                "200 OK", f"Content-Type: {content_type}", f"Content-Length: {len(body)}", "Connection: close"
            )
            + body
        )

    return send


HOSTILE_KINDS: dict[str, Behaviour] = {
    "redirect-javascript": redirect_to("javascript:alert(document.cookie)"),
    "redirect-data": redirect_to("data:text/html;base64,PHA+aGk8L3A+"),
    "redirect-mailto": redirect_to("mailto:someone@example.com"),
    "short-body": short_body,
    "bad-chunks": bad_chunks,
    "reset": reset_mid_body,
    "stall": stall,
}
"""Every hostile kind, by the path it is served at (``/<kind>``)."""


class HostileWeb:
    """A raw-socket HTTP/1.1 server on 127.0.0.1: one behaviour per path, ``/robots.txt`` 404."""

    def __init__(self, behaviours: dict[str, Behaviour] | None = None) -> None:
        self.behaviours = {f"/{kind}": b for kind, b in (behaviours or HOSTILE_KINDS).items()}
        self.requests: list[str] = []
        self._stop = threading.Event()
        self._server: socket.socket | None = None
        self._threads: list[threading.Thread] = []

    def start(self) -> Self:
        server = socket.create_server(("127.0.0.1", 0))
        server.settimeout(0.1)
        self._server = server
        thread = threading.Thread(target=self._accept, daemon=True)
        thread.start()
        self._threads.append(thread)
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._server is not None:
            self._server.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.getsockname()[1])

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _accept(self) -> None:
        assert self._server is not None
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            data = b""
            try:
                while b"\r\n\r\n" not in data and len(data) < 65536:
                    chunk = conn.recv(4096)
                    if not chunk:
                        return
                    data += chunk
                path = data.split(b" ", 2)[1].decode("latin-1").split("?", 1)[0]
                self.requests.append(path)
                behaviour = self.behaviours.get(path)
                if behaviour is None:
                    conn.sendall(_head("404 Not Found", "Content-Length: 0", "Connection: close"))
                    return
                behaviour(conn, self._stop)
            except OSError:
                return


@pytest.fixture
def hostile() -> Iterator[HostileWeb]:
    """A raw-socket server on 127.0.0.1 serving every hostile kind at ``/<kind>`` (a pytest plugin:
    ``tests/conftest.py`` registers this module for the web and research tests)."""
    with HostileWeb() as server:
        yield server
