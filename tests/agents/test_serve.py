"""``simone serve`` end to end: the official MCP client over streamable HTTP against a real server.

The server is ``simone serve --workers 2`` started by the test on a free loopback port, with the shared
backends' test servers (PostgreSQL memory, Redis research cache, the document index on moto's S3) and
the loopback web as the researcher's search backend. Every token attack is refused: no token, a wrong
one, an expired one, a revoked one, another actor's ids in arguments, scope in arguments, an
orchestrator calling ``web_research``, a token on a project it may not read.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import MCPError
from simone.agents.mcp.testing import http_mcp_client, result_text, tool_call_request
from simone.agents.serve import FileTokenStore, Role
from simone.providers.testing import LoopbackWeb, add_fixture_site

from tests.servers_postgres import TemporaryPostgres
from tests.servers_redis import RedisServer
from tests.servers_s3 import FAKE_CREDENTIALS, S3Server

START_TIMEOUT_S = 240.0

pytestmark = pytest.mark.timeout(900)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A running ``simone serve`` and what the tests need to reach it."""

    url: str
    base: str
    process: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str]
    tokens: dict[str, str]
    store: FileTokenStore

    def log_lines(self) -> list[dict[str, Any]]:
        lines = []
        for line in self.log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                lines.append(json.loads(line))
        return lines


def _cli(env: dict[str, str], *argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "simone.agents.cli", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _start(env: dict[str, str], log: Path, *argv: str) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "simone.agents.cli", "serve", "--port", str(port), *argv],
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"simone serve exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/readyz", timeout=5).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.kill()
    pytest.fail(f"simone serve was not ready within {START_TIMEOUT_S} s:\n{log.read_text()[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            return -9
    return int(process.returncode)


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory,
    postgres_server: TemporaryPostgres,
    redis_server: RedisServer,
    s3_server: S3Server,
) -> Iterator[Served]:
    """``simone serve --workers 2`` on PostgreSQL, Redis and S3, with documents in two projects."""
    root = tmp_path_factory.mktemp("serve")
    bucket = f"simone-{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(bucket)
    redis_server.flush()
    web = LoopbackWeb().start()
    add_fixture_site(web)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    env.update(FAKE_CREDENTIALS)
    env.update(
        SIMONE_DATA_DIR=str(root / "data"),
        SIMONE_MEMORY__URL=postgres_server.create_database(),
        SIMONE_WEB__CACHE_URL=redis_server.url,
        SIMONE_WEB__SEARXNG_URL=web.search_url,
        SIMONE_WEB__ALLOWED_NETWORKS='["127.0.0.0/8"]',
        SIMONE_INDEX__URI=f"s3://{bucket}/index",
        SIMONE_INDEX__STORAGE_OPTIONS=json.dumps(
            {"endpoint": s3_server.endpoint, "region": "us-east-1", "allow_http": "true"}
        ),
        SIMONE_SERVE__CALLS_PER_MINUTE="40",
        SIMONE_SERVE__MAX_CONCURRENT_CALLS="4",
    )
    for project, text in (
        ("acme", "The acme rocket skates use a tungsten axle bearing, catalogue item AX-7."),
        ("beta", "The beta greenhouse irrigation valve opens at dawn, part number BV-3."),
    ):
        folder = root / project
        folder.mkdir()
        (folder / f"{project}.md").write_text(f"# {project} handbook\n\n{text}\n")
        done = _cli(env, "index", str(folder), "--project", project, "--json")
        assert done.returncode == 0, done.stderr
    store = FileTokenStore(root / "data" / "serve-tokens.json")
    tokens = {}
    grants: tuple[tuple[str, str, list[str], Role], ...] = (
        ("alice", "alice", ["acme"], "orchestrator"),
        ("bob", "bob", ["beta"], "orchestrator"),
        ("researcher", "rita", ["acme"], "researcher"),
        ("limited", "lima", ["acme"], "orchestrator"),
        ("revoked", "victor", ["acme"], "orchestrator"),
    )
    for name, actor, projects, role in grants:
        tokens[name], _ = store.create(actor, projects=projects, role=role)
    tokens["expired"], _ = store.create(
        "eve", projects=["acme"], now=time.time() - 7200, expires=time.time() - 3600
    )
    log = root / "serve.log"
    process, base = _start(env, log, "--workers", "2")
    try:
        yield Served(f"{base}/mcp", base, process, log, env, tokens, store)
    finally:
        code = _stop(process)
        web.stop()
        assert code == 0, log.read_text()[-3000:]


