"""A real PostgreSQL server for the tests: started once per session on a free loopback port, stopped at the end.

The server binaries come from ``pg_config --bindir`` or ``/usr/lib/postgresql/*/bin`` (Debian's
``postgresql`` package). ``initdb`` and ``postgres`` refuse to run as root, so as root the cluster is owned
by and run as the ``postgres`` user (``runuser``). If the server cannot be found or started, the tests
that need it fail with the reason; they never skip.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def _bindir() -> Path:
    candidates: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            candidates.append(
                subprocess.run([pg_config, "--bindir"], capture_output=True, text=True).stdout.strip()
            )
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for candidate in candidates:
        if candidate and (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    raise RuntimeError(
        "PostgreSQL server binaries not found (no initdb/pg_ctl via pg_config --bindir or "
        "/usr/lib/postgresql/*/bin); install Debian's `postgresql` package"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TemporaryPostgres:
    """A throwaway PostgreSQL cluster in a temporary folder, on 127.0.0.1:``port``, trust authentication."""

    def __init__(self, *, fsync: bool = False) -> None:
        self.bindir = _bindir()
        self.root = Path(tempfile.mkdtemp(prefix="simone-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.fsync = fsync
        self._as_root = os.geteuid() == 0
        if self._as_root:
            shutil.chown(self.root, "postgres", "postgres")
            self.root.chmod(0o700)

    def _cmd(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self._as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=self.root)

    def _check(self, what: str, result: subprocess.CompletedProcess[str]) -> None:
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"PostgreSQL {what} failed ({result.returncode}): {result.stderr.strip()}\n{log}"
            )

    def init(self) -> None:
        """Create the cluster."""
        self._check(
            "initdb",
            self._cmd(
                str(self.bindir / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-instructions",
            ),
        )

    def start(self) -> None:
        """Start the server and wait until it accepts connections."""
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c max_connections=200"
        if not self.fsync:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self._check(
            "start",
            self._cmd(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            ),
        )

    def stop(self, mode: str = "fast") -> None:
        """Stop the server (``immediate`` aborts it like a crash: recovery runs at the next start)."""
        self._cmd(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        """The URL of ``database`` on this server."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        name = name or f"t_{uuid.uuid4().hex[:16]}"
        self._check(
            "createdb",
            self._cmd(
                str(self.bindir / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name
            ),
        )
        return self.url(name)

    def cleanup(self) -> None:
        """Stop the server and remove its folder."""
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[TemporaryPostgres]:
    """The session's PostgreSQL server (the test fails with the reason if it cannot start)."""
    server = TemporaryPostgres()
    try:
        server.init()
        server.start()
    except Exception:
        server.cleanup()
        raise
    yield server
    server.cleanup()


@pytest.fixture
def postgres_url(postgres_server: TemporaryPostgres) -> str:
    """A fresh, empty database on the session's server."""
    return postgres_server.create_database()
