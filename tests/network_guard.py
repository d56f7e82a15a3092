"""Tests never reach the internet: a connection from the test process to a non-loopback address fails the test.

Every socket the test process opens through Python's :mod:`socket` (httpx, redis-py, asyncio, urllib…)
goes through :func:`_guarded_connect`. A connection to an address outside loopback is refused with
``ENETUNREACH`` — the code under test sees an unreachable network, as on an offline machine — and the
test that made it fails at teardown, naming the address, so a test that silently depends on the outside
world cannot pass by accident. Unix sockets and loopback (``127.0.0.0/8``, ``::1``, ``0.0.0.0``) pass.

Servers the tests start in their own processes (PostgreSQL, Redis, moto, the embedding server) and
native clients (libpq, LanceDB's object store) are outside this guard; they are given loopback
addresses by their fixtures.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

_attempts: list[str] = []
_original_connect = socket.socket.connect
_original_connect_ex = socket.socket.connect_ex


def _outside(sock: socket.socket, address: Any) -> str | None:
    """The address as text when it lies outside loopback, else ``None``."""
    if sock.family not in (socket.AF_INET, socket.AF_INET6) or not isinstance(address, tuple):
        return None
    host = str(address[0])
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:  # a name: connect() resolves it; refuse unless it is localhost
        return None if host == "localhost" else f"{host}:{address[1]}"
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback or ip.is_unspecified:
        return None
    return f"{host}:{address[1]}"


def _guarded_connect(self: socket.socket, address: Any) -> None:
    where = _outside(self, address)
    if where is not None:
        _attempts.append(where)
        raise OSError(errno.ENETUNREACH, f"tests may not connect outside loopback (to {where})")
    _original_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: Any) -> int:
    where = _outside(self, address)
    if where is not None:
        _attempts.append(where)
        return errno.ENETUNREACH
    return _original_connect_ex(self, address)


@pytest.fixture(autouse=True, scope="session")
def _network_guard() -> Iterator[None]:
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.connect = _original_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = _original_connect_ex  # type: ignore[method-assign]


@pytest.fixture(autouse=True)
def _no_outside_connections(_network_guard: None) -> Iterator[None]:
    """Fail the test that tried to connect outside loopback (after it ran, whatever it caught)."""
    del _attempts[:]
    yield
    if _attempts:
        tried = sorted(set(_attempts))
        del _attempts[:]
        pytest.fail(f"this test tried to connect outside loopback: {', '.join(tried)}", pytrace=False)
