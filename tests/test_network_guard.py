"""The suite's guard against outside connections (``tests/network_guard.py``) refuses and reports them."""

from __future__ import annotations

import errno
import socket

import pytest

from tests import network_guard


def test_a_connection_outside_loopback_is_refused_and_recorded() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(OSError) as caught:
            sock.connect(("192.0.2.1", 80))  # TEST-NET-1: nothing may even try
        assert caught.value.errno == errno.ENETUNREACH
        assert sock.connect_ex(("198.51.100.7", 443)) == errno.ENETUNREACH
    assert network_guard._attempts == ["192.0.2.1:80", "198.51.100.7:443"]
    del network_guard._attempts[:]  # this test made them on purpose: do not fail it at teardown


def test_loopback_and_unix_sockets_pass(tmp_path: object) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        with socket.create_connection(("localhost", port), timeout=5):
            pass
    assert network_guard._attempts == []
