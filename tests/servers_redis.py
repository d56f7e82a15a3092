"""A real Redis server for the tests, started by the tests (registered in ``tests/conftest.py``).

``redis_server`` (session) runs Debian's ``redis-server`` on a free loopback port in a temporary
directory, without persistence, bounded like a production cache (``maxmemory`` with the
``volatile-ttl`` policy), and stops it at the end. ``redis_url`` empties it before each test and gives its
URL. ``redis_factory`` starts extra servers a test may stop and restart (a server going down).

If the binary is missing or the server cannot start, the tests that need it FAIL with the reason; they
never skip (``.ci/run`` installs ``redis-server``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

START_TIMEOUT_S = 15.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _command(port: int, line: bytes) -> bytes:
    """Send one inline command and return the first reply line (raw RESP, no client library)."""
    with socket.create_connection(("127.0.0.1", port), timeout=2.0) as sock:
        sock.sendall(line + b"\r\n")
        reply = b""
        while not reply.endswith(b"\r\n"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            reply += chunk
        return reply.strip()


class RedisServer:
    """One ``redis-server`` process on ``127.0.0.1:port`` with its files in ``directory``."""

    def __init__(self, directory: Path, port: int | None = None) -> None:
        self.directory = directory
        self.port = port or _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def log(self) -> Path:
        return self.directory / "redis.log"

    def start(self) -> RedisServer:
        """Start the server and wait until it answers PING; ``pytest.fail`` with the reason otherwise."""
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail(
                "redis-server is not installed: the Redis cache tests need a real server "
                "(apt-get install -y redis-server; .ci/run installs it)",
                pytrace=False,
            )
        self.directory.mkdir(parents=True, exist_ok=True)
        # fmt: off
        argv = [
            binary,
            "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(self.directory), "--logfile", str(self.log), "--daemonize", "no",
            "--maxmemory", "256mb", "--maxmemory-policy", "volatile-ttl",
        ]
        # fmt: on
        try:
            self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        except OSError as exc:
            pytest.fail(f"redis-server could not be started: {exc}", pytrace=False)
        deadline = time.monotonic() + START_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                _, err = self.process.communicate()
                pytest.fail(
                    f"redis-server exited with {self.process.returncode} at start: "
                    f"{err.decode(errors='replace')[-500:]}{self._log_tail()}",
                    pytrace=False,
                )
            try:
                if _command(self.port, b"PING") == b"+PONG":
                    return self
            except OSError as exc:
                last = str(exc)
            time.sleep(0.05)
        self.stop()
        pytest.fail(
            f"redis-server on port {self.port} did not answer PING within {START_TIMEOUT_S}s "
            f"({last}){self._log_tail()}",
            pytrace=False,
        )

    def _log_tail(self) -> str:
        try:
            return "; log: " + self.log.read_text(errors="replace")[-500:]
        except OSError:
            return ""

    def flush(self) -> None:
        """Delete every key (between tests)."""
        reply = _command(self.port, b"FLUSHALL")
        assert reply == b"+OK", reply

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stderr is not None:
            process.stderr.close()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """The session's Redis server (started once, stopped at the end)."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session server's URL, emptied for this test."""
    redis_server.flush()
    return redis_server.url


@pytest.fixture
def redis_factory(tmp_path: Path) -> Iterator[Callable[[], RedisServer]]:
    """Starts extra servers for one test (``server.stop()`` / ``server.start()`` to take one down)."""
    servers: list[RedisServer] = []

    def start() -> RedisServer:
        server = RedisServer(tmp_path / f"redis-{len(servers)}").start()
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