async def _acall(
    served: Served, token: str | None, name: str, arguments: dict[str, Any], **headers: str
) -> httpx.Response:
    """One tools/call as raw JSON-RPC over HTTP (what any MCP client sends), without the SDK."""
    head, body = tool_call_request(name, arguments, token=token, **headers)
    async with httpx.AsyncClient(timeout=60) as http:
        return await http.post(served.url, headers=head, json=body)


def _raw_call(served: Served, token: str | None, name: str, arguments: dict[str, Any]) -> httpx.Response:
    head, body = tool_call_request(name, arguments, token=token)
    return httpx.post(served.url, headers=head, json=body, timeout=60)


@pytest.mark.anyio
async def test_tools_answer_in_the_tokens_scope_on_two_workers(served: Served) -> None:
    async with http_mcp_client(served.url, served.tokens["alice"]) as alice:
        names = {tool.name for tool in (await alice.list_tools()).tools}
        assert {"retrieve_context", "retrieve_memory", "delegate_research", "memory"} == names  # core
        assert "web_research" not in names
        created = await alice.call_tool("create_note", {"title": "alice plan", "body": "ship the axle"})
        assert not created.is_error, result_text(created)
        found = await alice.call_tool("retrieve_context", {"query": "tungsten axle bearing"})
        assert not found.is_error, result_text(found)
        text = result_text(found)
        assert "AX-7" in text and "BV-3" not in text
    async with http_mcp_client(served.url, served.tokens["bob"]) as bob:
        found = await bob.call_tool("retrieve_context", {"query": "greenhouse irrigation valve"})
        assert "BV-3" in result_text(found), result_text(found)
        other = await bob.call_tool("retrieve_context", {"query": "tungsten axle bearing"})
        assert not other.is_error and "AX-7" not in result_text(other)
        listed = await bob.call_tool("list_notes", {})
        assert "alice plan" not in result_text(listed)
    # A second connection, possibly another worker, sees alice's note (PostgreSQL is shared).
    async with http_mcp_client(served.url, served.tokens["alice"]) as again:
        listed = await again.call_tool("list_notes", {})
        assert "alice plan" in result_text(listed)
    workers = set()
    for _ in range(200):
        async with httpx.AsyncClient(timeout=10) as http:  # a new connection each time
            workers.add((await http.get(f"{served.base}/healthz")).json()["worker"])
        if len(workers) == 2:
            break
    assert len(workers) == 2, "both workers answer on the one socket"
    async with httpx.AsyncClient(timeout=30) as http:
        ready = (await http.get(f"{served.base}/readyz")).json()
    assert ready["ready"] is True
    assert {name: b["backend"] for name, b in ready["backends"].items()} == {
        "index": "s3",
        "memory": "postgres",
        "research_cache": "redis",
    }


