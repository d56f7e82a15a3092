"""A real S3-compatible server for the tests, started by the tests (registered in ``tests/conftest.py``).

``s3_server`` (session) runs moto's standalone server (``python -m moto.server``, from the
``moto[server]`` test extra) on a free loopback port and stops it at the end. ``s3_index`` creates a
fresh bucket for one test, puts fake credentials in the environment (for that test only) and gives
the ``[index]`` URI and storage options that point at it. The code under test talks to the server over
S3's HTTP protocol (LanceDB's object store, the writer lock's signed requests): no mock client.

If moto is not installed or the server cannot start, the tests that need it FAIL with the reason; they
never skip (``.ci/run`` installs the ``test`` extra).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

START_TIMEOUT_S = 30.0
FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "simone-test",
    "AWS_SECRET_ACCESS_KEY": "simone-test-secret",
    "AWS_REGION": "us-east-1",
}
"""moto accepts any credentials; these exist only in the tests' environment."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class S3Server:
    """moto's server on ``127.0.0.1:port``, its log in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = _free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.directory / "moto.log"

    def start(self) -> None:
        """Start the server and wait until it answers; ``pytest.fail`` with the reason otherwise."""
        try:
            import moto.server  # noqa: F401 - only checks that the test extra is installed
        except ImportError as exc:
            pytest.fail(f"moto's S3 server is not installed ({exc}): pip install 'moto[server]>=5'")
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.directory,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"moto's S3 server exited with {self.process.returncode}: {self._tail()}")
            try:
                if httpx.get(self.endpoint + "/", timeout=1.0).status_code < 500:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        self.stop()
        pytest.fail(
            f"moto's S3 server did not answer on {self.endpoint} within {START_TIMEOUT_S:g} s: {self._tail()}"
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)

    def create_bucket(self, name: str) -> None:
        """``PUT /<name>`` (moto does not check the signature of this request)."""
        response = httpx.put(f"{self.endpoint}/{name}", timeout=10.0)
        if response.status_code != 200:
            pytest.fail(
                f"could not create bucket {name} on moto: HTTP {response.status_code} {response.text[:200]}"
            )

    def _tail(self) -> str:
        try:
            return self.log.read_text(errors="replace")[-2000:]
        except OSError as exc:
            return f"(no log: {exc})"


@dataclass(frozen=True)
class S3Index:
    """One test's bucket on the server, as ``[index]`` settings."""

    server: S3Server
    bucket: str
    uri: str
    storage_options: dict[str, str]

    def env(self) -> dict[str, str]:
        """``SIMONE_INDEX__*`` variables (plus the fake credentials) that select this index."""
        return {
            **FAKE_CREDENTIALS,
            "SIMONE_INDEX__URI": self.uri,
            "SIMONE_INDEX__STORAGE_OPTIONS": json.dumps(self.storage_options),
        }


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server on a free loopback port, for the whole session."""
    server = S3Server(tmp_path_factory.mktemp("moto"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_index(s3_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> S3Index:
    """A fresh bucket and the fake credentials in this test's environment."""
    for key, value in FAKE_CREDENTIALS.items():
        monkeypatch.setenv(key, value)
    bucket = f"simone-{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(bucket)
    options = {"endpoint": s3_server.endpoint, "region": "us-east-1", "allow_http": "true"}
    return S3Index(s3_server, bucket, f"s3://{bucket}/index", options)
