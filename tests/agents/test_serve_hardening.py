"""``simone serve`` against hostile and broken conditions, over real sockets to a real server.

One ``simone serve`` (one worker) on its own PostgreSQL memory, with the research cache pointing at a
Redis port nothing listens on, and small slow-client deadlines (``header_timeout_s``/``body_timeout_s``
1 s, two streams per token). Deeply nested bodies are JSON-RPC parse errors (400), never a crash; a
dripping client is closed; a token's open streams are capped; a token file made readable by others
answers one structured 503; ``/readyz`` stays 200 (degraded) with the research cache down; a memory
database that stops is named by its kind in tool errors, never by its address.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from simone.agents.mcp.testing import tool_call_request
from simone.agents.serve import FileTokenStore

from tests.servers_postgres import TemporaryPostgres

START_TIMEOUT_S = 240.0
CLOSE_WAIT_S = 60.0  # far past the 1 s deadlines: the assertion is that it closes, not how fast

pytestmark = pytest.mark.timeout(600)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Hardened:
    """The running server and what the tests reach it with."""

    base: str
    port: int
    token: str
    tokens_file: Path
    log: Path
    postgres: TemporaryPostgres

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def headers(self, **extra: str) -> dict[str, str]:
        return {
            "Authorization": f"Bearer {self.token}",
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            **extra,
        }

    def entries(self) -> list[dict[str, Any]]:
        lines = self.log.read_text(errors="replace").splitlines()
        return [json.loads(line) for line in lines if line.startswith("{")]


@pytest.fixture(scope="module")
def hardened(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hardened]:
    root = tmp_path_factory.mktemp("hardened")
    postgres = TemporaryPostgres()
    postgres.init()
    postgres.start()
    try:
        memory_url = postgres.create_database()
        env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
        env.update(
            SIMONE_DATA_DIR=str(root / "data"),
            SIMONE_EMBEDDINGS__ONNX_VARIANT="reference",
            SIMONE_MEMORY__URL=memory_url,
            SIMONE_WEB__CACHE_URL=f"redis://127.0.0.1:{_free_port()}/0",  # nothing listens there
            SIMONE_SERVE__HEADER_TIMEOUT_S="1",
            SIMONE_SERVE__BODY_TIMEOUT_S="1",
            SIMONE_SERVE__MAX_OPEN_STREAMS="2",
        )
        store = FileTokenStore(root / "data" / "serve-tokens.json")
        token, _ = store.create("hana", projects=["acme"])
        port = _free_port()
        log = root / "serve.log"
        with log.open("wb") as handle:
            process = subprocess.Popen(
                [sys.executable, "-m", "simone.agents.cli", "serve", "--port", str(port)],
                env=env,
                stdout=handle,
                stderr=subprocess.STDOUT,
            )
        base = f"http://127.0.0.1:{port}"
        try:
            _wait_started(process, base, log)
            yield Hardened(base, port, token, store.path, log, postgres)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    finally:
        postgres.cleanup()


def _wait_started(process: subprocess.Popen[bytes], base: str, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"simone serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/healthz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.kill()
    pytest.fail(f"simone serve did not start within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def _call(name: str, arguments: object) -> str:
    return json.dumps(tool_call_request(name, arguments)[1])


def _closed_by_server(sock: socket.socket, drip: bytes) -> bool:
    """Send ``drip`` a byte at a time until the server closes the connection (or ``CLOSE_WAIT_S``)."""
    sock.settimeout(0.25)
    deadline = time.monotonic() + CLOSE_WAIT_S
    sent = 0
    while time.monotonic() < deadline:
        try:
            if sent < len(drip):
                sock.send(drip[sent : sent + 1])
                sent += 1
            data = sock.recv(4096)
        except TimeoutError:
            continue
        except OSError:  # reset by the server
            return True
        if data == b"":
            return True
    return False


def test_readyz_stays_ready_with_the_research_cache_down(hardened: Hardened) -> None:
    ready = httpx.get(f"{hardened.base}/readyz", timeout=30)
    body = ready.json()
    assert ready.status_code == 200, body
    assert body["ready"] is True and body["status"] == "degraded"
    assert body["degraded"] == ["research_cache"] and body["down"] == []
    assert body["backends"]["research_cache"] == {"backend": "redis", "answers": False}
    assert "127.0.0.1" not in ready.text
    # retrieval keeps answering meanwhile
    answer = httpx.post(
        hardened.url,
        headers=hardened.headers(),
        content=_call("retrieve_context", {"query": "anything"}),
        timeout=120,
    )
    assert answer.status_code == 200 and '"isError":false' in answer.text.replace(" ", ""), answer.text


@pytest.mark.parametrize("depth", [10, 1000, 100_000])
def test_nested_bodies_are_parse_errors_never_crashes(hardened: Hardened, depth: int) -> None:
    bare = "[" * depth + "]" * depth
    response = httpx.post(hardened.url, headers=hardened.headers(), content=bare, timeout=60)
    assert response.status_code == 400, response.text
    if depth > 100:
        assert response.json()["error"]["code"] == -32700
        assert "nested deeper than" in response.json()["error"]["message"]
    # The same depth inside a tool call's arguments: a shallow one reaches the tool, a deep one is refused.
    nested = '{"a":' * depth + "1" + "}" * depth
    call = _call("list_notes", {}).replace('"arguments": {}', f'"arguments": {{"x": {nested}}}')
    response = httpx.post(hardened.url, headers=hardened.headers(), content=call, timeout=60)
    if depth <= 100:
        assert response.status_code == 200, response.text
    else:
        assert response.status_code == 400 and response.json()["error"]["code"] == -32700
    assert "Traceback" not in hardened.log.read_text(errors="replace")
    assert all(entry["status"] != 0 for entry in hardened.entries())


def test_a_body_that_is_not_utf8_is_a_parse_error(hardened: Hardened) -> None:
    response = httpx.post(hardened.url, headers=hardened.headers(), content=b'{"a": "\xff\xfe"}', timeout=60)
    assert response.status_code == 400 and response.json()["error"]["code"] == -32700
    assert any(e.get("refused") == "parse" and e["status"] == 400 for e in hardened.entries())


def test_dripping_and_silent_clients_are_closed(hardened: Hardened) -> None:
    request = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{hardened.port}\r\nX-Slow: {'a' * 200}\r\n".encode()
    with socket.create_connection(("127.0.0.1", hardened.port)) as dripping:
        assert _closed_by_server(dripping, request), "a client dripping its headers was never closed"
    with socket.create_connection(("127.0.0.1", hardened.port)) as silent:
        assert _closed_by_server(silent, b""), "a client that sends nothing was never closed"
    # Complete headers, then a body that drips: 408 and the connection closes.
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{hardened.port}\r\nAuthorization: Bearer {hardened.token}\r\n"
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        "Content-Length: 10000\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", hardened.port)) as slow_body:
        slow_body.sendall(head)
        received = b""
        slow_body.settimeout(0.25)
        deadline = time.monotonic() + CLOSE_WAIT_S
        while time.monotonic() < deadline:
            try:
                slow_body.send(b" ")
                chunk = slow_body.recv(4096)
            except TimeoutError:
                continue
            except OSError:
                break
            if chunk == b"":
                break
            received += chunk
        assert received.startswith(b"HTTP/1.1 408"), received[:200]
        assert b"request_timeout" in received
    # A client that keeps up is not affected.
    assert httpx.get(f"{hardened.base}/healthz", timeout=10).status_code == 200


def test_open_streams_are_capped_per_token(hardened: Hardened) -> None:
    stream_headers = {"Authorization": f"Bearer {hardened.token}", "Accept": "text/event-stream"}
    with httpx.Client(timeout=httpx.Timeout(30.0, read=None)) as http:
        first = http.stream("GET", hardened.url, headers=stream_headers)
        second = http.stream("GET", hardened.url, headers=stream_headers)
        with first as one, second as two:
            assert one.status_code == 200 and two.status_code == 200
            third = http.get(hardened.url, headers=stream_headers)
            assert third.status_code == 429 and third.json()["error"] == "too_many_streams"
            assert int(third.headers["retry-after"]) >= 1
            # tool calls of the same token are not held by its streams
            call = http.post(hardened.url, headers=hardened.headers(), content=_call("list_notes", {}))
            assert call.status_code == 200
    # Closed streams give their slots back (the server sees the disconnect a moment later).
    deadline = time.monotonic() + CLOSE_WAIT_S
    with httpx.Client(timeout=httpx.Timeout(30.0, read=None)) as http:
        while True:
            with http.stream("GET", hardened.url, headers=stream_headers) as again:
                if again.status_code == 200:
                    break
            assert time.monotonic() < deadline, "closed streams never gave their slots back"
            time.sleep(0.2)
    assert any(e.get("refused") == "streams" and e["status"] == 429 for e in hardened.entries())


def test_a_token_file_made_readable_by_others_answers_one_structured_503(hardened: Hardened) -> None:
    path = hardened.tokens_file
    body = _call("list_notes", {})
    assert httpx.post(hardened.url, headers=hardened.headers(), content=body, timeout=60).status_code == 200
    path.chmod(0o644)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # seen without mode checks too
    try:
        for _ in range(2):
            refused = httpx.post(hardened.url, headers=hardened.headers(), content=body, timeout=60)
            assert refused.status_code == 503, refused.text
            error = refused.json()
            assert error["error"] == "token_file_unsafe"
            assert "0600" in error["error_description"] and str(path) not in refused.text
    finally:
        path.chmod(0o600)
    assert httpx.post(hardened.url, headers=hardened.headers(), content=body, timeout=60).status_code == 200
    log = hardened.log.read_text(errors="replace")
    assert "Traceback" not in log
    assert log.count("every request is refused until the token file is fixed") == 1  # logged once
    assert any(e.get("refused") == "token_file" and e["status"] == 503 for e in hardened.entries())


def test_tool_errors_name_the_memory_backend_never_its_address(hardened: Hardened) -> None:
    body = _call("create_note", {"title": "before the outage"})
    first = httpx.post(hardened.url, headers=hardened.headers(), content=body, timeout=60)
    assert '"isError":false' in first.text.replace(" ", ""), first.text
    hardened.postgres.stop("immediate")
    failed = httpx.post(
        hardened.url,
        headers=hardened.headers(),
        content=_call("create_note", {"title": "during the outage"}),
        timeout=120,
    )
    assert failed.status_code == 200
    result = failed.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "memory backend postgresql" in text, text
    assert "127.0.0.1" not in failed.text and str(hardened.postgres.port) not in failed.text
    assert "postgresql://" not in failed.text