@pytest.mark.anyio
async def test_token_attacks_are_all_refused(served: Served) -> None:
    refused = 0
    # 1-4: no token, a wrong secret for a real id, garbage, an expired token: 401, nothing runs.
    real_id = served.tokens["alice"].split("_")[1]
    for token in (None, f"smn_{real_id}_{'A' * 43}", "not-a-token", served.tokens["expired"]):
        response = await _acall(served, token, "create_note", {"title": "intruder"})
        assert response.status_code == 401, response.text
        assert response.headers["www-authenticate"].startswith("Bearer")
        with pytest.raises(ExceptionGroup) as failure:
            async with http_mcp_client(served.url, token) as client:
                await client.list_tools()
        assert failure.group_contains(MCPError), repr(failure.value)
        refused += 1
    # 5: a revoked token stops working at once, in every worker.
    async with http_mcp_client(served.url, served.tokens["revoked"]) as victor:
        assert not (await victor.call_tool("list_notes", {})).is_error
    served.store.revoke(served.tokens["revoked"].split("_")[1])
    for _ in range(4):
        assert (await _acall(served, served.tokens["revoked"], "list_notes", {})).status_code == 401
    refused += 1
    async with http_mcp_client(served.url, served.tokens["alice"]) as alice:
        note = await alice.call_tool("create_note", {"title": "alice secret", "body": "only for alice"})
        note_id = re.search(r"note-[0-9a-f]+", result_text(note)).group(0)  # type: ignore[union-attr]
        # 6: scope in arguments.
        forged = await alice.call_tool("list_notes", {"actor": "bob"})
        assert forged.is_error and "ScopeViolation" in result_text(forged)
        refused += 1
    async with http_mcp_client(served.url, served.tokens["bob"]) as bob:
        # 7-8: another actor's ids in arguments: neither changed nor deleted.
        changed = await bob.call_tool("update_note", {"id": note_id, "body": "bob was here"})
        assert changed.is_error, result_text(changed)
        deleted = await bob.call_tool("delete_memory", {"id": note_id})
        assert deleted.is_error, result_text(deleted)
        refused += 2
        # 9: bob's search never returns alice's note.
        searched = await bob.call_tool("search_notes", {"text": "alice secret"})
        assert "only for alice" not in result_text(searched)
        refused += 1
        # 10: an orchestrator token neither sees nor calls web_research.
        names = {tool.name for tool in (await bob.list_tools()).tools}
        assert "web_research" not in names
        web = await bob.call_tool("web_research", {"question": "what is simone?"})
        assert web.is_error and "UnknownTool" in result_text(web)
        refused += 1
    async with http_mcp_client(served.url, served.tokens["alice"]) as alice:
        listed = await alice.call_tool("list_notes", {})
        assert "only for alice" in result_text(listed) and "bob was here" not in result_text(listed)
    # 11: a token on a project it may not read.
    for name in ("researcher", "alice"):
        response = await _acall(
            served,
            served.tokens[name],
            "retrieve_context",
            {"query": "valve"},
            **{"X-Simone-Project": "beta"},
        )
        assert response.status_code == 403
        refused += 1
    # The researcher on its own project sees and calls web_research.
    async with http_mcp_client(served.url, served.tokens["researcher"], project="acme") as rita:
        names = {tool.name for tool in (await rita.list_tools()).tools}
        assert "web_research" in names and "create_note" not in names
        research = await rita.call_tool(
            "web_research", {"question": "What is the maximum depth of Lake Varnholm?", "depth": "basic"}
        )
        # Real research ran: it searched the loopback backend and answered from its results.
        assert not research.is_error, result_text(research)
        found = research.structured_content or {}
        assert found["status"] == "complete" and found["budget"]["queries_used"] >= 1, found
        assert found["sources"] and all(s["provider"] == "searxng" for s in found["sources"])
        assert "Varnholm" in result_text(research)
    assert refused == 12
    # The request log has no token and no content.
    log = served.log.read_text()
    assert all(token not in log for token in served.tokens.values())
    assert "only for alice" not in log and "bob was here" not in log
    entries = served.log_lines()
    assert any(e.get("refused") == "token" and e["status"] == 401 for e in entries)
    assert any(e.get("tool") == "create_note" and e.get("actor") == "alice" for e in entries)


def test_per_token_limit_answers_429_with_retry_after(served: Served) -> None:
    statuses = []
    for _ in range(120):
        response = _raw_call(served, served.tokens["limited"], "list_notes", {})
        statuses.append(response.status_code)
        if response.status_code == 429:
            assert int(response.headers["retry-after"]) >= 1
            break
    assert statuses[-1] == 429 and statuses[0] == 200
    # Another token is not limited by lima's calls.
    assert _raw_call(served, served.tokens["alice"], "list_notes", {}).status_code == 200


def test_workers_above_one_are_refused_on_embedded_stores(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    env["SIMONE_DATA_DIR"] = str(tmp_path / "data")
    done = _cli(env, "serve", "--workers", "2", timeout=120)
    assert done.returncode == 1
    assert "--workers 2 needs stores that every worker shares" in done.stderr
    assert "memory is SQLite" in done.stderr and "local folder" in done.stderr


def test_a_public_bind_without_tokens_warns(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    env["SIMONE_DATA_DIR"] = str(tmp_path / "data")
    # 192.0.2.1 (TEST-NET-1) is no address of this host: the bind fails after the warning.
    done = _cli(env, "serve", "--host", "192.0.2.1", "--port", "9", "--actor", "ann", timeout=120)
    assert "without tokens: anyone who reaches 192.0.2.1:9 acts as 'ann'" in done.stderr
    assert done.returncode == 1


def test_one_worker_serves_and_stops_gracefully(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMONE_")}
    env["SIMONE_DATA_DIR"] = str(tmp_path / "data")
    created = _cli(env, "token", "create", "--actor", "ann", "--project", "p1", "--expires", "1h")
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("smn_") and token not in (tmp_path / "data" / "serve-tokens.json").read_text()
    assert oct((tmp_path / "data" / "serve-tokens.json").stat().st_mode & 0o777) == "0o600"
    listed = _cli(env, "token", "list", "--json")
    (row,) = [json.loads(line) for line in listed.stdout.splitlines()]
    assert row["actor"] == "ann" and row["projects"] == ["p1"] and row["active"] is True
    process, base = _start(env, tmp_path / "one.log")
    served = Served(
        f"{base}/mcp", base, process, tmp_path / "one.log", env, {"ann": token}, FileTokenStore(Path())
    )
    first = _raw_call(served, token, "create_note", {"title": "before shutdown"})
    assert first.status_code == 200 and '"isError":false' in first.text.replace(" ", "")
    assert _stop(process) == 0
    assert "Application shutdown complete" in (tmp_path / "one.log").read_text()
